"""Profiling without a GPU: the ncu argv, the CSV parser and the analysis over real ncu output
recorded on the H200, the occupancy calculator against the driver's recorded answers, the
roofline arithmetic, and the seeded performance cases."""

import json

import perfcases
import pytest
from helpers import job_for

from kprof.build import occupancy
from kprof.errors import UsageError
from kprof.measure import profiling as profile
from kprof.tools.nsight import ncu


@pytest.fixture(scope="module")
def tiled_row():
    from pathlib import Path

    text = (Path(__file__).parent.parent / "data" / "ncu" / "tiled_matmul.ncu_full_raw.txt").read_text()
    rows = ncu.parse_csv(text)
    assert len(rows) == 1
    return rows[0]


def test_argv():
    argv = ncu.build_argv("/x/ncu", "tiled_matmul")
    assert argv[:6] == ["/x/ncu", "--nvtx", "--nvtx-include", "kprof@tiled_matmul/",
                        "--clock-control", "none"]
    assert argv[-5:] == ["--csv", "--page", "raw", "--print-units", "base"]
    metrics = argv[argv.index("--metrics") + 1].split(",")
    assert ("gpu__time_duration.sum" in metrics
            and "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum" in metrics)
    full = ncu.build_argv("/x/ncu", "k", set_name="full", report="/r/k.ncu-rep")
    assert "--set" in full and full[full.index("--set") + 1] == "full"
    assert full[-3:] == ["--export", "/r/k.ncu-rep", "--force-overwrite"] and "--csv" not in full
    assert ncu.import_argv("/x/ncu", "/r/k.ncu-rep") == ["/x/ncu", "--import", "/r/k.ncu-rep",
                                                         "--csv", "--page", "raw",
                                                          "--print-units", "base"]
    with pytest.raises(UsageError, match="nesting"):
        ncu.nvtx_filter("a/b")
    with pytest.raises(UsageError, match="--set"):
        ncu.build_argv("/x/ncu", "k", set_name="everything")


def test_numbers_with_thousands_separators():
    assert ncu.parse_number("1,073,741,824") == 1073741824.0
    assert ncu.parse_number("93.77") == 93.77
    assert ncu.parse_number("n/a") is None and ncu.parse_number("") is None
    assert ncu.parse_number("NVIDIA H200") == "NVIDIA H200"


def test_parse_recorded_raw_csv(tiled_row):
    assert tiled_row["gpu__time_duration.sum"].value == 251520.0
    assert tiled_row["gpu__time_duration.sum"].unit == "ns"
    assert tiled_row["dram__bytes_read.sum"].value == 8393472.0
    assert tiled_row["Kernel Name"].value == "tiled_matmul"


def test_analyse_recorded_tiled_matmul(tiled_row):
    p = profile.analyse(tiled_row, "tiled_matmul", {"M": 1024, "N": 1024, "K": 1024}, arch="sm_90",
                        spec_flops=2 * 1024**3)
    assert p.duration_s == pytest.approx(251.52e-6)
    assert (p.occupancy.achieved_occupancy == pytest.approx(0.9377)
            and p.occupancy.theoretical_occupancy == pytest.approx(1.0))
    assert p.occupancy.occupancy_limiter == "nothing (the maximum)"
    assert p.occupancy.registers == 31 and p.occupancy.block_size == 1024
    assert p.memory.dram_read == 8393472.0 and p.memory.dram_write == 0
    # peak: 1504 B/cycle x 3.199 GHz = 4.81 TB/s
    assert p.roofline.peak_bytes == pytest.approx(1504 * 3199088210.35)
    assert p.memory.dram_fraction == pytest.approx(8393472 / 251.52e-6 / (1504 * 3199088210.35))
    assert p.memory.l2_hit == pytest.approx(0.9291)
    assert p.shared.shared_bank_conflicts == 39503 + 321711
    assert p.shared.conflicts_per_request == pytest.approx((39503 + 321711) / (41943040 + 2097152))
    assert p.memory.global_load_sectors_per_request == pytest.approx(8388608 / 2097152)
    assert p.memory.global_store_sectors_per_request == pytest.approx(4.0)
    assert p.memory.local_bytes == 0
    assert p.stalls.top[0][0] == "mio_throttle" and p.stalls.top[0][1] == pytest.approx(16.51)
    assert "selected" not in dict(p.stalls.top)
    # --set full records FLOP rates, not the .sum counters kprof asks for: no FLOPs from this file
    assert p.compute.flops is None and p.roofline.bound is None


