"""kprof from Python: ``kprof.run()``, ``kprof.run_bench()``, ``kprof.sanitize()``,
``kprof.run_cases()``, ``kprof.profile()`` and ``kprof.range()``.

The same pipeline as the CLI, returning typed reports instead of printing, so scripts, notebooks and
test suites do not shell out. A target is a spec (a name from ``kprof list`` or a path to a spec
file) or a program (an argv list: ``["python", "train.py"]``). Errors are
:class:`~kprof.errors.KprofError` subclasses with the same one-line messages as the CLI.

``kprof.range`` lives in :mod:`kprof.annotate` and costs no import of CUDA or nvtx until used.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kprof import inputs
from kprof.commands.apitypes import checked
from kprof.errors import UsageError
from kprof.results.reports import BenchCasesReport as BenchCasesReport
from kprof.results.reports import BenchReport as BenchReport
from kprof.results.reports import RunReport as RunReport
from kprof.results.reports import SanitizeReport as SanitizeReport

if TYPE_CHECKING:  # the returned types, named without importing their stages when kprof is imported
    from kprof.launch.job import TimingModeName
    from kprof.measure.ceilings import Ceilings
    from kprof.op import Op
    from kprof.spec import KernelSpec
    from kprof.tools.suites.suite import Early
    from kprof.tools.suites.suiteverdict import Test, TestVerdict

# The corpora's API (kprof cases, cases --bench, cases --perf, mutants) is kprof.commands.corpora;
# kprof.run_cases and the rest name it from the package (kprof/__init__.py).


@checked
def run(kernel: str | Path, *, sizes: dict[str, int] | None = None,
        params: dict[str, str] | None = None,
        preset: str = "default", seed: int = 0, arch: str | None = None,
        timeout: float = 300.0) -> RunReport:
    """Build ``kernel`` (a name from ``kprof list`` or a spec file), run it once in a child at
    ``sizes`` (the spec's ``preset``, ``default`` or ``sanitize``, where a size is not given), time
    it and verify every output against the float64 reference: what ``kprof run`` prints."""
    from kprof.commands import pipeline
    from kprof.launch import launch
    from kprof.launch.job import RunMode
    from kprof.spec import catalog

    if preset not in ("default", "sanitize"):
        raise UsageError(f"preset {preset!r}: give 'default' or 'sanitize'")
    spec = catalog.load(str(kernel))
    resolved = pipeline.resolve(spec, dict(sizes or {}), params=dict(params or {}), preset=preset)
    # every input checked first, then the GPU: nothing is built for a run that cannot happen
    require_gpu(None)
    prepared = pipeline.built(resolved, arch)
    job = prepared.job(RunMode(time=True), seed=seed)
    return RunReport(launch.run_kernel(job, timeout=timeout), prepared.resolved, prepared.built,
                     spec.entry)


@checked
def run_bench(names: str | Sequence[str | KernelSpec], *, sizes: Sequence[str] | Any = (),
              params: Sequence[str] | Any = (), baseline: str = "auto", mode: str = "cold",
              timer: str = "auto", rel_stdev: float = 0.005, min_time: float = 0.5,
              max_time: float = 10.0, arch: str | None = None, timeout: float = 300.0,
              history: bool = True, progress: Callable[[int, int, Any], None] | None = None,
              peak_progress: Callable[[str], None] | None = None) -> BenchReport:
    """Time each kernel (``names``: names from ``kprof list``, spec files, or specs) over the sweep
    of ``sizes`` and ``params`` (as ``kprof bench --size``/``--param`` write them:
    ``["M,N,K=1024,2048"]``), each point against its ``baseline`` in the same run, verified, judged
    against this GPU's measured ceilings, and written to the history store as it is measured
    (``history=False``: not). ``progress(i, n, point)`` is called before each point. A Ctrl-C ends
    the run with what was measured. (The name ``kprof.measure.bench`` is the module's.)"""
    from kprof.commands import pipeline
    from kprof.measure import bench as bench_mod
    from kprof.results import benchrun
    from kprof.spec import KernelSpec, catalog, sweep

    if mode not in ("cold", "warm", "hot"):
        raise UsageError(f"mode={inputs.one_line(str(mode))[:40]!r}: give cold, warm or hot")
    given = [names] if isinstance(names, str) else list(names)
    # a derived spec: a try
    specs = [n if isinstance(n, KernelSpec) else catalog.load(str(n)) for n in given]

    def swept(given: Any, what: str) -> Any:  # the CLI's parsed sweep, or the option's words
        if isinstance(given, sweep.Sweep):
            return given
        return sweep.parse([given] if isinstance(given, str) else list(given), what)

    plan = pipeline.bench_points(specs, swept(sizes, "size"), swept(params, "param"), baseline)
    rule = bench_mod.rule_from(rel_stdev, min_time, max_time)
    require_gpu(None)  # before the timing kernels are built and the ceilings measured
    timing = pipeline.timing_mode(cast("TimingModeName", mode), rule, timer, arch,
                                  cupti_hw_trace=os.environ.get("KPROF_CUPTI_HW_TRACE") == "1")
    # a first bench waits ~20 s, not minutes
    peak = pipeline.peak(arch=arch, progress=peak_progress, quick=True)
    return benchrun.run(plan, lambda point: pipeline.bench_plan(point, timing, arch), peak,
                        mode=timing.mode, rule=rule,
                        history=history, timeout=timeout, progress=progress)


@checked
def run_peak(*, refresh: bool = False, thorough: bool = False, arch: str | None = None,
             progress: Callable[[str], None] | None = None) -> Ceilings:
    """This GPU's ceilings (``kprof peak``, a :class:`kprof.measure.ceilings.Ceilings`): the cached
    measurement of this GPU and driver, or measured now (``refresh``; ``thorough``: 4-byte accesses
    too). With nothing cached, the GPU is checked before anything is built (no GPU: exit 5 in one
    line, not after building the peak kernels)."""
    from kprof.commands import pipeline

    if thorough and not refresh:
        raise UsageError("--thorough measures again: give --refresh with it")
    if refresh or (cached := pipeline.cached_peak()) is None or cached.quick:
        require_gpu(None)
    return pipeline.peak(refresh=refresh, arch=arch, progress=progress, thorough=thorough)


def require_gpu(tool: str | None) -> None:
    """Say a missing GPU (exit 5), else a missing tool (exit 3), in one line before anything is
    built or runs: with no GPU the tool is not the thing to install first."""
    from kprof import proc
    from kprof.child import device
    from kprof.errors import NoGPUError

    why = device.probe()
    if why is not None:
        raise NoGPUError(f"{why}; `kprof build`, `kprof list` and `kprof doctor` still work")
    if tool is not None:
        proc.find_tool(tool)


@checked
def checkers() -> list[dict[str, object]]:
    """kprof's checkers (``kprof sanitize --list-tools``), in the registry's order: each one's name,
    what it finds, and what it needs (:class:`kprof.tools.sanitizers.checker.Needs`)."""
    from kprof.tools.sanitizers import checkers as registry

    return registry.describe()


def program_tools(tools: str | Sequence[str]) -> list[str]:
    """The checkers named for a pytest suite's tests (``all``, or names): checked, in one line. Only
    those that can check tests (:func:`kprof.tools.sanitizers.checkers.for_tests`): not the values
    detector, which runs a whole program again and again."""
    from kprof.tools.sanitizers import checkers

    return checkers.choose(tools, tests=True)


@checked
def sanitize(target: str | Path | Sequence[str], tools: str | Sequence[str] = "all", *,
             sizes: dict[str, int] | None = None, arch: str | None = None, timeout: float = 300.0,
             padding: int = 256, keep_pools: bool = False, progress: Any = None,
             cwd: str | Path | None = None, jobs: int | None = 1,
             all_kernels: bool = False) -> SanitizeReport:
    """Run compute-sanitizer's tools (and, for a spec, kprof's values detector) over ``target``.

    A program runs under each tool in its own process group with kprof's defaults: framework memory
    pools off (PyTorch, CuPy, JAX; ``keep_pools`` leaves them), ``--padding`` after each allocation,
    racecheck's full report, no leak check; one tool at a time, each copy of the program with its
    own temporary folder and rendezvous (``jobs``: that many side by side, on the caller's word that
    the copies are independent; :func:`kprof.tools.sanitizers.copies.schedule`, its reason in the
    notes). ``progress(tool)`` is called as each tool starts, ``progress(tool, result)`` as it ends.
    A spec runs at its sanitize sizes (or ``sizes``). In a program racecheck and synccheck skip
    library kernels (:mod:`kprof.tools.sanitizers.kernelpolicy`; each result names what it skipped)
    unless ``all_kernels``."""
    from kprof.tools.sanitizers import checkers

    if timeout <= 0 or timeout != timeout:
        raise UsageError(f"timeout {timeout}: give a positive number of seconds")
    if isinstance(target, (str, Path)):
        return _sanitize_spec(str(target), checkers.choose(tools), sizes, arch, timeout, padding,
                              progress=progress)
    cmd = inputs.program_argv([str(a) for a in target], "sanitize", cwd)
    from kprof.tools.programs import allocators
    from kprof.tools.sanitizers.checker import Program, Settings

    names = checkers.choose(tools, program=True)
    require_gpu("compute-sanitizer" if checkers.needs_sanitizer(names) else None)
    env, notes = allocators.environment(dict(os.environ), pools=keep_pools)
    from kprof.tools.sanitizers import copies

    plan = copies.schedule(cmd, jobs)
    results = checkers.check_program(names, Program(tuple(cmd), env, cwd, not keep_pools),
                                     Settings(timeout, padding, all_kernels=all_kernels),
                                     jobs=plan.jobs, progress=progress)
    from kprof.tools.sanitizers import kernelpolicy

    policy = [kernelpolicy.POLICY] if any(checkers.skips(n, all_kernels) for n in names) else []
    counted = ", and the launch count" if checkers.needs_sanitizer(names) else ""
    runs = f"the program's runs (one a tool{counted}): {plan.why}"
    return SanitizeReport(" ".join(cmd), results, [*notes, *policy, runs])


@checked
def prestart_tests(collect: Sequence[str], tools: str | Sequence[str] = "all", *,
                   timeout: float = 600.0,
                   padding: int = 256, keep_pools: bool = False, cwd: str | Path | None = None,
                   jobs: int | None = None, all_kernels: bool = False) -> Early:
    """Children for :func:`sanitize_tests`, started before the tests are known (while pytest
    collects them): one per tool that will start at once, each collecting the paths ``collect``
    under its tool and waiting for its tests (:class:`kprof.tools.suites.suite.Early`; pass it as
    ``early``, then ``cancel()``)."""
    from kprof import parallel, proc
    from kprof.tools.programs import allocators
    from kprof.tools.suites import suite

    names = program_tools(tools)
    env, _ = allocators.environment(proc.child_env(), pools=keep_pools)
    width = parallel.jobs_for(len(names), jobs)
    return suite.Early(list(collect), names[:width], timeout=timeout, env=env,
                       cwd=cwd or Path.cwd(), padding=padding, all_kernels=all_kernels)


@checked
def sanitize_tests(tests: Sequence[Test], tools: str | Sequence[str] = "all", *,
                   timeout: float = 600.0,
                   padding: int = 256, keep_pools: bool = False, cwd: str | Path | None = None,
                   jobs: int | None = None, progress: Any = None, early: Early | None = None,
                   all_kernels: bool = False) -> dict[str, TestVerdict]:
    """Pytest tests (:class:`kprof.tools.suites.suiteverdict.Test`) under compute-sanitizer's tools,
    one child per tool for them all: a :class:`kprof.tools.suites.suiteverdict.TestVerdict` per node
    id, findings on the test that launched the kernel. ``timeout``: seconds one test may take under
    one tool. ``jobs`` tools at once (None: the machine's default). ``progress(tool, nodeid,
    finished)`` as each test finishes under a tool. ``early``: children :func:`prestart_tests`
    started, each given its tool's first batch. racecheck and synccheck skip library kernels unless
    ``all_kernels`` (:mod:`kprof.tools.sanitizers.kernelpolicy`)."""
    from kprof import proc
    from kprof.tools.programs import allocators
    from kprof.tools.suites import suite

    if timeout <= 0 or timeout != timeout:
        raise UsageError(f"timeout {timeout}: give a positive number of seconds")
    names = program_tools(tools)
    require_gpu("compute-sanitizer")
    env, _ = allocators.environment(proc.child_env(), pools=keep_pools)
    return suite.check_tests(tests, names, timeout=timeout, env=env, cwd=cwd or Path.cwd(),
                             padding=padding, jobs=jobs,
                             progress=progress, early=early, all_kernels=all_kernels)


def _sanitize_spec(name: str, tools: list[str], sizes: dict[str, int] | None, arch: str | None,
                   timeout: float, padding: int, *, progress: Any) -> SanitizeReport:
    from kprof.commands import pipeline
    from kprof.launch.job import RunMode
    from kprof.spec import catalog
    from kprof.tools.sanitizers import checkers
    from kprof.tools.sanitizers.checker import Settings

    spec = catalog.load(name)
    require_gpu("compute-sanitizer" if checkers.needs_sanitizer(tools) else None)
    prepared = pipeline.prepare(spec, sizes, preset="sanitize", arch=arch)
    # the values detector's scrubber and warp-delay build
    shaken = any(checkers.get(t).needs.shaken for t in tools)
    scrub, why = pipeline.scrubber(arch) if shaken else (None, "")
    results = checkers.run_all(prepared.job(RunMode(verify=False), shaken=shaken), tools,
                               Settings(timeout, padding, scrub, why), progress=progress)
    return SanitizeReport(prepared.resolved.spec.name, checkers.explain(results))


@checked
def load(name: str | Path, *, arch: str | None = None, sizes: dict[str, int] | None = None,
         **defines: Any) -> Op:
    """A spec's kernels as one operation on GPU arrays (:class:`kprof.op.Op`):
    ``kprof.load("rmsnorm_onepass")`` then ``y = op(x, w)`` on PyTorch tensors or CuPy arrays, on
    their current stream, no copy, no synchronisation. ``defines`` replace the spec's defines
    (``BLOCK=128``); ``sizes`` fixes sizes the arrays' shapes do not give. The cubin comes from
    kprof's build cache, built for the GPU present (or ``arch``) on first use."""
    from kprof.build import build
    from kprof.op import Op
    from kprof.spec import catalog

    spec = catalog.load(str(name)).with_defines({k: str(v) for k, v in defines.items()})
    built = build.build(spec, arch)
    return Op(spec, built.cubin, sizes=sizes)
