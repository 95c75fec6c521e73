"""What every rule of :mod:`kprof.diagnosis.rules` uses: an estimate capped by the roof's headroom, Amdahl's
law, and the line a cause points at (the hottest PTX instruction of a kind, a source line, the spec's launch)."""

from __future__ import annotations

from collections.abc import Callable

from kprof.diagnosis import ptxscan
from kprof.diagnosis.facts import Facts
from kprof.diagnosis.model import Line


def cap(estimate: float | None, f: Facts) -> float | None:
    head = f.headroom()
    if estimate is None:
        return None
    return min(estimate, head) if head else estimate


def amdahl(share: float, speedup: float) -> float:
    """The whole's speedup when ``share`` of its time gets ``speedup`` times faster."""
    share = min(max(share, 0.0), 1.0)
    return 1.0 / ((1.0 - share) + share / max(speedup, 1e-9))


def ptx_line(f: Facts, pred: Callable[[ptxscan.Instr], bool], why: str) -> Line | None:
    if f.entry is None:
        return None
    hit = f.entry.hottest(pred)
    if hit is None:
        return None
    return Line(hit[0], hit[1], why)


def src_line(f: Facts, line: int, why: str) -> Line | None:
    return Line(str(f.code.path), line, why) if line and f.code.path else None


def launch_line(f: Facts, why: str) -> Line | None:
    spec, at = f.code.spec_path, f.code.launch_line
    return Line(str(spec), at, why) if spec and at else None


def headroom_text(f: Facts) -> str:
    h = f.headroom()
    return f"the roof's headroom ({h:.2f}x)" if h else "no roof (the spec has no work formula)"

