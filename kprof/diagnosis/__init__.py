"""The diagnosis stage of ``kprof profile``: why a kernel performs as it does, and what to change.

profile (ncu's counters, or what kprof measures without them) + the kernel's PTX lines + the GPU's
model -> :class:`~kprof.diagnosis.facts.Facts` -> every rule of :data:`~kprof.diagnosis.rules.RULES`
-> a :class:`~kprof.diagnosis.model.Diagnosis`: the limiter (the roofline's busiest unit, or
latency), the causes ranked by their gain, each with its evidence, line, change and estimated gain
(and, after
:mod:`kprof.diagnosis.tries`, the measured one), and what kprof could not see.
"""

from __future__ import annotations

from kprof.diagnosis import lines
from kprof.diagnosis.facts import LATENCY_BELOW, Facts, profile_units
from kprof.diagnosis.model import MIN_GAIN, Cause, Diagnosis


def units(f: Facts) -> dict[str, float]:
    """The roofline's levels kprof can see, each a share of its peak: the profile's, and without
    counters the spec's work against the roofs."""
    out = profile_units(f.profile)
    if not f.counters:
        mem = f.memory_fraction()
        if mem is not None:
            out["memory (spec bytes / ceiling)"] = mem
        if f.spec_flops and f.peak_flops and f.seconds:
            out["compute (spec FLOPs / peak)"] = f.spec_flops / f.seconds / f.peak_flops
    return out


def limiter(f: Facts, seen: dict[str, float]) -> str:
    if not seen:
        return "unknown (no counters and no work formula)"
    unit, busy = max(seen.items(), key=lambda kv: kv[1])
    if busy >= LATENCY_BELOW:
        return unit
    occ = f.occupancy()
    bits = [f"no unit above {busy:.0%}"]
    if occ is not None:
        bits.append(f"occupancy {occ.occupancy:.0%}" + ("" if occ.occupancy >= 1
                                                        else f" ({occ.limiter})"))
    if f.profile.stalls.shares:
        top = max(f.profile.stalls.shares, key=lambda r: f.profile.stalls.shares[r])
        bits.append(f"top stall {top} ({f.profile.stalls.shares[top]:.0%})")
    return "latency: " + ", ".join(bits)


def diagnose(f: Facts) -> Diagnosis:
    """Run every rule on ``f``; causes ranked by gain (measured, else estimated), those below
    MIN_GAIN left out with a note, those without an estimate after the rest."""
    from kprof.diagnosis.rules import RULES

    found: list[Cause] = []
    blind: list[str] = []
    notes = list(f.notes)
    for rule in RULES:
        if (why := rule.blind(f)) is not None:
            blind.append(why)
        try:
            cause = rule.check(f)
        except Exception as exc:  # noqa: BLE001 - one rule's bug costs its cause, not the profile the user asked for
            blind.append(f"{rule.id} (kprof could not check it: {type(exc).__name__}: {exc}; a "
                         "kprof bug, please report it)")
            continue
        if cause is None:
            continue
        g = cause.gain.estimate
        if g is not None and g < MIN_GAIN:
            notes.append(f"{cause.rule}: seen, but the gain would be under {MIN_GAIN - 1:.0%} "
                         f"({g:.2f}x estimated)")
            continue
        found.append(cause)
    found.sort(key=lambda c: (c.gain.estimate is None and c.gain.measured is None, -c.rank_key))
    seen = units(f)
    # a kernel far from its roof is never left without a cause: at least where its limiter works
    if not found:
        from kprof.diagnosis.rules import FALLBACK

        unit, busy = max(seen.items(), key=lambda kv: kv[1]) if seen else ("latency", None)
        if busy is not None and busy < LATENCY_BELOW:
            unit = "latency"
        if (cause := FALLBACK.check(f, _unit_name(unit), busy)) is not None:
            found.append(cause)
    page = f.profile.lines if f.counters else None
    return Diagnosis(f.kernel, "counters" if f.counters else "counter-less", limiter(f, seen), seen,
                     f.headroom(),
                     seconds=f.seconds, causes=found, cannot_see=sorted(set(blind)), notes=notes,
                     hot=lines.hot(page))


def _unit_name(unit: str) -> str:
    """The roofline level's name as :data:`kprof.diagnosis.lines.UNITS` knows it (without counters,
    the spec's memory or compute share)."""
    if unit.startswith("memory"):
        return "DRAM"
    if unit.startswith("compute"):
        return "FP32 pipe"
    return unit
