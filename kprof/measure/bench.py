"""``kprof bench`` and ``kprof peak``: points measured by the child's timing loop, turned into
results.

The statistics live in :mod:`kprof.stats` (pure); the timing loop lives in the child
(:mod:`kprof.child.timing`: a fault or hang never takes kprof down). This module takes what the
command layer built (a :class:`PointPlan`: the kernel's timing job and its baseline's, at the same
sizes), runs each in the same run, reads NVML telemetry around them, turns times into throughput and
fractions of the measured ceilings, and says which baselines a spec may have. It never builds a
kernel or looks one up.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kprof import inputs, outputs, stats, telemetry
from kprof.errors import KprofError, TargetError, UsageError
from kprof.launch import launch
from kprof.launch.childresult import ChildResult, DeviceInfo, Timing
from kprof.launch.job import Job, TimingMode
from kprof.measure import ceilings
from kprof.measure.points import BaselineResult, PointResult, Rates, TimerUsed
from kprof.spec import Resolved
from kprof.spec.baseline import Baseline
from kprof.units import si

# the point's records live in kprof.measure.points; named here too for code that reaches them
# through bench
__all__ = ["BENCH_VERSION", "PointPlan", "StreamJob", "cached_peak", "measure_peak",
           "peak_cache_path", "rule_from", "run_point", "save_peak", "time_job"]

BENCH_VERSION = 1
# at and above: warn that CUPTI tracing may slow the kernel (measured, docs/bench.md)
MANY_BLOCKS = 65_536


def rule_from(rel_stdev: float, min_time: float, max_time: float,
              min_samples: int = 10) -> stats.StopRule:
    return stats.StopRule(rel_stdev=rel_stdev, min_samples=min_samples, min_time=min_time,
                          max_time=max_time)


@dataclass(frozen=True)
class PointPlan:
    """One point of a sweep, built by the command layer: the kernel's timing job at these sizes and
    parameters, and the baseline's (a library routine on the same buffers, or another spec)."""

    resolved: Resolved
    params: dict[str, str]
    job: Job
    # each baseline and its timing job; the first is the point's
    baselines: tuple[tuple[Baseline, Job], ...] = ()


def time_job(job: Job, timeout: float) -> ChildResult:
    """One timing in a child: the runner's result (its timing, its checks)."""
    done, data = launch.run(job, timeout=timeout)
    launch.raise_for_child(job.target.name, done, data, timeout)
    return data


def run_point(plan: PointPlan, peak: ceilings.Ceilings | None, *, timeout: float) -> PointResult:
    """Time the kernel, then its baselines in the same run; never raises for the kernel's sake."""
    resolved, mode = plan.resolved, plan.job.mode
    assert isinstance(mode, TimingMode)
    point = PointResult(resolved.spec.name, resolved.sizes, plan.params, mode.mode, "error",
                        rates=Rates(flops=resolved.flops, bytes=resolved.bytes))
    before = telemetry.snapshot()
    t0 = time.perf_counter()
    try:
        data = time_job(plan.job, timeout)
    except TargetError as exc:
        return replace(point, message=str(exc))
    after = telemetry.snapshot()
    point = replace(point, wall_seconds=round(time.perf_counter() - t0, 4),
                    telemetry_before=before.to_dict() if before else None,
                    telemetry_after=after.to_dict() if after else None,
                    warnings=tuple(telemetry.warnings(before, after)))
    if data.status == "failed" or data.timing is None:
        return replace(point, status="failed-verification" if data.status == "failed" else "error",
                       message="; ".join(data.failed_checks()) if data.status == "failed" else
                       f"{point.kernel}: the child gave no timing (status {data.status or 'none'}, "
                       f"phase {data.phase})")
    point, summary = _timed(point, data.timing, resolved, mode.rule.rel_stdev)
    point = _against_ceilings(point, peak, resolved, mode.mode,
                              data.device.l2_bytes if data.device else None)
    timed, warnings = [], list(point.warnings)
    for base, job in plan.baselines:
        got, notes = _baseline(point, plan, base, job, summary, timeout)
        got, more = _baseline_against_ceiling(got, point, peak)
        timed.append(got)
        warnings += notes + more
    return replace(point, baselines=tuple(timed), warnings=tuple(warnings))


