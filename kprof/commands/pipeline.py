"""The command layer's shared steps: names -> specs -> resolved -> built -> typed jobs.

Only the command layer (:mod:`kprof.commands.commands` and this module) looks kernels up in the
catalog and builds them. Everything below it (sanitize, values, cases, ncu, bench) receives what is
made here: a :class:`Prepared` (the resolved spec and its build result) and
:class:`~kprof.launch.job.Job` objects,
so no stage calls back upstream. ``--param`` is applied once, to the spec, before it is built and
resolved, so the cubin and the launch always agree.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from kprof import telemetry
from kprof.build import build
from kprof.build.build import BuildResult
from kprof.corpus.cases import Case
from kprof.errors import BuildError, KprofError, ToolNotFoundError, UsageError
from kprof.launch.job import Job, RunMode, TimingMode, TimingModeName, target_of
from kprof.measure import bench, ceilings
from kprof.spec import Fill, KernelSpec, Resolved, baseline, catalog
from kprof.spec.baseline import Baseline
from kprof.spec.sweep import Sweep
from kprof.stats import StopRule


@dataclass(frozen=True)
class Prepared:
    """A spec at concrete sizes (and parameters), with its cubin."""

    resolved: Resolved
    built: BuildResult

    def job(self, mode: RunMode | TimingMode, *, seed: int = 0, shaken: bool = False) -> Job:
        """The job of ``mode``; ``shaken``: with the warp-delay build too, which the values detector
        runs beside the kernel's own (:func:`shaken_cubin`)."""
        return Job(target_of(self.resolved, self.built.cubin, seed=seed, symbols=self.built.symbols,
                             shaken_cubin=shaken_cubin(self.resolved.spec, self.built.arch) if shaken else None), mode)

    def ptx(self) -> tuple[str | None, str]:
        """The kernel's PTX, for the diagnosis's lines without counters: (text, "") or (None, why
        not)."""
        try:
            ptx = build.ptx(self.resolved.spec, self.built.arch, built=self.built)
        except KprofError as exc:
            return None, f"no PTX: {str(exc).splitlines()[0]}"
        return ptx, "" if ptx is not None else "no PTX (NVRTC builds cubins only): no lines without counters"


def shaken_cubin(spec: KernelSpec, arch: str | None) -> Path | None:
    """The warp-delay build of ``spec`` (:mod:`kprof.build.shake`), or None where there is none to
    make (a Python operation) or it does not build: the values detector then runs without it."""
    if spec.python:
        return None
    try:
        return build.build(spec, arch, shaken=True).cubin
    except (BuildError, ToolNotFoundError):
        return None


def resolve(spec: KernelSpec, sizes: dict[str, int] | None = None, *,
            params: dict[str, str] | None = None,
            preset: str = "default", fills: tuple[tuple[str, Fill], ...] = ()) -> Resolved:
    """Parameters applied to the spec (and a check's fills), then every size concrete: bad sizes are
    refused before any build."""
    return spec.with_defines(params or {}).with_fills(fills).resolve(sizes or {}, preset=preset)


def built(resolved: Resolved, arch: str | None = None) -> Prepared:
    """The resolved spec with its cubin (built, or from the cache)."""
    return Prepared(resolved, build.build(resolved.spec, arch))


def prepare(spec: KernelSpec, sizes: dict[str, int] | None = None, *,
            params: dict[str, str] | None = None,
            preset: str = "default", arch: str | None = None,
            fills: tuple[tuple[str, Fill], ...] = ()) -> Prepared:
    return built(resolve(spec, sizes, params=params, preset=preset, fills=fills), arch)


def builtin(name: str, arch: str | None = None) -> BuildResult:
    """One of kprof's own kernels (``kprof/builtin``): the scrubber, the spin and flush kernels, the
    peaks."""
    return build.build(catalog.builtin(name), arch)


def scrubber(arch: str | None) -> tuple[str | None, str]:
    """The values detector's shared-memory scrubber: (cubin, "") or (None, why it could not be
    built)."""
    try:
        return str(builtin("kprof_scrub", arch).cubin), ""
    except (BuildError, ToolNotFoundError) as exc:
        return None, str(exc)


