"""``kprof profile -- CMD``: where to spend the week. The profiled launches grouped by kernel, ranked by
their share of the profiled GPU time, each with its limiter (the roofline level nearest its peak), its
headroom to that roof, and the whole program's gain if that kernel reached its roof (Amdahl).

The share's denominator is the GPU time of the launches ncu profiled (``--launch-skip``/``--launch-count``
choose them), not the program's wall time; the headroom is 1 / the busiest unit's share of its peak (a
kernel at its roof has some unit near 100%), an estimate. Pure: profiles in, a ranking out.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from kprof.diagnose.facts import LATENCY_BELOW, profile_units
from kprof.measure.profiling import KernelProfile

MAX_HEADROOM = 100.0  # a unit below 1% busy says little about its roof: the headroom is capped here


@dataclass(frozen=True)
class Ranked:
    kernel: str
    launches: int
    seconds: float  # their GPU time, summed
    share: float  # of the profiled launches' GPU time
    limiter: str
    busiest: float | None  # the limiter's share of its peak
    headroom: float | None  # 1 / busiest, at most MAX_HEADROOM (an estimate)
    program_gain: float | None  # the program's speedup (over the profiled launches) if this kernel reached its roof

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _base_name(label: str) -> str:
    """``ampere_sgemm_128x64_nn#12`` -> ``ampere_sgemm_128x64_nn``: the kernel, not the launch."""
    return re.sub(r"#\d+$", "", label)


def rank(profiles: list[KernelProfile]) -> list[Ranked]:
    """The kernels of the profiled launches, most GPU time first."""
    groups: dict[str, list[KernelProfile]] = {}
    for p in profiles:
        groups.setdefault(_base_name(p.kernel), []).append(p)
    total = sum(p.duration_s or 0.0 for p in profiles)
    out = []
    for name, ps in groups.items():
        secs = sum(p.duration_s or 0.0 for p in ps)
        weights = [(p.duration_s or 0.0) for p in ps]
        merged: dict[str, float] = {}
        for p, w in zip(ps, weights):
            for unit, v in profile_units(p).items():
                merged[unit] = merged.get(unit, 0.0) + v * (w / secs if secs else 1 / len(ps))
        if merged:
            unit, busy = max(merged.items(), key=lambda kv: kv[1])
            head = min(MAX_HEADROOM, 1.0 / busy) if busy > 0 else MAX_HEADROOM
            limiter = unit if busy >= LATENCY_BELOW else f"latency (busiest: {unit} {busy:.0%})"
        else:
            busy, head, limiter = None, None, "unknown (no counters)"
        share = secs / total if total else 0.0
        gain = 1.0 / ((1 - share) + share / head) if head else None
        out.append(Ranked(name, len(ps), secs, share, limiter, busy, head, gain))
    return sorted(out, key=lambda r: -r.seconds)