def test_analyse_flops_and_roofline():
    V = ncu.Value
    row = {
        "gpu__time_duration.sum": V(1e6, "ns"),  # 1 ms
        "dram__bytes_read.sum": V(1e9, "byte"), "dram__bytes_write.sum": V(0.0, "byte"),
        "dram__bytes.sum.peak_sustained": V(1000.0, "byte/cycle"),
        "dram__cycles_elapsed.avg.per_second": V(4e9, "hz"),
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": V(16896.0, "inst/cycle"),
        "sm__cycles_elapsed.avg.per_second": V(2e9, "hz"),
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": V(1e9, "inst"),
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": V(5e8, "inst"),
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": V(0.0, "inst"),
    }  # fmt: skip
    p = profile.analyse(row, "k", {})
    assert p.compute.flops == 2.5e9 and p.compute.flops_per_s == pytest.approx(2.5e12)
    r = p.roofline
    assert r.peak_bytes == 4e12 and r.peak_flops == pytest.approx(2 * 16896 * 2e9)
    assert r.intensity == pytest.approx(2.5) and r.ridge == pytest.approx(2 * 16896 * 2e9 / 4e12)
    assert r.bound == "memory" and r.attainable == pytest.approx(2.5 * 4e12)
    assert r.fraction == pytest.approx(2.5e12 / 1e13)


def test_roofline_compute_bound():
    r = profile.Roofline.of(flops=1e12, seconds=0.1, dram_bytes=1e9, peak_flops=60e12,
                            peak_bytes=4e12)
    assert (r.bound == "compute" and r.attainable == 60e12
            and r.fraction == pytest.approx(1e13 / 60e12))


def test_fallback_without_counters():
    p = profile.fallback("k", {"N": 1}, 0.002, 32, 256, 0, dynamic_smem=0, arch="sm_90",
                         spec_flops=4e9, spec_bytes=8e9, reason="counters not permitted")
    assert p.source.startswith("fallback") and p.occupancy.theoretical_occupancy == 1.0
    assert (p.memory.dram_bytes_per_s == pytest.approx(4e12)
            and p.compute.flops_per_s == pytest.approx(2e12))
    json.dumps(p.to_dict())


@pytest.mark.parametrize(
    "text, reason",
    [
        ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission", "counters"),
        (None, "no-match"),
    ],
)
def test_diagnose(data_dir, text, reason):
    if text is None:
        text = (data_dir / "ncu" / "nomatch.ncu.txt").read_text()
    assert ncu.diagnose(text)[0] == reason
    assert ncu.diagnose("==PROF== Disconnected") is None


def test_unknown_metric_names():
    assert (ncu.unknown_metrics("==ERROR== Failed to find metric sm__bogus.sum\n") == ["sm__bogus.sum"])


def test_occupancy_matches_every_recorded_driver_answer(data_dir):
    data = json.loads((data_dir / "ncu" / "occupancy_sm90.json").read_text())
    lim = occupancy.ARCHS["sm_90"]
    dev = data["device"]
    assert (lim.max_warps_per_sm * 32, lim.max_blocks_per_sm, lim.regs_per_sm, lim.smem_per_sm,
            lim.max_smem_per_block, lim.reserved_smem_per_block) == (
        dev["MAX_THREADS_PER_MULTIPROCESSOR"], dev["MAX_BLOCKS_PER_MULTIPROCESSOR"],
        dev["MAX_REGISTERS_PER_MULTIPROCESSOR"], dev["MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"],
        dev["MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"], dev["RESERVED_SHARED_MEMORY_PER_BLOCK"])
    checked = 0
    for k in data["kernels"]:
        for a in k["answers"]:
            got = occupancy.compute(lim, a["block"], k["registers"], k["static_smem"],
                                    a["dynamic_smem"], opt_in=False)
            assert got.blocks_per_sm == a["blocks_per_sm"], (k["name"], a)
            checked += 1
    assert checked >= 500


