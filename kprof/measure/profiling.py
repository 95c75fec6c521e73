"""``kprof profile``: one ncu run per kernel, turned into the numbers that explain speed.

``analyse()`` is pure: ncu's raw metrics in, a :class:`KernelProfile` out (occupancy and its
limiter, DRAM traffic against the ceiling, cache hit rates, bank conflicts and sectors per request,
FLOPs from the SASS counters, arithmetic intensity and the roofline verdict, the top stall
reasons). :func:`kprof.tools.nsight.ncu.profile_rows` runs ncu over the runner and gives the raw
rows. When ncu may not read counters, ``fallback()`` reports what needs none: event timing,
theoretical occupancy, and effective bandwidth and FLOP rate from the spec's work formulas.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kprof.build import occupancy
from kprof.errors import KprofError
from kprof.launch.job import RunMode
from kprof.measure import ceilings
from kprof.measure.kernelprofile import Compute, KernelProfile, Memory, Occupancy, Roofline, Shared, Stalls

__all__ = ["analyse", "fallback", "profile_program", "profile_spec", "reports"]
from kprof.tools.nsight import sourcepage
from kprof.tools.nsight.ncu import STALL_REASONS, Value
from kprof.tools.nsight.sourcepage import SourceLines

if TYPE_CHECKING:
    from kprof.build.build import BuildResult
    from kprof.launch.job import Job
    from kprof.spec import Resolved

def _num(row: dict[str, Value], key: str) -> float | None:
    v = row.get(key)
    return v.value if v is not None and isinstance(v.value, float) else None


def _div(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


Getter = Callable[[str], "float | None"]


def _times(k: float, x: float | None) -> float | None:
    return k * x if x is not None else None


def _stall_ratios(g: Getter) -> dict[str, float]:
    """Each stall reason ncu counted (warps stalled per issued instruction), "selected" (an issuing
    warp) left out."""
    found = {r: g(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio")
             for r in STALL_REASONS if r != "selected"}
    return {r: v for r, v in found.items() if v}


def _stalls(ratios: dict[str, float]) -> tuple[tuple[str, float], ...]:
    """The five largest stall reasons."""
    return tuple(sorted(ratios.items(), key=lambda rv: -rv[1])[:5])


def _sum(*xs: float | None) -> float | None:
    known = [x for x in xs if x is not None]
    return sum(known) if known else None


def _stall_shares(ratios: dict[str, float]) -> dict[str, float]:
    """Each stall reason's share of all warp stalls."""
    total = sum(ratios.values())
    return {r: v / total for r, v in ratios.items()} if total else {}


