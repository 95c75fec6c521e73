"""``kprof bench`` and ``kprof peak``: the orchestration around the runner's timing loop.

The statistics live in :mod:`kprof.stats` (pure); the timing loop lives in the runner (child
process: a fault or hang never takes kprof down); this module expands sweeps into points, runs
each point and its baseline in the same run, reads NVML telemetry around them, turns times into
throughput and fractions of the measured ceilings, and stores every finished point in the history.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kprof import build, launch, sizeexpr, stats, telemetry
from kprof import spec as spec_mod
from kprof.errors import TargetError, UsageError
from kprof.spec import KernelSpec

BENCH_VERSION = 1
BASELINES = spec_mod.BASELINES  # library routines; any other baseline names a kernel spec
TIMERS = ("auto", "cupti", "events")
MANY_BLOCKS = 65_536  # at and above: warn that CUPTI tracing may slow the kernel (measured, docs/bench.md)


def parse_sweep(items: list[str], what: str) -> dict[str, list[str]]:
    """``["M=1024,2048", "BLOCK=64"]`` -> ``{"M": ["1024", "2048"], "BLOCK": ["64"]}``.

    Names joined by commas move together: ``M,N,K=1024,2048`` sweeps square sizes (two points),
    where separate ``--size`` options give every combination.
    """
    out: dict[str, list[str]] = {}
    seen: set[str] = set()
    for item in items:
        keys, sep, values = item.partition("=")
        names = [k.strip() for k in keys.split(",")]
        parts = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not all(k.isidentifier() for k in names) or not parts:
            example = "M,N,K=1024,2048" if what == "size" else "BLOCK=64,128"
            raise UsageError(f"--{what} {item!r}: write NAME=V1,V2,... (or N1,N2=V1,V2 to move together), e.g. --{what} {example}")
        twice = [k for k in names if k in seen] or [k for k in names if names.count(k) > 1]
        if twice:
            raise UsageError(f"--{what}: {twice[0]} is given twice")
        seen.update(names)
        out[",".join(names)] = parts
    return out


def _split(sweep: dict[str, list[str]]) -> list[tuple[list[str], list[str]]]:
    return [(key.split(","), vals) for key, vals in sweep.items()]


def points(spec: KernelSpec, sizes: dict[str, list[str]], params: dict[str, list[str]]) -> list[tuple[dict[str, int], dict[str, str]]]:
    """Every combination of the swept sizes and parameters, each checked against the spec."""
    defines = dict(spec.defines)
    axes: list[tuple[str, list[str], list]] = []  # (kind, names, values)
    for names, vals in _split(sizes):
        for key in names:
            if key not in spec.size_names:
                raise UsageError(f"{spec.name}: unknown size '{key}' (known: {', '.join(spec.size_names) or 'none'})")
        parsed = []
        for v in vals:
            try:
                n = sizeexpr.evaluate_int(v, {})
            except sizeexpr.SizeExprError:
                raise UsageError(f"--size {','.join(names)}={v}: give a whole number (or arithmetic like 2**20)") from None
            if n <= 0:
                raise UsageError(f"--size {','.join(names)}={v}: sizes must be positive")
            parsed.append(n)
        axes.append(("size", names, parsed))
    for names, vals in _split(params):
        for key in names:
            if key not in defines:
                raise UsageError(f"{spec.name}: unknown parameter '{key}' (parameters are the spec's defines: "
                                 f"{', '.join(defines) or 'none'})")
        for v in vals:
            if not (v.lstrip("-").isdigit() or v.isidentifier()):
                raise UsageError(f"--param {','.join(names)}={v}: a parameter value is a number or an identifier")
        axes.append(("param", names, vals))
    out = []
    for combo in itertools.product(*(values for _, _, values in axes)):
        s: dict[str, int] = {}
        p: dict[str, str] = {}
        for (kind, names, _), value in zip(axes, combo):
            for name in names:
                (s if kind == "size" else p)[name] = value
        out.append((s, p))
    return out or [({}, {})]


@dataclass
class PointResult:
    kernel: str
    sizes: dict[str, int]
    params: dict[str, str]
    mode: str
    status: str  # ok | failed-verification | error
    summary: dict[str, Any] | None = None
    stop: str | None = None
    stable: bool | None = None
    batch: int | None = None
    flops: int | None = None
    bytes: int | None = None
    flops_per_s: float | None = None
    bytes_per_s: float | None = None
    of_fma_peak: float | None = None
    of_copy_peak: float | None = None
    baseline: str | None = None
    baseline_summary: dict[str, Any] | None = None
    baseline_flops_per_s: float | None = None
    baseline_bytes_per_s: float | None = None  # the kernel's own work formula over the baseline's time
    of_baseline: float | None = None  # baseline time / kernel time: 1.0 means as fast as the baseline
    math_mode: str | None = None
    timer: str | None = None  # cupti (kernel timestamps) or events (CUDA events around the launch)
    timer_note: str | None = None  # why CUPTI was not used, when it was asked for by auto
    cupti_hw_trace: bool | None = None  # CUPTI's hardware-trace timestamps were on (KPROF_CUPTI_HW_TRACE=1)
    event_summary: dict[str, Any] | None = None  # the CUDA events' reading of the same samples
    telemetry_before: dict[str, Any] | None = None
    telemetry_after: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def rule_from(rel_stdev: float, min_time: float, max_time: float, min_samples: int) -> dict[str, Any]:
    stats.StopRule(rel_stdev, min_samples, min_time, max_time)  # validates the types
    return {"rel_stdev": rel_stdev, "min_samples": min_samples, "min_time": min_time, "max_time": max_time}


def time_point(spec: KernelSpec, sizes: dict[str, int], params: dict[str, str], mode: str, rule: dict[str, Any],
               *, baseline: str | None = None, arch: str | None = None, timeout: float = 300.0,
               timer: str = "auto") -> dict[str, Any]:
    """One timing in a child: the runner's result data (samples, stop reason, checks)."""
    built = build.build(spec, arch, defines=params)
    resolved = _with_params(spec, params).resolve(sizes)
    job = launch.make_job(spec, built, resolved.sizes)
    job["params"] = params
    job["bench"] = {"mode": mode, "rule": rule, "warmup": 0.2, "baseline": baseline, "timer": timer,
                    "spin_cubin": str(build.build_builtin("kprof_spin", arch).cubin),
                    "flush_cubin": str(build.build_builtin("kprof_flush", arch).cubin)}
    done, data = launch.run(job, timeout=timeout)
    launch.raise_for_child(spec.name, done, data, timeout)
    return data


