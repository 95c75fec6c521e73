"""The rules (kprof/diagnosis/rules.py, rules_memory.py, rulekit.py) on a fake device's numbers,
with and without counters: the causes named, their lines, the ranking and its cap at the roof; every
rule has a perf case and a row in the docs."""

from __future__ import annotations

from pathlib import Path

import pytest
from diagnosed import RTX4090, diagnosed, named

from kprof.corpus import perfcases
from kprof.diagnosis.model import render
from kprof.spec import catalog


@pytest.mark.nvcc
def test_a_rule_that_fails_costs_its_cause_not_the_profile(ptx_compiler, monkeypatch):
    from kprof.diagnosis import rules

    def broken(f):
        raise ValueError("a bug")

    monkeypatch.setattr(rules.Uncoalesced, "check", lambda self, f: broken(f))
    d = diagnosed("copy_uncoalesced", 347e-6)
    assert any("uncoalesced (kprof could not check it: ValueError: a bug" in b for b in d.cannot_see), d.cannot_see


@pytest.mark.nvcc
def test_counter_less_diagnosis_names_what_the_ptx_and_launch_show(ptx_compiler):
    d = diagnosed("tail_wave", 1.0e-3)
    assert d.mode == "counter-less" and d.first().rule == "tail-wave"
    assert (d.first().line.show() == "tail_wave.yaml:11"
            and abs(d.first().gain.estimate - 2 / (265 / 264)) < 0.01)
    d = diagnosed("too_few_blocks", 2.0e-3)
    assert d.first().rule == "small-grid" and d.first().gain.estimate <= d.headroom
    d = diagnosed("barrier_in_loop", 1.1e-3)
    assert (d.first().rule == "barrier" and d.first().line.line == 9
            and d.first().gain.estimate is None)
    assert any("barrier" in s for s in d.cannot_see) and any("bank conflicts" in s
                                                             for s in d.cannot_see)
    d = diagnosed("fp64_constants", 550e-6)
    # 3 FP64 instructions a step for 1
    assert d.first().rule == "fp64" and 2.5 < d.first().gain.estimate < 3.5
    # the lanes' stride from the PTX's address arithmetic: a run-time value (n floats) apart, a
    # sector a lane
    d = diagnosed("copy_uncoalesced", 347e-6)
    assert (d.first().rule == "uncoalesced" and d.first().line.line == 6
            and d.first().gain.estimate == 8.0)
    assert named(diagnosed("copy_uncoalesced_fixed", 54e-6)) == []
    # a branch whose condition is the lane's parity, two loops of five instructions a step: both run
    d = diagnosed("divergent_branch", 80.7e-6)
    assert (d.first().rule == "divergence" and d.first().line.line == 7
            and d.first().gain.estimate == 2.0)
    # the twin's warps agree: no advice
    assert named(diagnosed("divergent_branch_fixed", 41.5e-6)) == []


@pytest.mark.nvcc
def test_fp64_advice_depends_on_the_gpu(ptx_compiler):
    # 16 DFMA an element of a copy: memory-bound on a GPU with many FP64 units, no advice there
    fast = diagnosed("fp64_memory", 130e-6)
    assert "fp64" not in [c.rule for c in fast.causes]
    # the same kernel on a GPU with 1/64 of FP32's FP64 rate (sm_89), slower than its memory roof
    slow = diagnosed("fp64_memory", 2.0e-3, device=RTX4090, arch="sm_89")
    assert slow.first().rule == "fp64" and "1:64" in dict(slow.first().evidence)["FP64:FP32 rate"]


@pytest.mark.nvcc
def test_counters_rank_the_cause_and_cap_the_gain_at_the_roof(ptx_compiler):
    d = diagnosed("copy_uncoalesced", 347e-6, global_load_sectors_per_request=32.0,
                  global_store_sectors_per_request=4.0,
                  page={4: {"executed": 100, "samples": 5},
                        6: {"executed": 300, "samples": 95, "global_sectors": 9000,
                            "global_excess": 8000}})
    c = d.first()
    assert d.mode == "counters" and c.rule == "uncoalesced" and c.line.line == 6
    assert ("measured: 100% of the kernel's excess L2 sectors" in c.line.why
            and "95% of its stall samples" in c.line.why)
    assert c.gain.estimate == pytest.approx(min(8.0, d.headroom))
    d = diagnosed("transpose_bank_conflicts", 100e-6, conflicts_per_request=15.0,
                  stall_shares={"mio_throttle": 0.5, "long_scoreboard": 0.5},
                  page={7: {"shared_wavefronts": 100, "shared_excess": 0},
                        9: {"shared_wavefronts": 3200, "shared_excess": 3100}})
    # where the excess wavefronts were measured
    assert d.first().rule == "bank-conflicts" and d.first().line.line == 9
    assert {x.line for x in (d.first().line, *d.first().also)} >= {5}  # the declaration to pad
    d = diagnosed("divergent_branch", 80.7e-6, thread_efficiency=0.5,
                  page={7: {"executed": 10, "threads": 320, "divergent": 40},
                        9: {"executed": 1000, "threads": 16000}})
    assert (d.first().rule == "divergence" and d.first().line.line == 7
            and d.first().gain.estimate == pytest.approx(2.0))
    d = diagnosed("barrier_in_loop", 1.1e-3, stall_shares={"barrier": 0.45, "wait": 0.55},
                  page={8: {"samples": 50, "stalls": {"wait": 50}},
                        9: {"samples": 45, "stalls": {"barrier": 45}}})
    assert (d.first().rule == "barrier"
            and d.first().gain.estimate == pytest.approx(1 / 0.55, rel=1e-3))
    assert (d.first().line.line == 9
            and "100% of the kernel's barrier stall samples" in d.first().line.why)


