"""The performance corpus (``perf_cases/``): kernels with one known performance problem, each beside
a twin without it, and what ``kprof profile``'s diagnosis must say of it.

``expect: {cause: RULE, line: N | launch | entry, unless: fast-fp64, metric: FIELD,
higher_than_twin: F}``: the first cause's rule, the line it must name (default: the line the source
marks ``// PERF``; ``launch``: the spec's launch or steps line; ``entry``: the kernel's
``__global__`` line), on a GPU where the ``unless`` condition holds no such cause at all (a negative
control), and optionally a profile field that must differ from the twin's by a factor (the profiler
test's check).

The command layer (``kprof.commands.corpora.run_perf_cases``) benches the case and its twin in one
run (the measured gain), profiles and diagnoses the case (its tries measured in the same process);
:func:`judge`
says whether the first cause is right, at the right line, its estimate within :data:`WITHIN` of the
gain.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import KW_ONLY, asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from kprof import spec as spec_mod
from kprof.errors import KprofError, SpecError

if TYPE_CHECKING:
    from kprof.diagnosis.model import Diagnosis
    from kprof.tools.nsight.ncu import RuleResult

WITHIN = 1.5  # an estimate within this factor of the measured gain (either way) is right
_PERF = re.compile(r"//\s*PERF\b")
UNLESS = ("fast-fp64",)


@dataclass(frozen=True)
class PerfExpect:
    cause: str
    line: int | str  # a line of the source, "launch" or "entry"
    unless: str | None = None
    metric: str | None = None
    factor: float = 1.0
    higher: bool = True


@dataclass(frozen=True)
class PerfCase:
    name: str
    spec: spec_mod.KernelSpec
    expect: PerfExpect

    def verdict(self, bug: float | None, twin: float | None) -> tuple[bool, str]:
        """The profile field's check: the bug's value at least ``factor`` times the twin's (or
        1/factor)."""
        m, factor = self.expect.metric, self.expect.factor
        if bug is None or twin is None:
            return False, f"{m} was not measured (bug {bug}, twin {twin})"
        if self.expect.higher:
            ok = bug >= factor * twin if twin > 0 else bug > 0
            rel = "higher" if ok else "NOT higher"
        else:
            ok = bug * factor <= twin
            rel = "lower" if ok else "NOT lower"
        return ok, f"{m}: {bug:.4g} vs twin {twin:.4g} ({rel} by {factor:g}x or more as expected)"


def load_case(spec: spec_mod.KernelSpec) -> PerfCase:
    from kprof.diagnosis.rules import RULE_IDS
    from kprof.measure.kernelprofile import METRICS

    where = str(spec.path)
    raw = spec.expect
    if not isinstance(raw, dict) or "cause" not in raw:
        raise SpecError(where, "expect",
                        "a performance case needs expect: {cause: RULE} (and line, unless, metric)")
    if spec.twin is None:
        raise SpecError(where, "twin", "a performance case needs a twin without the problem")
    extra = set(raw) - {"cause", "line", "unless", "metric", "higher_than_twin", "lower_than_twin"}
    if extra:
        raise SpecError(where, f"expect.{sorted(extra)[0]}",
                        "unknown field (known: cause, line, unless, metric, "
                        "higher_than_twin, lower_than_twin)")
    if raw["cause"] not in RULE_IDS:
        raise SpecError(where, "expect.cause",
                        f"{raw['cause']!r} is not a diagnosis rule ({', '.join(RULE_IDS)})")
    if raw.get("unless") is not None and raw["unless"] not in UNLESS:
        raise SpecError(where, "expect.unless",
                        f"{raw['unless']!r}: known conditions are {', '.join(UNLESS)}")
    marked = [i + 1 for i, text in enumerate(spec.source.read_text().splitlines())
              if _PERF.search(text)]
    line = raw.get("line")
    if line is None:
        if len(marked) != 1:
            raise SpecError(where, "source",
                            f"{spec.source.name} must mark exactly one line with // PERF "
                            f"(found {len(marked)}), or the spec gives expect.line")
        line = marked[0]
    if not (line in ("launch", "entry")
            or (isinstance(line, int) and not isinstance(line, bool) and line >= 1)):
        raise SpecError(where, "expect.line", f"{line!r} must be a line number, launch or entry")
    metric, factor, higher = raw.get("metric"), 1.0, True
    if metric is not None:
        if metric not in METRICS:
            raise SpecError(where, "expect.metric",
                            f"{metric!r} is not a measured profile number (known: "
                            f"{', '.join(sorted(METRICS))})")
        keys = {"higher_than_twin", "lower_than_twin"} & set(raw)
        if len(keys) != 1:
            raise SpecError(where, "expect",
                            "with metric, give exactly one of higher_than_twin or lower_than_twin")
        key = keys.pop()
        factor = raw[key]
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor < 1:
            raise SpecError(where, f"expect.{key}", f"{factor!r} must be a factor of at least 1")
        higher = key == "higher_than_twin"
    return PerfCase(spec.name, spec,
                    PerfExpect(raw["cause"], line, raw.get("unless"), metric, float(factor),
                               higher))


def load_all(specs: list[spec_mod.KernelSpec]) -> list[PerfCase]:
    """The cases of these specs (the catalog's ``perf`` group, found by the command layer)."""
    return [load_case(s) for s in specs]


@dataclass
class PerfResult:
    case: str
    expected: str  # the rule, or "none" for a negative control on this GPU
    expected_line: str
    first: str | None  # the first cause's rule
    line: str | None  # the line it named
    _: KW_ONLY  # the rest by name
    cause_right: bool
    line_right: bool
    estimate: float | None
    measured: float | None  # the twin's gain, benched in one run with the case
    estimate_right: bool | None  # None: no estimate given
    tried: str = ""  # the try that confirmed it, and its measured gain
    try_gain: float | None = None
    mode: Literal["counters", "counter-less", ""] = ""  # the diagnosis's; "" where none was made
    causes: list[str] = field(default_factory=list)
    error: str = ""
    # the whole diagnosis, with its replayable inputs
    diagnosis: dict[str, object] = field(default_factory=dict)
    ncu_rule: str | None = None  # Nsight Compute's optimisation rule with the largest Est. Speedup
    ncu_cause: str | None = None  # kprof's name for it (kprof.diagnosis.ncurules.cause_of)
    ncu_speedup: float | None = None  # its estimate as a speedup
    ncu_proposed: int = 0  # how many optimisation rules it listed
    # each with its estimate's type and value
    ncu_rules: list[dict[str, object]] = field(default_factory=list)

    @property
    def ncu_right(self) -> bool | None:
        if self.ncu_rule is None and not self.ncu_proposed:
            return None
        return self.ncu_cause == self.expected if self.expected != "none" else self.ncu_rule is None

    @property
    def ok(self) -> bool:
        return self.cause_right and self.line_right and self.estimate_right is not False and not self.error

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "ok": self.ok, "ncu_right": self.ncu_right}