def _baseline_against_ceiling(b: BaselineResult, point: PointResult,
                              peak: ceilings.Ceilings | None) -> tuple[BaselineResult, list[str]]:
    """A baseline's rate (the kernel's bytes over the baseline's time) against the same ceiling, and
    the same plausibility notes, as the kernel's: seen on the H200, torch.compile's RMSNorm at 4096
    x 4096 (128 MiB moved, about twice the L2) at 106% of the copy ceiling. The L2 note is the
    kernel's own."""
    mix = point.rates.mix
    if not peak or not b.baseline_bytes_per_s or not mix:
        return b, []
    b = replace(b,
                baseline_of_ceiling=stats.fraction(b.baseline_bytes_per_s,
                                                   ceilings.ceiling(peak, mix)))
    notes = ceilings.implausible(bytes_per_s=b.baseline_bytes_per_s, flops_per_s=None, peak=peak,
                                 mode=point.mode, working_set=0, l2_bytes=None)
    notes = notes or _above_ceiling(b.baseline_of_ceiling, mix)
    return b, [f"baseline {b.baseline_name}: {n}" for n in notes]


def _above_ceiling(fraction: float | None, mix: str | None) -> list[str]:
    """The note for a plausible rate above the measured ceiling of its mix (kernel or baseline)."""
    if not fraction or fraction <= 1:
        return []
    return [f"{fraction:.0%} of the measured {mix} ceiling: faster than kprof peak's own stream "
            "kernels for this mix (the ceiling is the best of the widths and grids kprof peak "
            "tries, not a hard limit: re-run kprof peak --refresh; a working set a few times the "
            "L2's size can be partly served by the L2)"]


def _against_ceilings(point: PointResult, peak: ceilings.Ceilings | None, resolved: Resolved,
                      mode: str, l2_bytes: int | None) -> PointResult:
    """The point's rates as fractions of the measured ceilings and theoretical peaks, and whether
    they are plausible at all (above a theoretical peak; a cold working set that fits in L2)."""
    mix = ceilings.measured_mix(peak,
                                ceilings.mix_of((b.arg.role, b.nbytes) for b in resolved.buffers))
    theoretical = peak.theoretical if peak else ceilings.Theoretical(None, None)
    r = point.rates
    of_fma = stats.fraction(r.flops_per_s, peak.fma_flops_per_s) if peak else None
    of_ceiling = stats.fraction(r.bytes_per_s, ceilings.ceiling(peak, mix)) if peak else None
    notes = ceilings.implausible(bytes_per_s=r.bytes_per_s, flops_per_s=r.flops_per_s, peak=peak,
                                 mode=mode,
                                 working_set=resolved.total_bytes,
                                 l2_bytes=l2_bytes or (peak.l2_bytes if peak else None),
                                 math=resolved.spec.work.math)
    rates = replace(r, mix=mix, of_fma_peak=of_fma, of_ceiling=of_ceiling,
                    of_dram_peak=stats.fraction(r.bytes_per_s, theoretical.dram_bytes_per_s),
                    of_fp32_peak=stats.fraction(r.flops_per_s, theoretical.fp32_flops_per_s)
                    if resolved.spec.work.math == "fp32" else None)
    return replace(point, rates=rates, plausible=not notes,
                   warnings=(*point.warnings, *(notes or _above_ceiling(of_ceiling, mix))))


