"""Text of what kprof profile returns: a kernel's counters, a program's ranking, the performance
corpus."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kprof.demangle import short
from kprof.results.render import number, percent, table
from kprof.units import si

if TYPE_CHECKING:
    from kprof.corpus.perfcases import PerfResult
    from kprof.diagnosis.program import Ranked
    from kprof.measure.kernelprofile import KernelProfile
    from kprof.tools.programs.launchsites import Sites


def program_ranking(ranked: list[Ranked], top: int = 10, sites: Sites | None = None) -> str:
    """``kprof profile -- CMD``'s ranking (:func:`kprof.diagnosis.program.rank`), its denominators
    named, each kernel with the user's line that launched it first (``sites``: the run that found
    them)."""
    here = str(Path.cwd()) + "/"
    job = any(r.ranks for r in ranked)  # a multi-process job: which ranks launched each
    rows = []
    for r in ranked[:top]:
        where = r.sites[0].removeprefix(here) if r.sites else "-"
        more = len(r.sites) - 1
        where += (f" (+{more} more)" if more > 0 else "") + (" ?" if r.sites_by == "function name"
                                                             else "")
        row: tuple[object, ...] = (short(r.kernel), r.launches, f"{r.seconds * 1e3:.3f}",
                                   f"{r.share:.1%}", r.limiter,
                                   "-" if r.headroom is None else f"{r.headroom:.2f}x",
                                   "-" if r.program_gain is None else f"{r.program_gain:.3f}x",
                                   where)
        rows.append(row + ((",".join(map(str, r.ranks)) or "-",) if job else ()))
    heads = ["KERNEL", "LAUNCHES", "MS", "SHARE", "LIMITER", "HEADROOM", "PROGRAM GAIN",
             "LAUNCHED FROM"]
    out = ("where the profiled GPU time goes (share: of the profiled launches' GPU time; headroom: "
           "1 / the busiest unit's share of its peak, an estimate; program gain: Amdahl, that "
           "kernel at its roof"
           + ("; ranks: the job's processes that launched it" if job else "") + "):\n"
           + table(heads + (["RANKS"] if job else []), rows, "lrrrlrrl" + ("l" if job else "")))
    if sites is not None and not sites.counted:
        out += f"\nlaunched from: not found ({sites.why})"
    elif sites is not None:
        notes = ["launched from: the innermost line of the user's Python code on the launching "
                 "thread, found in a second run of the program without ncu"]
        if any(r.sites_by == "function name" for r in ranked[:top]):
            notes.append("'?': matched by the kernel's function name only, several instantiations "
                         "together")
        if not sites.complete:
            notes.append("that run timed out, so kernels launched later have none")
        out += "\n" + "; ".join(notes)
    return out


def perf_cases_table(results: list[PerfResult], tally: dict[str, Any]) -> str:
    """``kprof cases --perf``: per case, the cause and line expected and named, the estimate against
    the twin's measured gain (benched in one run), and the try that confirmed it."""
    rows = []
    for r in results:
        est = "-" if r.estimate is None else f"{r.estimate:.2f}x" + ("" if r.estimate_right is None else
                                                                    " ok" if r.estimate_right else " OFF")
        tried = f"{r.tried} {r.try_gain:.2f}x" if r.try_gain else "-"
        ncu = "-" if r.ncu_rule is None else f"{r.ncu_rule} {r.ncu_speedup:.2f}x" + (" ok" if r.ncu_right else "")
        rows.append((r.case, r.expected, r.first or "-" if not r.error else "error",
                     "yes" if r.cause_right else "NO",
                     r.line or "-", "yes" if r.line_right else "NO", est,
                     "-" if r.measured is None else f"{r.measured:.2f}x", tried, ncu))
    head = table(["CASE", "EXPECTED", "FIRST CAUSE", "RIGHT", "LINE", "RIGHT", "ESTIMATE",
                  "MEASURED (TWIN)", "TRY", "NCU'S FIRST RULE"], rows, "lllllllrll")
    errors = [f"  {r.case}: {r.error}" for r in results if r.error]
    t = tally
    summary = (f"first cause right on {t['cause_right']} of {t['cases']}, and at the right line on "
               f"{t['line_right']}; estimates within 1.5x of the twin's measured gain: "
               f"{t['estimates_within']} of {t['estimates']} given; confirmed by a try: "
               f"{t['confirmed_by_try']}; Nsight Compute's largest estimate names the right cause "
               f"on {t['ncu_right']} of {t['ncu_judged']}")
    return "\n".join([head, *errors, summary])


def profile_report(profiles: list[KernelProfile]) -> str:
    out = []
    said: dict[str, str] = {}  # a long note -> the kernel it was printed for
    for p in profiles:
        rank = f"  rank {p.rank}" if p.rank is not None else ""  # kprof profile -- torchrun ...
        out.append(f"{short(p.kernel)}  {' '.join(f'{k}={v}' for k, v in p.sizes.items())}{rank}  "
                   f"[{p.source}]")
        if p.duration_s is not None:
            out.append(f"  duration            {p.duration_s * 1e3:.4f} ms")
        out += _occupancy_lines(p) + _memory_lines(p) + _compute_lines(p)
        for note in p.notes:  # why counters are missing and how to enable them: said once
            if note in said and len(note) > 60:
                out.append(f"  note: as for {said[note]} above")
                continue
            said.setdefault(note, short(p.kernel, 48))
            out.append(f"  note: {note}")
        out.append("")
    if len(profiles) > 1:
        out.append(_profiles_table(profiles))
    return "\n".join(out).rstrip()