@dataclass(frozen=True)
class Preparer:
    """Building and job-making for the stages that orchestrate runs themselves (mutation testing,
    :class:`kprof.launch.prepared.Preparer`): they are handed this, as no stage below may build."""

    arch: str | None

    def job(self, spec: KernelSpec, sizes: dict[str, int] | None, *, preset: str,
            fills: tuple[tuple[str, Fill], ...] = (), mode: RunMode, shaken: bool = False) -> Job:
        return prepare(spec, sizes, preset=preset, arch=self.arch, fills=fills).job(mode, shaken=shaken)

    def cubin(self, spec: KernelSpec) -> Path:
        return build.build(spec, self.arch).cubin

    def variant(self, spec: KernelSpec, name: str, text: str) -> KernelSpec:
        path = build.generated_source(spec.name, spec.source, text)
        return replace(spec, name=name, source=path,
                       nvcc_flags=(*spec.nvcc_flags, f"-I{spec.source.parent}"))

    def scrubber(self) -> tuple[str | None, str]:
        return scrubber(self.arch)


def timing_mode(mode: TimingModeName, rule: StopRule, timer: str, arch: str | None, *,
                library: str | None = None, cupti_hw_trace: bool = False,
                integrity: bool = True) -> TimingMode:
    """``kprof bench``'s loop settings, with kprof's own spin and flush kernels built for
    ``arch``."""
    return TimingMode(mode=mode, rule=rule, timer=timer, library=library,
                      cupti_hw_trace=cupti_hw_trace, integrity=integrity,
                      integrity_cubin=str(builtin("kprof_fingerprint", arch).cubin) if integrity
                      else None, spin_cubin=str(builtin("kprof_spin", arch).cubin),
                      flush_cubin=str(builtin("kprof_flush", arch).cubin))


@dataclass(frozen=True)
class BenchPoint:
    """One point of a sweep before it is built: the spec, its sizes and parameters, its baselines
    (the first is the point's baseline; the others, --baseline a,b, are timed after it in the same
    run)."""

    spec: KernelSpec
    sizes: dict[str, int]
    params: dict[str, str]
    baselines: tuple[Baseline, ...] = ()

    @property
    def baseline(self) -> Baseline | None:
        return self.baselines[0] if self.baselines else None


def bench_points(specs: list[KernelSpec], sizes: Sweep, params: Sweep,
                 option: str) -> list[BenchPoint]:
    """Every point of every kernel, every name, size, parameter and baseline checked before anything
    runs. With several kernels, each takes the swept names it has (a matmul's M,N,K; vector_add's
    N)."""
    from kprof.spec import sweep

    out = []
    for spec in specs:
        own_sizes = sizes if len(specs) == 1 else sizes.only(spec.size_names)
        own_params = params if len(specs) == 1 else params.only(tuple(dict(spec.defines)))
        baselines = tuple(baseline.of_option(spec, option, catalog.load))
        for s, p in sweep.points(own_sizes, own_params, spec.size_names, dict(spec.defines),
                                 spec.name):
            # a size that breaks a launch formula is refused now, not mid-sweep
            resolve(spec, s, params=p)
            out.append(BenchPoint(spec, s, p, baselines))
    return out


def profiled_baselines(resolved: Resolved, option: str) -> list[Resolved]:
    """``kprof profile KERNEL --baseline torch.compile``: each named (or given) Python baseline as a
    Python operation on the kernel's buffers at the kernel's sizes, so ncu reports what it launches
    beside the kernel. Only Python callables: another spec is profiled by naming it (kprof profile A
    B)."""
    from kprof.spec import as_python_operation

    spec, out = resolved.spec, []
    for name in (o.strip() for o in option.split(",") if o.strip()):
        found = baseline.of_option(spec, name, catalog.load)
        if len(found) != 1 or found[0].kind != "python":
            own = f" ({spec.name} names {', '.join(n for n, _ in spec.baselines)})" if spec.baselines else ""
            raise UsageError(f"kprof profile --baseline {name}: give a name from the spec's "
                             f"baselines{own} or a Python callable (FILE.py:FUNCTION); to profile "
                             f"another spec beside it, name both: kprof profile {spec.name} OTHER")
        op = as_python_operation(spec, found[0].stored(), found[0].label)
        out.append(resolve(op, dict(resolved.sizes)))
    return out


def bench_plan(point: BenchPoint, mode: TimingMode, arch: str | None) -> bench.PointPlan:
    """Build the point's kernel (and baseline specs) and make their timing jobs."""
    kernel = prepare(point.spec, point.sizes, params=point.params, arch=arch)
    if mode.mode == "hot" and (resets := [b.arg.name for b in kernel.resolved.buffers
                                          if b.arg.reset]):
        raise UsageError(f"{point.spec.name}: {', '.join(resets)} is written again before each "
                         "launch (reset: true), which a CUDA graph of many launches cannot do "
                         "untimed: use --mode cold or warm")
    timed = tuple((b, job) for b in point.baselines
                  if (job := _slack(_baseline_job(point.spec, kernel, b, mode, arch))) is not None)
    return bench.PointPlan(kernel.resolved, point.params, kernel.job(mode), timed)