def _timed(point: PointResult, timing: Timing, resolved: Resolved,
           rel_stdev: float) -> tuple[PointResult, stats.Summary]:
    summary = stats.summarize(list(timing.samples))
    warnings = list(point.warnings)
    blocks = resolved.grid[0] * resolved.grid[1] * resolved.grid[2]
    if timing.timer == "cupti" and blocks >= MANY_BLOCKS:
        warnings.append(
            f"{blocks:,} blocks: with CUPTI kernel tracing on, kernels with this many short blocks "
            "ran slower on the H200 (vector_add, 262,144 blocks: 297 us against 278 us with "
            "--timer events and under ncu); check this one with --timer events")
    stable = stats.stable(summary, timing.stop or "", rel_stdev)
    if not stable:
        warnings.append(f"unstable: relative standard deviation {summary.rel_stdev:.1%} (stopped "
                        f"by {timing.stop})")
    warnings += [f"integrity: {flag}" for flag in timing.integrity]
    return replace(point, status="ok", summary=summary, stop=timing.stop, batch=timing.batch,
                   integrity=timing.integrity, integrity_checked=timing.integrity_checked,
                   integrity_seconds=timing.integrity_seconds,
                   timer=TimerUsed(name=timing.timer, note=timing.timer_note,
                                   cupti_hw_trace=timing.cupti_hw_trace,
                                   event_summary=stats.summarize(list(timing.event_samples))
                                   if timing.event_samples else None),
                   call_kernels=timing.call_kernels, stable=stable,
                   rates=replace(point.rates,
                                 flops_per_s=stats.throughput(resolved.flops, summary.median),
                                 bytes_per_s=stats.throughput(resolved.bytes, summary.median)),
                   warnings=tuple(warnings)), summary


def _baseline(point: PointResult, plan: PointPlan, base: Baseline, job: Job, summary: stats.Summary,
              timeout: float) -> tuple[BaselineResult, list[str]]:
    """The baseline, timed by the timer the kernel ended up with: its result (its name only, when it
    failed) and the warnings it adds to the point."""
    assert isinstance(job.mode, TimingMode)
    name = base.label
    job = replace(job, mode=replace(job.mode, timer=point.timer.name or "auto"))
    try:
        got = time_job(job, timeout)
    except TargetError as exc:
        return BaselineResult(base.stored(), name, base.kind), [f"baseline {name} failed: {exc}"]
    if got.status != "ok" or got.timing is None:
        why = "; ".join(got.failed_checks())
        failed = f"baseline {name} failed verification" + (f": {why}" if why else "")
        return BaselineResult(base.stored(), name, base.kind), [failed]
    notes = [f"baseline {name}: integrity: {flag}" for flag in got.timing.integrity]
    if got.timing.timer != point.timer.name:
        notes.append(f"baseline {name} was timed by {got.timing.timer}, the kernel by "
                     f"{point.timer.name}")
    bsum = stats.summarize(list(got.timing.samples))
    return BaselineResult(
        base.stored(), name, base.kind, baseline_summary=bsum,
        baseline_kernels=got.timing.kernels_per_call, baseline_call_kernels=got.timing.call_kernels,
        baseline_prepare_s=got.baseline.prepare_s if got.baseline else None,
        baseline_framework=got.baseline.framework if got.baseline else None,
        math_mode=got.math_mode,
        baseline_flops_per_s=stats.throughput(plan.resolved.flops, bsum.median),
        baseline_bytes_per_s=stats.throughput(plan.resolved.bytes, bsum.median),
        of_baseline=bsum.median / summary.median, baseline_integrity=got.timing.integrity), notes


# ------------------------------------------------------------------------------------ peak


def peak_cache_path(snap: telemetry.Snapshot | None, folder: Path) -> Path:
    name = "unknown-gpu" if snap is None else f"{snap.gpu}-{snap.driver}".replace(" ", "_").replace("/", "_")
    return folder / f"peak-{name}.json"


PEAK_RULE = stats.StopRule(rel_stdev=0.005, min_samples=10, min_time=0.3, max_time=3.0)
# Each configuration is a child that moves 1 GiB each way. On an H200 (4421901) a read one took
# about 2 s and a write or copy one 11 to 20 s, most of it the check of the 1 GiB output, since read
# in chunks (kprof.child.verify.CHUNK); two widths and two grids kept kprof peak at 150 s for the
# three mixes then measured (read, write, copy; add came after).
PEAK_WIDTHS = (16,)  # bytes per access
# --thorough adds 4-byte accesses. On an H200 they lost every mix, by 2% to 17% (0ae23d4, every
# configuration in docs/results), and cost half of kprof peak's time.
PEAK_WIDTHS_THOROUGH = (4, 16)
# Each buffer's bytes: 1 GiB, and 64 MiB, the size of the ops kprof compares kernels against (a
# torch y = 2 x of 16 Mi floats ran at 104% of a ceiling measured at 1 GiB alone on an H200: the
# write-back of the last writes is not in a kernel's time, and counts for more the smaller the
# buffers).
PEAK_BYTES = (1 << 30, 64 << 20)
PEAK_GRIDS = (2048, 0)  # blocks of 256 threads, grid-stride; 0: one access per thread


