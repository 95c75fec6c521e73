"""Text output: tables and reports from results. Pure functions; nothing here measures."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kprof.corpus import mutants
from kprof.findings import label
from kprof.measure.ceilings import Ceilings
from kprof.tools.demangle import short
from kprof.units import si

if TYPE_CHECKING:
    from kprof.build.build import BuildResult, ResourceUsage
    from kprof.build.occupancy import Occupancy
    from kprof.corpus.cases import CaseResult
    from kprof.corpus.perfcases import PerfResult
    from kprof.diagnosis.program import Ranked
    from kprof.launch.childresult import ChildResult
    from kprof.measure.bench import BaselineResult, PointResult
    from kprof.measure.profiling import KernelProfile
    from kprof.results import history
    from kprof.spec import KernelSpec, Resolved
    from kprof.spec.catalog import Listing
    from kprof.tools.doctor import Check, Readiness
    from kprof.tools.launchsites import Sites
    from kprof.tools.toolrun import ToolResult


MIN_WIDTH = 60  # no wrapping narrower than this: a column of a few characters helps nobody
PIPE_WIDTH = 100  # text that goes to a file or a pipe: what a pager, an editor or a CI log shows whole
NO_WRAP = 1 << 20  # --width 0: one line a row, for grep
_chosen_width: int | None = None  # --width, set once by the command line (kprof.commands.cli)


def choose_width(width: int | None) -> None:
    """The width every command wraps to from here on (``--width N``; 0: no wrapping), over COLUMNS and
    the terminal's own."""
    global _chosen_width
    _chosen_width = width


def terminal_width() -> int:
    """The width lines are wrapped to: ``--width`` where given (0: not wrapped), else COLUMNS where it is
    set, else the terminal's own on a terminal and :data:`PIPE_WIDTH` for a file or a pipe."""
    import os
    import shutil
    import sys

    if _chosen_width is not None:
        return NO_WRAP if _chosen_width == 0 else max(MIN_WIDTH, _chosen_width)
    if (env := os.environ.get("COLUMNS", "")).isascii() and env.isdigit() and int(env) > 0:
        return max(MIN_WIDTH, int(env))
    if not getattr(sys.stdout, "isatty", lambda: False)():
        return PIPE_WIDTH
    return max(MIN_WIDTH, shutil.get_terminal_size((80, 24)).columns)


