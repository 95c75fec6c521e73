"""Nsight Compute's own rules beside the diagnosis (kprof/diagnosis/ncurules.py)."""

from __future__ import annotations

import pytest


def test_ncu_rules_beside_the_diagnosis(data_dir):
    from kprof.diagnosis import ncurules
    from kprof.tools.nsight import ncu

    rules = ncu.parse_rules((data_dir / "ncu" / "tiled_matmul.ncu_details.txt").read_text())
    assert {r.rule for r in rules} >= {"SharedMemoryConflicts", "LaunchConfiguration",
                                       "HighPipeUtilization"}
    conflicts = next(r for r in rules if r.rule == "SharedMemoryConflicts")
    assert (conflicts.kind == "OPT" and conflicts.speedup == 11.88
            and conflicts.speedup_type == "global")
    v = ncurules.verdict(rules)
    # HighPipeUtilization's 85.56% is a local estimate (a pipe's time, not the kernel's): the
    # largest of the global ones is the launch configuration's 25%
    assert (v.rule == "LaunchConfiguration" and v.cause == "small-grid"
            and v.speedup == pytest.approx(1 / 0.75))
    # its OPT rows: pipes, L2 compression, conflicts, issue slots, stalls, launch
    assert v.proposed == 6
    listed = ncurules.listed(rules)
    assert ([r["rule"] for r in listed[:2]] == ["LaunchConfiguration", "CPIStall"]
            and listed[-1]["type"] == "local")
    untyped = [ncu.RuleResult(r.kernel, r.section, r.rule, r.kind, "", speedup=r.speedup, text=r.text) for r in rules]
    # an ncu without the type column: all compared
    assert ncurules.verdict(untyped).rule == "HighPipeUtilization"
    assert ncu.parse_rules("no table") == []
    # ncu's occupancy rules name their limiter in words: kprof's cause follows the words, none where
    # they name neither registers nor shared memory
    def occ(rule, text):
        return ncu.RuleResult("k", "Occupancy", rule, "OPT", "global", speedup=50.0, text=text)

    assert ncurules.cause_of(occ("TheoreticalOccupancy",
                                 "This kernel's theoretical occupancy (25.0%) is limited by the "
                                 "number of required registers.")) == "occupancy-registers"
    assert ncurules.cause_of(occ("TheoreticalOccupancy", "... is limited by the required amount of "
                                                         "shared memory.")) == \
        "occupancy-shared"
    assert ncurules.cause_of(occ("AchievedOccupancy",
                                 "The difference between calculated theoretical (100.0%) and "
                                 "measured achieved occupancy (12.0%) can be the result of warp "
                                 "scheduling overheads or workload imbalances")) is None
    assert ncurules.verdict([occ("TheoreticalOccupancy", "limited by the number of required "
                                                         "registers")]).cause == \
        "occupancy-registers"