# A baseline's output is checked at this many times the tolerance its spec gives. A shipped spec's
# tolerance is the tightest its own kernel passes (docs/spec.md); a library that sums in another
# order is as accurate without being that close to kprof's kernel (on the H200, cuBLASLt's bias+ReLU
# epilogue and cuBLAS + bias + ReLU failed linear_bias_relu's at batch 64), while a baseline that
# computes something else is still off by the size of the values and refused.
BASELINE_SLACK = 10


def _baseline_job(spec: KernelSpec, kernel: Prepared, base: Baseline, mode: TimingMode,
                  arch: str | None) -> Job | None:
    if base.kind == "library":  # a library routine on the kernel's own buffers
        return kernel.job(replace(mode, library=base.name))
    if base.kind == "python":  # a Python callable on the kernel's own buffers
        if mode.mode == "hot":
            raise UsageError(f"{spec.name}: a Python baseline is timed in cold or warm mode, not "
                             "hot (a CUDA graph cannot capture what a framework does on the host "
                             "between kernels)")
        return kernel.job(replace(mode, python=base.stored()))
    if base.spec is not None:  # another spec (an unfused version, say) at the same sizes
        own = {k: v for k, v in kernel.resolved.sizes.items() if k in base.spec.size_names}
        return prepare(base.spec, own, arch=arch).job(mode)
    return None


def _slack(job: Job | None) -> Job | None:
    """The baseline's job with its verdict at BASELINE_SLACK times the spec's tolerance (a dtype's
    default stays)."""
    if job is None:
        return None
    t = job.target
    return replace(job, target=replace(t, rtol=None if t.rtol is None else t.rtol * BASELINE_SLACK,
                                       atol=None if t.atol is None else t.atol * BASELINE_SLACK))


def case_jobs(case: Case, arch: str | None) -> tuple[Job, Job]:
    """The sanitize jobs of a case and of its fixed twin, at the case's sanitize sizes."""
    jobs = []
    for spec in (case.spec, case.spec.twin_spec()):
        jobs.append(prepare(spec, preset="sanitize", arch=arch).job(RunMode(verify=False), shaken=True))
    return jobs[0], jobs[1]


def cached_peak() -> ceilings.Ceilings | None:
    """The ceilings kprof peak measured before on this GPU and driver, without measuring."""
    return bench.cached_peak(_peak_path())


def _peak_path() -> Path:
    """Where this GPU and driver's ceilings are kept (under the build cache)."""
    return bench.peak_cache_path(telemetry.snapshot(), build.cache_dir())


def _tensor_jobs(arch: str | None) -> list[tuple[str, Job | str, int]]:
    """kprof peak's tensor-core kernels (warm) and their FLOPs: mma.sync's (sm_80 on) and Hopper's
    warpgroup MMA (sm_90a); for one that cannot run here, why (an older architecture, a compiler
    that cannot build it)."""
    out: list[tuple[str, Job | str, int]] = []
    for name in bench.TENSOR_KERNELS:
        try:
            prepared = built(catalog.builtin(name).resolve(), arch)
        except KprofError as exc:
            out.append((name, str(exc).splitlines()[0], 0))
            continue
        out.append((name,
                    prepared.job(timing_mode("warm", bench.PEAK_RULE, "auto", arch,
                                             integrity=False)),
                    int(prepared.resolved.flops or 0)))
    return out