def _with_params(spec: KernelSpec, params: dict[str, str]) -> KernelSpec:
    if not params:
        return spec
    from dataclasses import replace

    defines = dict(spec.defines)
    defines.update(params)
    return replace(spec, defines=tuple(defines.items()))


def run_point(spec: KernelSpec, sizes: dict[str, int], params: dict[str, str], mode: str, rule: dict[str, Any],
              peak: dict[str, Any] | None, *, baseline: str | None, arch: str | None, timeout: float,
              timer: str = "auto") -> PointResult:
    resolved = _with_params(spec, params).resolve(sizes)
    point = PointResult(spec.name, resolved.sizes, params, mode, "error", flops=resolved.flops, bytes=resolved.bytes)
    before = telemetry.snapshot()
    try:
        data = time_point(spec, sizes, params, mode, rule, arch=arch, timeout=timeout, timer=timer)
    except TargetError as exc:
        point.message = str(exc)
        return point
    after = telemetry.snapshot()
    point.telemetry_before = before.to_dict() if before else None
    point.telemetry_after = after.to_dict() if after else None
    point.warnings = telemetry.warnings(before, after)
    if data.get("status") == "failed":
        point.status = "failed-verification"
        point.message = "; ".join(c["message"] for c in data.get("checks", []) if not c["ok"])
        return point
    samples = data["samples"]
    summary = stats.summarize(samples)
    point.status = "ok"
    point.summary = summary.to_dict()
    point.stop = data["stop"]
    point.batch = data.get("batch")
    point.timer = data.get("timer", "events")
    point.timer_note = data.get("timer_note")
    point.cupti_hw_trace = data.get("cupti_hw_trace")
    if data.get("event_samples"):
        point.event_summary = stats.summarize(data["event_samples"]).to_dict()
    blocks = resolved.grid[0] * resolved.grid[1] * resolved.grid[2]
    if point.timer == "cupti" and blocks >= MANY_BLOCKS:
        point.warnings.append(
            f"{blocks:,} blocks: with CUPTI kernel tracing on, kernels with this many short blocks ran slower on the "
            "H200 (vector_add, 262,144 blocks: 297 us against 278 us with --timer events and under ncu); "
            "check this one with --timer events")
    point.stable = stats.stable(summary, point.stop, rule["rel_stdev"])
    if not point.stable:
        point.warnings.append(f"unstable: relative standard deviation {summary.rel_stdev:.1%} (stopped by {point.stop})")
    point.flops_per_s = stats.throughput(resolved.flops, summary.median)
    point.bytes_per_s = stats.throughput(resolved.bytes, summary.median)
    if peak:
        point.of_fma_peak = stats.fraction(point.flops_per_s, peak.get("fma_flops_per_s"))
        point.of_copy_peak = stats.fraction(point.bytes_per_s, peak.get("copy_bytes_per_s"))
    if baseline:
        point.baseline = baseline
        try:
            if baseline in BASELINES:  # a library routine on the kernel's own buffers
                base = time_point(spec, sizes, params, mode, rule, baseline=baseline, arch=arch, timeout=timeout,
                                  timer=point.timer)
            else:  # another spec (an unfused version, say) at the same sizes
                from kprof import catalog

                other = catalog.load(baseline)
                own = {k: v for k, v in resolved.sizes.items() if k in other.size_names}
                base = time_point(other, own, {}, mode, rule, arch=arch, timeout=timeout, timer=point.timer)
        except TargetError as exc:
            point.warnings.append(f"baseline {baseline} failed: {exc}")
            return point
        if base.get("status") == "ok" and base.get("timer", "events") != point.timer:
            point.warnings.append(f"baseline {baseline} was timed by {base.get('timer')}, the kernel by {point.timer}")
        if base.get("status") == "ok":
            bsum = stats.summarize(base["samples"])
            point.baseline_summary = bsum.to_dict()
            point.math_mode = base.get("math_mode")
            point.baseline_flops_per_s = stats.throughput(resolved.flops, bsum.median)
            point.baseline_bytes_per_s = stats.throughput(resolved.bytes, bsum.median)
            point.of_baseline = bsum.median / summary.median
        else:
            point.warnings.append(f"baseline {baseline} failed verification")
    return point


