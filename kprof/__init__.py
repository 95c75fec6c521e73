"""kprof: build, launch, verify, sanitize, profile and benchmark CUDA kernels.

Importing kprof loads no CUDA, nvtx or NumPy module: those are imported where a command needs
them, so ``import kprof`` and ``kprof --help`` work on any machine.

The public surface is this module: the API functions and the types they return, each listed once in
:data:`__all__` and loaded on first use. ``kprof.run()``, ``kprof.run_bench()``, ``kprof.run_peak()`` (this
GPU's ceilings), ``kprof.sanitize()``, ``kprof.sanitize_tests()`` (a pytest suite), ``kprof.run_cases()``
(the seeded-bug corpus), ``kprof.run_bench_cases()`` (the cheat corpus), ``kprof.run_perf_cases()`` (the
performance corpus), ``kprof.run_mutants()`` (a spec's mutation score), ``kprof.profile()``,
``kprof.diagnose()`` (why a kernel is slow), ``kprof.checkers()``, ``kprof.load()`` (a kernel as an
operation on PyTorch or CuPy arrays), ``kprof.range()``, and those of the commands that run no kernel
(``kprof.list_kernels()``, ``kprof.new_kernel()``, ``kprof.doctor()``, ``kprof.build_kernels()``, ...).
Module paths are the layout and may move: the old ones of the 0.1.0 layout still import, with a warning
(:mod:`kprof.moved`).
"""

from __future__ import annotations

import importlib
from typing import Any

from kprof import moved
from kprof.version import __version__

# Each public name once: where it lives.
_PUBLIC = {
    # the API functions: kprof.commands.api, the corpora's in kprof.commands.corpora
    "run": "kprof.commands.api", "run_bench": "kprof.commands.api", "run_peak": "kprof.commands.api",
    "sanitize": "kprof.commands.api", "sanitize_tests": "kprof.commands.api", "prestart_tests": "kprof.commands.api",
    "profile": "kprof.commands.api", "profile_program": "kprof.commands.api", "diagnose": "kprof.commands.api",
    "checkers": "kprof.commands.api",
    "load": "kprof.commands.api", "range": "kprof.annotate",
    "run_cases": "kprof.commands.corpora", "run_bench_cases": "kprof.commands.corpora",
    "run_perf_cases": "kprof.commands.corpora", "run_mutants": "kprof.commands.corpora",
    "list_kernels": "kprof.commands.offline", "new_kernel": "kprof.commands.offline", "doctor": "kprof.commands.offline",
    "readiness": "kprof.commands.offline",
    "build_kernels": "kprof.commands.offline", "occupancy_of": "kprof.commands.offline",
    "bench_history": "kprof.commands.offline", "compare_runs": "kprof.commands.offline",
    # the types they return
    "RunReport": "kprof.results.reports", "BenchReport": "kprof.results.reports", "SanitizeReport": "kprof.results.reports",
    "BenchCasesReport": "kprof.results.reports", "MutantsReport": "kprof.corpus.mutation",
    "PointResult": "kprof.measure.bench", "KernelProfile": "kprof.measure.profiling", "Diagnosis": "kprof.diagnosis.model",
    "ToolResult": "kprof.tools.toolrun", "Finding": "kprof.findings", "CaseResult": "kprof.corpus.cases",
    "PerfResult": "kprof.corpus.perfcases", "Op": "kprof.op", "Checker": "kprof.tools.checker",
    "BuildReport": "kprof.commands.offline", "OccupancyReport": "kprof.commands.offline",
    "Comparison": "kprof.commands.offline", "ProgramProfile": "kprof.diagnosis.program",
    "Listing": "kprof.spec.catalog", "Check": "kprof.tools.doctor", "Readiness": "kprof.tools.doctor",
    "HistoryRow": "kprof.results.history", "RunChange": "kprof.results.history",
}  # fmt: skip

__all__ = ["__version__", *sorted(_PUBLIC)]

moved.install()


def __dir__() -> list[str]:
    """The API beside the module's own names, so ``help(kprof)`` and ``dir(kprof)`` list the functions
    (loaded on first use: help imports them; ``import kprof`` does not)."""
    return sorted(set(globals()) | set(__all__))


def __getattr__(name: str) -> Any:
    where = _PUBLIC.get(name)
    if where is None:
        raise AttributeError(f"module 'kprof' has no attribute {name!r}")
    return getattr(importlib.import_module(where), name)
