"""The test suite's reader of the performance corpus (``perf_cases/``):
:mod:`kprof.corpus.perfcases`.
Each case's optional ``expect.metric`` says a profile field that must differ from its twin's by a
factor."""

from __future__ import annotations

from kprof.corpus import perfcases
from kprof.corpus.perfcases import PerfCase, load_case
from kprof.spec import catalog

__all__ = ["PerfCase", "load_all", "load_case"]


def load_all() -> list[PerfCase]:
    return perfcases.load_all(catalog.group("perf"))


def with_metric() -> list[PerfCase]:
    return [c for c in load_all() if c.expect.metric]