@pytest.mark.nvcc
def test_with_counters_but_no_source_page_a_cause_says_its_line_was_not_measured(ptx_compiler):
    """A PTX pattern proposes; only a measurement places: no Source page, no line (never the PTX's
    guess)."""
    d = diagnosed("copy_uncoalesced", 347e-6, global_load_sectors_per_request=32.0,
                  global_store_sectors_per_request=4.0)
    c = d.first()
    assert (c.rule == "uncoalesced" and c.line.line == 0
            and c.line.why.startswith("line not measured"))
    assert "line not measured" in render(d) and " at :" not in render(d)


@pytest.mark.nvcc
def test_without_counters_a_line_from_the_ptx_says_it_was_not_measured(ptx_compiler):
    d = diagnosed("fp64_constants", 1e-3)
    c = next(c for c in d.causes if c.rule == "fp64")
    assert c.line.line == 9 and "from the PTX: not measured" in c.line.why
    # a barrier few warps wait at is no advice with counters
    d = diagnosed("barrier_in_loop", 1.1e-3, stall_shares={"barrier": 0.05, "wait": 0.95})
    # far from its roof: never no cause
    assert named(d) == [] and [c.rule for c in d.causes] == ["limiter-lines"]


@pytest.mark.nvcc
def test_occupancy_causes_need_a_latency_bound_kernel(ptx_compiler):
    d = diagnosed("occupancy_registers", 2e-3, stall_shares={"long_scoreboard": 0.9},
                  dram_fraction=0.1, issue_active=0.1, local_bytes=0.0, l1_bytes=1e9)
    # the __global__ line
    assert d.first().rule == "occupancy-registers" and d.first().line.line == 4
    busy = diagnosed("occupancy_registers", 2e-3, stall_shares={"long_scoreboard": 0.9},
                     dram_fraction=0.9, local_bytes=0.0, l1_bytes=1e9)
    assert "occupancy-registers" not in [c.rule for c in busy.causes]
    d = diagnosed("occupancy_shared", 2e-3, stall_shares={"long_scoreboard": 0.9},
                  dram_fraction=0.1)
    assert d.first().rule == "occupancy-shared" and d.first().line.line == 5


@pytest.mark.nvcc
def test_coalescing_is_judged_against_each_direction_s_own_width(ptx_compiler):
    """wgmma_matmul stores its MMA fragments as 8-byte float2s, 8 sectors a request: coalesced for
    8-byte lanes. Measured on an H200 (befe3e0), kprof held that against a 4-byte ideal and advised
    a 1.38x it could not give."""
    d = diagnosed("wgmma_matmul", 190e-6, arch="sm_90a", global_store_sectors_per_request=8.0,
                  tensor_pipe=0.89)
    assert "uncoalesced" not in [c.rule for c in d.causes], d.causes
    d = diagnosed("wgmma_matmul", 190e-6, arch="sm_90a", global_store_sectors_per_request=32.0,
                  tensor_pipe=0.89)
    assert "uncoalesced" in [c.rule for c in d.causes]  # a sector a lane is 4x the 8-byte ideal


def test_every_rule_has_a_perf_case_and_a_row_in_the_docs():
    """A rule lands with a case of perf_cases/ that expects it and a row in docs/profile.md's rules
    table; the table names no rule that is not in the registry."""
    import re

    from kprof.diagnosis import rules

    ids = [r.id for r in rules.RULES] + [rules.FALLBACK.id]
    expected = {c.expect.cause for c in perfcases.load_all(catalog.group("perf"))}
    assert [i for i in ids[:-1] if i not in expected] == []
    doc = (Path(__file__).parents[2] / "docs" / "profile.md").read_text()
    rows = re.findall(r"^\| `([a-z0-9-]+)` \| ", doc, re.M)
    named = [r for r in rows if r in ids or "-" in r]
    assert (sorted(set(ids) - set(rows)) == []
            and sorted(set(named) - set(ids) - set(expected)) == [])
