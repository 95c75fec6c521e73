"""kprof: build, launch, verify, sanitize, profile and benchmark CUDA kernels.

The API (each function loaded on first use; ``help(kprof.run)`` for one in full):

    kprof.bench_history(name=None, *, limit=20) -> list[history.HistoryRow]
    kprof.build_kernels(names=(), *, all=False, params=(), arch=None, force=False,
        progress=None) -> BuildReport
    kprof.checkers() -> list[dict[str, object]]
    kprof.compare_runs(before='last~1', after='last') -> Comparison
    kprof.diagnose(name, *, sizes=None, params=None, arch=None, try_params=None, auto_try=True,
        timeout=600.0) -> Diagnosis
    kprof.doctor() -> list[Check]
    kprof.list_kernels(*, arch=None) -> list[Listing]
    kprof.load(name, *, arch=None, sizes=None, **defines) -> Op
    kprof.new_kernel(name, folder='.', *, like=None) -> tuple[Path, Path]
    kprof.occupancy_of(name, *, sizes=None, blocks=(), dynamic_smem=None, arch=None) ->
        OccupancyReport
    kprof.prestart_tests(collect, tools='all', *, timeout=600.0, padding=256, keep_pools=False,
        cwd=None, jobs=None, all_kernels=False) -> Early
    kprof.profile(target, *, kernel=None, range=None, launch_skip=0, launch_count=10,
        set_name='quick', metrics=(), sizes=None, params=None, baseline=None, report_dir=None,
        arch=None, timeout=600.0) -> list[KernelProfile]
    kprof.profile_program(cmd, *, kernel=None, range=None, launch_skip=0, launch_count=10,
        set_name='quick', metrics=(), arch=None, report_dir=None, timeout=600.0) ->
        ProgramProfile
    kprof.profile_specs(names, *, sizes=None, params=None, baseline=None, set_name='quick',
        metrics=(), report_dir=None, tries=(), auto_try=True, diagnose=True, arch=None,
        timeout=600.0, progress=None) -> SpecProfiles
    kprof.readiness(checks, commands=None) -> list[Readiness]
    kprof.run(kernel, *, sizes=None, params=None, preset='default', seed=0, arch=None,
        timeout=300.0) -> RunReport
    kprof.run_bench(names, *, sizes=(), params=(), baseline='auto', mode='cold', timer='auto',
        rel_stdev=0.005, min_time=0.5, max_time=10.0, arch=None, timeout=300.0, history=True,
        progress=None, peak_progress=None) -> BenchReport
    kprof.run_bench_cases(*, arch=None, timeout=300.0, max_time=2.0) -> BenchCasesReport
    kprof.run_cases(names=None, *, jobs=None, arch=None, timeout=300.0, progress=None,
        beyond=None) -> list[CaseResult]
    kprof.run_mutants(name, *, dry_run=False, arch=None, timeout=None, limit=None, jobs=None,
        progress=None) -> MutantsReport
    kprof.run_peak(*, refresh=False, thorough=False, arch=None, progress=None) -> Ceilings
    kprof.run_perf_cases(corpus=None, *, arch=None, timeout=300.0, report_dir=None,
        progress=None, interrupted=None) -> list[PerfResult]
    kprof.sanitize(target, tools='all', *, sizes=None, arch=None, timeout=300.0, padding=256,
        keep_pools=False, progress=None, cwd=None, jobs=1, all_kernels=False) -> SanitizeReport
    kprof.sanitize_tests(tests, tools='all', *, timeout=600.0, padding=256, keep_pools=False,
        cwd=None, jobs=None, progress=None, early=None, all_kernels=False) -> dict[str,
        TestVerdict]

Importing kprof loads no CUDA, nvtx or NumPy module: those are imported where a command needs
them, so ``import kprof`` and ``kprof --help`` work on any machine.

The public surface is this module: the API functions above and the types they return, each listed
once in :data:`__all__` and loaded on first use. ``kprof.run()`` is what ``kprof run`` prints,
``kprof.run_bench()`` ``kprof bench``, ``kprof.run_peak()`` this GPU's ceilings,
``kprof.sanitize()`` (a spec or a program) and ``kprof.sanitize_tests()`` (a pytest suite) ``kprof
sanitize``, ``kprof.run_cases()`` the seeded-bug corpus, ``kprof.run_bench_cases()`` the cheat
corpus, ``kprof.run_perf_cases()`` the performance corpus, ``kprof.run_mutants()`` a spec's mutation
score, ``kprof.profile()`` and ``kprof.diagnose()`` (why a kernel is slow) ``kprof profile``,
``kprof.load()`` a kernel as an operation on PyTorch or CuPy arrays, and ``kprof.range()`` an NVTX
range; the commands that run no kernel have theirs (``kprof.list_kernels()``,
``kprof.new_kernel()``, ``kprof.doctor()``, ``kprof.build_kernels()``, ...). Module paths are the
layout, not the API: until 1.0 any name may change, and CHANGELOG.md says how.
"""