@pytest.mark.parametrize(
    "arch, block, regs, smem, blocks, limiter",
    [
        ("sm_90", 256, 126, 8192, 2, "registers"),
        ("sm_90", 1024, 31, 8192, 2, "nothing (the maximum)"),
        ("sm_90", 32, 16, 0, 32, "blocks"),
        ("sm_90", 256, 32, 100 * 1024, 2, "shared memory"),
        ("sm_86", 1024, 38, 8192, 1, "warps"),
        ("sm_80", 256, 64, 0, 4, "registers"),
        ("sm_89", 128, 32, 0, 12, "nothing (the maximum)"),
        ("sm_89", 1024, 32, 0, 1, "warps"),
    ],
)
def test_occupancy_per_arch(arch, block, regs, smem, blocks, limiter):
    occ = occupancy.compute(occupancy.limits_for(arch), block, regs, smem)
    assert (occ.blocks_per_sm, occ.limiter) == (blocks, limiter)


def test_occupancy_advice():
    lim = occupancy.ARCHS["sm_90"]
    occ = occupancy.compute(lim, 256, 126, 8192)
    assert ("at 80" in occupancy.advice(lim, occ, 126, 8192)
            and "38%" in occupancy.advice(lim, occ, 126, 8192))
    occ = occupancy.compute(lim, 256, 32, 100 * 1024)
    assert "bytes of shared memory per block" in occupancy.advice(lim, occ, 32, 100 * 1024)
    with pytest.raises(UsageError, match="no occupancy limits for sm_50"):
        occupancy.limits_for("sm_50")
    with pytest.raises(UsageError, match="block size 2048"):
        occupancy.compute(lim, 2048, 32, 0)


def test_perf_cases_are_well_formed():
    found = {c.name: c for c in perfcases.load_all()}
    from kprof.diagnosis import rules

    # every rule a case
    assert len(found) >= 15 and {c.expect.cause for c in found.values()} >= set(rules.RULE_IDS)
    assert {c.name for c in perfcases.with_metric()} == {"transpose_bank_conflicts",
                                                         "copy_uncoalesced",
                                                        "register_spill", "too_few_blocks",
                                                        "divergent_branch"}
    assert (found["fp64_memory"].expect.unless == "fast-fp64"
            and found["tail_wave"].expect.line == "launch")
    assert found["copy_uncoalesced"].expect.line == 6  # the // PERF line
    assert found["too_few_blocks"].spec.twin_spec().resolve().grid == (1056, 1, 1)
    assert found["too_few_blocks"].spec.resolve().grid == (4, 1, 1)
    ok, text = found["copy_uncoalesced"].verdict(32.0, 4.0)
    assert ok and "higher" in text
    assert not found["copy_uncoalesced"].verdict(5.0, 4.0)[0]
    assert (found["too_few_blocks"].verdict(1e11, 3e12)[0]
            and not found["too_few_blocks"].verdict(1e12, 3e12)[0])
    assert found["register_spill"].verdict(1e6, 0.0)[0]