def wrap(text: str, width: int, indent: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, every line after the first indented by ``indent``
    spaces (which count toward the width); a word longer than a line is broken."""
    import textwrap

    return textwrap.wrap(text, width=width, subsequent_indent=" " * indent, break_on_hyphens=False) or [""]


def fit(lines: Sequence[str], width: int, hang: int) -> list[str]:
    """Report lines wrapped to ``width``, each continuation under its line's own indentation plus ``hang``."""
    return [piece for line in lines for piece in wrap(line, width, len(line) - len(line.lstrip()) + hang)]


MIN_COLUMN = 12  # a column is not wrapped narrower than this


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], align: str = "", width: int | None = None) -> str:
    """A plain text table. ``align`` has one character per column, 'l' or 'r' (default 'l'). Where the
    rows would pass ``width`` (default: :func:`terminal_width`), the widest left-aligned columns are
    narrowed, widest first, and their cells wrap under themselves."""
    cells = [[str(h) for h in headers]] + [[" ".join(str(c).split()) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align.ljust(len(headers), "l")
    width = width or terminal_width()
    gaps = 2 * (len(widths) - 1)
    narrowable = [i for i, a in enumerate(align) if a == "l"]
    while narrowable and sum(widths) + gaps > width:
        i = max(narrowable, key=lambda k: widths[k])
        if widths[i] <= MIN_COLUMN:
            break
        widths[i] -= 1

    def fmt(row: list[str]) -> str:
        pieces = [wrap(c, w, 0) if len(c) > w else [c] for c, w in zip(row, widths)]
        height = max(len(p) for p in pieces)
        out = []
        for k in range(height):
            parts = [(p[k] if k < len(p) else "").strip() for p in pieces]
            out.append("  ".join(c.rjust(w) if a == "r" else c.ljust(w) for c, w, a in zip(parts, widths, align)).rstrip())
        return "\n".join(out)

    lines = [fmt(cells[0]), "  ".join("-" * w for w in widths)]
    lines += [fmt(r) for r in cells[1:]]
    return "\n".join(lines)


class Progress:
    """``[3/12] name`` while a step runs, and how it ended: on a terminal one line rewritten in place,
    elsewhere (a CI log) a line per step, with the seconds it took and, once known, an ETA."""

    def __init__(self, total: int, stream: Any, *, enabled: bool = True) -> None:
        import time

        self.total, self.stream, self.enabled = total, stream, enabled
        self.tty = enabled and bool(getattr(stream, "isatty", lambda: False)())
        self.count, self.name, self.begun, self.first = 0, "", 0.0, time.monotonic()

    def start(self, name: str) -> None:
        import time

        self.count, self.name, self.begun = self.count + 1, name, time.monotonic()
        if self.tty:
            self.stream.write(f"\r\x1b[K[{self.count}/{self.total}] {name} ...")
            self.stream.flush()

    def done(self, outcome: str) -> None:
        import time

        if not self.enabled:
            return
        now = time.monotonic()
        left = (now - self.first) / self.count * (self.total - self.count)
        eta = f", about {left:.0f} s left" if self.count < self.total and now - self.first > 2 else ""
        line = f"[{self.count}/{self.total}] {self.name}: {outcome} in {now - self.begun:.1f} s{eta}"
        self.stream.write(f"\r\x1b[K{line}" if self.tty else line + "\n")
        self.stream.flush()

    def finished(self, name: str, outcome: str, seconds: float) -> None:
        """A step that ran beside others: counted and said when it ends (``start`` and ``done`` in one)."""
        import time

        self.start(name)
        self.begun = time.monotonic() - seconds
        self.done(outcome)

    def close(self) -> None:
        if self.tty and self.count:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def list_table(rows: list[Listing], width: int | None = None) -> str:
    """Names, groups and descriptions, each line at most ``width`` characters (:func:`terminal_width`): a
    long description wraps under itself. A kernel that needs a newer architecture than ``--arch`` is marked
    before its description: ``[needs sm_80: cp.async]``."""
    if not rows:
        return "no kernels found (kernels/, sanitizer_cases/, KPROF_PATH)"
    return table(["NAME", "GROUP", "DESCRIPTION"],
                 [(r.name, r.group, (f"[{r.unsupported}] " if r.unsupported else "") + r.description) for r in rows],
                 width=width)


def build_table(results: list[tuple[KernelSpec, BuildResult]], params: tuple[str, ...] = ()) -> str:
    """One row per build; ``params``, the defines given by --param, are shown beside each name."""
    rows: list[tuple[Any, ...]] = []
    for spec, built in results:
        u = built.usage_of(spec.entry)
        defines = dict(spec.defines)
        name = " ".join([spec.name, *(f"{k}={defines[k]}" for k in params if k in defines)])
        if spec.python:
            rows.append((name, built.arch, "-", "-", "-", "-", "-", "python (nothing to build)"))
            continue
        rows.append((
            name, built.arch, u.registers, u.shared_static, u.stack_frame,
            f"{u.spill_stores}/{u.spill_loads}", u.barriers, "cached" if built.cached else "built",
        ))  # fmt: skip
    return table(
        ["KERNEL", "ARCH", "REGS", "SMEM(B)", "STACK(B)", "SPILL ST/LD(B)", "BARRIERS", "CUBIN"],
        rows,
        "llrrrrrl",
    )


def run_report(result: ChildResult, resolved: Resolved, built: BuildResult) -> str:
    dev = result.device
    lines = [f"{result.kernel}  {resolved.size_text()}  on {dev.name if dev else '?'} ({dev.arch if dev else built.arch})"]
    from kprof.spec import pyref

    usage = built.usage_of(resolved.spec.entry)
    if resolved.spec.python:
        fw = (result.operation.framework if result.operation else None) or "?"
        lines.append(f"  a Python operation: {pyref.Ref.from_stored(resolved.spec.python).label()}, your code, run in "
                     f"kprof's runner on its buffers as {fw} tensors")
    else:
        lines.append(
            f"  grid {tuple(resolved.grid)} x block {tuple(resolved.block)}, {resolved.shared_mem} B dynamic shared, "
            f"{usage.registers} registers, {usage.shared_static} B static shared"
        )

    for _, ref in resolved.spec.reference:
        if pyref.is_stored(ref):
            lines.append(f"  reference: {pyref.Ref.from_stored(ref).label()}, your Python, run in kprof's runner process")
    for check in result.checks:
        verdict = "PASS" if check.ok else "FAIL"
        lines.append(f"  {check.name}: {verdict}  {check.message}")
        if check.note:
            lines.append(f"    note: {check.note}")
    if not result.nvtx:
        lines.append("  warning: the nvtx package is missing; launches carry no NVTX range (pip install nvtx)")
    if result.time_ms is not None:
        lines.append(
            f"  time: {result.time_ms:.4f} ms (one launch after one warm-up; `kprof bench` gives a median and its spread)"
        )
        seconds = result.time_ms / 1e3
        rates = []
        if resolved.flops:
            rates.append(si(resolved.flops / seconds, "FLOP/s"))
        if resolved.bytes:
            rates.append(si(resolved.bytes / seconds, "B/s"))
        if rates:
            lines.append(f"  throughput: {', '.join(rates)} (from the spec's work formulas)")
    if not result.ok:
        lines.append("  verification FAILED")
    return "\n".join(lines)


def doctor_table(checks: list[Check], ready: Sequence[Readiness] = (), width: int | None = None) -> str:
    """One check a line (wrapped to ``width``, default the terminal's, under its detail), and its fix; then
    whether each command asked about can run here, those lacking the same checks on one line."""
    width = width or terminal_width()
    out = []
    for c in checks:
        out += wrap(f"{'ok' if c.ok else 'MISSING':<8} {c.name:<18} {c.detail}", width, 28)
        if not c.ok and c.fix:
            out += wrap(f"{'':<9}fix: {c.fix}", width, 14)
    if ready:
        out.append("")
    groups: dict[tuple[str, ...], list[Readiness]] = {}
    for r in ready:
        groups.setdefault(r.missing, []).append(r)
    for missing, rs in groups.items():
        names = ", ".join(f"kprof {r.command}" for r in rs)
        line = f"{names}: ready" if not missing else f"{names}: cannot run here (exit {rs[0].exit_code}): missing " \
                                                       f"{', '.join(missing)}"
        out += wrap(line, width, 4)
    return "\n".join(out)


def _dim(t: tuple[int, ...] | None) -> str:
    return "(" + ",".join(str(v) for v in t) + ")" if t else "-"


def sanitize_report(results: list[ToolResult], notes: list[str] | None = None) -> str:
    """One line per tool, the findings table, then each finding with its detail and launch site."""
    lines = []
    for r in results:
        state = {"clean": "clean", "findings": f"{len(r.findings)} finding(s)",
                 "not-checked": "NOT CHECKED"}.get(r.status, r.status.upper())
        lines.append(f"{r.tool:<10} {state:<14} {r.seconds:6.1f} s  {r.message}".rstrip())
        if r.checked is not None:
            lines.append(f"{'':<10} checked: {r.checked.text()}")
        for note in r.notes[:3]:
            lines.append(f"{'':<10} note: {note}")
        if r.status in ("timeout", "target-error", "tool-error") and r.log:
            lines += [f"{'':<10} | {ln}" for ln in r.log.splitlines()[-8:]]
    versions = sorted({r.version for r in results if r.version})
    if versions:
        lines.append(f"checked by compute-sanitizer {', '.join(versions)}")
    lines += [f"set for the program: {n}" for n in notes or []]
    found = [f for r in results for f in r.findings]
    if not found:
        if all(r.ok for r in results):
            lines.append("no findings")
        elif all(r.ok or r.status == "not-checked" for r in results):
            lines.append("no findings, but not everything was checked")
        else:
            lines.append("no findings, but not every tool finished")
        return "\n".join(lines)
    consequences = [f for f in found if f.extra.explained_by]
    found = [f for f in found if not f.extra.explained_by]
    launched = any(f.launch for f in found)
    lines.append("")
    lines.append(table(
        ["TOOL", "KIND", "WHERE", "THREAD", "BLOCK", "BUFFER", "RECORDS", "LAUNCHES"]
        + (["LAUNCHED AT"] if launched else []),
        [(f.tool, f.kind, f.location(), _dim(f.thread), _dim(f.block), f.buffer or "-", f.count, f.launches or "-")
         + ((_short(f.launch),) if launched else ()) for f in found],
        "llllllrr" + ("l" if launched else ""),
    ))  # fmt: skip
    lines.append("")
    for f in found:
        where = f" in {short(f.kernel)}" if f.kernel else ""
        rank = f"rank {f.rank}: " if f.rank is not None else ""
        lines.append(f"- {rank}{f.tool} {f.kind} at {f.location()}{where}: {f.message}")
        if f.detail:
            lines.append(f"    {f.detail}")
        if f.extra.source:
            lines.append(f"    {f.extra.source}")
        if f.extra.library:
            lines.append(f"    inside {f.extra.library}'s own kernel: the library's code, not yours (check what your "
                         "code hands it)")
        if f.launch:
            lines.append(f"    launched at {f.launch}")
        for c in consequences:
            if c.extra.explained_by == label(f):
                lines.append(f"    consequence ({c.tool}): {c.kind}: {c.message}")
    return "\n".join(lines)


def _short(path: str | None) -> str:
    return path.rsplit("/", 1)[-1] if path else "-"


def cases_list(rows: list[dict[str, Any]], width: int | None = None) -> str:
    """The corpus, a case a row; why each known miss is missed below the table, wrapped to ``width``."""
    width = width or terminal_width()
    text = table(
        ["CASE", "TOOL", "KIND", "LINE", "BUFFER", "CAUGHT"],
        [(r["name"], r["tool"], r["kind"], r["line"], r["buffer"] or "-",
          ("no" if not r["caught"] else f"{r['since']}+" if r["since"] else "yes")) for r in rows], width=width,
    )  # fmt: skip
    if any(r["since"] for r in rows):
        text += "\n" + "\n".join(wrap("a version and +: caught by that compute-sanitizer version and newer; an older one "
                                      "cannot see the bug (kprof cases counts it apart)", width, 0))
    missed = [r for r in rows if not r["caught"]]
    if missed:
        text += "\n\nknown misses, and why:"
        for r in missed:
            text += "\n" + "\n".join(wrap(f"  {r['name']}: {r['why']}", width, 4))
    return text


def cases_matrix(results: list[CaseResult]) -> str:
    from kprof.corpus.cases import tally

    rows = []
    for r in results:
        e = r.case.expect
        found = ("yes" if r.caught else "known miss" if not e.caught
                 else f"needs {e.since} ({r.bug.version or 'unknown'} ran)" if r.unseen else f"NO ({r.bug.status})")
        twin = "yes" if r.twin_clean else "NO (" + ", ".join(r.twin_not_clean) + ")"
        rows.append((r.case.name, e.tool, e.kind, e.line, found, twin,
                     f"{r.bug.seconds + sum(t.seconds for t in r.twins):.1f}"))
    return table(["CASE", "TOOL", "EXPECTED KIND", "LINE", "FOUND", "TWIN CLEAN (ALL TOOLS)", "SECONDS"], rows,
                 "llllllr") + "\n" + tally(results)


def program_ranking(ranked: list[Ranked], top: int = 10, sites: Sites | None = None) -> str:
    """``kprof profile -- CMD``'s ranking (:func:`kprof.diagnosis.program.rank`), its denominators named,
    each kernel with the user's line that launched it first (``sites``: the run that found them)."""
    here = str(Path.cwd()) + "/"
    job = any(r.ranks for r in ranked)  # a multi-process job: which ranks launched each
    rows = []
    for r in ranked[:top]:
        where = r.sites[0].removeprefix(here) if r.sites else "-"
        more = len(r.sites) - 1
        where += (f" (+{more} more)" if more > 0 else "") + (" ?" if r.sites_by == "function name" else "")
        row: tuple[object, ...] = (short(r.kernel), r.launches, f"{r.seconds * 1e3:.3f}", f"{r.share:.1%}", r.limiter,
                                   "-" if r.headroom is None else f"{r.headroom:.2f}x",
                                   "-" if r.program_gain is None else f"{r.program_gain:.3f}x", where)
        rows.append(row + ((",".join(map(str, r.ranks)) or "-",) if job else ()))
    heads = ["KERNEL", "LAUNCHES", "MS", "SHARE", "LIMITER", "HEADROOM", "PROGRAM GAIN", "LAUNCHED FROM"]
    out = ("where the profiled GPU time goes (share: of the profiled launches' GPU time; headroom: 1 / the busiest "
           "unit's share of its peak, an estimate; program gain: Amdahl, that kernel at its roof"
           + ("; ranks: the job's processes that launched it" if job else "") + "):\n"
           + table(heads + (["RANKS"] if job else []), rows, "lrrrlrrl" + ("l" if job else "")))
    if sites is not None and not sites.counted:
        out += f"\nlaunched from: not found ({sites.why})"
    elif sites is not None:
        notes = ["launched from: the innermost line of the user's Python code on the launching thread, found in a "
                 "second run of the program without ncu"]
        if any(r.sites_by == "function name" for r in ranked[:top]):
            notes.append("'?': matched by the kernel's function name only, several instantiations together")
        if not sites.complete:
            notes.append("that run timed out, so kernels launched later have none")
        out += "\n" + "; ".join(notes)
    return out


def perf_cases_table(results: list[PerfResult], tally: dict[str, Any]) -> str:
    """``kprof cases --perf``: per case, the cause and line expected and named, the estimate against the
    twin's measured gain (benched in one run), and the try that confirmed it."""
    rows = []
    for r in results:
        est = "-" if r.estimate is None else f"{r.estimate:.2f}x" + ("" if r.estimate_right is None else
                                                                    " ok" if r.estimate_right else " OFF")
        tried = f"{r.tried} {r.try_gain:.2f}x" if r.try_gain else "-"
        ncu = "-" if r.ncu_rule is None else f"{r.ncu_rule} {r.ncu_speedup:.2f}x" + (" ok" if r.ncu_right else "")
        rows.append((r.case, r.expected, r.first or "-" if not r.error else "error", "yes" if r.cause_right else "NO",
                     r.line or "-", "yes" if r.line_right else "NO", est,
                     "-" if r.measured is None else f"{r.measured:.2f}x", tried, ncu))
    head = table(["CASE", "EXPECTED", "FIRST CAUSE", "RIGHT", "LINE", "RIGHT", "ESTIMATE", "MEASURED (TWIN)", "TRY",
                  "NCU'S FIRST RULE"], rows, "lllllllrll")
    errors = [f"  {r.case}: {r.error}" for r in results if r.error]
    t = tally
    summary = (f"first cause right on {t['cause_right']} of {t['cases']}, and at the right line on {t['line_right']}; "
               f"estimates within 1.5x of the twin's measured gain: {t['estimates_within']} of {t['estimates']} given; "
               f"confirmed by a try: {t['confirmed_by_try']}; Nsight Compute's largest estimate names the right cause on "
               f"{t['ncu_right']} of {t['ncu_judged']}")
    return "\n".join([head, *errors, summary])


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _f(x: float | None, fmt: str = ".2f") -> str:
    return "-" if x is None else format(x, fmt)


def profile_report(profiles: list[KernelProfile]) -> str:
    out = []
    for p in profiles:
        rank = f"  rank {p.rank}" if p.rank is not None else ""  # a job's process (kprof profile -- torchrun ...)
        out.append(f"{short(p.kernel)}  {' '.join(f'{k}={v}' for k, v in p.sizes.items())}{rank}  [{p.source}]")
        if p.duration_s is not None:
            out.append(f"  duration            {p.duration_s * 1e3:.4f} ms")
        out.append(f"  occupancy           achieved {_pct(p.achieved_occupancy)}, theoretical {_pct(p.theoretical_occupancy)}"
                   f", limited by {p.occupancy_limiter or '?'}; {p.registers} registers, block {p.block_size}"
                   + (f", {p.waves:.2f} waves" if p.waves is not None else ""))
        if p.occupancy_advice:
            out.append(f"                      {p.occupancy_advice}")
        if p.dram_read is not None:
            parts = [f"{_pct(p.dram_fraction)} of the {si(p.roofline.peak_bytes, 'B/s')} theoretical peak"
                     if p.roofline.peak_bytes else ""]
            parts.append(f"{_pct(p.of_ceiling)} of the measured {p.mix} ceiling {si(p.ceiling_bytes_per_s, 'B/s')}"
                         if p.of_ceiling is not None and p.ceiling_bytes_per_s else "no measured ceiling yet: kprof peak")
            frac = " (" + "; ".join(x for x in parts if x) + ")"
            out.append(f"  DRAM                read {si(p.dram_read, 'B')}, written {si(p.dram_write or 0, 'B')}, "
                       f"{si(p.dram_bytes_per_s or 0, 'B/s')}{frac}")
        elif p.dram_bytes_per_s is not None:
            out.append(f"  bandwidth           {si(p.dram_bytes_per_s, 'B/s')} effective (spec bytes / time)")
        if p.l1_hit is not None or p.l2_hit is not None:
            out.append(f"  caches              L1 hit {_pct(p.l1_hit)}, L2 hit {_pct(p.l2_hit)}")
        if p.conflicts_per_request is not None or p.shared_bank_conflicts:
            use = (f", {si(p.shared_bytes_per_s, 'B/s')} ({_pct(p.shared_fraction)} of the pipe's peak)"
                   if p.shared_bytes_per_s is not None else "")
            out.append(f"  shared memory       {_f(p.shared_bank_conflicts, ',.0f')} bank conflicts, "
                       f"{_f(p.conflicts_per_request)} per request{use}")
        if p.global_load_sectors_per_request is not None:
            out.append(f"  global sectors/req  loads {_f(p.global_load_sectors_per_request)}, stores "
                       f"{_f(p.global_store_sectors_per_request)} (4 is ideal for 4-byte accesses, 32 is one sector per lane)")
        if p.local_bytes:
            out.append(f"  local memory        {si(p.local_bytes, 'B')} of traffic (spills or local arrays)")
        if p.flops_per_s is not None:
            top = p.roofline.peak_flops
            kind = "dense 16-bit tensor" if p.math == "tensor" else "FP32"
            peak = f" ({_pct(p.flops_per_s / top)} of the {si(top, 'FLOP/s')} {kind} peak)" if top else ""
            out.append(f"  compute             {si(p.flops or 0, 'FLOP')}, {si(p.flops_per_s, 'FLOP/s')}{peak}")
        if p.fma_pipe is not None or p.issue_active is not None:
            out.append(f"  issue               FMA pipe busy {_pct(p.fma_pipe)}, an instruction issued in "
                       f"{_pct(p.issue_active)} of active cycles")
        if p.tensor_pipe or p.math == "tensor":
            gmma = "" if p.wgmma is None else (f", {si(p.wgmma, '')} warpgroup MMA (wgmma) instructions" if p.wgmma
                                                else ", no wgmma (mma.sync or HMMA only)")
            out.append(f"  tensor cores        tensor pipe busy {_pct(p.tensor_pipe)} of active cycles{gmma}")
        r = p.roofline
        if r.bound and r.attainable is not None:
            out.append(f"  roofline            {r.intensity:.2f} FLOP/byte (ridge {r.ridge:.1f}): {r.bound}-bound, "
                       f"at {_pct(r.fraction)} of the {si(r.attainable, 'FLOP/s')} the roofline allows")
        if p.stalls:
            out.append("  top stalls          " + ", ".join(f"{n} {v:.2f}" for n, v in p.stalls[:4])
                       + " (warps stalled per issued instruction)")
        for note in p.notes:
            out.append(f"  note: {note}")
        out.append("")
    if len(profiles) > 1:
        rows = []
        for p in profiles:
            rows.append((
                short(p.kernel, 48), _f(p.duration_s * 1e3 if p.duration_s else None, ".4f"),
                f"{_pct(p.achieved_occupancy)}/{_pct(p.theoretical_occupancy)}", p.occupancy_limiter or "-",
                si(p.dram_bytes_per_s, "B/s") if p.dram_bytes_per_s else "-", _pct(p.l2_hit),
                si(p.flops_per_s, "FLOP/s") if p.flops_per_s else "-",
                f"{p.roofline.bound} {_pct(p.roofline.fraction)}" if p.roofline.bound else "-",
                _f(p.conflicts_per_request), _f(p.global_load_sectors_per_request),
                p.stalls[0][0] if p.stalls else "-",
            ))  # fmt: skip
        out.append(table(["KERNEL", "TIME(ms)", "OCC ach/theo", "LIMITER", "DRAM", "L2 HIT", "FP32", "ROOFLINE",
                          "CONFL/REQ", "LD SECT/REQ", "TOP STALL"], rows, "lrrlrrrlrrl"))
    return "\n".join(out).rstrip()


def occupancy_report(name: str, arch: str, usage: ResourceUsage, dynamic: int, chosen: list[Occupancy],
                     table_rows: list[Occupancy], advice: list[str]) -> str:
    out = [f"{name} on {arch}: {usage.registers} registers per thread, {usage.shared_static:,} B static + "
           f"{dynamic:,} B dynamic shared memory per block"]
    for occ, tip in zip(chosen, advice):
        out.append(f"  block {occ.block_size}: {occ.describe()}")
        out.append(f"    {tip}")
    width = terminal_width()
    out = fit(out, width, 2)
    out.append("")
    out.append(table(["BLOCK", "BLOCKS/SM", "WARPS/SM", "OCCUPANCY", "LIMITER"],
                     [(o.block_size, o.blocks_per_sm, o.warps_per_sm, _pct(o.occupancy), o.limiter) for o in table_rows],
                     "rrrrl", width=width))
    return "\n".join(out)


def baseline_label(baseline: str | None, asked: str | None = None) -> str:
    """How a report names a baseline: the name it was asked by (torch.compile), else cublas_sgemm, a
    spec's name, or a Python callable's FILE.py:FUNCTION."""
    from kprof.spec.baseline import label_of

    return label_of(baseline, asked)


def _baseline_notes(b: BaselineResult | None) -> list[str]:
    """What a report says beside a baseline's time: cuBLAS's math mode, the kernels one call launched,
    the framework its inputs came as, its compile time."""
    if b is None:
        return []
    notes = [b.math_mode or "",
             f"{b.baseline_kernels} kernel(s) per call" if b.baseline_kernels is not None else "",
             f"{b.baseline_framework} inputs" if b.baseline_framework else "",
             f"prepared (compiled) in {b.baseline_prepare_s:.1f} s" if b.baseline_prepare_s is not None else ""]
    return [n for n in notes if n]


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:,.1f}"


def bench_table(results: list[PointResult], peak: Ceilings | None, run_id: str | None) -> str:
    rows = []
    for r in results:
        point = " ".join([f"{k}={v}" for k, v in r.sizes.items()] + [f"{k}={v}" for k, v in r.params.items()])
        s = r.summary
        if r.status != "ok" or s is None:
            rows.append((r.kernel, point, r.status.upper(), "", "", "", "", "", "", "", "", ""))
            continue
        base = "-"
        if r.of_baseline is not None:
            # A library routine is the target ("78% of cublas_sgemm"); another spec is what the kernel
            # replaces ("3.41x faster than rmsnorm_unfused").
            label = r.first.label if r.first else "-"
            base = (f"{r.of_baseline:.0%} of {label}" if r.first and r.first.baseline_kind == "library"
                    else f"{r.of_baseline:.2f}x faster than {label}" if r.of_baseline >= 1
                    else f"{1 / r.of_baseline:.2f}x slower than {label}")
        rows.append((
            r.kernel, point, _us(s.median), f"{_us(s.q1)}-{_us(s.q3)}", f"{s.rel_stdev:.1%}", r.stop or "",
            si(r.flops_per_s, "FLOP/s") if r.flops_per_s else "-", si(r.bytes_per_s, "B/s") if r.bytes_per_s else "-",
            _pct(r.of_fma_peak) if r.of_fma_peak else "-",
            f"{_pct(r.of_ceiling)} {r.mix}" if r.of_ceiling and r.bytes_per_s else "-",
            _pct(r.of_dram_peak) if r.of_dram_peak else "-", base,
        ))  # fmt: skip
    out = [table(["KERNEL", "POINT", "MEDIAN(us)", "IQR(us)", "RSD", "STOP", "FLOP/s", "BYTES/s", "%FMA CEIL",
                  "%BW CEIL (MIX)", "%DRAM PEAK", "VS BASELINE"], rows, "llrrrlrrrrrl")]
    for r in results:
        if r.of_baseline is not None and r.baseline_summary:
            rate = (si(r.baseline_flops_per_s, "FLOP/s") if r.baseline_flops_per_s and r.flops_per_s and r.bytes_per_s
                    and r.flops and r.bytes and r.flops >= r.bytes else si(r.baseline_bytes_per_s or 0, "B/s"))
            label = r.first.label if r.first else "-"
            out.append(f"{r.kernel} {' '.join(f'{k}={v}' for k, v in r.sizes.items())}: {label} "
                       f"median {_us(r.baseline_summary.median)} us ({rate})"
                       + "".join(f", {e}" for e in _baseline_notes(r.first)))
        for more in r.others:
            if more.of_baseline and more.baseline_summary:
                ratio = more.of_baseline
                faster = f"{ratio:.2f}x faster than" if ratio >= 1 else f"{1 / ratio:.2f}x slower than"
                out.append(f"{r.kernel} {' '.join(f'{k}={v}' for k, v in r.sizes.items())}: {faster} "
                           f"{more.label} (median {_us(more.baseline_summary.median)} us"
                           + "".join(f", {n}" for n in _baseline_notes(more)) + ")")
        for w in r.warnings:
            out.append(f"warning: {r.kernel}: {w}")
        if r.message:
            out.append(f"{r.kernel}: {r.message}")
    if peak:
        out.append(ceilings_line(peak))
    mode = results[0].mode if results else "cold"
    timers = sorted({r.timer for r in results if r.timer})
    how = {"cupti": "the kernel's own GPU start and end (CUPTI activity records)",
           "events": "its own CUDA events around the launch"}
    timed = " and ".join(how.get(t, t) for t in timers) or "its own CUDA events around the launch"
    out.append(f"{mode} mode; median over samples, each timed by {timed}"
               + (f"; recorded as run {run_id} (kprof history, kprof compare)" if run_id else ""))
    for note in sorted({r.timer_note for r in results if r.timer_note}):
        out.append(f"note: CUPTI timing not used: {note}")
    return "\n".join(out)


def ceilings_line(peak: Ceilings) -> str:
    th = peak.theoretical
    measured = ", ".join(f"{k} {si(c.bytes_per_s, 'B/s')}" for k, c in peak.mixes.items())
    if not measured and peak.copy_bytes_per_s:
        measured = f"copy {si(peak.copy_bytes_per_s, 'B/s')}"
    theory = ", ".join(x for x in (f"DRAM {si(th.dram_bytes_per_s, 'B/s')}" if th.dram_bytes_per_s else "",
                                   f"FP32 {si(th.fp32_flops_per_s, 'FLOP/s')}" if th.fp32_flops_per_s else "") if x)
    src = "cached " + peak.cached if peak.cached else "measured now"
    if peak.seconds is not None and not peak.cached:
        src += f" in {peak.seconds:.0f} s"
    fma = si(peak.fma_flops_per_s, "FLOP/s") if peak.fma_flops_per_s else "unknown"
    quick = "; quick: each mix once, no PyTorch op (`kprof peak` measures all)" if peak.quick else ""
    return (f"measured ceilings ({src}{quick}): {measured}, FP32 FMA {fma}"
            + (f"; theoretical peaks: {theory}" if theory else ""))


def peak_report(peak: Ceilings) -> str:
    took = f" in {peak.seconds:.0f} s" if peak.seconds is not None else ""
    src = f"cached in {peak.cached}" if peak.cached else f"measured now{took}"
    lines = [f"{peak.gpu or 'GPU'} (driver {peak.driver or '?'}), {src}, measured {peak.measured or '?'}"]
    th = peak.theoretical
    dram, fp32 = th.dram_bytes_per_s, th.fp32_flops_per_s
    lines.append("theoretical peaks, from the device's attributes:")
    lines.append(f"  DRAM bandwidth  {si(dram, 'B/s') if dram else 'unknown'}  ({th.formula('dram')})")
    lines.append(f"  FP32 rate       {si(fp32, 'FLOP/s') if fp32 else 'unknown'}  ({th.formula('fp32')})")
    if th.tensor_flops_per_s:  # a peak file of an older kprof has none
        lines.append(f"  tensor, 16-bit  {si(th.tensor_flops_per_s, 'FLOP/s')}  (dense, FP32 accumulation, the fastest "
                     f"part of this architecture: {th.formula('tensor')})")
    if th.attributes:
        lines.append("  from " + "; ".join(f"{k} = {v}" for k, v in th.attributes))
    lines += [f"  note: {n}" for n in th.notes]
    lines.append("measured ceilings (cold; the best of kprof's stream kernels over the access widths, grids and sizes "
                 "tried, and of PyTorch's op of each mix where it is installed):")
    for kind, c in peak.mixes.items():
        frac = f", {c.bytes_per_s / dram:.0%} of the DRAM peak" if dram else ""
        lines.append(f"  {kind:<6} {si(c.bytes_per_s, 'B/s'):>12}  by {c.by}{frac}")
    lines += [f"  not measured: {why}" for why in peak.not_measured]
    if peak.ops_note:
        lines.append(f"  note: {peak.ops_note}")
    if not peak.mixes and peak.copy_bytes_per_s:
        lines.append(f"  copy   {si(peak.copy_bytes_per_s, 'B/s'):>12}  (a peak file from an older kprof: --refresh)")
    if peak.memcpy_bytes_per_s:
        lines.append(f"  device-to-device memcpy {si(peak.memcpy_bytes_per_s, 'B/s')} (timed by CUDA events)")
    if peak.fma_flops_per_s:
        frac = f", {peak.fma_flops_per_s / fp32:.0%} of the FP32 peak" if fp32 else ""
        lines.append(f"  FP32 FMA {si(peak.fma_flops_per_s, 'FLOP/s'):>12}  by kprof_fma (warm){frac}")
    top = th.tensor_flops_per_s
    for r in peak.tensor:
        if r.flops_per_s:
            frac = f", {r.flops_per_s / top:.0%} of the dense 16-bit tensor peak" if top else ""
            lines.append(f"  tensor   {si(r.flops_per_s, 'FLOP/s'):>12}  by {r.by}{frac}")
        else:
            lines.append(f"  tensor   not measured by {r.name}: {r.not_measured}")
    width = terminal_width()
    return "\n".join(fit(lines, width, 4))


def history_table(rows: list[history.HistoryRow], where: str) -> str:
    if not rows:
        return f"no bench results yet in {where}"
    out = []
    for r in rows:
        point = " ".join(f"{k}={v}" for k, v in r.values.items())
        med = _us(r.summary.median) if r.summary else r.status
        out.append((r.run, r.kernel, point, med, r.commit or "-", r.gpu or "-"))
    return table(["RUN", "KERNEL", "POINT", "MEDIAN(us)", "COMMIT", "GPU"], out, "lllrll") + f"\n(store: {where})"


def compare_table(before: str, after: str, rows: list[history.RunChange]) -> str:
    body = [(r.kernel, " ".join(f"{k}={v}" for k, v in r.values.items()),
             _us(r.before_s), _us(r.after_s), f"{r.change:+.1%}", r.verdict) for r in rows]
    return f"before: {before}\nafter:  {after}\n" + table(
        ["KERNEL", "POINT", "BEFORE(us)", "AFTER(us)", "CHANGE", "VERDICT"], body, "llrrrl")


def mutants_report(report: Any) -> str:
    """``kprof mutants``: one row per mutant (what killed it, or how it was found equivalent), the
    score, and each survivor's diff."""
    def verdict(r: Any) -> str:
        shown = r.verdict.upper() if r.verdict == "survived" else r.verdict
        return f"{shown} ({r.by})" if r.by else shown

    rows = [(r.mutant.id, r.mutant.operator, r.mutant.line, verdict(r), _cut(r.why, 90)) for r in report.results]
    out = [f"{report.spec}: {len(report.results)} mutants of {report.source}"
           + (" (built, not run: --dry-run)" if report.dry_run else f", each run at {', '.join(report.sizes)}"
              + (f"; where the verdict passed one, under {', '.join(report.tools)} at the sanitize size" if report.tools
                 else "")), "",
           table(["ID", "OPERATOR", "LINE", "VERDICT", "WHY"], rows, "llrll"), ""]
    killed, counted, share = report.score
    if report.dry_run:
        built = sum(r.verdict == "built" for r in report.results)
        out.append(f"{built} built, {sum(r.verdict == 'equivalent' for r in report.results)} equivalent, "
                   f"{sum(r.verdict == 'not-built' for r in report.results)} did not build")
    else:
        by_verdict = sum(r.verdict == "killed" and r.by == "verdict" for r in report.results)
        by = Counter(r.by for r in report.results if r.verdict in ("equivalent", "survived"))
        same_code, by_launch, at_boundary = by[mutants.BY_MACHINE_CODE], by[mutants.BY_LAUNCH], by[mutants.BY_BOUNDARY]
        same_results, not_met, noted = by[mutants.BY_SAME_RESULTS], by[mutants.BY_NOT_MET], by[mutants.BY_NOTE]
        strict_killed, strict_counted, strict = report.strict_score
        out.append(f"score: {killed} of {counted} non-equivalent mutants killed"
                   + (f" ({share:.0%})" if share is not None else "")
                   + f": {by_verdict} by the verdict, {killed - by_verdict} by a tool; {same_code} equivalent (the "
                   f"same machine code), {by_launch} by the spec's launch (a bound it never meets), {at_boundary} "
                   "equivalent by their results at a boundary the checked sizes meet"
                   + (f", {noted} by the source's note" if noted else "")
                   + (f" ({strict_killed} of {strict_counted}, {strict:.0%}, counting those as survivors)"
                      if (at_boundary or noted) and strict is not None else "")
                   + f"; of the survivors, {not_met} move a bound no checked size meets, {same_results} gave the "
                     "original's results to the last bit")
    for r in report.results:
        if r.verdict == "survived":
            why = {mutants.BY_SAME_RESULTS: "the original's results to the last bit: its line may not run at these sizes, "
                                            "or it is equivalent",
                   mutants.BY_NOT_MET: r.why}.get(
                r.by, "the verdict passed a wrong kernel (the tolerance, the reference or the sizes are too weak here)")
            out += ["", f"survived {r.mutant.id}: {why}", r.mutant.diff()]
    return "\n".join(out)


def bench_cases_list(rows: list[dict[str, Any]]) -> str:
    """``kprof cases --bench --list``: each cheat, its exploit, the flags that catch it."""
    return table(["CHEAT", "EXPLOIT", "CAUGHT BY"], [(r["name"], _cut(r["exploit"], 70), ", ".join(r["catch"]))
                                                      for r in rows], "lll")


def bench_cases_report(report: Any) -> str:
    """``kprof cases --bench``: caught or missed per cheat, by which flag, and the honest operation's flags."""
    rows = [(r.cheat.name, "caught" if r.caught else "MISSED", ", ".join(r.kinds) or "none", _cut(r.cheat.exploit, 60))
            for r in report.results]
    caught = sum(r.caught for r in report.results)
    honest = ("the honest operation: no flag" if not report.honest else
              "the honest operation: FLAGGED (a false alarm): " + "; ".join(report.honest))
    return "\n".join([table(["CHEAT", "RESULT", "FLAGS", "EXPLOIT"], rows, "llll"), "",
                      f"{caught} of {len(report.results)} cheats caught; {honest}"])


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def checkers_table(rows: list[dict[str, Any]]) -> str:
    """``kprof sanitize --list-tools``: each checker, what it finds, and how it runs."""
    def how(needs: dict[str, object]) -> str:
        parts = ["compute-sanitizer" if needs["sanitizer"] else "kprof's own (no sanitizer)"]
        parts += ["the GPU to itself"] * bool(needs["alone"])
        parts += ["not for pytest tests"] * bool(needs["not_for_tests"])
        parts += ["programs only when named"] * (not needs["in_all_programs"])
        return ", ".join(parts)

    return table(["TOOL", "FINDS", "RUNS"], [[r["name"], r["summary"], how(r["needs"])] for r in rows])
