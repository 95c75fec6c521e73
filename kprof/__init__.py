"""kprof: build, launch, verify, sanitize, profile and benchmark CUDA kernels.

Importing kprof loads no CUDA, nvtx or NumPy module: those are imported where a command needs
them, so ``import kprof`` and ``kprof --help`` work on any machine. The Python API is
``kprof.run()``, ``kprof.run_bench()``, ``kprof.run_peak()`` (this GPU's ceilings), ``kprof.sanitize()``,
``kprof.sanitize_tests()`` (a pytest suite), ``kprof.run_cases()``
(the seeded-bug corpus), ``kprof.run_bench_cases()`` (the cheat corpus), ``kprof.run_mutants()`` (a spec's mutation
score), ``kprof.profile()``,
``kprof.load()`` (a kernel as an operation on PyTorch or CuPy arrays) and ``kprof.range()``
(:mod:`kprof.commands.api`, :mod:`kprof.op`, :mod:`kprof.annotate`), loaded on first use.
"""

from __future__ import annotations

from typing import Any

from kprof.version import __version__

__all__ = ["BenchReport", "RunReport", "SanitizeReport", "__version__", "diagnose", "load", "prestart_tests", "profile",
           "range", "run", "run_bench", "run_bench_cases", "run_cases", "run_mutants", "run_peak", "run_perf_cases",
           "sanitize", "sanitize_tests"]


def __dir__() -> list[str]:
    """The API beside the module's own names, so ``help(kprof)`` and ``dir(kprof)`` list the functions
    (loaded on first use: help imports them; ``import kprof`` does not)."""
    return sorted(set(globals()) | set(__all__))


def __getattr__(name: str) -> Any:
    if name == "range":
        from kprof.annotate import range as range_

        return range_
    if name in ("run", "run_bench", "run_bench_cases", "run_cases", "run_mutants", "run_peak", "sanitize", "sanitize_tests",
                "prestart_tests", "profile", "load", "BenchReport", "RunReport", "SanitizeReport", "diagnose",
                "run_perf_cases"):
        from kprof.commands import api

        return getattr(api, name)
    raise AttributeError(f"module 'kprof' has no attribute {name!r}")
