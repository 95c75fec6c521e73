"""The test suite's reader of the seeded performance bugs (``perf_cases/``): each kernel beside a twin without the problem, and
the profiler metric that must show it. ``expect: {metric: FIELD, higher_than_twin: F}`` (or
``lower_than_twin``) says the bug's value of a :class:`~kprof.measure.profiling.KernelProfile` field must be
at least F times the twin's (or at most 1/F of it).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from kprof import spec as spec_mod
from kprof.errors import SpecError
from kprof.measure.profiling import KernelProfile
from kprof.spec import catalog

_FIELDS = {f.name for f in fields(KernelProfile)}


@dataclass(frozen=True)
class PerfCase:
    name: str
    spec: spec_mod.KernelSpec
    metric: str
    factor: float
    higher: bool  # True: the bug's value must be higher than the twin's

    def verdict(self, bug: float | None, twin: float | None) -> tuple[bool, str]:
        if bug is None or twin is None:
            return False, f"{self.metric} was not measured (bug {bug}, twin {twin})"
        if self.higher:
            ok = bug >= self.factor * twin if twin > 0 else bug > 0
            rel = "higher" if ok else "NOT higher"
        else:
            ok = bug * self.factor <= twin
            rel = "lower" if ok else "NOT lower"
        return ok, f"{self.metric}: {bug:.4g} vs twin {twin:.4g} ({rel} by {self.factor:g}x or more as expected)"


def load_perf_case(spec: spec_mod.KernelSpec) -> PerfCase:
    where = str(spec.path)
    raw = spec.expect
    if not isinstance(raw, dict) or "metric" not in raw:
        raise SpecError(where, "expect", "a performance case needs expect: {metric: FIELD, higher_than_twin: F}")
    if spec.twin is None:
        raise SpecError(where, "twin", "a performance case needs a twin without the problem")
    metric = raw["metric"]
    if metric not in _FIELDS:
        raise SpecError(where, "expect.metric", f"{metric!r} is not a profile field")
    keys = set(raw) - {"metric"}
    if len(keys) != 1 or not keys <= {"higher_than_twin", "lower_than_twin"}:
        raise SpecError(where, "expect", "give exactly one of higher_than_twin or lower_than_twin")
    key = keys.pop()
    factor = raw[key]
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor < 1:
        raise SpecError(where, f"expect.{key}", f"{factor!r} must be a factor of at least 1")
    return PerfCase(spec.name, spec, metric, float(factor), key == "higher_than_twin")


def load_all() -> list[PerfCase]:
    return [load_perf_case(spec) for spec in catalog.group("perf")]