def control_here(case: PerfCase, fp64_ratio: float | None) -> bool:
    """True where the case's ``unless`` holds on this GPU: a negative control, no such cause
    expected."""
    from kprof.diagnosis.facts import FAST_FP64

    return case.expect.unless == "fast-fp64" and fp64_ratio is not None and fp64_ratio >= FAST_FP64


def judge(case: PerfCase, diagnosis: Diagnosis, measured: float | None, *, control: bool,
          launch_line: int, entry_line: int) -> PerfResult:
    """Pure: the diagnosis of ``case`` against what the corpus expects of it."""
    from pathlib import Path

    first = diagnosis.first()
    named_lines: dict[object, int] = {"launch": launch_line, "entry": entry_line}
    exp_line = named_lines.get(case.expect.line, case.expect.line)
    causes = [c.rule for c in diagnosis.causes]
    if control:
        right = case.expect.cause not in causes
        return PerfResult(case.name, "none", "-", first.rule if first else None, None,
                          cause_right=right, line_right=True, estimate=None, measured=measured,
                          estimate_right=None, mode=diagnosis.mode, causes=causes)
    named = []
    if first is not None:
        named = [x for x in (first.line, *first.also) if x is not None]
    line_file = {"launch": case.spec.path.name, "entry": case.spec.source.name}.get(str(case.expect.line),
                                                                                    case.spec.source.name)
    line_right = any(Path(x.file).name == line_file and x.line == exp_line for x in named)
    est = first.gain.estimate if first is not None else None
    est_right = None
    if est is not None and measured:
        est_right = 1 / WITHIN <= est / measured <= WITHIN
    return PerfResult(case.name, case.expect.cause, f"{line_file}:{exp_line}",
                      first.rule if first else None,
                      first.line.show() if first and first.line else None,
                      cause_right=bool(first and first.rule == case.expect.cause),
                      line_right=line_right, estimate=est, measured=measured,
                      estimate_right=est_right, tried=first.gain.tried if first else "",
                      try_gain=first.gain.measured if first else None, mode=diagnosis.mode,
                      causes=causes)


