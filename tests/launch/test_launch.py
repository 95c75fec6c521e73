"""How a child that hung, crashed or faulted is reported, without a GPU."""

import pytest
from helpers import child

from kprof.errors import KprofError, NoGPUError, TargetError, UsageError
from kprof.launch import launch
from kprof.proc import Completed


def done(rc=0, timed_out=False, out="", err=""):
    return Completed(("python",), None if timed_out else rc, out, err, 1.0, timed_out)


def test_ok_and_failed_pass_through():
    launch.raise_for_child("k", done(0), child(status="ok"), 10)
    launch.raise_for_child("k", done(1), child(status="failed"), 10)


def test_timeout_names_the_phase():
    with pytest.raises(TargetError, match="did not finish within 5 s .last phase: launch.") as info:
        launch.raise_for_child("k", done(timed_out=True, out="partial"), child(phase="launch"), 5)
    assert "partial" in info.value.log


def test_fault_points_to_sanitize():
    data = {"status": "error", "phase": "launched",
            "error": {"type": "CudaError", "call": "cuCtxSynchronize",
                      "result": "CUDA_ERROR_ILLEGAL_ADDRESS",
                      "message": "cuCtxSynchronize -> CUDA_ERROR_ILLEGAL_ADDRESS"}}
    with pytest.raises(TargetError, match="kprof sanitize k --tool memcheck"):
        launch.raise_for_child("k", done(3), child(data), 10)


def test_crash_without_result():
    with pytest.raises(TargetError, match="killed by SIGSEGV during phase start"):
        launch.raise_for_child("k", done(-11), child(), 10)


def test_no_gpu_and_usage_errors_keep_their_kind():
    with pytest.raises(NoGPUError, match="still work"):
        launch.raise_for_child("k", done(3),
                               child(status="error", error={"type": "NoGPUError", "message": "no CUDA driver"}), 10)
    with pytest.raises(UsageError, match="GiB"):
        launch.raise_for_child("k", done(3),
                               child(status="error", error={"type": "UsageError", "message": "needs 2 GiB"}), 10)


def test_unexpected_child_error_keeps_its_traceback():
    data = {"status": "error", "phase": "verified",
            "error": {"type": "ValueError", "message": "x", "traceback": "TB"}}
    with pytest.raises(TargetError) as info:
        launch.raise_for_child("k", done(3), child(data), 10)
    assert info.value.log == "TB"



@pytest.mark.parametrize("error, raised, code", [
    ({"kind": "no-gpu", "exit_code": 5, "type": "NoGPUError", "message": "no CUDA driver"},
     "NoGPUError", 5),
    ({"kind": "usage", "exit_code": 2, "type": "SomeNewUsageError", "message": "needs 2 GiB"},
     "UsageError", 2),
    ({"kind": "user-code", "exit_code": 2, "type": "UserCodeError", "message": "ref raised"},
     "UserCodeError", 2),
    ({"kind": "internal", "exit_code": None, "type": "KeyError", "message": "'x'",
      "traceback": "Traceback ..."},
     "TargetError", 6),
])  # fmt: skip
def test_the_childs_error_is_turned_into_kprofs_by_its_kind_not_its_class_name(error, raised, code):
    """A usage error of a class the parent has never heard of is still a usage error (exit 2): the
    child writes what the error is and its exit code beside the class name, and the parent reads
    those."""
    with pytest.raises(KprofError) as info:
        launch.raise_for_child("k", done(3), child(status="error", error=error), 10)
    assert type(info.value).__name__ == raised and info.value.exit_code == code