def test_occupancy_cli_without_gpu(capsys):
    from kprof.commands import cli

    assert cli.main(["occupancy", "regblock_matmul", "--arch", "sm_90"]) == 0
    out = capsys.readouterr().out
    assert ("126 registers per thread" in out and "limited by registers" in out
            and "BLOCKS/SM" in out)
    assert (cli.main(["occupancy", "tiled_matmul", "--arch", "sm_80", "--json", "--block", "256"]) == 0)
    data = json.loads(capsys.readouterr().out)
    assert (data["arch"] == "sm_80" and data["launch"][0]["block_size"] == 256
            and len(data["sweep"]) == 32)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["occupancy", "tiled_matmul", "--arch", "sm_50"], "no occupancy limits for sm_50"),
        (["occupancy", "tiled_matmul", "--arch", "sm_90", "--block", "2048"], "block size 2048"),
        (["occupancy", "tiled_matmul", "--arch", "sm_90", "--dynamic-smem", "-1"],
         "--dynamic-smem -1"),
        (["profile", "tiled_matmul", "--set", "all"], "invalid choice: 'all'"),
        (["profile", "nope_kernel"], "unknown kernel 'nope_kernel'"),
        (["profile", "tiled_matmul", "--size", "Q=1"], "unknown size 'Q'"),
        (["profile", "tiled_matmul", "--timeout", "0"], "--timeout 0"),
        (["profile", "tiled_matmul", "--kernel", "scale"], "pick a program's launches"),
        (["profile", "tiled_matmul", "--launch-count", "3"], "tiled_matmul is profiled whole"),
        # checked before the GPU (no GPU here: exit 5 otherwise), so a run is never measured, then
        # lost to its plot
        (["profile", "tiled_matmul", "--plot", "roof.jpg2"],
         "--plot roof.jpg2: matplotlib draws no .jpg2 file"),
        (["bench", "vector_add", "--plot", "b.xlsx"], "matplotlib draws no .xlsx file"),
        (["profile", "--plot", "roof.txt", "--", "python", "train.py"],
         "matplotlib draws no .txt file"),
    ],
)
def test_profile_cli_errors(capsys, argv, message):
    from kprof.commands import cli

    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


def test_a_programs_save_report_is_checked_before_it_runs(tmp_path, capsys):
    from kprof.commands import cli

    (tmp_path / "afile").write_text("")
    code = cli.main(["profile", "--save-report", str(tmp_path / "afile"), "--", "python",
                     "train.py"])
    err = capsys.readouterr().err
    assert (code == 2 and err.startswith("kprof: error: --save-report") and "is a file" in err
            and err.count("\n") == 1)


def test_missing_ncu_says_where_to_get_it(as_if_a_gpu, capsys, monkeypatch):
    from kprof.commands import cli

    monkeypatch.setenv("KPROF_NCU", "/nonexistent/ncu")
    code = cli.main(["profile", "vector_add", "--size", "N=1000"])
    err = capsys.readouterr().err
    assert code == 3 and "ncu not found" in err


FAKE_NCU = """#!{python}
import sys
argv = sys.argv[1:]
metrics = argv[argv.index("--metrics") + 1].split(",")
mode = {mode!r}
if mode == "unknown" and "sm__bogus.sum" in metrics:
    print("==ERROR== Failed to find metric sm__bogus.sum")
    sys.exit(1)
if mode == "nomatch":
    print(open({nomatch!r}).read())
    sys.exit(0)
print(open({csv!r}).read())
"""


@pytest.mark.parametrize("mode", ["ok", "unknown", "nomatch"])
def test_profile_rows_through_a_fake_ncu(tmp_path, monkeypatch, data_dir, mode):
    """ncu.profile_rows without a GPU: a stand-in ncu prints output recorded on the H200."""
    import sys

    from kprof.errors import NcuError
    from kprof.spec import catalog

    exe = tmp_path / "ncu"
    exe.write_text(FAKE_NCU.format(python=sys.executable, mode=mode,
                                   csv=str(data_dir / "ncu" / "tiled_matmul.ncu_full_raw.txt"),
                                   nomatch=str(data_dir / "ncu" / "nomatch.ncu.txt")))
    exe.chmod(0o755)
    monkeypatch.setenv("KPROF_NCU", str(exe))
    spec = catalog.load("tiled_matmul")
    job = job_for(spec, tmp_path / "k.cubin", {"M": 1024, "N": 1024, "K": 1024})
    extra = ("sm__bogus.sum",) if mode == "unknown" else ()
    if mode == "nomatch":
        with pytest.raises(NcuError) as info:
            ncu.profile_rows(job, extra_metrics=extra)
        assert info.value.reason == "no-match"
        return
    row = ncu.profile_rows(job, extra_metrics=extra)[-1]
    assert row["gpu__time_duration.sum"].value == 251520.0


