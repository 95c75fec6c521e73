"""Python operations and framework baselines on a real GPU (no timing thresholds: benchmarks are not
tests)."""

import json
from pathlib import Path

import pytest

from kprof.commands import cli

# Beside the bench group, not after it: these time things but assert no timing, and the ceilings
# every bench reads are measured once before the suite (gpu-check.sh tests) or by the first bench.
pytestmark = [pytest.mark.gpu, pytest.mark.xdist_group("frameworks")]
DATA = Path(__file__).parent.parent / "data" / "kernels"


@pytest.fixture(autouse=True)
def _own_history(tmp_path, monkeypatch):
    monkeypatch.setenv("KPROF_HISTORY", str(tmp_path / "history.sqlite"))
    monkeypatch.setenv("KPROF_PATH", str(DATA))


def _json(capsys, argv):
    code = cli.main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_triton_operation_runs_and_verifies(capsys):
    pytest.importorskip("triton")
    code, data = _json(capsys, ["run", "triton_scale", "--size", "N=100000"])
    assert code == 0 and data["ok"] and all(c["ok"] for c in data["checks"]), data


def test_a_triton_operation_is_benched_like_a_kernel(capsys):
    pytest.importorskip("triton")
    code, data = _json(capsys, ["bench", "triton_scale", "--size", "N=16777216", "--max-time", "1"])
    (p,) = data["points"]
    assert code == 0 and p["status"] == "ok" and p["summary"]["n"] >= 1 and p["bytes_per_s"] > 0


# times nothing: beside the timing tests, not after them
@pytest.mark.xdist_group("sanitize-triton")
def test_the_missing_mask_of_a_triton_operation_is_found_by_memcheck(capsys):
    pytest.importorskip("triton")
    code, data = _json(capsys, ["sanitize", "triton_scale_unmasked", "--tool", "memcheck"])
    kinds = [f["kind"] for f in data["findings"]]
    assert code == 1 and "out-of-bounds-write" in kinds, data
    code, data = _json(capsys, ["sanitize", "triton_scale", "--tool", "memcheck"])
    assert code == 0 and data["clean"], data


@pytest.mark.parametrize("baseline", ["add", "add_compiled"])
def test_a_kernel_against_a_pytorch_baseline_in_the_same_run(capsys, baseline):
    pytest.importorskip("torch")
    code, data = _json(capsys,
                       ["bench", "vector_add_vec4", "--size", "N=16777216", "--max-time", "1",
                        "--baseline", f"kprof.baselines.torch_ops:{baseline}"])
    (p,) = data["points"]
    assert code == 0 and p["status"] == "ok" and p["baseline_summary"] and p["of_baseline"] > 0, p["warnings"]
    assert p["baseline_framework"] == "torch"
    # the kernels a call launched are counted from CUPTI's records; with CUDA events (no
    # cupti-python, as on the CUDA 12 line) there is no count, and none is made up
    assert ((p["baseline_kernels"] or 0) >= 1 if p["timer"] == "cupti"
            else p["baseline_kernels"] is None)
    assert (p["baseline_prepare_s"] is not None) == baseline.endswith("_compiled")