def run_case(case: PerfCase, *, bench: Callable[[list[str]], Any],
             diagnosed: Callable[[PerfCase, float | None, tuple[float, ...]], tuple[Diagnosis, list[RuleResult], str]]
             ) -> PerfResult:
    """One case: ``bench([case, twin])`` (one ``kprof bench`` run: the measured gain),
    ``diagnosed(case, seconds, kernel_seconds)`` (its diagnosis from the bench's time and each
    launch's own GPU time in its timed call; Nsight Compute's rules; the architecture), then
    :func:`judge`. The command layer gives
    both; a kprof error is the case's, the others still run."""
    from kprof.diagnosis import gather, ncurules
    from kprof.diagnosis.facts import fp64_ratio_of, kernel_line

    try:
        report = bench([case.name, f"{case.name}_fixed"])
        times = {p.kernel: p.summary.median if p.status == "ok" and p.summary else None
                 for p in report.points}
        bug, twin = times.get(case.name), times.get(f"{case.name}_fixed")
        bad = [f"{p.kernel}: {p.status} {getattr(p, 'message', '') or ''}".strip()
               for p in report.points if p.status != "ok"]
        own = next((tuple(s for _, s in p.call_kernels) for p in report.points if p.kernel == case.name), ())
        d, rules, arch = diagnosed(case, bug, own)
        source = case.spec.source.read_text(errors="replace").splitlines()
        result = judge(case, d, bug / twin if bug and twin else None,
                       control=control_here(case, fp64_ratio_of(arch)),
                       launch_line=gather.launch_line(case.spec),
                       entry_line=kernel_line(source, case.spec.entry))
        result.error = "; ".join(bad)
        result.diagnosis = d.to_dict()
        if rules:
            v = ncurules.verdict(rules)
            result.ncu_rule, result.ncu_cause = v.rule, v.cause
            result.ncu_speedup, result.ncu_proposed = v.speedup, v.proposed
            result.ncu_rules = ncurules.listed(rules)
        return result
    except KprofError as exc:
        return PerfResult(case.name, case.expect.cause, str(case.expect.line), None, None,
                          cause_right=False,
                          line_right=False, estimate=None, measured=None, estimate_right=None,
                          error=str(exc).splitlines()[0])


def tally(results: list[PerfResult]) -> dict[str, object]:
    n = len(results)
    with_est = [r for r in results if r.estimate_right is not None]
    return {"cases": n, "cause_right": sum(r.cause_right for r in results),
            "line_right": sum(r.cause_right and r.line_right for r in results),
            "estimates": len(with_est),
            "estimates_within": sum(bool(r.estimate_right) for r in with_est),
            "confirmed_by_try": sum(1 for r in results if r.try_gain),
            "ncu_right": sum(1 for r in results if r.ncu_right),
            "ncu_judged": sum(1 for r in results if r.ncu_right is not None)}


def run_all(cases: list[PerfCase], *, bench: Callable[[list[str]], Any],
            diagnosed: Callable[[PerfCase, float | None, tuple[float, ...]], tuple[Diagnosis, list[RuleResult], str]],
            progress: Callable[[PerfResult], None] | None = None,
            interrupted: Callable[[], None] | None = None) -> list[PerfResult]:
    """Every case in turn (:func:`run_case`), ``progress(result)`` after each; a Ctrl-C (or SIGTERM)
    ends the run with the cases judged so far, and says so through ``interrupted()``."""
    out: list[PerfResult] = []
    try:
        for case in cases:
            out.append(run_case(case, bench=bench, diagnosed=diagnosed))
            if progress is not None:
                progress(out[-1])
    except KeyboardInterrupt:
        if interrupted is not None:
            interrupted()
    return out