@pytest.mark.nvcc
def test_cli_profile_reports_every_extra_metric(as_if_a_gpu, tmp_path, monkeypatch, data_dir,
                                                capsys):
    """--metrics: a value for each metric ncu reported, and a note for one it accepted but left
    out."""
    import json
    import sys

    from kprof.commands import cli

    exe = tmp_path / "ncu"
    exe.write_text(FAKE_NCU.format(python=sys.executable, mode="ok",
                                   csv=str(data_dir / "ncu" / "tiled_matmul.ncu_full_raw.txt"),
                                   nomatch=""))
    exe.chmod(0o755)
    monkeypatch.setenv("KPROF_NCU", str(exe))
    code = cli.main(["profile", "tiled_matmul", "--arch", "sm_90", "--json",
                     "--metrics", "sm__cycles_active.avg,sm__not_in_the_recording.sum"])
    out = capsys.readouterr().out
    assert code == 0
    notes = json.loads(out)["kernels"][0]["notes"]
    assert "extra sm__cycles_active.avg = 475820.22 cycle" in notes
    assert any(n.startswith("extra sm__not_in_the_recording.sum: ncu reported no value")
               for n in notes)


def test_an_ncu_that_fails_says_its_own_error_lines():
    text = ("==PROF== Connected to process 3872\n==ERROR== Failed to profile \"too_few_blocks\" in "
            "process 3872\n==PROF== Trying to shutdown target application\n==ERROR== The "
            "application returned an error code (9).\n==ERROR== The application returned an error "
            "code (9).\n")
    assert ncu.ncu_errors(text) == ('Failed to profile "too_few_blocks" in process 3872; '
                                    "The application returned an error code (9).")
    assert ncu.ncu_errors("==PROF== Disconnected") == ""


def test_a_tensor_core_kernel_is_judged_against_the_tensor_roof():
    """work.math: tensor. No SASS counter counts a tensor core's FLOPs: the spec's are used, against
    SMs x 4,096 FLOP per clock (sm_90) x the SM clock ncu saw; the tensor pipe's use and the wgmma
    count are reported (the metric names of ncu 2025.3 on an H200, `ncu --query-metrics`)."""
    from kprof.results import render_profile

    V = ncu.Value
    row = {
        "gpu__time_duration.sum": V(1e6, "ns"),  # 1 ms
        "dram__bytes_read.sum": V(1e8, "byte"), "dram__bytes_write.sum": V(3e7, "byte"),
        "dram__bytes.sum.peak_sustained": V(1000.0, "byte/cycle"),
        "dram__cycles_elapsed.avg.per_second": V(4e9, "hz"),
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": V(16896.0, "inst/cycle"),
        "sm__cycles_elapsed.avg.per_second": V(1.98e9, "hz"),
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": V(0.0, "inst"),
        "device__attribute_multiprocessor_count": V(132.0, ""),
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": V(61.5, "%"),
        "sm__inst_executed_pipe_tensor_op_gmma.sum": V(0.0, "inst"),
    }  # fmt: skip
    assert {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
            "sm__inst_executed_pipe_tensor_op_gmma.sum",
            "device__attribute_multiprocessor_count"} <= set((a := ncu.build_argv("/x/ncu", "k"))[a.index("--metrics") + 1].split(","))
    p = profile.analyse(row, "mma_matmul", {}, arch="sm_90", spec_flops=2 * 4096**3, math="tensor")
    peak = 132 * 4096 * 1.98e9  # 1,070 TFLOP/s
    assert p.compute.flops == 2 * 4096**3 and p.roofline.peak_flops == pytest.approx(peak)
    assert (p.roofline.bound == "compute"
            and p.roofline.fraction == pytest.approx(2 * 4096**3 / 1e-3 / peak))
    assert p.compute.tensor_pipe == pytest.approx(0.615) and p.compute.wgmma == 0.0
    text = render_profile.profile_report([p])
    assert "137 TFLOP/s (13% of the 1071 TFLOP/s dense 16-bit tensor peak)" in text
    assert "tensor pipe busy 62% of active cycles, no wgmma (mma.sync or HMMA only)" in text
    fp32 = profile.analyse(row, "mma_matmul", {}, arch="sm_90", spec_flops=2 * 4096**3)
    assert fp32.compute.flops is None or fp32.compute.flops == 0  # FP32's counters see none of it
    assert (profile.analyse(row, "k", {}, arch="sm_61", spec_flops=1, math="tensor").roofline.peak_flops is None)


