"""Nsight Compute's Source page: what it measured on each source line of a kernel, read from a saved
report.

The SourceCounters section (in kprof's profile, with ``--import-source yes``) samples where warps
stall and counts, per SASS instruction: instructions and thread-instructions executed, divergent
branches, the L2 sectors global and local accesses asked for against the ideal, shared-memory
wavefronts against the ideal. ncu maps each instruction to its CUDA line through ``-lineinfo``;
``ncu --import REPORT --csv --page source --print-source cuda,sass`` prints, for each profiled
kernel, its source lines with the line's counters summed over its instructions, each line followed
by its instructions.
:func:`parse` reads that (and the ``cuda`` view, by its header) into one :class:`SourceLines` a
kernel; ncu runs in :func:`kprof.tools.nsight.ncu.source_pages`. Pure; tested on pages recorded on
the GPU.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

# The page's stall columns (``stall_long_sb``) -> kprof's reason names (ncu's metric names,
# kprof.tools.nsight.ncu)
STALL_COLUMNS = {
    "barrier": "barrier", "branch_resolving": "branch_resolving", "dispatch": "dispatch_stall",
    "drain": "drain",
    "imc": "imc_miss", "lg": "lg_throttle", "long_sb": "long_scoreboard",
    "math": "math_pipe_throttle",
    "membar": "membar", "mio": "mio_throttle", "misc": "misc", "no_inst": "no_instruction",
    "not_selected": "not_selected", "selected": "selected", "short_sb": "short_scoreboard",
    "sleep": "sleeping", "sleeping": "sleeping", "tex": "tex_throttle", "wait": "wait",
}  # fmt: skip

# The page's counter columns -> LineCounters' fields (the first column of a name found wins)
COUNTER_COLUMNS = {
    "samples": ("Warp Stall Sampling (All Samples)", "Warp Stall Sampling (All Cycles)",
                "Warp Stalls (All Samples)"),
    "not_issued": ("Warp Stall Sampling (Not-issued Samples)",
                   "Warp Stall Sampling (No Issue Cycles)",
                   "Warp Stalls (Not-issued Samples)", "Warp Stalls (Not-issued)"),
    "executed": ("Instructions Executed",),
    "threads": ("Thread Instructions Executed",),
    "divergent": ("Divergent Branches",),
    "global_sectors": ("L2 Theoretical Sectors Global",),
    "global_ideal": ("L2 Theoretical Sectors Global Ideal",),
    "global_excess": ("L2 Theoretical Sectors Global Excessive",),
    "local_sectors": ("L2 Theoretical Sectors Local",),
    "shared_wavefronts": ("L1 Wavefronts Shared",),
    "shared_ideal": ("L1 Wavefronts Shared Ideal",),
    "shared_excess": ("L1 Wavefronts Shared Excessive",),
}
# ncu prints a counter's column only where some instruction of the kernel has it: on a page with the
# section's memory columns, a counter without its column was measured zero (no local memory, no
# shared memory, no branch)
MEASURED_ZERO = ("divergent", "global_sectors", "global_ideal", "global_excess", "local_sectors",
                 "shared_wavefronts", "shared_ideal", "shared_excess")
# present on every page of the SourceCounters section
SECTION_COLUMN = "L2 Theoretical Sectors Global"
SAMPLES = "samples"  # LineCounters' stall-sample field
HEADER_ROW = "\x00header"  # a block row that carries the header of the file section after it
MAX_PAGE_CHARS = 256 * 1024 * 1024  # a kernel of 100,000 instructions prints a few tens of MB


@dataclass(frozen=True, kw_only=True)
class LineCounters:
    """What was measured on one source line: the sums over its SASS instructions (0 where not
    counted)."""

    file: str  # the path ncu gives, or the source it was matched to; "" where unknown
    line: int
    text: str = ""  # the line as the source writes it
    samples: int = 0  # warp stall samples (all samples: issuing and stalled)
    not_issued: int = 0  # samples of a warp that could not issue
    stalls: dict[str, int] = field(default_factory=dict)  # kprof's stall reason -> samples
    executed: int = 0  # warp instructions executed
    threads: int = 0  # thread instructions executed (32 a warp instruction when no lane is off)
    divergent: int = 0  # divergent branches
    global_sectors: int = 0  # L2 sectors its global accesses asked for
    global_ideal: int = 0
    global_excess: int = 0  # beyond the ideal: uncoalesced
    local_sectors: int = 0  # local memory (spills, arrays indexed at run time)
    shared_wavefronts: int = 0
    shared_ideal: int = 0
    shared_excess: int = 0  # beyond the ideal: bank conflicts
    # its instructions' opcodes (``LDG.E.128``), where the page listed them
    sass: tuple[str, ...] = ()
    # lines of headers inlined here whose counters it holds (``file.hpp:107``)
    inlined: tuple[str, ...] = ()

    def count(self, metric: str) -> float:
        """A counter by name, or ``lost_lanes`` (lanes a warp instruction left idle, summed), or
        ``stall:REASON``."""
        if metric == "lost_lanes":
            return max(0.0, 32.0 * self.executed - self.threads) if self.executed and self.threads else 0.0
        if metric.startswith("stall:"):
            return float(self.stalls.get(metric[6:], 0))
        return float(getattr(self, metric))


@dataclass(frozen=True)
class SourceLines:
    """One kernel's Source page: its lines that ran or were sampled (each with its counters), which
    counters the page had, and the kernel's name as the page gives it."""

    kernel: str
    lines: tuple[LineCounters, ...]
    # the counters the page had (LineCounters' field names, stall reasons as stall:X)
    columns: tuple[str, ...] = ()

    def has(self, metric: str) -> bool:
        if metric == "lost_lanes":
            return "executed" in self.columns and "threads" in self.columns
        return metric in self.columns

    def total(self, metric: str) -> float:
        return sum(x.count(metric) for x in self.lines)

    def to_dict(self) -> dict[str, object]:
        return {"kernel": self.kernel, "columns": list(self.columns),
                "lines": [{k: v for k, v in asdict(x).items() if v not in (0, "", (), {})}
                          | {"file": x.file, "line": x.line} for x in self.lines]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SourceLines:
        """A stored page (``to_dict()``: a profile's ``lines`` in kprof profile --json) read
        back."""
        lines = tuple(LineCounters(**{**x, "sass": tuple(x.get("sass", ())),
                                      "stalls": dict(x.get("stalls", {})),
                                      "inlined": tuple(x.get("inlined", ()))})
                      for x in data.get("lines", ()))
        return cls(str(data.get("kernel", "")), lines, tuple(data.get("columns", ())))


def argv(ncu: str | Path, report: str | Path) -> list[str]:
    """The Source page of every kernel in ``report``, CUDA lines with their SASS, as CSV."""
    return [str(ncu), "--import", str(report), "--csv", "--page", "source", "--print-source",
            "cuda,sass"]


def _int(text: str) -> int | None:
    text = text.strip().replace(",", "")
    if not text or text in ("-", "n/a"):
        return None
    try:
        return int(float(text))
    except ValueError:
        return None


def _columns(header: list[str]) -> tuple[dict[str, int], dict[str, int]]:
    """(counter field -> column, stall reason -> column) of a page's header row."""
    at: dict[str, int] = {}
    for k, name in enumerate(header):
        at.setdefault(name.strip(), k)
    counters = {}
    for key, names in COUNTER_COLUMNS.items():
        found = next((at[n] for n in names if n in at), None)
        if found is not None:
            counters[key] = found
    stalls: dict[str, int] = {}
    for name, k in at.items():
        if name.startswith("stall_") and "Not Issued" not in name and name[6:] in STALL_COLUMNS:
            stalls.setdefault(STALL_COLUMNS[name[6:]], k)
    return counters, stalls


@dataclass
class _Block:
    kernel: str = ""
    header: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    # the files a kernel's sections named (File Path rows)
    files: set[str] = field(default_factory=set)
    named: bool = False  # its kernel came from a Function Name row: each file a section of its own


def _blocks(text: str) -> list[_Block]:
    """The page cut into one block a kernel launch. ncu 2025 prints each launch as one section a
    source file (a ``File Path`` row, a ``Function Name`` row, the header, the file's lines): a
    launch's sections follow each other, so a section starts another launch where its function
    differs or its file was already in this one. Older pages start a kernel with a ``Kernel Name``
    row, or print a second table."""
    found = [k
             for k in (text.find(m) for m in ('"Kernel Name"', '"Line No"', '"Address"', '"File'))
             if k >= 0]
    # ncu's own lines before it left out
    rows = list(csv.reader(io.StringIO(text[min(found):] if found else "")))
    out: list[_Block] = []
    cur = _Block()
    # a File Path row, waiting for the Function Name that says whose it is
    pending: list[str] | None = None
    for row in rows:
        if not row:
            continue
        head = row[0].strip()
        name = row[1].strip() if len(row) > 1 else ""
        if head == "Kernel Name":
            if cur.header:
                out.append(cur)
            cur = _Block(kernel=name)
            continue
        if head == "Function Name":
            path = pending[1].strip() if pending and len(pending) > 1 else ""
            if cur.header and (not cur.named or name != cur.kernel or path in cur.files):
                out.append(cur)
                cur = _Block()
            cur.kernel, cur.named = name, True
            if pending is not None:
                cur.rows.append(pending)
                cur.files.add(path)
                pending = None
            continue
        if head in ("File Path", "File Name") and not cur.named and not cur.header:
            cur.rows.append(row)  # an older page's file, before its table
            continue
        if head in ("File Path", "File Name"):
            pending = row
            continue
        if pending is not None:  # a file section with no Function Name row: part of this launch
            cur.rows.append(pending)
            cur.files.add(pending[1].strip() if len(pending) > 1 else "")
            pending = None
        if head in ("Line No", "Address", "#"):
            # a second table with no Kernel Name row: another kernel
            if cur.header and cur.rows and not cur.named:
                out.append(cur)
                cur = _Block(kernel="")
            if cur.header and cur.named:  # a launch's next file: its own header, read from here on
                cur.rows.append([HEADER_ROW, *row])
            else:
                cur.header = [h.strip() for h in row]
            continue
        if cur.header:
            cur.rows.append(row)
    if cur.header:
        out.append(cur)
    return out


def _add(rec: dict[str, Any], row: list[str], counters: dict[str, int],
         stalls: dict[str, int]) -> None:
    """Add one row's counters and stall samples into ``rec``."""
    for counter, k in counters.items():
        rec[counter] = rec.get(counter, 0) + ((_int(row[k]) or 0) if len(row) > k else 0)
    samples = rec.setdefault("stalls", {})
    for reason, k in stalls.items():
        if len(row) > k and (v := _int(row[k])):
            samples[reason] = samples.get(reason, 0) + v


def _sum_into(rec: dict[str, Any], more: dict[str, Any]) -> None:
    """Add what :func:`_add` read of one row (``more``) into ``rec``."""
    for key, value in more.items():
        if key == "stalls":
            stalls = rec.setdefault("stalls", {})
            for reason, v in value.items():
                stalls[reason] = stalls.get(reason, 0) + v
        else:
            rec[key] = rec.get(key, 0) + value


def _measured(recs: dict[tuple[int, int], dict[str, Any]]) -> bool:
    return any(v for rec in recs.values() for k, v in rec.items() if k in COUNTER_COLUMNS) or any(
        rec.get("stalls") for rec in recs.values())


@dataclass
class _Layout:
    """Where a header puts what the parser reads."""

    counters: dict[str, int]
    stalls: dict[str, int]
    address: int | None
    line_at: int | None
    text_at: int | None
    sass_at: int | None

    @classmethod
    def of(cls, header: list[str]) -> _Layout:
        counters, stalls = _columns(header)
        line_at = 0 if header and header[0] == "Line No" else None
        # in the cuda,sass view the instruction's own text is the second "Source" column
        return cls(counters, stalls,
                   next((k for k, h in enumerate(header) if h == "Address"), None), line_at,
                   1 if line_at is not None else None,
                   next((k for k, h in enumerate(header) if h == "Source" and (line_at is None or k > 1)), None))


def _lines_of(block: _Block) -> SourceLines:
    at = _Layout.of(block.header)
    seen_counters, seen_stalls = set(at.counters), set(at.stalls)
    section = SECTION_COLUMN in block.header
    found: dict[tuple[int, int], dict[str, Any]] = {}
    # the instructions' own counters summed a line: the page's line rows may print them, or leave
    # them blank
    under: dict[tuple[int, int], dict[str, Any]] = {}
    order: list[tuple[int, int]] = []
    file_no, last_line = 0, 0
    names: dict[int, str] = {}
    current: tuple[int, int] | None = None
    # (address, its line, opcode, barrier stall samples)
    instrs: list[tuple[int, tuple[int, int], str, int]] = []
    for row in block.rows:
        head = row[0].strip()
        if head == HEADER_ROW:
            at = _Layout.of([h.strip() for h in row[1:]])
            seen_counters |= set(at.counters)
            seen_stalls |= set(at.stalls)
            section = section or SECTION_COLUMN in row
            continue
        # "File Name", "File Path"
        if head.startswith("File") and len(row) > 1 and not head[:1].isdigit():
            file_no += 1
            names[file_no] = row[1].strip()
            last_line = 0
            continue
        is_sass = at.address is not None and len(row) > at.address and row[at.address].strip().startswith("0x")
        if at.line_at is not None and not is_sass:
            n = _int(head)
            if n is None:
                continue
            if n <= last_line:  # the page printed the next file from its first line
                file_no += 1
            last_line = n
            current = (file_no, n)
            if current not in found:
                order.append(current)
            text = row[at.text_at] if at.text_at is not None and len(row) > at.text_at else ""
            _add(found.setdefault(current, {"text": text}), row, at.counters, at.stalls)
            continue
        if is_sass and current is not None:
            mine: dict[str, Any] = {}
            _add(mine, row, at.counters, at.stalls)
            _sum_into(under.setdefault(current, {}), mine)
            op = _opcode(row[at.sass_at]) if at.sass_at is not None and len(row) > at.sass_at else ""
            if op:
                found[current].setdefault("sass", []).append(op)
            if (addr := _address(row[at.address] if at.address is not None else "")) is not None:
                instrs.append((addr, current, op, mine.get("stalls", {}).get("barrier", 0)))
    if under and not _measured(found) and _measured(under):
        for key, rec in under.items():
            found[key].update(rec)
    _to_barriers(found, instrs)
    lines = []
    for key in order:
        rec = found[key]
        kw = {k: v for k, v in rec.items() if k in COUNTER_COLUMNS}
        # a file the page named, else its place among the files it printed one after another (#0,
        # #1, ...)
        lines.append(LineCounters(file=names.get(key[0], f"#{key[0]}"), line=key[1],
                                  text=str(rec.get("text", "")).rstrip(),
                                  stalls=dict(rec.get("stalls", {})),
                                  sass=tuple(rec.get("sass", ())), **kw))
    # lines with nothing measured (comments, declarations) are dropped
    kept = tuple(x for x in lines if any(x.count(c) for c in seen_counters) or x.stalls or x.sass)
    measured = [c for c in COUNTER_COLUMNS if c in seen_counters
                or (section and c in MEASURED_ZERO)]
    return SourceLines(block.kernel, kept,
                       tuple(measured) + tuple(f"stall:{r}" for r in sorted(seen_stalls)))


def _address(text: str) -> int | None:
    text = text.strip()
    try:
        return int(text, 16) if text.startswith("0x") else None
    except ValueError:
        return None


def _to_barriers(found: dict[tuple[int, int], dict[str, Any]],
                 instrs: list[tuple[int, tuple[int, int], str, int]]) -> None:
    """A warp waiting at a barrier is sampled at the instruction after it (the next it will issue):
    move each instruction's barrier stall samples (and as many of its samples) to the line of the
    barrier just before it in address order, where the user put the ``__syncthreads()``."""
    last_bar: tuple[int, int] | None = None
    for _addr, key, op, waited in sorted(instrs):
        if op.startswith("BAR"):
            last_bar = key
            continue
        if not waited or last_bar is None or last_bar == key:
            continue
        src, dst = found[key], found[last_bar]
        src["stalls"]["barrier"] -= waited
        if not src["stalls"]["barrier"]:
            del src["stalls"]["barrier"]
        dst.setdefault("stalls", {})["barrier"] = dst.get("stalls", {}).get("barrier", 0) + waited
        # a line's samples, not a child result's (kprof.launch.childresult)
        moved = min(waited, src.get(SAMPLES, 0))
        src[SAMPLES] = src.get(SAMPLES, 0) - moved
        dst[SAMPLES] = dst.get(SAMPLES, 0) + moved


_OP = re.compile(r"^\s*(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")


def _opcode(text: str) -> str:
    m = _OP.match(text)
    return m.group(1) if m else ""


def parse(text: str) -> list[SourceLines]:
    """Every kernel's lines of a ``--page source --csv`` page, in the page's order. Pure."""
    return [_lines_of(b) for b in _blocks(text) if b.header]


def name_files(page: SourceLines, sources: dict[str, tuple[str, ...]]) -> SourceLines:
    """``page`` with each line's file named where the page left it unnamed (``#0``, ``#1``: ncu
    printed the files one after the other without a name): the source among ``sources`` (path -> its
    lines) whose text matches that file's lines best. A file that matches none keeps its ``#N``.
    Pure."""
    unnamed = sorted({x.file for x in page.lines if x.file.startswith("#")})
    if not unnamed or not sources:
        return page
    rename: dict[str, str] = {}
    for key in unnamed:
        mine = [x for x in page.lines if x.file == key and x.text.strip()]
        best, score = "", 0
        for path, lines in sources.items():
            hits = sum(1 for x in mine if 0 < x.line <= len(lines)
                       and lines[x.line - 1].rstrip() == x.text.rstrip())
            if hits > score:
                best, score = path, hits
        if best and score * 2 >= len(mine):
            rename[key] = best
    return replace(page,
                   lines=tuple(replace(x, file=rename.get(x.file, x.file)) for x in page.lines))




def same_file(a: str, b: str) -> bool:
    """One file under two spellings
    (``/usr/local/cuda-13.0/bin/../targets/x86_64-linux/include/x.hpp`` and
    ``/usr/local/cuda/targets/x86_64-linux/include/x.hpp``): the same name in a folder of the same
    name."""
    pa, pb = Path(a).parts[-2:], Path(b).parts[-2:]
    return bool(pa) and pa == pb


def fold_inlined(page: SourceLines, sites: dict[tuple[str, int], frozenset[tuple[str, int]]],
                 *, keep: Callable[[str], bool]) -> SourceLines:
    """``page`` with each line of a file not ``keep``-ed (a CUDA header: ``atomicAdd``'s body) that
    was inlined at one line of the user's (``sites``: :func:`kprof.diagnosis.ptxscan.inline_sites`,
    from the PTX) counted on that line: what Nsight Compute measured inside ``atomicAdd`` is the
    cost of the line that called it. A header line inlined at several lines stays where it is (its
    counters cannot be split). Pure."""
    if not sites:
        return page
    moved: dict[tuple[str, int], list[LineCounters]] = {}
    stay: list[LineCounters] = []
    for x in page.lines:
        if keep(x.file):
            stay.append(x)
            continue
        found = [v for (f, ln), v in sites.items() if ln == x.line and same_file(f, x.file)]
        targets = set().union(*found) if found else set()
        site = next(iter(targets)) if len(targets) == 1 else None
        if site is None or not keep(site[0]):
            stay.append(x)
            continue
        moved.setdefault(site, []).append(x)
    if not moved:
        return page
    out: list[LineCounters] = []
    for x in stay:
        key = next((k for k in moved if k[1] == x.line and same_file(k[0], x.file)), None)
        out.append(_merge(x, moved.pop(key)) if key is not None else x)
    for (f, ln), extra in moved.items():  # a call site the page printed no line for
        out.append(_merge(LineCounters(file=f, line=ln), extra))
    return replace(page, lines=tuple(out))


def _merge(into: LineCounters, extra: list[LineCounters]) -> LineCounters:
    sums = {k: getattr(into, k) + sum(getattr(x, k) for x in extra) for k in COUNTER_COLUMNS}
    stalls = dict(into.stalls)
    for x in extra:
        for r, v in x.stalls.items():
            stalls[r] = stalls.get(r, 0) + v
    return replace(into, **sums, stalls=stalls,
                   sass=into.sass + tuple(op for x in extra for op in x.sass),
                   inlined=into.inlined + tuple(f"{Path(x.file).name}:{x.line}" for x in extra))
