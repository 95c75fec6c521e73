"""Statistics for timings: pure functions, no GPU, no NumPy.

A timing is reported as a median with its spread (quartiles, min, max, relative standard
deviation). Sampling stops on a noise criterion, after a minimum number of samples and a minimum
time, or at a timeout, and the result says which rule stopped it (as nvbench does). Comparing two
results takes their measured noise into account.
"""

from __future__ import annotations

import statistics
from dataclasses import KW_ONLY, asdict, dataclass
from typing import Literal


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    q1: float
    q3: float
    min: float
    _: KW_ONLY  # the rest by name
    max: float
    mean: float
    stdev: float

    @property
    def rel_stdev(self) -> float:
        return self.stdev / self.mean if self.mean else 0.0

    @property
    def rel_iqr(self) -> float:
        return (self.q3 - self.q1) / self.median if self.median else 0.0

    def to_dict(self) -> dict[str, float]:
        return dict(asdict(self), rel_stdev=self.rel_stdev, rel_iqr=self.rel_iqr)

    @classmethod
    def of(cls, d: dict[str, float]) -> Summary:
        """A summary from its :meth:`to_dict` form (a stored result)."""
        return cls(int(d["n"]), float(d["median"]), float(d["q1"]), float(d["q3"]), float(d["min"]),
                   max=float(d["max"]), mean=float(d["mean"]), stdev=float(d["stdev"]))


_FIELDS = ("n", "median", "q1", "q3", "min", "max", "mean", "stdev")


def summary_of(value: object) -> Summary | None:
    """A summary from a record kprof wrote (:meth:`Summary.to_dict`), typed; None where there is
    none, or it lacks a number (a point that failed, a result of another kprof)."""
    if isinstance(value, Summary) or value is None:
        return value
    if not isinstance(value, dict) or not all(isinstance(value.get(k), (int, float))
                                              and not isinstance(value.get(k), bool)
                                              for k in _FIELDS):
        return None
    return Summary.of(value)


def summarize(samples: list[float]) -> Summary:
    if not samples:
        raise ValueError("no samples")
    xs = sorted(samples)
    n = len(xs)
    if n == 1:
        q1 = q3 = xs[0]
    else:
        q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return Summary(n, statistics.median(xs), q1, q3, xs[0], max=xs[-1], mean=statistics.fmean(xs),
                   stdev=statistics.stdev(xs) if n > 1 else 0.0)


@dataclass(frozen=True)
class StopRule:
    """Stop when the relative standard deviation of the samples is under ``rel_stdev`` (after at
    least ``min_samples`` samples and ``min_time`` seconds of samples), or at ``max_time`` or
    ``max_samples``."""

    rel_stdev: float = 0.005
    min_samples: int = 10
    min_time: float = 0.5
    max_time: float = 10.0
    max_samples: int = 100_000

    def check(self, samples: list[float], elapsed: float) -> str | None:
        n = len(samples)
        if n >= self.max_samples:
            return "max-samples"
        if elapsed >= self.max_time:
            return "timeout"
        if n < self.min_samples or elapsed < self.min_time:
            return None
        if summarize(samples).rel_stdev <= self.rel_stdev:
            return "noise"
        return None


def stable(summary: Summary, stop_reason: str, rel_stdev: float) -> bool:
    """A result is stable when the noise rule stopped it, or its spread is within twice the
    target."""
    return stop_reason == "noise" or summary.rel_stdev <= 2 * rel_stdev


def throughput(amount: int | float | None, seconds: float) -> float | None:
    return amount / seconds if amount and seconds > 0 else None


def fraction(value: float | None, ceiling: float | None) -> float | None:
    return value / ceiling if value is not None and ceiling else None


def classify(before: Summary, after: Summary,
             floor: float = 0.01) -> tuple[Literal["same", "faster", "slower"], float]:
    """``same``, ``faster`` or ``slower`` for ``after`` against ``before``, and the relative change
    of the median time. A change counts only beyond the noise: twice the larger relative IQR of
    the two, and never less than ``floor`` (1%)."""
    change = (after.median - before.median) / before.median
    noise = max(2 * max(before.rel_iqr, after.rel_iqr), floor)
    if abs(change) <= noise:
        return "same", change
    return ("slower" if change > 0 else "faster"), change