def test_the_roofline_plot_draws_a_roof_for_each_kind_of_math(tmp_path, monkeypatch):
    """An FP32 kernel and a tensor-core one in one plot: the DRAM slope and two flat roofs, each
    labelled."""
    pytest.importorskip("matplotlib")
    from kprof.results import plot

    V = ncu.Value
    row = {"gpu__time_duration.sum": V(1e6, "ns"), "dram__bytes_read.sum": V(1e8, "byte"),
           "dram__bytes_write.sum": V(3e7, "byte"),
           "dram__bytes.sum.peak_sustained": V(1000.0, "byte/cycle"),
           "dram__cycles_elapsed.avg.per_second": V(4e9, "hz"),
           "sm__cycles_elapsed.avg.per_second": V(1.98e9, "hz"),
           "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": V(16896.0, "inst/cycle"),
           "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": V(1e9, "inst"),
           "device__attribute_multiprocessor_count": V(132.0, "")}  # fmt: skip
    fp32 = profile.analyse(row, "tiled_matmul", {}, arch="sm_90")
    tensor = profile.analyse(row, "mma_matmul", {}, arch="sm_90", spec_flops=10**11, math="tensor")
    labels = []
    import matplotlib.axes

    real = matplotlib.axes.Axes.plot
    monkeypatch.setattr(matplotlib.axes.Axes, "plot", lambda self, *a,
                        **k: (labels.append(k.get("label")), real(self, *a, **k))[1])
    assert plot.roofline([fp32, tensor], tmp_path / "roof.png").stat().st_size > 5000
    assert labels == ["DRAM 4.00 TB/s", "FP32 66.9 TFLOP/s", "dense 16-bit tensor 1070.5 TFLOP/s"]


def test_a_report_read_back_in_scaled_units_is_read_in_base_units():
    """On an H200 (ncu 2025.3.1) ``ncu --import R --csv --page raw`` printed scaled units (1.11328
    msecond,
    33.56 Mbyte), which kprof read as nanoseconds and bytes: a 1.1 ms kernel became 1.1 ns and every
    rate a million times too high, and the diagnosis found no cause on 11 of 16 cases. kprof now
    asks for base units and converts what comes scaled anyway."""
    from kprof.tools.nsight import ncu

    assert ncu.import_argv("ncu", "r.ncu-rep")[-2:] == ["--print-units", "base"]
    assert ncu.build_argv("ncu", "k")[-2:] == ["--print-units", "base"]
    text = ('"ID","Kernel '
            'Name","gpu__time_duration.sum","dram__bytes_read.sum","sm__cycles_elapsed.avg.per_second","dram__bytes.sum.peak_sustained","sm__warps_active.avg.pct_of_peak_sustained_active"\n'
            '"","","msecond","Mbyte","Ghz","byte/cycle","%"\n'
            '"0","k","1.11328","33.558784","1.98","1,504","98.9"\n')
    (row,) = ncu.parse_csv(text)
    assert row["gpu__time_duration.sum"] == ncu.Value(pytest.approx(1_113_280.0), "ns")
    assert (row["dram__bytes_read.sum"].value == pytest.approx(33_558_784)
            and row["dram__bytes_read.sum"].unit == "byte")
    assert row["sm__cycles_elapsed.avg.per_second"].value == pytest.approx(1.98e9)
    assert (row["dram__bytes.sum.peak_sustained"].value == 1504
            and row["sm__warps_active.avg.pct_of_peak_sustained_active"].value == 98.9)
    p = profile.analyse(row, "k", {})
    assert (p.duration_s == pytest.approx(1.11328e-3)
            and p.memory.dram_bytes_per_s == pytest.approx(33_558_784 / 1.11328e-3))


FAKE_NCU_REPORT = """#!{python}
import sys
argv = sys.argv[1:]
if "--export" in argv:  # the profiling run: the report, with the Source page's section asked for
    assert argv[argv.index("--section") + 1] == "SourceCounters" and "--import-source" in argv, argv
    open(argv[argv.index("--export") + 1], "w").write("a report")
elif "source" in argv:
    print(open({page!r}).read())
else:
    print(open({csv!r}).read())
"""