# ------------------------------------------------------------------------------------ peak


def peak_cache_path(snap: telemetry.Snapshot | None) -> Path:
    name = "unknown-gpu" if snap is None else f"{snap.gpu}-{snap.driver}".replace(" ", "_").replace("/", "_")
    return build.cache_dir() / f"peak-{name}.json"


def measure_peak(arch: str | None = None, timeout: float = 300.0) -> dict[str, Any]:
    """The ceilings of this GPU: a 16-byte-load copy of 1 GiB, and the FP32 FMA rate."""
    from kprof import spec as spec_mod

    rule = rule_from(0.005, 0.5, 5.0, 10)
    out: dict[str, Any] = {"measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for name, key, work in (("kprof_copy", "copy", "bytes"), ("kprof_fma", "fma", "flops")):
        spec = spec_mod.load(build.BUILTIN_DIR / f"{name}.yaml")
        resolved = spec.resolve()
        data = time_point(spec, {}, {}, "warm" if key == "fma" else "cold", rule, arch=arch, timeout=timeout)
        if data.get("status") != "ok":
            raise TargetError(f"kprof peak: {name} did not verify")
        summary = stats.summarize(data["samples"])
        amount = resolved.bytes if work == "bytes" else resolved.flops
        out[f"{key}_{'bytes' if work == 'bytes' else 'flops'}_per_s"] = amount / summary.median
        out[f"{key}_summary"] = summary.to_dict()
        out[f"{key}_stop"] = data["stop"]
    snap = telemetry.snapshot()
    out["gpu"] = snap.gpu if snap else None
    out["driver"] = snap.driver if snap else None
    return out


def peak(refresh: bool = False, arch: str | None = None) -> dict[str, Any]:
    """Cached per GPU and driver; measured again with ``refresh``."""
    path = peak_cache_path(telemetry.snapshot())
    if not refresh and path.is_file():
        try:
            return dict(json.loads(path.read_text()), cached=str(path))
        except ValueError:
            pass
    data = measure_peak(arch)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))
    return dict(data, cached=None)
