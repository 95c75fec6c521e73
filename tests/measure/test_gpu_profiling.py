"""kprof profile and kprof occupancy on a real GPU."""

import json

import perfcases
import pytest

from kprof.commands import cli, pipeline
from kprof.errors import NcuError
from kprof.launch.job import RunMode
from kprof.measure import profiling as profile
from kprof.spec import catalog
from kprof.tools.nsight import ncu

# ncu profiles one process at a time: under xdist these tests share one worker (--dist loadgroup).
pytestmark = [pytest.mark.gpu, pytest.mark.xdist_group("ncu")]


def _profile(spec, sizes=None):
    prepared = pipeline.prepare(spec, sizes)
    resolved, built = prepared.resolved, prepared.built
    row = ncu.profile_rows(prepared.job(RunMode(verify=False)))[-1]
    return profile.analyse(row, spec.name, resolved.sizes, arch=built.arch,
                           spec_flops=resolved.flops, spec_bytes=resolved.bytes)


@pytest.mark.parametrize("name", ["naive_matmul", "tiled_matmul", "regblock_matmul"])
def test_matmul_ladder_profile(name):
    p = _profile(catalog.load(name), {"M": 1024, "N": 1024, "K": 1024})
    assert p.duration_s and p.duration_s > 0
    assert p.compute.flops == pytest.approx(2 * 1024**3, rel=0.02), "FLOPs from the SASS counters match 2*M*N*K"
    assert 0 < p.occupancy.achieved_occupancy <= 1 and 0 < p.occupancy.theoretical_occupancy <= 1
    assert p.memory.dram_read > 0 and p.roofline.bound in ("memory", "compute")
    assert p.stalls.top and p.roofline.peak_flops > 1e13 and p.roofline.peak_bytes > 1e12


@pytest.mark.parametrize("case", perfcases.with_metric(), ids=lambda c: c.name)
def test_seeded_performance_bug_shows_in_its_metric(case):
    bug = _profile(case.spec)
    twin = _profile(case.spec.twin_spec())
    ok, text = case.verdict(bug.metric(case.expect.metric), twin.metric(case.expect.metric))
    assert ok, text


def test_profile_cli_compares_and_plots(tmp_path, capsys):
    png, reports = tmp_path / "roofline.png", tmp_path / "reports"
    code = cli.main(["profile", "naive_matmul", "tiled_matmul", "--size", "M=512", "N=512", "K=512",
                     "--plot", str(png), "--save-report", str(reports), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and [k["kernel"] for k in data["kernels"]] == ["naive_matmul", "tiled_matmul"]
    assert png.stat().st_size > 10_000
    assert sorted(p.name for p in reports.iterdir()) == ["naive_matmul.ncu-rep",
                                                         "tiled_matmul.ncu-rep"]


def test_no_kernel_matched_is_said(monkeypatch):
    job = pipeline.prepare(catalog.load("vector_add"), {"N": 1000}).job(RunMode(verify=False))
    monkeypatch.setattr(ncu, "nvtx_filter", lambda name: "kprof@not_the_range/")
    with pytest.raises(NcuError) as info:
        ncu.profile_rows(job)
    assert info.value.reason == "no-match" and "profiled no kernel" in str(info.value)


def test_faulting_kernel_under_ncu(data_dir):
    from kprof import spec as spec_mod

    job = pipeline.prepare(spec_mod.load(data_dir / "kernels" / "fault.yaml")).job(RunMode(verify=False))
    with pytest.raises(NcuError) as info:
        ncu.profile_rows(job, timeout=120)
    assert info.value.reason in ("target", "tool")


def test_a_triton_operation_is_profiled_like_a_kernel(capsys, data_dir, monkeypatch):
    """A spec that names a Python operation: ncu profiles what it launches inside kprof's NVTX
    range."""
    pytest.importorskip("triton")
    monkeypatch.setenv("KPROF_PATH", str(data_dir / "kernels"))
    code = cli.main(["profile", "triton_scale", "--size", "N=16777216", "--json"])
    data = json.loads(capsys.readouterr().out)
    (k,) = data["kernels"]
    assert code == 0 and k["kernel"] == "triton_scale", data
    assert k["duration_s"] > 0 and k["dram_read"] > 0, k


def test_a_kernel_is_profiled_beside_its_torch_compile_baseline(capsys):
    """What torch.compile launches for the same operation, at the same sizes, in the same report."""
    pytest.importorskip("torch")
    code = cli.main(["profile", "rmsnorm_onepass", "--size", "R=4096", "C=4096", "--baseline",
                     "torch.compile", "--json"])
    out, err = capsys.readouterr()
    assert out.strip(), f"exit {code}, nothing on stdout; stderr: {err}"
    data = json.loads(out)
    names = [k["kernel"] for k in data["kernels"]]
    assert code == 0 and names[0] == "rmsnorm_onepass" and "rmsnorm_onepass__torch_compile" in names, data
    assert all(k["duration_s"] > 0 and k["dram_read"] > 0 for k in data["kernels"]), data
