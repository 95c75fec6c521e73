"""What every rule of :mod:`kprof.diagnosis.rules` uses: an estimate capped by the roof's headroom,
Amdahl's law, and the line a cause points at: with counters, the line where the cause's own cost was
measured largest (:func:`measured`, :mod:`kprof.diagnosis.lines`); without them, the line the PTX
shows doing it (marked so); a declaration or the spec's launch where that is what to change."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from kprof.diagnosis import lines, ptxscan
from kprof.diagnosis.facts import Facts
from kprof.diagnosis.model import Line
from kprof.tools.nsight.sourcepage import LineCounters


def cap(estimate: float | None, f: Facts) -> float | None:
    head = f.headroom()
    if estimate is None:
        return None
    return min(estimate, head) if head else estimate


def amdahl(share: float, speedup: float) -> float:
    """The whole's speedup when ``share`` of its time gets ``speedup`` times faster."""
    share = min(max(share, 0.0), 1.0)
    return 1.0 / ((1.0 - share) + share / max(speedup, 1e-9))


STATIC = " (from the PTX: not measured, no counters)"


def static(line: Line) -> Line:
    """A line the code shows, named where nothing was measured (no counters): it says so."""
    return replace(line, why=line.why + STATIC)


def ptx_line(f: Facts, pred: Callable[[ptxscan.Instr], bool], why: str) -> Line | None:
    """The line whose instructions of a kind sit in the most loops: what the PTX proposes
    (:func:`measured` names it only without counters, marked so; with them a measurement places the
    cause)."""
    if f.entry is None:
        return None
    hit = f.entry.hottest(pred)
    if hit is None:
        return None
    return Line(hit[0], hit[1], why)


def ptx_lines(f: Facts, pred: Callable[[ptxscan.Instr], bool]) -> set[tuple[str, int]]:
    """Every line the PTX shows an instruction of a kind on (the candidates a measurement picks
    among)."""
    return {(i.file, i.line) for i in f.entry.instrs if pred(i)} if f.entry is not None else set()


def on(candidates: set[tuple[str, int]]) -> Callable[[LineCounters], bool]:
    """A measured line that is one of ``candidates`` (by file name and line: ncu and the PTX may
    spell paths apart)."""
    from pathlib import Path

    names = {(Path(file).name, line) for file, line in candidates}
    return lambda x: (Path(x.file).name, x.line) in names


def measured(f: Facts, metric: str, what: str, cost: str, *,
             where: Callable[[LineCounters], bool] | None = None,
             proposed: Line | None = None,
             prefer: Callable[[LineCounters], bool] | None = None) -> Line | None:
    """The cause's line: with counters, the line where ``metric`` (its cost,
    :meth:`LineCounters.count`) was measured
    largest among those ``where`` allows, with its share; "line not measured" where the profile has
    no such measurement. Without counters, the ``proposed`` line (from the PTX, marked so)."""
    if not f.counters:
        return static(proposed) if proposed is not None else None
    page = f.profile.lines
    if page is None:
        return lines.unmeasured("the profile has no Source page: Nsight Compute's SourceCounters "
                                "section")
    if (p := lines.place(page, metric, where=where, prefer=prefer)) is not None:
        return lines.line_of(p, what, cost)
    return lines.unmeasured(f"no line of the kernel has {cost} counted")


def src_line(f: Facts, line: int, why: str) -> Line | None:
    return Line(str(f.code.path), line, why) if line and f.code.path else None


def launch_line(f: Facts, why: str) -> Line | None:
    spec, at = f.code.spec_path, f.code.launch_line
    return Line(str(spec), at, why) if spec and at else None


def headroom_text(f: Facts) -> str:
    h = f.headroom()
    return f"the roof's headroom ({h:.2f}x)" if h else "no roof (the spec has no work formula)"



def first_measured(*tries: Line | None) -> Line | None:
    """The first of several placements that found a measured line; else the last (its "line not
    measured")."""
    for line in tries:
        if line is not None and line.line:
            return line
    return tries[-1] if tries else None