def _op_jobs(arch: str | None) -> list[bench.StreamJob]:
    """PyTorch's op of each mix (:mod:`kprof.baselines.peak_ops`) on the stream spec's buffers at
    each of kprof peak's sizes, cold, as ``kprof bench`` times a baseline; none where PyTorch is not
    installed (the report says so)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return []
    from kprof.baselines import PEAK_OPS, peak_ops_path
    from kprof.spec import pyref

    cold = timing_mode("cold", bench.PEAK_RULE, "auto", arch, integrity=False)
    out = []
    for kind in ceilings.MIXES:
        spec, mode = catalog.builtin(f"kprof_{kind}"), replace(cold,
                                                               python=pyref.Ref(peak_ops_path(), kind).stored())
        for size in bench.PEAK_BYTES:
            r = resolve(spec, {"BLOCKS": 1, "BYTES": size})
            out.append(bench.StreamJob(kind, 0, 0, built(r, arch).job(mode), int(r.bytes or 0),
                                       op=f"PyTorch's {PEAK_OPS[kind]}", size=size))
    return out


QUICK_NOTE = ("quick ceilings, measured for the first bench on this GPU in {seconds:.0f} s: each "
              "mix once (1 GiB, 16-byte accesses, 2048 blocks), no PyTorch op; `kprof peak` "
              "measures every configuration (about two minutes) and replaces them")


def peak(refresh: bool = False, arch: str | None = None,
         progress: Callable[[str], None] | None = None,
         thorough: bool = False, quick: bool = False) -> ceilings.Ceilings:
    """This GPU's ceilings, cached per GPU and driver; measured again with ``refresh``: the stream
    kernels of every mix at each access width and grid size (``thorough``: 4-byte accesses too), the
    device-to-device memcpy, and the FP32 FMA kernel (:func:`kprof.measure.bench.measure_peak`).
    ``quick`` (the first ``kprof bench`` on a GPU): where nothing is cached, each mix once (1 GiB,
    2048 blocks) and no PyTorch op rather than every configuration (about two minutes), said in the
    result and replaced by the next ``kprof peak``; a cached quick measurement is measured again in
    full unless ``quick``. ``progress`` hears each configuration."""
    from kprof.child.timing import MEMCPY

    path = _peak_path()
    if not refresh and (cached := bench.cached_peak(path)) is not None and (quick or not cached.quick):
        return cached
    if progress:  # the first bench on a GPU waits for this: say why
        how = "quick: each mix once" if quick else "kprof peak, about two minutes with PyTorch installed"
        progress(f"measuring this GPU's ceilings ({how}; cached for later runs)")
    configs = []
    for kind in ceilings.MIXES:
        spec = catalog.builtin(f"kprof_{kind}")
        for size in bench.PEAK_BYTES[:1] if quick else bench.PEAK_BYTES:
            for width in bench.PEAK_WIDTHS_THOROUGH if thorough else bench.PEAK_WIDTHS:
                for blocks in bench.PEAK_GRIDS[:1] if quick else bench.PEAK_GRIDS:
                    # 0: one access per thread, as many blocks as 256-thread groups of accesses
                    grid = blocks or -(-size // width // 256)
                    configs.append((kind, width, resolve(spec, {"BLOCKS": grid, "BYTES": size},
                                                         params={"WIDTH": str(width)})))
    fma_resolved = catalog.builtin("kprof_fma").resolve()
    # Cold, the builds took a quarter of kprof peak: each kernel once, side by side (nvcc is a
    # process).
    wanted = {(c[2].spec.name, c[1]): c[2] for c in configs}
    wanted.update({("kprof_copy", 0): resolve(catalog.builtin("kprof_copy")),
                   ("kprof_fma", 0): fma_resolved})
    from kprof import parallel

    parallel.map_jobs(lambda r: built(r, arch), list(wanted.values()),
                      parallel.build_jobs(len(wanted)))
    parallel.map_jobs(lambda n: builtin(n, arch), ["kprof_spin", "kprof_flush"], 2)
    streams = [bench.StreamJob(kind, width, r.sizes["BLOCKS"],
                               built(r, arch).job(timing_mode("cold", bench.PEAK_RULE, "auto", arch,
                                                                              integrity=False)), int(r.bytes or 0),
                               size=r.sizes["BYTES"])
               for kind, width, r in configs]
    streams += [] if quick else _op_jobs(arch)
    copy = built(wanted["kprof_copy", 0], arch)
    memcpy = copy.job(timing_mode("cold", bench.PEAK_RULE, "events", arch, library=MEMCPY,
                                  integrity=False))
    fma = built(fma_resolved, arch).job(timing_mode("warm", bench.PEAK_RULE, "auto", arch,
                                                    integrity=False))
    from kprof.results import history

    start = time.monotonic()
    data = bench.measure_peak(streams, (memcpy, int(copy.resolved.bytes or 0)),
                              (fma, int(fma_resolved.flops or 0)),
                              progress=progress, tensor=_tensor_jobs(arch))
    if quick:
        data = dict(data, quick=True, ops_note=QUICK_NOTE.format(seconds=time.monotonic() - start))
    return bench.save_peak(path, dict(data, provenance=history.provenance()))
