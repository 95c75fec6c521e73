"""The profile record: typed parts in memory, the same flat JSON on disk as kprof has always
written."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kprof.measure import kernelprofile as kp
from kprof.measure import profiling

# The flat JSON's keys, as kprof 0.x wrote them before the record had parts: a stored profile, a
# replay and `kprof profile --json` read these, so they may not change with the record's shape.
FLAT_KEYS = {
    "kernel", "sizes", "source", "duration_s", "achieved_occupancy", "theoretical_occupancy",
    "occupancy_limiter",
    "occupancy_advice", "registers", "block_size", "grid_size", "waves", "dram_read", "dram_write",
    "dram_bytes_per_s",
    "dram_fraction", "l1_hit", "l2_hit", "shared_bank_conflicts", "shared_requests",
    "conflicts_per_request",
    "global_load_sectors_per_request", "global_store_sectors_per_request", "local_bytes",
    "shared_bytes_per_s",
    "shared_fraction", "fma_pipe", "issue_active", "flops", "flops_per_s", "roofline", "stalls",
    "spec_flops",
    "spec_bytes", "notes", "mix", "ceiling_bytes_per_s", "of_ceiling", "math", "tensor_pipe",
    "wgmma",
    "thread_efficiency", "atomics", "global_accesses", "instructions", "fp64_pipe", "lsu_pipe",
    "alu_pipe", "l1_throughput", "l2_throughput", "l1_bytes", "sm_active", "stall_shares", "rank",
}  # fmt: skip


@pytest.fixture
def recorded(data_dir):
    """Profiles an H200 gave (commit a46d1a2), stored by the kprof of then: flat, without
    ``rank``."""
    cases = json.loads((data_dir / "diagnosis" / "h200-perf-cases-a46d1a2.json").read_text())["cases"]
    return {c["case"]: c["profile"] for c in cases}


def test_a_stored_profile_reads_back_into_parts_and_writes_the_same_json(recorded):
    for name, data in recorded.items():
        p = kp.KernelProfile.from_dict(data)
        assert p.memory.dram_read == data["dram_read"] and p.occupancy.registers == data["registers"], name
        assert p.shared.conflicts_per_request == data["conflicts_per_request"], name
        assert p.compute.thread_efficiency == data["thread_efficiency"], name
        assert [list(s) for s in p.stalls.top] == data["stalls"] and p.stalls.shares == data["stall_shares"], name
        again = json.loads(json.dumps(p.to_dict()))
        assert again == {**data, "rank": None}, name
        assert kp.KernelProfile.from_dict(again) == p


def test_the_json_keeps_every_key_it_always_had():
    p = profiling.fallback("k", {"N": 1}, 1e-3, 32, 256, 0, dynamic_smem=0, arch="sm_90",
                           spec_flops=10, spec_bytes=20, reason="none")
    assert set(p.to_dict()) == FLAT_KEYS
    assert set(kp.METRICS) | {"kernel", "sizes", "source", "duration_s", "roofline", "stalls",
                              "stall_shares",
                              "spec_flops", "spec_bytes", "notes", "math", "rank"} == FLAT_KEYS


def test_no_part_or_profile_is_a_wide_record():
    """Issue 70: a profile was 54 flat fields; now its parts say what they hold, none over 25."""
    assert len(dataclasses.fields(kp.KernelProfile)) <= 25
    assert all(len(dataclasses.fields(part)) <= 25 for part in kp.PARTS.values())
    names = [f.name for part in kp.PARTS.values() for f in dataclasses.fields(part)]
    assert len(names) == len(set(names)), "a measured number lives in one part"


def test_a_metric_is_read_and_replaced_by_its_flat_name(recorded):
    p = kp.KernelProfile.from_dict(recorded["transpose_bank_conflicts"])
    assert p.metric("conflicts_per_request") == p.shared.conflicts_per_request
    assert p.metric("registers") == float(p.occupancy.registers)
    assert p.metric("mix") is None  # not a number
    q = p.with_metrics(conflicts_per_request=0.0, dram_fraction=0.5)
    assert q.shared.conflicts_per_request == 0.0 and q.memory.dram_fraction == 0.5
    assert q.memory.dram_read == p.memory.dram_read and p.shared.conflicts_per_request != 0.0
    with pytest.raises(TypeError, match="not a measured profile number: stalls"):
        p.with_metrics(stalls=1.0)
    with pytest.raises(KeyError):
        p.metric("kernel")


def test_a_perf_case_names_its_metric_by_the_flat_name(tmp_path):
    """``expect.metric`` is a flat name; one that is not a measured number is refused in one line,
    naming them."""
    from kprof.corpus import perfcases
    from kprof.errors import SpecError
    from kprof.spec import catalog

    spec = catalog.load("copy_uncoalesced")
    assert perfcases.load_case(spec).expect.metric == "global_load_sectors_per_request"
    bad = dataclasses.replace(spec, expect={**spec.expect, "metric": "occupancy"})
    with pytest.raises(SpecError,
                       match="'occupancy' is not a measured profile number .known: "
                             "achieved_occupancy"):
        perfcases.load_case(bad)


def test_a_flat_name_of_before_is_no_attribute_but_its_json_still_reads(recorded):
    """No compatibility layer before 1.0: ``p.dram_fraction`` is gone (the part names it), while a
    profile stored flat by an earlier kprof still reads (data stays)."""
    p = kp.KernelProfile.from_dict(recorded["transpose_bank_conflicts"])
    assert p.memory.dram_fraction == recorded["transpose_bank_conflicts"]["dram_fraction"]
    with pytest.raises(AttributeError, match="no attribute 'dram_fraction'"):
        p.dram_fraction  # noqa: B018


def test_the_records_with_the_old_names_still_copy_and_pickle(recorded, data_dir):
    """The old names are looked up on demand (``__getattr__``): copying and pickling, which ask for
    dunder names first, are untouched by it."""
    import copy
    import pickle

    from kprof.measure import points

    p = kp.KernelProfile.from_dict(recorded["barrier_in_loop"])
    q = points.PointResult.from_dict(json.loads((data_dir / "bench-point-h200-8469042.json").read_text())["point"])
    for record in (p, q):
        assert pickle.loads(pickle.dumps(record)) == record and copy.deepcopy(record) == record
