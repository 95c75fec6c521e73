"""Nsight Compute's guided analysis beside kprof's diagnosis: which cause each names first, and how
its "Est. Speedup" compares with a measured gain.

ncu's estimate is the share of the time it expects a change to save (a percent); as a speedup that
is 1 / (1 - share). Each estimate has a type: "global" is a share of the kernel's time, "local" a
share of one unit's (a pipe's, a scheduler's), not of the kernel's. Only global ones rank against
each other and against a measured gain; local ones count only where a kernel has no global estimate
(an ncu older than its "Estimated Speedup Type" column gives none of either). :data:`CAUSE_OF` maps
its optimisation rules to kprof's causes where one names the same problem; a rule with no
counterpart maps to None (its name is still reported).
"""

from __future__ import annotations

from dataclasses import dataclass

from kprof.tools.nsight.ncu import RuleResult

CAUSE_OF: dict[str, str | None] = {
    "UncoalescedGlobalAccess": "uncoalesced", "UncoalescedSharedAccess": "bank-conflicts",
    "SharedMemoryConflicts": "bank-conflicts", "ThreadDivergence": "divergence",
    "BranchDivergence": "divergence",
    "LaunchConfiguration": "small-grid", "TheoreticalOccupancy": None, "AchievedOccupancy": None,
    "FPInstructions": "fp64", "SOLFPRoofline": "fp64",
    "IssueSlotUtilization": None, "CPIStall": None, "HighPipeUtilization": None,
    "MemoryL2Compression": None, "SOLBottleneck": None, "SlowPipeLimiter": None, "FPTypes": "fp64",
}  # fmt: skip


_OCCUPANCY_RULES = ("TheoreticalOccupancy", "AchievedOccupancy")


def cause_of(rule: RuleResult) -> str | None:
    """kprof's cause for one of ncu's rules (:data:`CAUSE_OF`); its occupancy rules by the limiter
    their text names ("limited by the number of required registers", "... the required amount of
    shared memory"), none where the text names neither (warps a block, scheduling imbalance: kprof
    has no such cause)."""
    if rule.rule in _OCCUPANCY_RULES:
        text = rule.text.lower()
        if "register" in text:
            return "occupancy-registers"
        if "shared memory" in text:
            return "occupancy-shared"
        return None
    return CAUSE_OF.get(rule.rule)


@dataclass(frozen=True)
class NcuVerdict:
    rule: str | None  # the optimisation rule with the largest global Est. Speedup
    cause: str | None  # kprof's name for it, where there is one
    speedup: float | None  # its estimate as a speedup: 1 / (1 - saved share)
    proposed: int  # how many optimisation rules it listed


def _proposed(rules: list[RuleResult], kernel: str | None) -> list[RuleResult]:
    """ncu's optimisation (OPT) rules for ``kernel``, all kernels' when None."""
    return [r for r in rules if r.kind == "OPT" and (kernel is None or r.kernel == kernel)]


def verdict(rules: list[RuleResult], kernel: str | None = None) -> NcuVerdict:
    """ncu's first advice for ``kernel`` (all kernels' rules when None): its OPT rule with the
    largest estimate."""
    opts = _proposed(rules, kernel)
    rated = [r for r in opts if r.speedup is not None]
    rated = [r for r in rated if r.speedup_type.lower() == "global"] or rated
    if not rated:
        return NcuVerdict(None, None, None, len(opts))
    top = max(rated, key=lambda r: r.speedup or 0.0)
    saved = min(max((top.speedup or 0.0) / 100.0, 0.0), 0.999)
    return NcuVerdict(top.rule, cause_of(top), 1.0 / (1.0 - saved), len(opts))


def listed(rules: list[RuleResult], kernel: str | None = None) -> list[dict[str, object]]:
    """Every optimisation rule ncu gave ``kernel``, with its estimate's type and value, largest
    first: what a reader checks the verdict against."""
    opts = _proposed(rules, kernel)
    opts.sort(key=lambda r: (r.speedup_type.lower() != "global", -(r.speedup or 0.0)))
    return [{"rule": r.rule, "type": r.speedup_type, "est_speedup_pct": r.speedup, "cause": cause_of(r)} for r in opts]