def _flops(g: Getter) -> float | None:
    """FLOPs from the SASS instruction counters (an FMA is two)."""
    parts = [g(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum")
             for op in ("fadd", "fmul", "dadd", "dmul")]
    fmas = [g(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum") for op in ("ffma", "dfma")]
    counted = [p for p in parts + fmas if p is not None]
    return (sum(p for p in parts if p) + 2 * sum(f for f in fmas if f)) if counted else None


def _shared(g: Getter, duration: float | None) -> Shared:
    """Shared-memory bank conflicts and requests, and its pipe's use."""
    conflicts = shared_req = None
    if g("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum") is not None:
        conflicts = (g("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum") or 0) + (
            g("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum") or 0)
    if g("smsp__sass_inst_executed_op_shared_ld.sum") is not None:
        shared_req = (g("smsp__sass_inst_executed_op_shared_ld.sum") or 0) + (
            g("smsp__sass_inst_executed_op_shared_st.sum") or 0)
    return Shared(
        shared_bank_conflicts=conflicts, shared_requests=shared_req,
        conflicts_per_request=_div(conflicts, shared_req),
        shared_bytes_per_s=_div(_times(128, g("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum")),
                                duration),
        shared_fraction=_div(g("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed"), 100),
    )


def _local_bytes(g: Getter) -> float | None:
    """Spill traffic: local memory bytes loaded and stored."""
    if g("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum") is None:
        return None
    return 32 * ((g("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum") or 0)
                 + (g("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum") or 0))


def _occupancy(g: Getter, arch: str | None) -> Occupancy:
    """Achieved and theoretical occupancy, its limiter, the launch's shape, and kprof's advice."""
    limits = {
        "registers": g("launch__occupancy_limit_registers"),
        "shared memory": g("launch__occupancy_limit_shared_mem"),
        "warps": g("launch__occupancy_limit_warps"), "blocks": g("launch__occupancy_limit_blocks"),
    }  # fmt: skip
    known = {k: v for k, v in limits.items() if v is not None}
    limiter = min(known, key=lambda k: known[k]) if known else None
    theoretical = _div(g("sm__maximum_warps_per_active_cycle_pct"), 100)
    if theoretical is not None and theoretical >= 1.0:
        limiter = "nothing (the maximum)"
    registers = int(g("launch__registers_per_thread") or 0) or None
    block = int(g("launch__block_size") or 0) or None
    advice = None
    if arch and registers and block:
        try:
            lim = occupancy.limits_for(arch)
            static = int(g("launch__shared_mem_per_block_static") or 0)
            dynamic = int(g("launch__shared_mem_per_block_dynamic") or 0)
            occ = occupancy.compute(lim, block, registers, static, dynamic)
            advice = occupancy.advice(lim, occ, registers, static, dynamic)
        except KprofError:  # advice is a courtesy; the measured numbers stand without it
            advice = None
    return Occupancy(
        achieved_occupancy=_div(g("sm__warps_active.avg.pct_of_peak_sustained_active"), 100),
        theoretical_occupancy=theoretical, occupancy_limiter=limiter, occupancy_advice=advice,
        registers=registers,
        block_size=block, grid_size=int(g("launch__grid_size") or 0) or None,
        waves=g("launch__waves_per_multiprocessor"),
        sm_active=_div(g("sm__cycles_active.avg"), g("sm__cycles_elapsed.avg")),
    )


def analyse(row: dict[str, Value], kernel: str, sizes: dict[str, int], *, arch: str | None = None,
            spec_flops: int | None = None, spec_bytes: int | None = None,
            peak_bytes_override: float | None = None, math: str = "fp32") -> KernelProfile:
    """A typed report from one ncu raw row. ``math`` "tensor" (the spec's ``work.math``): its FLOPs
    are the spec's (no SASS counter counts a tensor core's) and its compute roof the dense 16-bit
    tensor rate, SMs x the architecture's FLOP per clock x the SM clock ncu saw."""
    def g(key: str) -> float | None:
        return _num(row, key)

    duration = _div(g("gpu__time_duration.sum"), 1e9)
    read, write = g("dram__bytes_read.sum"), g("dram__bytes_write.sum")
    dram = (read or 0) + (write or 0) if read is not None or write is not None else None
    sm_hz, dram_hz = g("sm__cycles_elapsed.avg.per_second"), g("dram__cycles_elapsed.avg.per_second")
    per_cycle = g("dram__bytes.sum.peak_sustained")
    peak_bytes = peak_bytes_override or (per_cycle * dram_hz if per_cycle and dram_hz else None)
    ffma_peak = g("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained")
    peak_flops = 2 * ffma_peak * sm_hz if ffma_peak and sm_hz else None
    flops = _flops(g)
    if math == "tensor":
        flops, peak_flops = spec_flops, ceilings.tensor_rate(arch,
                                                             g("device__attribute_multiprocessor_count"), sm_hz)
    ratios = _stall_ratios(g)
    dram_rate = _div(dram, duration)
    return KernelProfile(
        kernel, sizes, "ncu", duration,
        roofline=Roofline.of(flops, duration, dram, peak_flops, peak_bytes),
        occupancy=_occupancy(g, arch), memory=_memory(g, read, write, dram_rate, peak_bytes),
        shared=_shared(g, duration), compute=Compute(
            flops=flops, flops_per_s=_div(flops, duration),
            fma_pipe=_div(g("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"), 100),
            fp64_pipe=_div(g("sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active"), 100),
            tensor_pipe=_div(g("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"),
                             100),
            lsu_pipe=_div(g("sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active"), 100),
            alu_pipe=_div(g("sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"), 100),
            issue_active=_div(g("smsp__issue_active.avg.pct_of_peak_sustained_active"), 100),
            wgmma=g("sm__inst_executed_pipe_tensor_op_gmma.sum"),
            thread_efficiency=_div(g("smsp__thread_inst_executed_per_inst_executed.ratio"), 32),
            instructions=g("smsp__inst_executed.sum")),
        stalls=Stalls(top=_stalls(ratios), shares=_stall_shares(ratios)),
        math=math, spec_flops=spec_flops, spec_bytes=spec_bytes,
    )


def _memory(g: Getter, read: float | None, write: float | None, dram_rate: float | None,
            peak_bytes: float | None) -> Memory:
    """DRAM against its peak, the caches, spills and global access patterns."""
    return Memory(
        dram_read=read, dram_write=write, dram_bytes_per_s=dram_rate,
        dram_fraction=_div(dram_rate, peak_bytes),
        l1_hit=_div(g("l1tex__t_sector_hit_rate.pct"), 100),
        l2_hit=_div(g("lts__t_sector_hit_rate.pct"), 100),
        l1_throughput=_div(g("l1tex__throughput.avg.pct_of_peak_sustained_active"), 100),
        l2_throughput=_div(g("lts__throughput.avg.pct_of_peak_sustained_elapsed"), 100),
        l1_bytes=g("l1tex__t_bytes.sum"), local_bytes=_local_bytes(g),
        global_load_sectors_per_request=_div(g("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
                                             g("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")),
        global_store_sectors_per_request=_div(g("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
                                              g("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")),
        global_accesses=_sum(g("smsp__sass_inst_executed_op_global_ld.sum"),
                             g("smsp__sass_inst_executed_op_global_st.sum")),
        atomics=_sum(g("smsp__sass_inst_executed_op_global_atom.sum"),
                     g("smsp__sass_inst_executed_op_global_red.sum")),
    )



def fallback(kernel: str, sizes: dict[str, int], seconds: float | None, registers: int | None,
             block: int, static_smem: int, *, dynamic_smem: int, arch: str, spec_flops: int | None,
             spec_bytes: int | None, reason: str, source: str = "fallback (no counters)",
             driver_blocks: int | None = None,
             spills: tuple[int, int, int] | None = None) -> KernelProfile:
    """What can be said without counters: event time, theoretical occupancy (the driver's answer
    when given: ``cuOccupancyMaxActiveBlocksPerMultiprocessor``), registers and spills, spec-based
    rates."""
    theoretical = limiter = advice = None
    notes = [reason]
    try:
        lim = occupancy.limits_for(arch)
        occ = occupancy.compute(lim, block, registers or 1, static_smem, dynamic_smem)
        theoretical, limiter = occ.occupancy, occ.limiter
        advice = occupancy.advice(lim, occ, registers or 1, static_smem, dynamic_smem)
        if driver_blocks is not None:
            warps = driver_blocks * -(-block // lim.warp_size)
            theoretical = warps / lim.max_warps_per_sm
            agree = "" if driver_blocks == occ.blocks_per_sm else f"; kprof's model says {occ.blocks_per_sm}"
            notes.append(f"the driver's occupancy: {driver_blocks} blocks of {block} threads per "
                         f"SM, {theoretical:.0%}{agree}")
    except Exception:  # noqa: BLE001 - occupancy is a courtesy; the measured numbers stand without it
        pass
    if spills is not None:
        notes.append(f"ptxas: {registers} registers, {spills[0]} B spill stores, {spills[1]} B "
                     f"spill loads, {spills[2]} B stack frame")
    return KernelProfile(
        kernel, sizes, source, seconds,
        roofline=Roofline.of(spec_flops, seconds, spec_bytes, None, None),
        occupancy=Occupancy(theoretical_occupancy=theoretical, occupancy_limiter=limiter,
                            occupancy_advice=advice, registers=registers, block_size=block),
        memory=Memory(dram_bytes_per_s=_div(spec_bytes, seconds)),
        compute=Compute(flops=spec_flops, flops_per_s=_div(spec_flops, seconds)),
        spec_flops=spec_flops, spec_bytes=spec_bytes,
        notes=[*notes,
               "throughput here comes from the spec's work formulas over one event-timed launch"],
    )


def reports(rows: list[dict[str, Value]], name: str, sizes: dict[str, int], *, arch: str,
            launches: int,
            params: dict[str, str], extra_metrics: tuple[str, ...] = (),
            spec_flops: int | None = None, spec_bytes: int | None = None, math: str = "fp32",
            pages: list[SourceLines | None] | None = None) -> list[KernelProfile]:
    """The reports for one spec's ncu rows: one per kernel it launched (named ``spec:kernel``) for a
    spec with steps, else the last row. The spec's work formulas describe the whole spec, so they
    are used only when it launched one kernel. An extra metric ncu accepted but did not report is
    said, not dropped. ``pages``: each row's measured source lines
    (:func:`kprof.tools.nsight.ncu.pages_for`)."""
    each = list(pages) if pages is not None else [None] * len(rows)
    if launches == 1:
        rows, each = rows[-1:], each[-1:]
    out = []
    for row, page in zip(rows, each):
        kname = row["Kernel Name"].value if "Kernel Name" in row else None
        label = f"{name}:{kname}" if len(rows) > 1 and kname else name
        if params:
            label += "[" + ",".join(f"{k}={v}" for k, v in params.items()) + "]"
        one = len(rows) == 1
        prof = analyse(row, label, sizes, arch=arch, spec_flops=spec_flops if one else None,
                       spec_bytes=spec_bytes if one else None, math=math)
        extra = [f"extra {m} = {row[m].value} {row[m].unit}".rstrip() if m in row else
                 f"extra {m}: ncu reported no value for it (see `ncu --query-metrics`)"
                 for m in extra_metrics]
        prof = replace(prof, notes=[*prof.notes, *extra]) if extra else prof
        out.append(replace(prof, lines=page) if page is not None else prof)
    return out


def against_ceilings(p: KernelProfile, peak: ceilings.Ceilings | None) -> KernelProfile:
    """The profile with its DRAM rate as a fraction of kprof peak's measured ceiling for its mix
    (the mix from the bytes ncu saw read and written). ``peak`` None: unchanged."""
    m = p.memory
    if not peak or m.dram_bytes_per_s is None or m.dram_read is None:
        return p
    mix = ceilings.measured_mix(peak,
                                ceilings.mix_of([("in", int(m.dram_read)),
                                                 ("out", int(m.dram_write or 0))]))
    top = ceilings.ceiling(peak, mix)
    return p.with_metrics(mix=mix, ceiling_bytes_per_s=top,
                          of_ceiling=_div(m.dram_bytes_per_s, top))


def profile_spec(resolved: Resolved, built: BuildResult, job_of: Callable[[RunMode], Job], *,
                 params: dict[str, str],
                 set_name: str = "quick", metrics: tuple[str, ...] = (),
                 report_dir: Path | None = None, timeout: float = 600.0) -> list[KernelProfile]:
    """ncu over kprof's runner for one built spec (``job_of(mode)``: its job of that mode): one
    report per kernel it launched. Where ncu may not read counters, or there is no ncu for the GPU
    (Pascal), the counter-less report from one timed launch; any other ncu failure raises."""
    from kprof.errors import NcuError
    from kprof.launch import launch
    from kprof.tools.nsight import ncu

    r = resolved

    def without_ncu(reason: str, source: str) -> list[KernelProfile]:
        result = launch.run_kernel(job_of(RunMode(time=True)), timeout=timeout)
        usage = built.usage_of(r.spec.entry)
        return [fallback(r.spec.name, r.sizes, (result.time_ms or 0) / 1e3 or None, usage.registers,
                         r.threads_per_block, usage.shared_static, dynamic_smem=r.shared_mem,
                         arch=built.arch, spec_flops=r.flops, spec_bytes=r.bytes,
                         reason=reason, source=source, driver_blocks=result.driver_blocks_per_sm,
                         spills=(usage.spill_stores, usage.spill_loads, usage.stack_frame))]

    if why := ncu.unsupported(built.arch):
        return without_ncu(f"{why}: kprof measured without it",
                           f"no Nsight Compute on {built.arch}")
    try:
        got = ncu.measure(job_of(RunMode(verify=False)), set_name=set_name, extra_metrics=metrics,
                          report_dir=report_dir, timeout=timeout)
    except NcuError as exc:
        if exc.reason != "counters":
            raise
        return without_ncu(str(exc), "fallback (no counters)")
    sources = _sources_of(r.spec.source) if any(got.pages) else {}
    pages = [sourcepage.name_files(p, sources) if p is not None else None for p in got.pages]
    # A Python operation launches kernels kprof does not count in advance: report every one in its
    # range.
    launches = 0 if r.spec.python else len(r.steps)
    return reports(got.rows, r.spec.name, r.sizes, arch=built.arch, launches=launches,
                   params=params,
                   extra_metrics=metrics, spec_flops=r.flops, spec_bytes=r.bytes,
                   math=r.spec.work.math, pages=pages)


def _sources_of(source: Path | None) -> dict[str, tuple[str, ...]]:
    """The spec's source and the local headers it includes (as the build read them), each path ->
    its lines: what the Source page's unnamed files are matched against
    (:func:`kprof.tools.nsight.sourcepage.name_files`)."""
    from kprof.build import cusource

    if source is None:
        return {}
    try:
        found = cusource.local_sources(source)
    except KprofError:  # a header the build would refuse: the page's files stay unnamed
        return {}
    return {str(path): tuple(data.decode("utf-8", errors="replace").splitlines())
            for path, data in found}


def profile_program(cmd: list[str], arch: str, *, kernel: str | None, nvtx_range: str | None,
                    launch_skip: int,
                    launch_count: int, set_name: str, metrics: tuple[str, ...], timeout: float,
                    report_dir: Path | None = None) -> list[KernelProfile]:
    """ncu over the user's program: a report per profiled launch, named ``KERNEL#N`` (N its index
    among the launches ncu matched, counting the skipped), judged on ``arch`` (found once, not per
    launch). In a multi-process job (torchrun, mpirun, srun: :mod:`kprof.tools.programs.ranks`) ncu
    follows every process, each Python rank marks its pid, and each report says its rank.
    ``report_dir``: ncu's report kept there as ``PROGRAM.ncu-rep`` (its script's name, else the
    command's) for the Nsight Compute GUI."""
    from kprof.tools.nsight import ncu
    from kprof.tools.programs import allocators, ranks

    with tempfile.TemporaryDirectory(prefix="kprof-ranks-") as tmp:
        job = ranks.launcher_of(cmd) is not None
        env = {**allocators.with_hooks(dict(os.environ)), **ranks.mark_env(Path(tmp))} if job else None
        report = report_dir / f"{program_report_name(cmd)}.ncu-rep" if report_dir is not None else None
        rows = ncu.profile_program(cmd, kernel=kernel, nvtx_range=nvtx_range,
                                   launch_skip=launch_skip,
                                   launch_count=launch_count, set_name=set_name,
                                   extra_metrics=metrics, timeout=timeout, env=env, report=report)
        by_pid = ranks.pids(Path(tmp)) if job else {}
    # a kept report (--save-report) has each launch's Source page: its lines, in the launches' order
    each = ncu.pages_for(rows,
                         ncu.report_pages(report) if report is not None and report.is_file()
                         else None)
    out: list[KernelProfile] = []
    for i, (row, page) in enumerate(zip(rows, each)):
        name = row["Kernel Name"].value if "Kernel Name" in row else f"kernel{i}"
        found = reports([row], f"{name}#{i + launch_skip}", {}, arch=arch, launches=1, params={},
                        extra_metrics=metrics, pages=[page] if page is not None else None)
        rank = by_pid.get(_pid(row)) if by_pid else None
        out += [replace(p, rank=rank) for p in found] if rank is not None else found
    return out


def program_report_name(cmd: list[str]) -> str:
    """The saved report's name for a program: its Python script's (``train`` for ``torchrun ...
    train.py``), else its command's; letters, digits, ``._-`` only. Pure."""
    import re

    script = next((Path(word).stem for word in cmd[1:] if word.endswith(".py")),
                  Path(cmd[0]).name if cmd else "")
    return re.sub(r"[^A-Za-z0-9._-]", "_", script)[:64].lstrip(".") or "program"


def _pid(row: dict[str, Value]) -> int:
    """The process that launched a profiled kernel (ncu's ``Process ID``), or -1."""
    value = row["Process ID"].value if "Process ID" in row else None
    return int(value) if isinstance(value, float) and value.is_integer() else -1