@dataclass(frozen=True)
class StreamJob:
    """One of kprof peak's stream kernels at one access width and grid size, or (``op``) a
    framework's op of the same mix on the same spec's buffers."""

    kind: ceilings.Mix  # read, write, copy or add (kprof.measure.ceilings.MIXES)
    width: int
    blocks: int
    job: Job
    bytes: int  # moved by one call: the rate is this over its time
    op: str | None = None  # a framework's op (kprof.baselines.peak_ops), not kprof's kernel
    size: int = PEAK_BYTES[0]  # each buffer's bytes

    def label(self) -> str:
        size = f"{self.size / 2**30:g} GiB" if self.size >= 2**30 else f"{self.size / 2**20:g} MiB"
        if self.op:
            return f"{self.op}, {size} each way"
        return f"kprof_{self.kind}, {self.width}-byte accesses, {self.blocks:,} blocks, {size} each way"


def measure_peak(streams: list[StreamJob], memcpy: tuple[Job, int], fma: tuple[Job, int],
                 timeout: float = 300.0, progress: Callable[[str], None] | None = None,
                 tensor: list[tuple[str, Job | str, int]] | None = None) -> dict[str, Any]:
    """The ceilings of this GPU: for each access mix the best rate of kprof's stream kernels (1 GiB
    each way, cold) over the widths and grids tried, the copy's raised to the device-to-device
    memcpy where that is faster; the FP32 FMA rate (warm); the tensor-core rate of each of
    ``tensor``'s kernels (name, job or why it cannot run here, FLOPs; warm), the best of them the
    tensor ceiling; and the theoretical peaks from the device's attributes
    (kprof.measure.ceilings.theoretical)."""
    start = time.perf_counter()
    out: dict[str, Any] = {"measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    tried: dict[str, list[dict[str, Any]]] = {k: [] for k in ceilings.MIXES}
    device: DeviceInfo | None = None
    for s in streams:
        t0 = time.perf_counter()
        try:
            timing, dev = _timed_ceiling(s.job, timeout)
        # one configuration that fails (or does not verify) leaves the others
        except KprofError as exc:
            tried[s.kind].append({"width": s.width, "blocks": s.blocks,
                                  "error": str(exc).splitlines()[0],
                                  "size": s.size, "op": s.op, "by": s.label(),
                                  "wall_s": round(time.perf_counter() - t0, 2)})
            continue
        device = dev or device
        median = stats.summarize(list(timing.samples)).median
        tried[s.kind].append({"width": s.width, "blocks": s.blocks, "bytes_per_s": s.bytes / median,
                              "median_s": median, "timer": timing.timer, "stop": timing.stop,
                              "size": s.size,
                              "op": s.op, "by": s.label(),
                              "wall_s": round(time.perf_counter() - t0, 2)})
        if progress:
            progress(f"{s.kind:<5} {s.label()}: {si(s.bytes / median, 'B/s')}")
    job, amount = memcpy
    timing, _ = _timed_ceiling(job, timeout)
    median = stats.summarize(list(timing.samples)).median
    out["memcpy"] = {"bytes_per_s": amount / median, "median_s": median, "timer": timing.timer,
                     "stop": timing.stop}
    best = {k: max(ok, key=lambda r: r["bytes_per_s"]) for k, v in tried.items()
            if (ok := [r for r in v if "bytes_per_s" in r])}
    out["ceilings"] = {k: dict(b) for k, b in best.items()}  # "by": the kernel or op that set it
    if out["memcpy"]["bytes_per_s"] > out["ceilings"].get("copy", {}).get("bytes_per_s", 0):
        out["ceilings"]["copy"] = dict(out["memcpy"], by="cuMemcpyDtoDAsync (device to device)")
    out["tried"] = tried
    if not any(s.op for s in streams):
        out["ops_note"] = ("PyTorch is not installed: the ceilings are kprof's own kernels' and "
                           "the memcpy's; an op of PyTorch's may run faster than them (pip install "
                           "torch, then kprof peak --refresh)")
    out["copy_bytes_per_s"] = out["ceilings"]["copy"]["bytes_per_s"]
    job, amount = fma
    timing, dev = _timed_ceiling(job, timeout)
    summary = stats.summarize(list(timing.samples))
    out["fma_flops_per_s"] = amount / summary.median
    out["fma_summary"] = summary.to_dict()
    out["fma_stop"] = timing.stop
    out["tensor"] = _tensor_rates(tensor or [], timeout)
    if measured := [r["flops_per_s"] for r in out["tensor"].values() if "flops_per_s" in r]:
        out["tensor_flops_per_s"] = max(measured)  # the tensor ceiling: the best of them
    ran_on = dev or device
    attributes: dict[str, Any] = ran_on.to_dict() if ran_on else {}
    missing = [k for k in ("memory_clock_khz", "bus_width_bits", "clock_khz")
               if not attributes.get(k)]
    # a driver that no longer gives a clock attribute: NVML's reading, said in the report
    if missing:
        nvml = telemetry.clock_limits()
        attributes.update({k: nvml[k] for k in missing if nvml.get(k)})
    out["theoretical"] = ceilings.theoretical(attributes)
    if missing:
        out["theoretical"]["notes"].append("from NVML, the driver giving none: "
                                           f"{', '.join(missing)}")
    out["l2_bytes"] = ran_on.l2_bytes if ran_on else None
    snap = telemetry.snapshot()
    out["gpu"] = snap.gpu if snap else (ran_on.name if ran_on else None)
    out["driver"] = snap.driver if snap else None
    # the measurement's own time (builds before it not counted)
    out["seconds"] = round(time.perf_counter() - start, 1)
    return out


TENSOR_KERNELS = {  # kprof peak's tensor-core kernels, what each measures
    "kprof_mma": "mma.sync m16n8k16, bfloat16 in, float32 accumulate",
    "kprof_wgmma": "wgmma.mma_async m64n256k16 from shared memory, bfloat16 in, float32 accumulate",
}


def _tensor_rates(kernels: list[tuple[str, Job | str, int]],
                  timeout: float) -> dict[str, dict[str, Any]]:
    """Each tensor-core kernel's rate (warm), or why it was not measured (it cannot run here, or
    failed)."""
    out: dict[str, dict[str, object]] = {}
    for name, job, amount in kernels:
        if isinstance(job, str):
            out[name] = {"not_measured": job}
            continue
        try:
            timing, _ = _timed_ceiling(job, timeout)
        except KprofError as exc:
            out[name] = {"not_measured": str(exc)}
            continue
        summary = stats.summarize(list(timing.samples))
        out[name] = {"flops_per_s": amount / summary.median, "summary": summary.to_dict(),
                     "by": f"{name} ({TENSOR_KERNELS.get(name, name)}; warm)"}
    return out


def _timed_ceiling(job: Job, timeout: float) -> tuple[Timing, DeviceInfo | None]:
    """One of kprof peak's timings, and the device it ran on."""
    data = time_job(job, timeout)
    if data.status != "ok" or data.timing is None:
        raise TargetError(f"kprof peak: {job.target.name} did not verify")
    return data.timing, data.device


def cached_peak(path: Path) -> ceilings.Ceilings | None:
    """The ceilings measured before on this GPU and driver, or None."""
    if not path.is_file():
        return None
    try:
        data = inputs.read_json(path, "the ceilings cache", limit=16 * 1024 * 1024)
    except UsageError:  # damaged, oversized, nested too deep: measured again
        return None
    return ceilings.Ceilings.from_dict(dict(data, cached=str(path))) if isinstance(data, dict) else None


def save_peak(path: Path, data: dict[str, object]) -> ceilings.Ceilings:
    """Written whole or not at all (a temporary file renamed over it): two processes measuring at
    once never leave a reader half a file. Written with its version
    (:data:`kprof.measure.ceilings.CEILINGS_VERSION`)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise outputs.write_error(path.parent, exc) from None
    data = dict(data, version=ceilings.CEILINGS_VERSION)
    outputs.replace_file(path, json.dumps(data, indent=1))
    return ceilings.Ceilings.from_dict(dict(data, cached=None))