def test_a_profile_reads_each_kernels_source_page_back_from_its_report(tmp_path, monkeypatch, data_dir):
    """ncu.measure: ncu exports a report (to a temporary folder when none is kept), its raw page and
    its Source page are read back, a page to a profiled kernel."""
    import sys

    from kprof.spec import catalog

    page = tmp_path / "page.csv"
    page.write_text('"Kernel Name","tiled_matmul"\n"Line No","Source","Warp Stall Sampling (All '
                    'Samples)","Instructions Executed","L1 Wavefronts Shared Excessive"\n'
                    '"25","        acc += As[ty][k] * Bs[k][tx];","900","4096","0"\n')
    exe = tmp_path / "ncu"
    exe.write_text(FAKE_NCU_REPORT.format(python=sys.executable, page=str(page),
                                          csv=str(data_dir / "ncu" / "tiled_matmul.ncu_full_raw.txt")))
    exe.chmod(0o755)
    monkeypatch.setenv("KPROF_NCU", str(exe))
    job = job_for(catalog.load("tiled_matmul"), tmp_path / "k.cubin",
                  {"M": 1024, "N": 1024, "K": 1024})
    got = ncu.measure(job)
    assert got.rows[-1]["gpu__time_duration.sum"].value == 251520.0
    assert got.pages is not None and len(got.pages) == len(got.rows)
    (line,) = got.pages[0].lines
    assert (line.line, line.samples, line.executed) == (25, 900, 4096)
    kept = tmp_path / "kept"
    kept.mkdir()
    assert (ncu.measure(job, report_dir=kept).pages is not None
            and (kept / "tiled_matmul.ncu-rep").is_file())


def test_a_programs_kept_report_gives_each_launch_its_source_page(tmp_path, monkeypatch, data_dir):
    """kprof profile --save-report DIR -- CMD: the report kept has the SourceCounters section, and
    each profiled launch gets its lines from it."""
    import sys

    page = tmp_path / "page.csv"
    page.write_text('"Kernel Name","k"\n"Line No","Source","Warp Stall Sampling (All '
                    'Samples)"\n"7","  y[i] = x[i];","40"\n')
    exe = tmp_path / "ncu"
    exe.write_text(FAKE_NCU_REPORT.format(python=sys.executable, page=str(page),
                                          csv=str(data_dir / "ncu" / "tiled_matmul.ncu_full_raw.txt")))
    exe.chmod(0o755)
    monkeypatch.setenv("KPROF_NCU", str(exe))
    (tmp_path / "out").mkdir()
    found = profile.profile_program(["python3", "train.py"], "sm_90", kernel=None, nvtx_range=None,
                                    launch_skip=0,
                                      launch_count=10, set_name="quick", metrics=(), timeout=60,
                                      report_dir=tmp_path / "out")
    assert found and found[0].lines is not None and found[0].lines.lines[0].line == 7
    assert found[0].to_dict()["lines"]["lines"][0]["samples"] == 40


FAKE_NCU_NO_SECTION = """#!{python}
import sys
argv = sys.argv[1:]
if "--section" in argv:  # an ncu that cannot take the Source page's section here
    print("==ERROR== Failed to collect section SourceCounters: PC sampling is not supported")
    sys.exit(1)
if "--export" in argv:
    open(argv[argv.index("--export") + 1], "w").write("a report")
else:
    print(open({csv!r}).read())
"""


def test_an_ncu_that_cannot_measure_lines_still_gives_the_numbers(tmp_path, monkeypatch, data_dir):
    import sys

    from kprof.spec import catalog

    exe = tmp_path / "ncu"
    exe.write_text(FAKE_NCU_NO_SECTION.format(python=sys.executable,
                                              csv=str(data_dir / "ncu" / "tiled_matmul.ncu_full_raw.txt")))
    exe.chmod(0o755)
    monkeypatch.setenv("KPROF_NCU", str(exe))
    job = job_for(catalog.load("tiled_matmul"), tmp_path / "k.cubin",
                  {"M": 1024, "N": 1024, "K": 1024})
    got = ncu.measure(job)
    # no line measured
    assert got.rows[-1]["gpu__time_duration.sum"].value == 251520.0 and not any(got.pages)
