"""kprof bench and kprof peak end to end on a real GPU (no timing thresholds: benchmarks are not
tests)."""

import json

import pytest

from kprof.commands import cli
from kprof.measure import bench, ceilings

pytestmark = [pytest.mark.gpu, pytest.mark.xdist_group("bench")]


@pytest.fixture(autouse=True)
def _own_history(tmp_path, monkeypatch):
    monkeypatch.setenv("KPROF_HISTORY", str(tmp_path / "history.sqlite"))


def test_peak_measures_every_ceiling_and_the_theoretical_peaks(capsys):
    assert cli.main(["peak", "--refresh", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["ceilings"]) == set(ceilings.MIXES) and data["fma_flops_per_s"] > 0
    assert data["version"] == ceilings.CEILINGS_VERSION
    assert data["ceilings"]["copy"]["bytes_per_s"] >= data["memcpy"]["bytes_per_s"], "copy is at least the memcpy"
    import importlib.util

    # PyTorch's op of each mix too, at each size
    ops = importlib.util.find_spec("torch") is not None
    per_mix = len(bench.PEAK_BYTES) * (len(bench.PEAK_WIDTHS) * len(bench.PEAK_GRIDS) + ops)
    assert all(len(tried) == per_mix and not any("error" in r for r in tried) for tried in data["tried"].values()), \
        data["tried"]
    # the ceiling is at or above everything tried, the ops included
    for kind, tried in data["tried"].items():
        assert data["ceilings"][kind]["bytes_per_s"] >= max(r["bytes_per_s"] for r in tried)
    th = data["theoretical"]
    assert th["dram_bytes_per_s"] and th["fp32_flops_per_s"], th["notes"]
    for c in data["ceilings"].values():
        assert c["bytes_per_s"] <= th["dram_bytes_per_s"], "a measured ceiling above the theoretical peak"
    assert data["fma_flops_per_s"] <= th["fp32_flops_per_s"]


def test_bench_matmul_against_cublas_in_the_same_run(capsys, tmp_path):
    png = tmp_path / "b.png"
    code = cli.main(["bench", "tiled_matmul", "--size", "M,N,K=256,512", "--max-time", "1",
                     "--json", "--plot", str(png)])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["version"] == 1 and len(data["points"]) == 2
    for p in data["points"]:
        assert p["status"] == "ok" and p["summary"]["n"] >= 1 and p["stop"]
        assert p["baseline"] == "cublas_sgemm" and p["baseline_summary"] and p["of_baseline"] > 0
        assert "no TF32" in p["math_mode"]
    assert png.stat().st_size > 5000
    assert cli.main(["history", "tiled_matmul", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 2


def test_bench_hot_mode_and_param_sweep(capsys):
    code = cli.main(["bench", "vector_add", "--size", "N=65536", "--param", "BLOCK=128,256",
                     "--hot", "--max-time", "1", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and [p["params"]["BLOCK"] for p in data["points"]] == ["128", "256"]
    assert all(p["batch"] > 1 for p in data["points"]), "hot mode replays a graph of many launches"


def test_wrong_kernel_is_reported_not_timed(capsys, data_dir):
    code = cli.main(["bench", str(data_dir / "kernels" / "wrong.yaml"), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert (code == 1 and data["points"][0]["status"] == "failed-verification"
            and data["points"][0]["summary"] is None)


def test_bench_warm_mode_times_single_launches(capsys):
    code = cli.main(["bench", "vector_add", "--size", "N=65536", "--warm", "--max-time", "1",
                     "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["mode"] == "warm" and data["points"][0]["batch"] == 1


def test_every_cheat_of_the_bench_corpus_is_caught_and_the_honest_operation_is_not_flagged():
    """kprof cases --bench: the seven cheats of bench_cases/ timed beside y = 2 x in one run."""
    pytest.importorskip("torch")
    from kprof.commands import corpora

    report = corpora.run_bench_cases(max_time=1.0)
    missed = [(r.cheat.name, r.kinds) for r in report.results if not r.caught]
    assert report.point.status == "ok", report.point.message
    assert not report.honest and not missed, (report.honest, missed, report.point.warnings)


def test_the_ladder_s_kernels_and_baselines_raise_no_integrity_flag(capsys):
    """A spec's kernel against cuBLAS and against a PyTorch baseline: no flag, and the checks' cost
    said."""
    code = cli.main(["bench", "tiled_matmul", "--size", "M,N,K=512", "--baseline", "cublas_sgemm",
                     "--max-time", "0.5", "--json", "--strict"])
    point = json.loads(capsys.readouterr().out)["points"][0]
    assert code == 0 and point["integrity"] == [] and point["baseline_integrity"] == [], point["warnings"]
    assert ("poisoned outputs" in point["integrity_checked"]
            and point["integrity_seconds"] is not None)