def _occupancy_lines(p: KernelProfile) -> list[str]:
    o = p.occupancy
    waves = f", {o.waves:.2f} waves" if o.waves is not None else ""
    out = [f"  occupancy           achieved {percent(o.achieved_occupancy)}, theoretical "
           f"{percent(o.theoretical_occupancy)}, limited by {o.occupancy_limiter or '?'}; "
           f"{o.registers} registers, block {o.block_size}{waves}"]
    if o.occupancy_advice:
        out.append(f"                      {o.occupancy_advice}")
    return out


def _memory_lines(p: KernelProfile) -> list[str]:
    """DRAM, the caches, shared memory, sectors per request and local memory, where measured."""
    m, sh, out = p.memory, p.shared, []
    if m.dram_read is not None:
        parts = [f"{percent(m.dram_fraction)} of the {si(p.roofline.peak_bytes, 'B/s')} "
                 "theoretical peak" if p.roofline.peak_bytes else ""]
        parts.append(f"{percent(m.of_ceiling)} of the measured {m.mix} ceiling "
                     f"{si(m.ceiling_bytes_per_s, 'B/s')}"
                     if m.of_ceiling is not None and m.ceiling_bytes_per_s
                     else "no measured ceiling yet: kprof peak")
        frac = " (" + "; ".join(x for x in parts if x) + ")"
        out.append(f"  DRAM                read {si(m.dram_read, 'B')}, written "
                   f"{si(m.dram_write or 0, 'B')}, {si(m.dram_bytes_per_s or 0, 'B/s')}{frac}")
    elif m.dram_bytes_per_s is not None:
        out.append(f"  bandwidth           {si(m.dram_bytes_per_s, 'B/s')} effective (spec "
                   "bytes / time)")
    if m.l1_hit is not None or m.l2_hit is not None:
        out.append(f"  caches              L1 hit {percent(m.l1_hit)}, L2 hit {percent(m.l2_hit)}")
    if sh.conflicts_per_request is not None or sh.shared_bank_conflicts:
        use = (f", {si(sh.shared_bytes_per_s, 'B/s')} ({percent(sh.shared_fraction)} of the "
               "pipe's peak)" if sh.shared_bytes_per_s is not None else "")
        out.append(f"  shared memory       {number(sh.shared_bank_conflicts, ',.0f')} bank "
                   f"conflicts, {number(sh.conflicts_per_request)} per request{use}")
    if m.global_load_sectors_per_request is not None:
        out.append(f"  global sectors/req  loads {number(m.global_load_sectors_per_request)}, "
                   f"stores {number(m.global_store_sectors_per_request)} (4 is ideal for "
                   "4-byte accesses, 32 is one sector per lane)")
    if m.local_bytes:
        out.append(f"  local memory        {si(m.local_bytes, 'B')} of traffic (spills or "
                   "local arrays)")
    return out


def _compute_lines(p: KernelProfile) -> list[str]:
    """FLOPs, the issue slots, the tensor cores, the roofline and the top stalls, where measured."""
    c, r, out = p.compute, p.roofline, []
    if c.flops_per_s is not None:
        top = r.peak_flops
        kind = "dense 16-bit tensor" if p.math == "tensor" else "FP32"
        peak = f" ({percent(c.flops_per_s / top)} of the {si(top, 'FLOP/s')} {kind} peak)" if top else ""
        out.append(f"  compute             {si(c.flops or 0, 'FLOP')}, "
                   f"{si(c.flops_per_s, 'FLOP/s')}{peak}")
    if c.fma_pipe is not None or c.issue_active is not None:
        out.append(f"  issue               FMA pipe busy {percent(c.fma_pipe)}, an instruction "
                   f"issued in {percent(c.issue_active)} of active cycles")
    if c.tensor_pipe or p.math == "tensor":
        gmma = ("" if c.wgmma is None else
                f", {si(c.wgmma, '')} warpgroup MMA (wgmma) instructions" if c.wgmma else
                ", no wgmma (mma.sync or HMMA only)")
        out.append(f"  tensor cores        tensor pipe busy {percent(c.tensor_pipe)} of active "
                   f"cycles{gmma}")
    if r.bound and r.attainable is not None:
        out.append(f"  roofline            {r.intensity:.2f} FLOP/byte (ridge {r.ridge:.1f}): "
                   f"{r.bound}-bound, at {percent(r.fraction)} of the "
                   f"{si(r.attainable, 'FLOP/s')} the roofline allows")
    if p.stalls.top:
        out.append("  top stalls          " + ", ".join(f"{n} {v:.2f}" for n, v in p.stalls.top[:4])
                   + " (warps stalled per issued instruction)")
    return out


def _profiles_table(profiles: list[KernelProfile]) -> str:
    """Several kernels side by side, one row each."""
    rows = []
    for p in profiles:
        o, m, sh, c = p.occupancy, p.memory, p.shared, p.compute
        rows.append((
            short(p.kernel, 48), number(p.duration_s * 1e3 if p.duration_s else None, ".4f"),
            f"{percent(o.achieved_occupancy)}/{percent(o.theoretical_occupancy)}",
            o.occupancy_limiter or "-",
            si(m.dram_bytes_per_s, "B/s") if m.dram_bytes_per_s else "-", percent(m.l2_hit),
            si(c.flops_per_s, "FLOP/s") if c.flops_per_s else "-",
            f"{p.roofline.bound} {percent(p.roofline.fraction)}" if p.roofline.bound else "-",
            number(sh.conflicts_per_request), number(m.global_load_sectors_per_request),
            p.stalls.top[0][0] if p.stalls.top else "-",
        ))  # fmt: skip
    return table(["KERNEL", "TIME(ms)", "OCC ach/theo", "LIMITER", "DRAM", "L2 HIT", "FP32",
                  "ROOFLINE", "CONFL/REQ", "LD SECT/REQ", "TOP STALL"], rows, "lrrlrrrlrrl")
