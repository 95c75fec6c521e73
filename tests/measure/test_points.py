"""A bench point's record: its own fields and two parts (rates, the timer), its baselines typed, its
JSON flat."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kprof.measure import points


@pytest.fixture
def recorded(data_dir):
    """A point kprof bench wrote on an H200 (8469042): torch's RMSNorm beside the kernel, and one
    more baseline."""
    return json.loads((data_dir / "bench-point-h200-8469042.json").read_text())["point"]


def test_a_recorded_point_reads_into_its_parts_and_writes_the_same_json(recorded):
    p = points.PointResult.from_dict(recorded)
    assert p.rates.bytes_per_s == recorded["bytes_per_s"] and p.rates.mix == recorded["mix"]
    assert (p.rates.of_ceiling == recorded["of_ceiling"]
            and p.timer.name == recorded["timer"] == "cupti")
    assert (p.timer.event_summary is not None
            and p.timer.event_summary.median == recorded["event_summary"]["median"])
    assert p.first is not None and p.first.baseline == recorded["baseline"]
    assert (p.first.of_baseline == recorded["of_baseline"]
            and len(p.others) == len(recorded["more_baselines"]) == 1)
    again = json.loads(json.dumps(p.to_dict()))
    # every number it had, where it had it; kprof has since added the baselines' kind and kernels
    # (None, empty)
    assert {k: again[k] for k in recorded if k != "more_baselines"} == {k: v for k, v in recorded.items()
                                                                        if k != "more_baselines"}
    (more,) = recorded["more_baselines"]
    assert {k: again["more_baselines"][0][k] for k in more} == more
    assert set(again) - set(recorded) == {"baseline_kind", "baseline_call_kernels", "call_kernels"}
    assert points.PointResult.from_dict(p.to_dict()) == p


def test_no_point_field_mirrors_a_baseline():
    """Issue 70: PointResult had 12 properties that repeated its first baseline's fields; a report
    reads ``point.first`` (typed, or None) instead. Every record of a point is at most 25 fields."""
    names = {n for n in dir(points.PointResult) if not n.startswith("_")}
    mirrored = names & set(points.BASELINE_FIELDS)
    assert not mirrored, f"PointResult repeats its baseline's fields: {sorted(mirrored)}"
    props = {n for n, v in vars(points.PointResult).items() if isinstance(v, property)}
    assert props == {"first", "others"}
    for record in (points.PointResult, points.BaselineResult, points.Rates, points.TimerUsed):
        assert len(dataclasses.fields(record)) <= 25, record


def test_an_old_point_reads_back_with_what_it_has(data_dir):
    """A point kprof wrote before it kept mixes (``of_copy_peak``) and before the timer was
    recorded."""
    old = json.loads((data_dir / "bench-vector_add-block.json").read_text())["points"][0]
    p = points.PointResult.from_dict(old)
    assert p.rates.mix == "copy" and p.rates.of_ceiling == old["of_copy_peak"]
    assert p.timer == points.TimerUsed() and p.first is None and p.others == ()
    assert p.rates.bytes_per_s == old["bytes_per_s"] and p.summary is not None


def test_a_flat_name_of_before_is_no_attribute_but_its_json_still_reads(recorded):
    p = points.PointResult.from_dict(recorded)
    assert p.rates.bytes_per_s == recorded["bytes_per_s"]
    for old in ("of_baseline", "bytes_per_s", "timer_note"):
        with pytest.raises(AttributeError, match=f"no attribute '{old}'"):
            getattr(p, old)
