"""The child's answer read in one typed place (kprof.launch.childresult), its version checked: on
CPU, on records as the runner writes them."""

from __future__ import annotations

import json

import pytest

from kprof.errors import ResultError
from kprof.launch import childresult


def _write(tmp_path, data):
    path = tmp_path / "result.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_a_timing_record_is_read_into_its_types(tmp_path):
    data = {"version": childresult.RESULT_VERSION, "status": "ok", "phase": "done",
            "kernel": "vector_add",
            "sizes": {"N": 1024}, "device": {"name": "NVIDIA H200", "l2_bytes": 62914560},
            "registers": 16,
            "checks": [{"name": "c", "ok": True, "message": "ok"}], "samples": [1e-4, 1.1e-4],
            "stop": "noise",
            "timer": "cupti", "event_samples": [1.2e-4], "batch": 1, "kernels_per_call": 2,
            "math_mode": "default",
            "call_kernels": [["cudnn_sdpa", 4.07e-4], ["direct_copy_kernel_cuda", 4.9e-5],
                             "damaged"],
            "baseline_framework": "torch", "baseline_callable": "ops.py:add",
            "baseline_prepare_s": 7.5, "job_seconds": 0.4}
    got = childresult.read(_write(tmp_path, data))
    assert ((got.status, got.phase, got.kernel, got.sizes, got.registers) == ("ok", "done", "vector_add", {"N": 1024}, 16))
    assert got.timing == childresult.Timing((1e-4, 1.1e-4), "noise", "cupti", (1.2e-4,), 1, None, 2,
                                            None, None,
                                            call_kernels=(("cudnn_sdpa", 4.07e-4),
                                                          ("direct_copy_kernel_cuda", 4.9e-5)))
    assert (got.baseline == childresult.Operation("torch", "ops.py:add", 7.5)
            and got.operation is None)
    assert got.finished and got.judged and got.failed_checks() == [] and got.raw == data


def test_an_error_is_typed_and_a_failed_verdict_says_its_checks():
    err = childresult.from_data({"version": 1, "status": "error", "phase": "launched", "error": {
        "type": "CudaError", "message": "cuCtxSynchronize -> CUDA_ERROR_ILLEGAL_ADDRESS",
        "call": "cuCtxSynchronize", "result": "CUDA_ERROR_ILLEGAL_ADDRESS"}})
    assert err.error == childresult.ChildError("cuda",
                                               "cuCtxSynchronize -> CUDA_ERROR_ILLEGAL_ADDRESS",
                                               "cuCtxSynchronize", "CUDA_ERROR_ILLEGAL_ADDRESS",
                                               type="CudaError")
    assert not err.finished and err.timing is None
    failed = childresult.from_data({"version": 1, "status": "failed", "job_seconds": 0.1,
                                    "checks": [{"ok": True, "message": "a"},
                                               {"ok": False, "message": "3 of 8 wrong"}]})
    assert failed.judged and not failed.finished and failed.failed_checks() == ["3 of 8 wrong"]


@pytest.mark.parametrize("text", [None, "", '{"version": 1, "status": "ok", "phase"', "[1, 2]"])
def test_no_result_or_one_cut_off_mid_write_is_nothing(tmp_path, text):
    path = tmp_path / "result.json" if text is None else _write(tmp_path, text)
    got = childresult.read(path)
    assert got == childresult.NOTHING and not got.wrote and got.phase == "start"


@pytest.mark.parametrize("version", [None, 0, 2, "1"])
def test_a_result_of_another_version_is_one_clear_error(version):
    data = {"status": "ok"} if version is None else {"version": version, "status": "ok"}
    with pytest.raises(ResultError, match="the child ran another kprof .* check PYTHONPATH"):
        childresult.from_data(data)


def test_fields_of_the_wrong_type_are_left_out_not_trusted():
    got = childresult.from_data({"version": 1, "status": 3, "registers": "16", "sizes": [1],
                                 "checks": [1, {"ok": True}],
                                 "samples": ["x", 1e-3], "stop": None, "nvtx": 1,
                                 "job_seconds": True})
    assert (got.status == "" and got.registers is None and got.sizes == {}
            and got.checks == (childresult.OutputCheck(name="", ok=True, message=""),))
    assert got.timing is not None and got.timing.samples == (1e-3,) and got.timing.stop == ""
    assert got.nvtx and got.job_seconds is None


def test_a_check_is_read_typed_and_written_back_as_it_came():
    """The verdict on one output as the child writes it
    (kprof.launch.childresult.OutputCheck.to_dict, and a digest): every field typed in the parent,
    and kprof run --json's record of it the same as the child's."""
    from dataclasses import asdict

    raw = {"name": "c", "ok": False, "rel_err": 0.5, "max_abs_err": 2.0, "nonfinite": 0,
           "poisoned": 3,
           "first_bad": [4, 1], "got": 1.0, "expected": 3.0, "rtol": 1e-5,
           "message": "3 of 9 elements exceed ...",
           "atol": 1e-6, "metric": "elementwise", "failing": 3,
           "worst": [{"index": [4, 1], "got": 1.0, "expected": 3.0}],
           "needed_atol": 2.0, "needed_rtol": None, "note": "", "frontier": [[1e-5, 2.0]],
           "digest": "ab12"}
    got = childresult.from_data({"version": 1, "status": "failed", "checks": [raw]})
    (c,) = got.checks
    assert (not c.ok and c.first_bad == (4, 1) and c.poisoned == 3 and c.digest == "ab12"
            and c.frontier == ((1e-5, 2.0),))
    assert got.failed_checks() == ["3 of 9 elements exceed ..."]
    import json

    assert json.loads(json.dumps(asdict(c))) == raw


def test_the_values_detectors_findings_come_back_as_findings():
    """The child writes a values finding with Finding.to_dict; the parent reads it back as the same
    Finding, a record's unknown fields dropped."""
    from kprof.findings import Access, Extra, Finding

    f = Finding("values", "race", "count", "/u/k.cu", 7, thread=(1, 0, 0), block=(2, 0, 0), count=3,
                message="outputs differ between runs",
                buffer="c", other=Access("/u/k.cu", 9, "write", (0, 0, 0)), indices=((4,), (5,)),
                extra=Extra(library="PyTorch"), grids=frozenset({1, 2}), rank=1)
    raw = {**f.to_dict(), "from_a_newer_kprof": True}
    got = childresult.from_data({"version": 1, "status": "ok", "findings": [raw]})
    assert got.findings == (f,)


def test_a_childs_result_says_ok_and_its_old_name_is_gone():
    assert (childresult.ChildResult(status="ok").ok
            and not childresult.ChildResult(status="failed").ok)
    from kprof.launch import launch

    assert not hasattr(launch, "RunResult")  # kprof 0.x's name: no alias before 1.0


def test_the_device_record_is_typed_in_the_parent_with_zeros_for_what_it_lacks():
    """The child writes its DeviceInfo as a dict; the parent reads it back as one, never as a dict
    to .get from."""
    from helpers import child

    from kprof.launch.childresult import DeviceInfo, device_of

    got = child(device={"name": "NVIDIA H200", "arch": "sm_90", "sm_count": 132,
                        "l2_bytes": 62914560, "clock_khz": True, "unknown": 1}).device
    # a bool is no int
    assert got == DeviceInfo(name="NVIDIA H200", arch="sm_90", sm_count=132, l2_bytes=62914560)
    assert child().device is None and device_of({}) is None and device_of(["x"]) is None
    assert device_of(got) is got and got.to_dict()["l2_bytes"] == 62914560
