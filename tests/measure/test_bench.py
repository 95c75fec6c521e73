"""kprof bench without a GPU: statistics, the stopping rule, throughput and fractions, sweeps,
the history store (a concurrent writer, an interrupted run), compare, telemetry warnings."""

import json
import multiprocessing
from dataclasses import replace
from types import SimpleNamespace

import pytest
from helpers import child, job_for

from kprof import spec as spec_mod
from kprof import stats, telemetry
from kprof.commands import cli, pipeline
from kprof.errors import UsageError
from kprof.launch.job import TimingMode
from kprof.measure import bench, points
from kprof.measure.ceilings import Ceilings
from kprof.results import history
from kprof.spec import BASELINES, catalog, sweep
from kprof.spec.baseline import Baseline


def test_summary_median_and_quartiles():
    s = stats.summarize([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.n, s.median, s.q1, s.q3, s.min, s.max, s.mean) == (5, 3.0, 2.0, 4.0, 1.0, 5.0, 3.0)
    assert s.rel_stdev == pytest.approx(s.stdev / 3.0) and s.rel_iqr == pytest.approx(2 / 3)
    one = stats.summarize([7.0])
    assert (one.median, one.q1, one.q3, one.stdev) == (7.0, 7.0, 7.0, 0.0)
    with pytest.raises(ValueError):
        stats.summarize([])


def test_stop_rule_says_why():
    rule = stats.StopRule(rel_stdev=0.01, min_samples=5, min_time=0.1, max_time=2.0, max_samples=1000)
    steady = [1.0, 1.001, 0.999, 1.0, 1.0]
    assert rule.check(steady[:4], 5.0 - 4) is None  # too few samples
    assert rule.check(steady, 0.05) is None  # too little time
    assert rule.check(steady, 0.2) == "noise"
    noisy = [1.0, 2.0, 1.0, 2.0, 1.0, 2.0]
    assert rule.check(noisy, 0.5) is None
    assert rule.check(noisy, 2.0) == "timeout"
    assert rule.check([1.0] * 1000, 0.01) == "max-samples"
    assert stats.stable(stats.summarize(steady), "noise", 0.01)
    assert not stats.stable(stats.summarize(noisy), "timeout", 0.01)


def test_throughput_and_fractions():
    assert stats.throughput(2e9, 1e-3) == 2e12
    assert stats.throughput(None, 1e-3) is None and stats.throughput(5, 0) is None
    assert (stats.fraction(2e12, 4e12) == 0.5 and stats.fraction(None, 4e12) is None and stats.fraction(1, None) is None)


@pytest.mark.parametrize(
    "before, after, verdict",
    [
        ([1.00, 1.01, 0.99, 1.00], [1.002, 1.0, 1.01, 0.995], "same"),
        ([1.00, 1.01, 0.99, 1.00], [0.80, 0.81, 0.79, 0.80], "faster"),
        ([1.00, 1.01, 0.99, 1.00], [1.20, 1.21, 1.19, 1.20], "slower"),
        # a 10% change inside 30% noise is not a change
        ([1.0, 1.3, 0.8, 1.1, 0.9], [1.1, 1.4, 0.9, 1.2, 1.0], "same"),
    ],
)
def test_compare_classification_takes_noise_into_account(before, after, verdict):
    assert stats.classify(stats.summarize(before), stats.summarize(after))[0] == verdict


def _points(spec, sizes, params):
    return sweep.points(sweep.parse(sizes, "size"), sweep.parse(params, "param"), spec.size_names,
                        dict(spec.defines), spec.name)


def test_sweeps():
    spec = catalog.load("tiled_matmul")
    pts = _points(spec, ["M,N,K=1024,2048"], [])
    assert pts == [({"M": 1024, "N": 1024, "K": 1024}, {}), ({"M": 2048, "N": 2048, "K": 2048}, {})]
    pts = _points(spec, ["M=1,2", "N=3"], ["TILE=16,32"])
    assert len(pts) == 4 and ({"M": 2, "N": 3}, {"TILE": "32"}) in pts
    assert _points(catalog.load("vector_add"), [], ["BLOCK=64,128"])[1] == ({}, {"BLOCK": "128"})


def test_one_size_grammar_for_every_command():
    s = sweep.parse(["M=127", "N,K=131"], "size")
    assert s.single_sizes("run") == {"M": 127, "N": 131, "K": 131}
    with pytest.raises(UsageError, match="kprof run takes one value per name"):
        sweep.parse(["M=1,2"], "size").single("run")
    old = sweep.parse(["M=127,N=131"], "size")  # the old kprof run form still works, and says so
    assert old.single_sizes("run") == {"M": 127, "N": 131} and "deprecated" in old.deprecated
    assert sweep.parse(["M=2**10"], "size").single_sizes("run") == {"M": 1024}


@pytest.mark.parametrize(
    "sizes, params, message",
    [
        (["Q=1"], [], "unknown size 'Q'"),
        (["M=abc"], [], "give a whole number"),
        (["M=0"], [], "sizes must be positive"),
        (["M"], [], "write NAME=VALUE"),
        (["M=1", "M=2"], [], "M is given twice"),
        ([], ["BLOCK=64"], "unknown parameter 'BLOCK'"),
        ([], ["TILE=a b"], "a number or an identifier"),
    ],
)
def test_bad_sweeps(sizes, params, message):
    spec = catalog.load("tiled_matmul")
    with pytest.raises(UsageError, match=message):
        _points(spec, sizes, params)


def _writer(db, n, tag):
    conn = history.connect(db)
    for i in range(n):
        history.record(conn, f"run-{tag}", "bench", "k", {"sizes": {"N": i}}, {"summary": None}, machine={}, commit=None)


def test_history_concurrent_writers(tmp_path):
    db = tmp_path / "h.sqlite"
    procs = [multiprocessing.Process(target=_writer, args=(db, 50, t)) for t in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    conn = history.connect(db)
    assert len(history.rows(conn, limit=1000)) == 200
    assert len(history.runs(conn)) == 4


def _point(name, n, median, spread=0.001):
    samples = [median * (1 + spread * d) for d in (-1, 0, 1, 0, 0)]
    return points.PointResult(name, {"N": n}, {}, "cold", "ok", summary=stats.summarize(samples), stop="noise")


def test_interrupted_sweep_keeps_every_finished_point(as_if_a_gpu, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KPROF_HISTORY", str(tmp_path / "h.sqlite"))
    monkeypatch.setattr(pipeline, "peak", lambda refresh=False, arch=None, progress=None, quick=False: None)
    monkeypatch.setattr(pipeline, "timing_mode", lambda mode, *a, **k: SimpleNamespace(mode=mode))
    monkeypatch.setattr(pipeline, "bench_plan", lambda point, mode, arch: point)  # no build, no GPU
    calls = []

    def fake_run_point(point, peak, timeout):
        calls.append(point.sizes)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return _point(point.spec.name, point.sizes["N"], 1e-3)

    monkeypatch.setattr(bench, "run_point", fake_run_point)
    code = cli.main(["bench", "vector_add", "--size", "N=1000,2000,3000,4000"])
    assert code == 130
    out, err = capsys.readouterr()
    # the table of the two
    assert "2 of 4 points measured and kept" in err and "1000" in out and "2000" in out
    rows = history.rows(history.connect(), kernel="vector_add")
    assert sorted(r.values["N"] for r in rows) == [1000, 2000]
    calls.clear()
    assert cli.main(["bench", "vector_add", "--size", "N=1000,2000,3000,4000", "--json"]) == 130
    data = json.loads(capsys.readouterr().out)
    assert data["interrupted"] is True and [p["sizes"]["N"] for p in data["points"]] == [1000, 2000]


def test_sigterm_stops_a_bench_like_ctrl_c_and_prints_what_was_measured(as_if_a_gpu, tmp_path, monkeypatch, capsys):
    """A time limit (``timeout``, a batch system) sends SIGTERM: the finished points still come
    out."""
    import os
    import signal

    monkeypatch.setenv("KPROF_HISTORY", str(tmp_path / "h.sqlite"))
    monkeypatch.setattr(pipeline, "peak", lambda refresh=False, arch=None, progress=None, quick=False: None)
    monkeypatch.setattr(pipeline, "timing_mode", lambda mode, *a, **k: SimpleNamespace(mode=mode))
    monkeypatch.setattr(pipeline, "bench_plan", lambda point, mode, arch: point)
    calls = []

    def fake_run_point(point, peak, timeout):
        calls.append(point.sizes)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGTERM)  # delivered while the second point is measured
        return _point(point.spec.name, point.sizes["N"], 1e-3)

    monkeypatch.setattr(bench, "run_point", fake_run_point)
    before = signal.getsignal(signal.SIGTERM)
    # 128 + SIGTERM, as a shell says it; Ctrl-C is 130
    assert cli.main(["bench", "vector_add", "--size", "N=1000,2000,3000", "--json"]) == 143
    data = json.loads(capsys.readouterr().out)
    assert data["interrupted"] and [p["sizes"]["N"] for p in data["points"]] == [1000]
    assert signal.getsignal(signal.SIGTERM) is before, "kprof puts the previous handler back"


def test_compare_two_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KPROF_HISTORY", str(tmp_path / "h.sqlite"))
    conn = history.connect()
    for run, medians in (("r1", {1000: 1e-3, 2000: 2e-3, 3000: 3e-3}), ("r2", {1000: 1e-3, 2000: 1.5e-3, 3000: 3.6e-3})):
        for n, med in medians.items():
            history.record(conn, run, "bench", "k", {"sizes": {"N": n}, "params": {}, "mode": "cold"},
                           _point("k", n, med).to_dict(), machine={}, commit=None)
    assert cli.main(["compare", "r1", "r2", "--json"]) == 0
    rows = {r["point"]["sizes"]["N"]: r["verdict"] for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows == {1000: "same", 2000: "faster", 3000: "slower"}
    assert cli.main(["compare", "last~1", "last"]) == 0
    assert "faster" in capsys.readouterr().out
    assert cli.main(["compare", "nope"]) == 2
    assert "no bench run 'nope'" in capsys.readouterr().err
    assert cli.main(["history", "k"]) == 0
    assert "r2" in capsys.readouterr().out


def test_history_store_errors_are_one_line(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("KPROF_HISTORY", str(blocker / "h.sqlite"))
    assert cli.main(["history"]) == 0, "reading a store that does not exist: nothing yet, nothing created"
    assert "no bench results yet" in capsys.readouterr().out
    from kprof.results import history

    with pytest.raises(UsageError, match="cannot open the history store"):
        history.connect()


@pytest.mark.parametrize("index, visible, want", [
    (0, None, 0), (0, "", 0), (0, "1", 1), (1, "3,1", 1), (0, " 2 , 0", 2), (2, "1", 2),
    (0, "GPU-8f2c0f1e-aaaa", "GPU-8f2c0f1e-aaaa"),
])
def test_telemetry_reads_the_gpu_cuda_sees(index, visible, want):
    assert telemetry.nvml_target(index, visible) == want


def test_telemetry_warnings():
    snap = lambda clock, reasons=(): telemetry.Snapshot("H200", "580", clock, 3201, 1980, 40, 300.0, list(reasons))  # noqa: E731
    assert telemetry.warnings(snap(1980), snap(1980)) == []
    assert telemetry.warnings(snap(1980), snap(1980, ["applications-clocks-setting"])) == []
    assert ("sw-thermal-slowdown" in telemetry.warnings(snap(1980), snap(1980, ["sw-thermal-slowdown"]))[0])
    assert any("dropped" in w for w in telemetry.warnings(snap(1980), snap(1400)))
    assert telemetry.warnings(None, None) == []


@pytest.mark.parametrize(
    "argv, message",
    [
        (["bench", "tiled_matmul", "--rel-stdev", "0"], "--rel-stdev 0"),
        (["bench", "tiled_matmul", "--baseline", "mkl"], "--baseline 'mkl'"),
        (["bench", "rmsnorm_onepass", "--baseline", "vector_add"], "baseline vector_add has no size 'R'"),
        (["bench", "tiled_matmul", "--timer", "sundial"], "invalid choice: 'sundial'"),
        (["bench", "vector_add", "--baseline", "cublas_sgemm"], "needs a matmul spec"),
        (["bench", "tiled_matmul", "--size", "Q=1"], "unknown size 'Q'"),
        (["bench", "tiled_matmul", "--param", "TILE=1.5"], "a number or an identifier"),
        (["bench", "tiled_matmul", "--cold", "--hot"], "not allowed with argument"),
        (["compare"], "the following arguments are required"),
    ],
)
def test_bench_cli_errors(capsys, argv, message):
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


def test_bench_table_renders(tmp_path):
    from kprof.results import render_bench

    p = _point("tiled_matmul", 1024, 1e-3)
    p = replace(p, rates=replace(p.rates, flops_per_s=2e12, of_fma_peak=0.03), baselines=(points.BaselineResult(
        "cublas_sgemm", "cublas_sgemm", baseline_summary=p.summary, baseline_flops_per_s=4e12, of_baseline=0.5,
        math_mode="CUBLAS_DEFAULT_MATH (FP32, no TF32)"),))
    peak = Ceilings.from_dict({"copy_bytes_per_s": 4e12, "fma_flops_per_s": 6e13, "cached": None})
    text = render_bench.bench_table([p], peak, "r1")
    assert ("50% of cublas_sgemm" in text and "1,000.0" in text and "no TF32" in text and "run r1" in text)


def test_spec_baselines_read_as_speedups():
    from kprof.results import render_bench

    p = _point("rmsnorm_onepass", 1024, 1e-3)
    unfused = points.BaselineResult("rmsnorm_unfused", "rmsnorm_unfused", baseline_summary=replace(p.summary, median=3.4e-3),
                                   baseline_bytes_per_s=1.18e12, of_baseline=3.4)
    p = replace(p, rates=replace(p.rates, bytes_per_s=4e12), timer=points.TimerUsed(name="cupti"), baselines=(unfused,))
    text = render_bench.bench_table([p], None, None)
    assert ("3.40x faster than rmsnorm_unfused" in text and "rmsnorm_unfused median 3,400.0 us" in text)
    assert "CUPTI" in text
    p = replace(p, baselines=(replace(unfused, of_baseline=0.5),))
    assert "2.00x slower than rmsnorm_unfused" in render_bench.bench_table([p], None, None)


def test_shipped_baselines_exist_and_share_sizes():
    for entry in catalog.entries():
        spec = spec_mod.load(entry.path)
        if spec.baseline and spec.baseline not in BASELINES:
            other = catalog.load(spec.baseline)
            assert set(spec.size_names) <= set(other.size_names), spec.name
            assert other.reference and dict(other.reference).keys() == dict(spec.reference).keys(), spec.name


def test_plots_from_recorded_results(tmp_path, data_dir):
    """The bench plot redrawn from JSON recorded on the H200; the roofline from a recorded ncu
    row."""
    from pathlib import Path

    from kprof.measure import profiling as profile
    from kprof.results import plot
    from kprof.tools.nsight import ncu

    results = Path(__file__).parent.parent.parent / "tests" / "data" / "bench-vector_add-block.json"
    pts = [points.PointResult.from_dict(p) for p in json.loads(results.read_text())["points"]]
    out = plot.bench(pts, tmp_path / "sweep.png")
    assert out.stat().st_size > 5000
    assert plot._swept(pts) == "BLOCK"
    row = ncu.parse_csv((data_dir / "ncu" / "tiled_matmul.ncu_full_raw.txt").read_text())[0]
    prof = profile.analyse(row, "tiled_matmul", {})
    assert plot.roofline([prof], tmp_path / "roof.png").stat().st_size > 5000


def test_the_bench_plot_draws_each_baseline_beside_its_kernel(tmp_path, monkeypatch, data_dir):
    """A sweep draws the point's first baseline as a dashed line named for it; a ladder (one point a
    kernel) draws it as a bar after the kernels', from the baseline's own rate (the kernel's work
    over the baseline's time)."""
    pytest.importorskip("matplotlib")
    import matplotlib.axes

    from kprof.results import plot

    recorded = json.loads((data_dir / "bench-point-h200-8469042.json").read_text())["point"]
    # rmsnorm_onepass beside torch's RMSNorm, on an H200
    one = points.PointResult.from_dict(recorded)
    sweep = [replace(one, sizes={**one.sizes, "C": c}, rates=replace(one.rates, bytes_per_s=r),
                     baselines=(replace(one.first, baseline_bytes_per_s=r / 2),))
             for c, r in ((4096, 2e12), (8192, 3e12))]
    lines, bars = [], []
    real_plot, real_barh = matplotlib.axes.Axes.plot, matplotlib.axes.Axes.barh
    monkeypatch.setattr(matplotlib.axes.Axes, "plot",
                        lambda self, *a, **k: (lines.append((k.get("label"), list(a[1]))), real_plot(self, *a, **k))[1])
    monkeypatch.setattr(matplotlib.axes.Axes, "barh",
                        lambda self, *a, **k: (bars.append(list(a[1])), real_barh(self, *a, **k))[1])
    assert plot.bench(sweep, tmp_path / "sweep.png").stat().st_size > 5000
    name = one.first.baseline
    assert (lines == [("rmsnorm_onepass", [2000.0, 3000.0]), (f"{name} (timed beside rmsnorm_onepass)", [1000.0, 1500.0])])
    ladder = [one, replace(one, kernel="rmsnorm_unfused", baselines=())]
    assert plot.bench(ladder, tmp_path / "ladder.png").stat().st_size > 5000
    rate = one.rates.bytes_per_s / 1e9
    assert bars == [[rate, rate, one.first.baseline_bytes_per_s / 1e9]]


def test_cupti_timed_huge_grids_carry_a_warning(monkeypatch):
    """vector_add's 262,144 blocks ran 7% slower with CUPTI tracing on the H200: bench says so."""
    fake = {"status": "ok", "samples": [1e-4] * 5, "stop": "noise", "batch": 1, "timer": "cupti",
            "event_samples": [1.02e-4] * 5}
    monkeypatch.setattr(bench, "time_job", lambda *a, **k: child(fake))
    monkeypatch.setattr(bench.telemetry, "snapshot", lambda: None)
    mode = TimingMode("cold", bench.rule_from(0.005, 0.5, 1.0, 10), "spin.cubin", "flush.cubin")
    spec = catalog.load("vector_add")

    def plan(n):
        job = job_for(spec, "k.cubin", {"N": n}, mode=mode)
        return bench.PointPlan(pipeline.resolve(spec, {"N": n}), {}, job)

    big = bench.run_point(plan(2**26), None, timeout=10)
    small = bench.run_point(plan(2**20), None, timeout=10)
    assert big.timer.name == "cupti" and big.timer.event_summary.median == 1.02e-4
    assert any("--timer events" in w for w in big.warnings)
    assert not any("--timer events" in w for w in small.warnings)


def _point_with_one_baseline(monkeypatch, answers, name):
    """vector_add at N=1024 against one baseline spec ``name``, the children's answers given in
    order."""
    given = iter(answers)
    monkeypatch.setattr(bench, "time_job", lambda *a, **k: child(next(given)))
    monkeypatch.setattr(bench.telemetry, "snapshot", lambda: None)
    mode = TimingMode("cold", bench.rule_from(0.005, 0.5, 1.0, 10), "spin.cubin", "flush.cubin")
    spec = catalog.load("vector_add")
    job = job_for(spec, "k.cubin", {"N": 1024}, mode=mode)
    plan = bench.PointPlan(pipeline.resolve(spec, {"N": 1024}), {}, job, ((Baseline("spec", name, name), job),))
    return bench.run_point(plan, None, timeout=10)


def test_a_baseline_that_fails_verification_says_why(monkeypatch):
    """A baseline whose output is wrong is not timed, and the warning carries the verdict's
    message."""
    ok = {"status": "ok", "samples": [1e-4] * 5, "stop": "noise", "batch": 1, "timer": "events"}
    bad = {"status": "failed-verification", "checks": [
        {"ok": True, "message": "fine"}, {"ok": False, "message": "3 of 1,024 elements exceed 1e-05 + 1e-06 x |ref|"}]}
    point = _point_with_one_baseline(monkeypatch, [ok, bad], "other")
    assert point.status == "ok" and point.first is not None and point.first.of_baseline is None
    assert ("baseline other failed verification: 3 of 1,024 elements exceed 1e-05 + 1e-06 x |ref|" in point.warnings)


def test_a_baseline_is_held_against_the_same_ceiling_as_the_kernel(monkeypatch):
    """Both sides of a comparison get the same fraction of the same ceiling, and one above it is
    said."""
    kernel = {"status": "ok", "samples": [1e-3] * 5, "stop": "noise", "batch": 1, "timer": "events"}
    fast = {"status": "ok", "samples": [0.5e-3] * 5, "stop": "noise", "batch": 1, "timer": "events"}
    slow = {"status": "ok", "samples": [2e-3] * 5, "stop": "noise", "batch": 1, "timer": "events"}
    answers = iter([kernel, slow, fast])
    monkeypatch.setattr(bench, "time_job", lambda *a, **k: child(next(answers)))
    monkeypatch.setattr(bench.telemetry, "snapshot", lambda: None)
    mode = TimingMode("cold", bench.rule_from(0.005, 0.5, 1.0, 10), "spin.cubin", "flush.cubin")
    spec = catalog.load("vector_add")
    n = 2**28
    job = job_for(spec, "k.cubin", {"N": n}, mode=mode)
    resolved = pipeline.resolve(spec, {"N": n})
    rate = resolved.bytes / 1e-3  # the kernel's bytes per second
    peak = {"ceilings": {m: {"bytes_per_s": 1.5 * rate} for m in ("read", "write", "copy", "add")},
            "theoretical": {"dram_bytes_per_s": 10 * rate}}
    slow_b, fast_b = Baseline("spec", "slow", "slow"), Baseline("spec", "fast", "fast")
    point = bench.run_point(bench.PointPlan(resolved, {}, job, ((slow_b, job), (fast_b, job))), Ceilings.from_dict(peak),
                            timeout=10)
    assert point.rates.of_ceiling == pytest.approx(1 / 1.5)
    assert point.first.baseline_of_ceiling == pytest.approx(0.5 / 1.5)
    assert point.others[0].baseline_of_ceiling == pytest.approx(2 / 1.5)
    assert point.to_dict()["more_baselines"][0]["baseline_of_ceiling"] == pytest.approx(2 / 1.5)
    assert [w for w in point.warnings if "ceiling" in w] == [
        "baseline fast: 133% of the measured add ceiling: faster than kprof peak's own stream kernels for this mix "
        "(the ceiling is the best of the widths and grids kprof peak tries, not a hard limit: re-run kprof peak "
        "--refresh; a working set a few times the L2's size can be partly served by the L2)"]
    # the same baseline against a theoretical DRAM peak below its rate
    answers = iter([kernel, fast])
    dram = dict(peak, theoretical={"dram_bytes_per_s": 1.8 * rate})
    point = bench.run_point(bench.PointPlan(resolved, {}, job, ((fast_b, job),)), Ceilings.from_dict(dram), timeout=10)
    assert [w.split(" is above")[0] for w in point.warnings if "ceiling" in w or "plausible" in w] == [
        "baseline fast: not plausible: 6.44 TB/s"]


def test_the_commit_named_by_kprof_commit_wins_over_git(monkeypatch):
    """A tree copied to a GPU machine can carry a stale .git: the commit the caller names is the one
    measured."""
    monkeypatch.setenv("KPROF_COMMIT", "abc1234")
    assert history.git_commit() == "abc1234"
    monkeypatch.delenv("KPROF_COMMIT")
    assert history.git_commit() != "abc1234"


@pytest.mark.parametrize("name, params", [("rmsnorm_onepass", {"VEC": "1"}), ("softmax_online", {"VEC": "1"}),
                                          ("rmsnorm_onepass", {"FIT": "1", "VEC": "1"}), ("softmax_online", {"FIT": "1"}),
                                          ("vector_add_vec4", {"UNROLL": "4", "CACHE": "1", "BLOCKS": "1048576"})])
def test_the_swept_variants_resolve_without_a_gpu(name, params):
    """The parameters scripts/gpu-check.sh sweeps against the frameworks are the specs' own
    defines."""
    from kprof.commands import pipeline
    from kprof.spec import catalog

    resolved = pipeline.resolve(catalog.load(name), None, params=params)
    assert {k: dict(resolved.spec.defines)[k] for k in params} == params


@pytest.mark.parametrize("name", ["rmsnorm_onepass", "softmax_online"])
def test_fit_sizes_the_block_to_the_row(name):
    """FIT 1, the default: a multiple of 32 threads up to BLOCK, PER elements each, enough for the
    row (the one-read path); FIT 0: BLOCK threads at every row length, as before FIT existed."""
    from kprof.commands import pipeline
    from kprof.spec import catalog

    spec = catalog.load(name)
    for cols, fitted in [(1, 32), (31, 32), (300, 64), (1024, 128), (4096, 512), (4099, 544), (8192, 1024), (65536, 1024)]:
        assert pipeline.resolve(spec, {"R": 3, "C": cols}).block == (fitted, 1, 1)
        assert (pipeline.resolve(spec, {"R": 3, "C": cols}, params={"FIT": "0"}).block == (1024, 1, 1))


@pytest.mark.parametrize("params", [{}, {"WROWS": "0"}, {"FIT": "0", "BLOCK": "256"}, {"BLOCK": "128", "VPT": "8", "WROWS": "4"},
                                    {"BLOCK": "1024", "VPT": "1"}])
def test_rmsnorm_bf16_launch_covers_every_row_the_way_its_kernel_takes_them(params):
    """rmsnorm_bf16.cu gives a row of at most 32 * 8 * VPT columns to one warp, WROWS rows to a
    block (WROWS > 0), and any other row to one block; its launch expressions must agree, at every
    length."""
    from kprof.commands import pipeline
    from kprof.spec import catalog

    spec = catalog.load("rmsnorm_bf16")
    d = {k: int(v) for k, v in spec.with_defines(params).defines}
    for rows in (1, 7, 37, 4096):
        for cols in (1, 8, 31, 304, 1000, 1024, 1032, 2056, 4096, 8192, 8200, 16384, 20000, 65536):
            r = pipeline.resolve(spec, {"R": rows, "C": cols}, params=params)
            (block, _, _), (grid, _, _) = r.block, r.grid
            assert block <= d["BLOCK"] and block % 32 == 0, (rows, cols, block)
            # one warp per row: every row has a warp, no block is empty
            if d["WROWS"] and cols <= 32 * 8 * d["VPT"]:
                assert block == 32 * d["WROWS"] and grid * d["WROWS"] >= rows > (grid - 1) * d["WROWS"], (rows, cols)
            else:  # one block per row, holding the row in registers where BLOCK can
                assert grid == rows, (rows, cols)
                if d["FIT"]:
                    assert (block * 8 * d["VPT"] >= min(cols, d["BLOCK"] * 8 * d["VPT"]) > (block - 32) * 8 * d["VPT"])
                else:
                    assert block == d["BLOCK"]


@pytest.mark.parametrize("name", ["rmsnorm_onepass", "softmax_online"])
@pytest.mark.parametrize("params", [{"WROWS": "8"}, {"WROWS": "8", "PER": "32", "BLOCK": "256"}, {"WROWS": "4", "FIT": "0"}])
def test_float32_row_kernels_warp_rows_launch_agrees_with_the_kernel(name, params):
    """WROWS > 0 with FIT 1: a row of at most 32 * PER columns is one warp's, WROWS rows to a block
    of 32 * WROWS threads (the kernel's `#if WROWS && FIT`); longer rows, or FIT 0, launch as
    without it."""
    from kprof.commands import pipeline
    from kprof.spec import catalog

    spec = catalog.load(name)
    d = {k: int(v) for k, v in spec.with_defines(params).defines}
    for rows in (1, 7, 37, 4096):
        for cols in (1, 31, 256, 257, 300, 512, 1024, 1025, 4096, 8192, 65536):
            r = pipeline.resolve(spec, {"R": rows, "C": cols}, params=params)
            plain = pipeline.resolve(spec, {"R": rows, "C": cols}, params={**params, "WROWS": "0"})
            (block, _, _), (grid, _, _) = r.block, r.grid
            if d["FIT"] and cols <= 32 * d["PER"]:
                assert block == 32 * d["WROWS"] and grid * d["WROWS"] >= rows > (grid - 1) * d["WROWS"], (rows, cols)
            else:
                assert (r.block, r.grid) == (plain.block, plain.grid) and grid == rows, (rows, cols)


def test_kprof_run_bench_is_the_api_function_the_command_prints(as_if_a_gpu, monkeypatch):
    """kprof.run_bench() from Python: the sweep written as the CLI's options, a BenchReport with
    every point, the progress called before each, nothing written to the history store with
    history=False, and a Ctrl-C that keeps what was measured."""
    import kprof

    monkeypatch.setattr(pipeline, "peak", lambda refresh=False, arch=None, progress=None, quick=False: Ceilings.from_dict({"ceilings": {}}))
    monkeypatch.setattr(pipeline, "timing_mode", lambda mode, *a, **k: SimpleNamespace(mode=mode))
    monkeypatch.setattr(pipeline, "bench_plan", lambda point, mode, arch: point)
    monkeypatch.setattr(history, "connect", lambda *a, **k: pytest.fail("history=False writes nothing"))
    calls = []

    # run_point's own signature: the timeout always given
    def fake_run_point(point, peak, *, timeout):
        calls.append(point.sizes["N"])
        if len(calls) == 3:
            raise KeyboardInterrupt
        return _point(point.spec.name, point.sizes["N"], 1e-3)

    monkeypatch.setattr(bench, "run_point", fake_run_point)
    seen = []
    report = kprof.run_bench("vector_add", sizes=["N=1000,2000"], mode="warm", history=False,
                         progress=lambda i, n, point: seen.append((i, n, point.sizes["N"])))
    assert ([p.sizes for p in report.points] == [{"N": 1000}, {"N": 2000}] and seen == [(1, 2, 1000), (2, 2, 2000)])
    assert (report.mode == "warm" and not report.recorded and not report.interrupted and report.lost is None)
    data = report.to_json()
    assert (data["version"] == bench.BENCH_VERSION and [p["sizes"]["N"] for p in data["points"]] == [1000, 2000])
    calls.clear()
    cut = kprof.run_bench(["vector_add"], sizes="N=1,2,3,4", history=False)
    assert cut.interrupted and [p.sizes["N"] for p in cut.points] == [1, 2] and cut.planned == 4


def test_a_point_is_frozen_and_its_json_is_flat_as_before():
    """PointResult is the kernel's timing and a tuple of BaselineResult; its JSON keeps the flat
    fields (the first baseline's beside the kernel's, the others in more_baselines), and reads back
    the same."""
    import dataclasses

    p = _point("rmsnorm_onepass", 1024, 1e-3)
    first = points.BaselineResult("rmsnorm_unfused", "rmsnorm_unfused", of_baseline=3.4, baseline_kernels=2)
    more = points.BaselineResult("python:/x/torch_ops.py:rms_norm", "torch", of_baseline=0.9, baseline_framework="torch")
    p = replace(p, baselines=(first, more), warnings=("w",))
    data = p.to_dict()
    assert (data["baseline"] == "rmsnorm_unfused" and data["of_baseline"] == 3.4 and data["baseline_kernels"] == 2)
    assert (data["more_baselines"] == [more.to_dict()] and "baselines" not in data and data["warnings"] == ["w"])
    assert json.loads(json.dumps(data)) == data
    assert points.PointResult.from_dict(data) == p
    bare = _point("vector_add", 1024, 1e-3)
    assert (bare.to_dict()["baseline"] is None and bare.to_dict()["more_baselines"] == [] and bare.first is None)
    assert points.PointResult.from_dict(bare.to_dict()) == bare
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.status = "error"  # type: ignore[misc]


def test_integrity_flags_of_the_kernel_and_a_baseline_are_warnings_and_fields(monkeypatch):
    """The child's flags: a warning line each (the baseline's named), the point's and the baseline's
    JSON fields, read back equal; what was checked and what it cost travel with them."""
    flagged = {"status": "ok", "samples": [1e-4] * 5, "stop": "noise", "batch": 1, "timer": "cupti",
               "integrity": {"flags": ["other-stream: 5 of 5 timed calls launched kernels on a stream other than ..."],
                             "checked": ["kernels per call", "timer"]}, "integrity_seconds": 0.012}
    cached = {"status": "ok", "samples": [1e-6] * 5, "stop": "noise", "batch": 1, "timer": "cupti",
              "integrity": {"flags": ["ignores-input: with new input values ..."], "checked": ["new inputs"]}}
    point = _point_with_one_baseline(monkeypatch, [flagged, cached], "cheat")
    assert (point.integrity == ("other-stream: 5 of 5 timed calls launched kernels on a stream other than ...",))
    assert (point.integrity_checked == ("kernels per call", "timer") and point.integrity_seconds == 0.012)
    assert ("integrity: other-stream: 5 of 5 timed calls launched kernels on a stream other than ..." in point.warnings)
    assert "baseline cheat: integrity: ignores-input: with new input values ..." in point.warnings
    data = point.to_dict()
    assert (data["integrity"][0].startswith("other-stream") and data["baseline_integrity"][0].startswith("ignores-input"))
    assert points.PointResult.from_dict(json.loads(json.dumps(data))) == point


def test_bench_strict_fails_on_an_integrity_flag(monkeypatch, capsys):
    """Without --strict a flag is a warning (exit 0); with it, exit 1 and one line that says why."""
    from kprof.commands import api, cli

    point = points.PointResult("vector_add", {"N": 1024}, {}, "cold", "ok", integrity=("timer: ...",))
    report = api.BenchReport(points=[point], planned=1, run="r1", mode="cold", rule=bench.rule_from(0.005, 0.5, 1.0, 10),
                             peak=None, machine={}, commit=None, recorded=False)
    monkeypatch.setattr(api, "run_bench", lambda *a, **k: report)
    assert cli.main(["bench", "vector_add", "--json"]) == 0
    capsys.readouterr()
    assert cli.main(["bench", "vector_add", "--json", "--strict"]) == 1
    assert "--strict: 1 of 1 points raised a benchmark-integrity flag" in capsys.readouterr().err


def test_the_integrity_cost_table_is_the_checks_share_of_the_childs_wall_time(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent.parent / "scripts" / "integrity_cost.py"
    spec = importlib.util.spec_from_file_location("integrity_cost", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    point = points.PointResult("vector_add", {"N": 1024}, {}, "cold", "ok", integrity_seconds=0.05, wall_seconds=2.0,
                              integrity=("timer: ...",))
    (tmp_path / "b.json").write_text(json.dumps({"points": [point.to_dict()]}))
    assert mod.main([str(tmp_path / "b.json")]) == 0
    assert "| vector_add N=1024 | ok | 0.05 | 2.0 | 2.5% | timer: ... |" in capsys.readouterr().out


def test_a_baselines_kind_travels_typed_to_the_table_and_back_from_json():
    """The kind (library, spec, python) is kept beside the stored string when measured, so a report
    never decodes it again; a JSON written before kprof kept it gets it from the string."""
    lib = points.BaselineResult("cublas_sgemm", "cublas_sgemm", "library")
    assert points.BaselineResult.from_dict(lib.to_dict()).baseline_kind == "library"
    old = {k: v for k, v in points.BaselineResult("python:/x/torch_ops.py:rms_norm", "torch").to_dict().items()
           if k != "baseline_kind"}
    back = points.BaselineResult.from_dict(old)
    assert back.baseline_kind == "python" and back.label == "torch"
    assert points.BaselineResult("rmsnorm_unfused", "").label == "rmsnorm_unfused"


def test_a_points_timing_summaries_are_typed_and_its_json_keeps_their_numbers():
    """A point's summary, its events' and each baseline's are Summary objects in the parent; the
    JSON has their numbers as before (rel_stdev and rel_iqr included), and a summary that lacks one
    reads back as none."""
    p = _point("vector_add", 1024, 1e-4)
    base = points.BaselineResult("cublas_sgemm", "cublas_sgemm", baseline_summary=p.summary)
    p = replace(p, baselines=(base,), timer=points.TimerUsed(event_summary=p.summary))
    data = p.to_dict()
    assert data["summary"]["median"] == p.summary.median and "rel_stdev" in data["summary"]
    assert data["baseline_summary"] == data["summary"] == data["event_summary"]
    back = points.PointResult.from_dict(data)
    assert (back.summary == p.summary and back.first.baseline_summary == p.summary and back.timer.event_summary == p.summary)
    assert points.PointResult.from_dict({**data, "summary": {"median": 1.0}}).summary is None