from __future__ import annotations

import importlib
from typing import Any

from kprof.version import __version__

# Each public name once: where it lives.
_PUBLIC = {
    # the API functions: kprof.commands.api, the corpora's in kprof.commands.corpora
    "run": "kprof.commands.api", "run_bench": "kprof.commands.api",
    "run_peak": "kprof.commands.api",
    "sanitize": "kprof.commands.api", "sanitize_tests": "kprof.commands.api",
    "prestart_tests": "kprof.commands.api",
    "profile": "kprof.commands.profiles", "profile_program": "kprof.commands.profiles",
    "diagnose": "kprof.commands.profiles", "profile_specs": "kprof.commands.profiles",
    "checkers": "kprof.commands.api",
    "load": "kprof.commands.api", "range": "kprof.annotate",
    "run_cases": "kprof.commands.corpora", "run_bench_cases": "kprof.commands.corpora",
    "run_perf_cases": "kprof.commands.corpora", "run_mutants": "kprof.commands.corpora",
    "list_kernels": "kprof.commands.offline", "new_kernel": "kprof.commands.offline",
    "doctor": "kprof.commands.offline", "readiness": "kprof.commands.offline",
    "build_kernels": "kprof.commands.offline", "occupancy_of": "kprof.commands.offline",
    "bench_history": "kprof.commands.offline", "compare_runs": "kprof.commands.offline",
    # the types they return
    "RunReport": "kprof.results.reports", "BenchReport": "kprof.results.reports",
    "SanitizeReport": "kprof.results.reports",
    "BenchCasesReport": "kprof.results.reports", "MutantsReport": "kprof.corpus.mutation",
    "PointResult": "kprof.measure.bench", "KernelProfile": "kprof.measure.profiling",
    "Diagnosis": "kprof.diagnosis.model",
    "ToolResult": "kprof.tools.sanitizers.toolrun", "Finding": "kprof.findings",
    "CaseResult": "kprof.corpus.cases",
    "PerfResult": "kprof.corpus.perfcases", "Op": "kprof.op",
    "Checker": "kprof.tools.sanitizers.checker",
    "BuildReport": "kprof.commands.offline", "OccupancyReport": "kprof.commands.offline",
    "Comparison": "kprof.commands.offline", "ProgramProfile": "kprof.diagnosis.program",
    "Listing": "kprof.spec.catalog", "SpecProfiles": "kprof.diagnosis.stage",
    "Check": "kprof.tools.machine.doctor", "Readiness": "kprof.tools.machine.doctor",
    "HistoryRow": "kprof.results.history", "RunChange": "kprof.results.history",
}  # fmt: skip

__all__ = ["__version__", *sorted(_PUBLIC)]



def __dir__() -> list[str]:
    """The API beside the module's own names, so ``help(kprof)`` and ``dir(kprof)`` list the
    functions (loaded on first use: help imports them; ``import kprof`` does not)."""
    return sorted(set(globals()) | set(__all__))


def __getattr__(name: str) -> Any:
    where = _PUBLIC.get(name)
    if where is None:
        raise AttributeError(f"module 'kprof' has no attribute {name!r}")
    return getattr(importlib.import_module(where), name)
