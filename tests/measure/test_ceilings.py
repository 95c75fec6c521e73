"""kprof.measure.ceilings and kprof peak's bookkeeping, without a GPU."""

import pytest
from helpers import child

from kprof.measure import bench, ceilings, points
from kprof.results import render_bench, render_profile

# What an H200's driver reports (CU_DEVICE_ATTRIBUTE_*): the numbers are the kind the driver gives.
H200 = {"name": "NVIDIA H200", "arch": "sm_90", "sm_count": 132, "memory_clock_khz": 3_201_000,
        "bus_width_bits": 6144, "clock_khz": 1_980_000, "l2_bytes": 50 * 2**20}

C = ceilings.Ceilings.from_dict  # a measurement as kprof peak writes it, read as kprof reads it


def test_theoretical_peaks_come_from_the_attributes_and_say_which():
    th = ceilings.theoretical(H200)
    assert th["dram_bytes_per_s"] == pytest.approx(2 * 3.201e9 * 6144 / 8)  # 4.92 TB/s
    assert th["fp32_flops_per_s"] == pytest.approx(2 * 132 * 128 * 1.98e9)  # 66.9 TFLOP/s
    assert (th["attributes"]["CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH (bits)"] == 6144
            and not th["notes"])
    # Maxwell: not modelled
    retired = ceilings.theoretical(dict(H200, memory_clock_khz=0, arch="sm_50"))
    assert retired["dram_bytes_per_s"] is None and retired["fp32_flops_per_s"] is None
    assert (any("memory clock" in n for n in retired["notes"])
            and any("sm_50" in n for n in retired["notes"]))


@pytest.mark.parametrize("buffers, mix", [
    ([("in", 100), ("out", 100)], "copy"),
    ([("in", 100), ("in", 100), ("out", 100)], "add"),  # c = a + b
    ([("in", 300), ("out", 100)], "add"),  # a quarter written: nearer a third than a half
    # three quarters: as near copy as write, and copy comes first
    ([("in", 100), ("out", 300)], "copy"),
    # a reduction: its 4-byte result does not make it a copy
    ([("in", 4 << 20), ("out", 4)], "read"),
    ([("out", 100), ("in", 0)], "write"),
    ([("inout", 100)], "copy"),
    ([("scratch", 100), ("in", 100)], "read"),
])
def test_a_kernels_mix_comes_from_its_buffers(buffers, mix):
    assert ceilings.mix_of(buffers) == mix


def test_the_ceiling_for_a_mix_falls_back_to_an_older_peak_files_copy():
    peak = C({"ceilings": {"read": {"bytes_per_s": 4.5e12}, "copy": {"bytes_per_s": 4.3e12}},
              "copy_bytes_per_s": 4.3e12})
    assert ceilings.ceiling(peak, "read") == 4.5e12 and ceilings.ceiling(peak, "write") == 4.3e12
    assert (ceilings.measured_mix(peak, "add") == "copy"
            and ceilings.measured_mix(peak, "read") == "read")
    assert (ceilings.ceiling(C({"copy_bytes_per_s": 3.97e12}), "read") == 3.97e12
            and ceilings.ceiling(None, "read") is None)
    # an unversioned file (kprof before the record): read the same way
    assert peak.version == 1 and C({}).version == 1


def test_the_tensor_peak_is_the_fastest_part_of_each_architecture_and_judges_a_tensor_kernel():
    """Dense 16-bit tensor math: an H100 SXM's 989.4 TFLOP/s at 1830 MHz (NVIDIA's figure: 132 SMs
    of 4,096 FLOP a clock), 1,071 at the H200's 1980 MHz; A100 312 TFLOP/s at 1410 MHz. A bfloat16
    mma.sync matmul at 243 TFLOP/s (mma_matmul on an H200) is not judged against FP32's 66.9, and a
    tensor rate above the tensor peak is flagged."""
    assert (ceilings.theoretical(dict(H200, clock_khz=1_830_000))["tensor_flops_per_s"] == pytest.approx(989.4e12, rel=1e-3))
    assert ceilings.theoretical(H200)["tensor_flops_per_s"] == pytest.approx(132 * 4096 * 1.98e9)
    a100 = dict(H200, arch="sm_80", sm_count=108, clock_khz=1_410_000)
    assert ceilings.theoretical(a100)["tensor_flops_per_s"] == pytest.approx(312e12, rel=2e-3)
    # Pascal: no tensor cores
    assert ceilings.theoretical(dict(H200, arch="sm_61"))["tensor_flops_per_s"] is None
    peak = C({"theoretical": ceilings.theoretical(H200)})
    args = dict(bytes_per_s=2.4e12 * 0.02, peak=peak, mode="cold", working_set=256 << 20,
                l2_bytes=H200["l2_bytes"])
    assert ceilings.implausible(flops_per_s=243e12, math="tensor", **args) == []
    (fp32,) = ceilings.implausible(flops_per_s=243e12, **args)
    assert "above the theoretical FP32 rate" in fp32 and "work.math: tensor" in fp32
    (over,) = ceilings.implausible(flops_per_s=1.2e15, math="tensor", **args)
    assert "above the theoretical dense 16-bit tensor rate" in over
    text = render_bench.peak_report(C({"gpu": "NVIDIA H200",
                                       "theoretical": ceilings.theoretical(H200), "ceilings": {},
                                 "fma_flops_per_s": 64.8e12}))
    assert "tensor, 16-bit  1071 TFLOP/s" in text


def test_a_spec_says_what_its_flops_run_on():
    from kprof.errors import SpecError
    from kprof.spec import catalog, loader

    assert (catalog.load("mma_matmul").work.math == "tensor"
            and catalog.load("tiled_matmul").work.math == "fp32")
    data = dict(__import__("yaml").safe_load(catalog.load("tiled_matmul").path.read_text()))
    data["work"] = {**data["work"], "math": "fp8"}
    with pytest.raises(SpecError, match=r"work.math: must be fp32 or tensor"):
        loader.from_dict(data, catalog.load("tiled_matmul").path)


def test_implausible_rates_and_working_sets_are_named():
    peak = C({"theoretical": ceilings.theoretical(H200)})
    ok = ceilings.implausible(bytes_per_s=4.3e12, flops_per_s=None, peak=peak, mode="cold",
                              working_set=2 << 30, l2_bytes=H200["l2_bytes"])
    assert ok == []
    over = ceilings.implausible(bytes_per_s=5.2e12, flops_per_s=70e12, peak=peak, mode="cold",
                                working_set=2 << 30, l2_bytes=H200["l2_bytes"])
    assert (len(over) == 2 and "above the theoretical DRAM bandwidth" in over[0]
            and "FP32" in over[1])
    small = ceilings.implausible(bytes_per_s=3e12, flops_per_s=None, peak=peak, mode="cold",
                                 working_set=8 << 20, l2_bytes=H200["l2_bytes"])
    assert len(small) == 1 and "fits in the 50 MiB L2" in small[0]
    assert ceilings.implausible(bytes_per_s=3e12, flops_per_s=None, peak=peak, mode="hot",
                                working_set=8 << 20,
                                l2_bytes=H200["l2_bytes"]) == [], "hot mode means to measure from L2"
    matmul = ceilings.implausible(bytes_per_s=0.5e12, flops_per_s=40e12, peak=peak, mode="cold",
                                  working_set=12 << 20, l2_bytes=H200["l2_bytes"])
    assert matmul == [], "a compute-bound kernel (80 FLOP/byte, past the ridge) is judged by its FLOP/s"


def test_measure_peak_keeps_the_best_per_mix_and_raises_copy_to_the_memcpy(monkeypatch):
    """Fake timings: the copy kernels reach 4.0 TB/s at best, the memcpy 4.25: the copy ceiling is
    the memcpy's."""
    rates = {("read", 16, 2048): 4.4e12, ("read", 4, 2048): 3.0e12, ("write", 16, 8192): 4.1e12,
             ("copy", 16, 2048): 4.0e12, ("copy", 8, 2048): 3.9e12, ("add", 16, 2048): 4.2e12,
             ("add", 4, 2048): None}
    jobs = {}

    class FakeJob:
        def __init__(self, key):
            self.key = key
            self.target = type("T", (), {"name": str(key)})()

    def fake_time(job, timeout):
        seconds = jobs[job.key]
        if seconds is None:  # a configuration that does not verify: kprof peak goes on without it
            return child(status="failed")
        return child(status="ok", samples=[seconds] * 5, stop="noise", timer="cupti", device=H200)

    monkeypatch.setattr(bench, "time_job", fake_time)
    monkeypatch.setattr(bench.telemetry, "snapshot", lambda: None)
    streams = []
    for (kind, width, blocks), rate in rates.items():
        nbytes = {"copy": 2 << 30, "add": 3 << 30}.get(kind, 1 << 30)
        jobs[(kind, width, blocks)] = nbytes / rate if rate else None
        streams.append(bench.StreamJob(kind, width, blocks, FakeJob((kind, width, blocks)), nbytes))
    jobs["memcpy"], jobs["fma"] = (2 << 30) / 4.25e12, 1e12 / 64.8e12
    lines = []
    jobs["mma"], jobs["wgmma"] = 1e12 / 660e12, 1e12 / 900e12
    data = bench.measure_peak(streams, (FakeJob("memcpy"), 2 << 30), (FakeJob("fma"), int(1e12)),
                              progress=lines.append,
                              tensor=[("kprof_mma", FakeJob("mma"), int(1e12)),
                                      ("kprof_wgmma", FakeJob("wgmma"), int(1e12))])
    assert len(lines) == len(rates) - 1 and "read  kprof_read, 16-byte accesses, 2,048 blocks, 1 GiB each way: 4.4 TB/s" in lines  # one per configuration measured
    c = data["ceilings"]
    assert c["read"]["bytes_per_s"] == pytest.approx(4.4e12) and c["read"]["width"] == 16
    assert c["write"]["bytes_per_s"] == pytest.approx(4.1e12)
    assert (c["copy"]["bytes_per_s"] == pytest.approx(4.25e12)
            and c["copy"]["by"].startswith("cuMemcpyDtoDAsync"))
    assert (data["copy_bytes_per_s"] == pytest.approx(4.25e12)
            and data["fma_flops_per_s"] == pytest.approx(64.8e12))
    assert data["theoretical"]["dram_bytes_per_s"] == pytest.approx(4.917e12, rel=1e-3)
    text = render_bench.peak_report(C(dict(data, cached=None)))
    assert ("DRAM bandwidth  4.92 TB/s" in text
            and "CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE (kHz) = 3201000" in text)
    assert "copy      4.25 TB/s  by cuMemcpyDtoDAsync" in text and "86% of the DRAM peak" in text
    assert ("theoretical peaks: DRAM 4.92 TB/s, FP32 66.9 TFLOP/s" in render_bench.ceilings_line(C(data)))
    assert (data["tensor_flops_per_s"] == pytest.approx(900e12)
            and data["tensor"]["kprof_wgmma"]["flops_per_s"] == pytest.approx(900e12))
    assert data["tensor"]["kprof_wgmma"]["by"].startswith("kprof_wgmma (wgmma")
    assert ("tensor    660 TFLOP/s  by kprof_mma (mma.sync m16n8k16" in text
            and "62% of the dense 16-bit tensor peak" in text)
    assert ("tensor    900 TFLOP/s  by kprof_wgmma (wgmma.mma_async m64n256k16" in text
            and "84% of the dense" in text)
    none = bench.measure_peak([], (FakeJob("memcpy"), 2 << 30), (FakeJob("fma"), int(1e12)),
                              tensor=[("kprof_mma", "kprof_mma needs sm_80 or newer", 0)])
    assert "tensor_flops_per_s" not in none
    assert ("tensor   not measured by kprof_mma: kprof_mma needs sm_80 or newer" in render_bench.peak_report(C(dict(none, cached=None))))
    assert c["add"]["bytes_per_s"] == pytest.approx(4.2e12) and c["add"]["width"] == 16
    (failed,) = [r for r in data["tried"]["add"] if "error" in r]
    assert failed["width"] == 4 and "did not verify" in failed["error"]
    assert ("not measured: kprof_add, 4-byte accesses, 2,048 blocks, 1 GiB each way: kprof peak: " in text)
    assert ("PyTorch is not installed" in data["ops_note"]
            and "note: PyTorch is not installed" in text)


def test_a_framework_op_faster_than_kprofs_kernels_sets_the_ceiling_and_is_named(monkeypatch):
    """kprof peak times PyTorch's op of each mix beside its own kernels, at 1 GiB and 64 MiB a
    buffer: an op that beats them (a torch y = 2 x at 64 MiB beat a 1 GiB copy ceiling by 4% on an
    H200) sets the ceiling, named with its size, so no op kprof compares against runs above it."""
    rates = {("copy", None, 1 << 30): 4.10e12, ("copy", None, 64 << 20): 4.20e12,
             ("copy", "PyTorch's torch.mul (y = 1 x)", 64 << 20): 4.47e12,
             ("read", None, 1 << 30): 4.5e12, ("read", "PyTorch's torch.sum", 1 << 30): 4.3e12}
    jobs = {}

    class FakeJob:
        def __init__(self, key):
            self.key = key
            self.target = type("T", (), {"name": str(key)})()

    monkeypatch.setattr(bench, "time_job", lambda job, timeout: child(
        status="ok", samples=[jobs[job.key]] * 5, stop="noise", timer="cupti", device=H200))
    monkeypatch.setattr(bench.telemetry, "snapshot", lambda: None)
    streams = []
    for (kind, op, size), rate in rates.items():
        nbytes = (2 if kind == "copy" else 1) * size
        jobs[(kind, op, size)] = nbytes / rate
        streams.append(bench.StreamJob(kind, 0 if op else 16, 0 if op else 2048,
                                       FakeJob((kind, op, size)), nbytes, op=op, size=size))
    jobs["memcpy"], jobs["fma"] = (2 << 30) / 4.25e12, 1e12 / 64.8e12
    data = bench.measure_peak(streams, (FakeJob("memcpy"), 2 << 30), (FakeJob("fma"), int(1e12)))
    c = data["ceilings"]
    assert (c["copy"]["bytes_per_s"] == pytest.approx(4.47e12)
            and c["copy"]["by"] == "PyTorch's torch.mul (y = 1 x), 64 MiB each way")
    assert (c["read"]["bytes_per_s"] == pytest.approx(4.5e12)
            and c["read"]["by"] == "kprof_read, 16-byte accesses, 2,048 blocks, 1 GiB each way")
    assert "ops_note" not in data
    text = render_bench.peak_report(C(dict(data, cached=None)))
    assert "copy      4.47 TB/s  by PyTorch's torch.mul (y = 1 x), 64 MiB each way" in text


def test_a_bench_point_is_reported_against_its_mix_and_flagged_when_implausible():
    from kprof.spec import catalog

    peak = {"ceilings": {"read": {"bytes_per_s": 4.5e12}, "write": {"bytes_per_s": 4.2e12},
                         "copy": {"bytes_per_s": 4.25e12}}, "fma_flops_per_s": 64.8e12,
            "theoretical": ceilings.theoretical(H200), "l2_bytes": H200["l2_bytes"]}

    def point(name, sizes, bytes_per_s):
        resolved = catalog.load(name).resolve(sizes)
        p = points.PointResult(name, resolved.sizes, {}, "cold", "ok",
                               rates=points.Rates(bytes_per_s=bytes_per_s))
        return bench._against_ceilings(p, C(peak), resolved, "cold", H200["l2_bytes"])

    # this peak has no add ceiling: against copy's, named so
    add = point("vector_add", {"N": 1 << 28}, 4.0e12)
    assert (add.rates.mix == "copy" and add.rates.of_ceiling == pytest.approx(4.0 / 4.25)
            and add.plausible and not add.warnings)
    peak["ceilings"]["add"] = {"bytes_per_s": 4.4e12}
    add = point("vector_add", {"N": 1 << 28}, 4.0e12)
    assert add.rates.mix == "add" and add.rates.of_ceiling == pytest.approx(4.0 / 4.4)
    del peak["ceilings"]["add"]
    assert add.rates.of_dram_peak == pytest.approx(4.0e12 / 4.917e12, rel=1e-3)
    total = point("reduce_sum", {"N": 1 << 28}, 4.4e12)
    assert total.rates.mix == "read" and total.rates.of_ceiling == pytest.approx(4.4 / 4.5)
    small = point("vector_add", {"N": 1 << 20}, 3.0e12)
    assert not small.plausible and "fits in the 50 MiB L2" in small.warnings[0]
    fast = point("vector_add", {"N": 1 << 28}, 4.4e12)
    assert fast.plausible and "104% of the measured copy ceiling" in fast.warnings[0]
    assert not point("vector_add", {"N": 1 << 28}, 5.0e12).plausible


def test_a_profile_is_reported_against_the_ceiling_for_the_mix_ncu_saw(data_dir):
    from kprof.measure import profiling as profile
    from kprof.tools.nsight import ncu

    row = ncu.parse_csv((data_dir / "ncu" / "tiled_matmul.ncu_full_raw.txt").read_text())[0]
    p = profile.analyse(row, "tiled_matmul", {})
    assert profile.against_ceilings(p, None) is p
    peak = {"ceilings": {"read": {"bytes_per_s": 4.5e12}, "write": {"bytes_per_s": 4.2e12},
                         "copy": {"bytes_per_s": 4.25e12}}}
    q = profile.against_ceilings(p, C(peak))
    assert (q.memory.mix in ceilings.MIXES
            and q.memory.of_ceiling == pytest.approx(p.memory.dram_bytes_per_s / q.memory.ceiling_bytes_per_s))
    text = render_profile.profile_report([q])
    assert f"of the measured {q.memory.mix} ceiling" in text and "theoretical peak" in text


@pytest.mark.nvcc
@pytest.mark.parametrize("thorough", [False, True])
def test_kprof_peak_plans_every_width_and_grid_and_the_memcpy(monkeypatch, tmp_path, thorough):
    """pipeline.peak builds the stream kernels at each width and hands measure_peak 16 jobs (4 mixes
    x 16-byte accesses x 2 grids, the last one access per thread, x 2 sizes; 32 with --thorough's
    4-byte accesses), PyTorch's op of each mix at each size where PyTorch is installed (8: faked
    here), the memcpy job and the FMA job."""
    import importlib.util

    from kprof.commands import pipeline

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name,
                        *a: object() if name == "torch" else real(name, *a))
    seen = {}

    def fake_measure(streams, memcpy, fma, progress=None, tensor=None):
        seen.update(streams=streams, memcpy=memcpy, fma=fma, tensor=tensor)
        return {"copy_bytes_per_s": 1.0, "fma_flops_per_s": 1.0}

    monkeypatch.setattr(bench, "measure_peak", fake_measure)
    monkeypatch.setattr(bench, "peak_cache_path", lambda snap, folder: tmp_path / "peak.json")
    data = pipeline.peak(refresh=True, arch="sm_90", thorough=thorough)
    assert data.raw["provenance"]["source"] in ("git", "KPROF_COMMIT", None)
    # written with its version
    assert data.version == ceilings.CEILINGS_VERSION and data.cached is None
    from dataclasses import replace

    assert bench.cached_peak(tmp_path / "peak.json") == replace(data,
                                                                cached=str(tmp_path / "peak.json"))
    ops = [s for s in seen["streams"] if s.op]
    streams = [s for s in seen["streams"] if not s.op]
    assert (len(streams) == (32 if thorough else 16)
            and {s.kind for s in streams} == set(ceilings.MIXES))
    full = [s for s in streams if s.blocks not in bench.PEAK_GRIDS and s.size == 1 << 30]
    assert sorted((s.kind, s.width, s.blocks) for s in full if s.kind == "copy") == (
        [("copy", 4, (1 << 30) // 4 // 256)] if thorough else []) + [("copy", 16, (1 << 30) // 16 // 256)]
    copy16 = next(s for s in streams
                  if (s.kind, s.width, s.blocks, s.size) == ("copy", 16, 2048, 1 << 30))
    assert copy16.bytes == 2 << 30 and copy16.job.target.scalars[0][1] == (1 << 30) // 16
    small = next(s for s in streams
                 if (s.kind, s.width, s.blocks, s.size) == ("copy", 16, 2048, 64 << 20))
    assert small.bytes == 128 << 20 and small.job.target.scalars[0][1] == (64 << 20) // 16
    assert sorted((s.kind, s.size) for s in ops) == sorted((k, n) for k in ceilings.MIXES
                                                           for n in bench.PEAK_BYTES)
    add = next(s for s in ops if (s.kind, s.size) == ("add", 64 << 20))
    assert (add.bytes == 3 * (64 << 20) and add.op == "PyTorch's torch.add"
            and add.label() == "PyTorch's torch.add, 64 MiB each way")
    assert (add.job.mode.python.endswith("peak_ops.py:add") and add.job.mode.mode == "cold"
            and not add.job.mode.integrity)
    job, amount = seen["memcpy"]
    assert job.mode.library == "memcpy_dtod" and job.mode.timer == "events" and amount == 2 << 30
    (mma, job, amount), (wgmma, job2, amount2) = seen["tensor"]  # warm; wgmma built for sm_90a
    assert (mma, job.target.name, job.mode.mode) == ("kprof_mma", "kprof_mma", "warm")
    # 4,096 FLOP an instruction, 8 a loop, 8 warps a block
    assert amount == 4096 * 8 * 2048 * 1056 * 8
    assert ((wgmma, job2.target.name) == ("kprof_wgmma", "kprof_wgmma")
            and amount2 == 2 * 64 * 256 * 16 * 8 * 256 * 132 * 2)
    from kprof.build import build
    from kprof.spec import catalog

    argv = build.build(catalog.builtin("kprof_wgmma"), "sm_90").argv
    assert any(a in ("-arch=sm_90a", "--gpu-architecture=sm_90a") for a in argv), argv


@pytest.mark.nvcc
def test_kprof_peak_says_why_it_has_no_tensor_rate_where_a_kernel_cannot_run():
    from kprof.commands import pipeline

    why = dict((n, j) for n, j, _ in pipeline._tensor_jobs("sm_75"))
    assert "needs sm_80 or newer" in why["kprof_mma"] and "needs sm_90a" in why["kprof_wgmma"]
    on_ampere = dict((n, j) for n, j, _ in pipeline._tensor_jobs("sm_80"))
    assert (not isinstance(on_ampere["kprof_mma"], str)
            and "features of that architecture alone" in on_ampere["kprof_wgmma"])


def test_a_driver_without_clock_attributes_falls_back_to_nvml(monkeypatch):
    """CUDA 13 deprecates the clock attributes: where the driver gives 0, NVML's readings stand in,
    said in a note."""
    def fake_time(job, timeout):
        return child(status="ok", samples=[1e-3] * 5, stop="noise", timer="cupti",
                     device=dict(H200, memory_clock_khz=0, clock_khz=0))

    monkeypatch.setattr(bench, "time_job", fake_time)
    monkeypatch.setattr(bench.telemetry, "snapshot", lambda: None)
    monkeypatch.setattr(bench.telemetry, "clock_limits",
                        lambda: {"memory_clock_khz": 3_201_000, "clock_khz": 1_980_000})
    job = type("J", (), {"target": type("T", (), {"name": "j"})()})()
    data = bench.measure_peak([], (job, 1 << 30), (job, 10**12))
    th = data["theoretical"]
    assert th["dram_bytes_per_s"] == pytest.approx(4.917e12, rel=1e-3) and th["fp32_flops_per_s"]
    assert any("from NVML" in n and "memory_clock_khz" in n for n in th["notes"])


def test_nvml_readings_through_a_fake_pynvml(monkeypatch):
    """telemetry's one NVML helper: a snapshot and the clock limits, a reading the GPU lacks left
    out."""
    import sys
    from types import SimpleNamespace

    from kprof import telemetry

    calls = []

    def lacking(h):
        raise RuntimeError("not supported")

    fake = SimpleNamespace(
        NVML_CLOCK_SM=0, NVML_CLOCK_MEM=1, NVML_TEMPERATURE_GPU=0,
        nvmlInit=lambda: calls.append("init"), nvmlShutdown=lambda: calls.append("shutdown"),
        nvmlDeviceGetHandleByIndex=lambda i: "h", nvmlDeviceGetName=lambda h: b"NVIDIA H200",
        nvmlSystemGetDriverVersion=lambda: "580.159.04",
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: 0x4,
        nvmlDeviceGetPowerUsage=lacking, nvmlDeviceGetClockInfo=lambda h,
        c: 1980 if c == 0 else 3201,
        nvmlDeviceGetMaxClockInfo=lambda h, c: 1980 if c == 0 else 3201,
        nvmlDeviceGetTemperature=lambda h, t: 40, nvmlDeviceGetMemoryBusWidth=lacking)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    snap = telemetry.snapshot()
    assert (snap.gpu, snap.driver, snap.sm_clock_mhz, snap.power_w, snap.reasons) == (
        "NVIDIA H200", "580.159.04", 1980, None, ["sw-power-cap"])
    assert telemetry.clock_limits() == {"memory_clock_khz": 3_201_000, "clock_khz": 1_980_000}
    assert calls == ["init", "shutdown"] * 2


def test_each_peak_op_takes_its_stream_specs_buffers_and_writes_its_output_in_place():
    """kprof/baselines/peak_ops.py (read without PyTorch): a function per mix, whose parameters are
    the stream spec's buffers by name and include its output (so the op writes it in place and
    nothing but the op runs in the timed call), and no return value to copy."""
    import ast

    from kprof.baselines import PEAK_OPS, peak_ops_path
    from kprof.spec import catalog
    from kprof.spec.schema import BufferArg

    tree = ast.parse(peak_ops_path().read_text())
    functions = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    assert set(PEAK_OPS) == set(ceilings.MIXES) <= set(functions)
    for kind in ceilings.MIXES:
        spec = catalog.builtin(f"kprof_{kind}")
        params = [a.arg for a in functions[kind].args.args]
        buffers = {a.name: a.role for a in spec.args if isinstance(a, BufferArg)}
        assert set(params) <= set(buffers) and any(buffers[p] in ("out", "inout") for p in params), (kind, params)
        assert not any(isinstance(n, ast.Return) and n.value is not None
                       for n in ast.walk(functions[kind]))


@pytest.mark.nvcc
def test_the_first_bench_measures_quick_ceilings_and_kprof_peak_replaces_them(monkeypatch, tmp_path):
    """A first kprof bench on a GPU measured ceilings for about 100 s (PyTorch's ops and 1 GiB
    buffers) before timing anything: quick ceilings are each mix once (1 GiB, 2048 blocks), no
    PyTorch op (4 stream jobs, the memcpy, the FMA and the tensor kernels), said in the result; a
    later bench reads them; kprof peak measures in full."""
    import importlib.util
    import re

    from kprof.commands import api, pipeline
    from kprof.results import render_bench

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name,
                        *a: object() if name == "torch" else real(name, *a))
    seen = []

    def fake_measure(streams, memcpy, fma, progress=None, tensor=None):
        seen.append(streams)
        return {"copy_bytes_per_s": 1.0, "fma_flops_per_s": 1.0, "seconds": 18.2,
                "ceilings": {k: {"bytes_per_s": 1e12, "by": f"kprof_{k}"} for k in ceilings.MIXES}}

    monkeypatch.setattr(bench, "measure_peak", fake_measure)
    monkeypatch.setattr(bench, "peak_cache_path", lambda snap, folder: tmp_path / "peak.json")
    monkeypatch.setattr(api, "require_gpu", lambda tool: None)
    said = []
    quick = pipeline.peak(arch="sm_90", quick=True, progress=said.append)
    assert quick.quick and "quick: each mix once" in said[0]
    assert (sorted(s.kind for s in seen[0]) == sorted(ceilings.MIXES)
            and not [s for s in seen[0] if s.op])
    assert {(s.size, s.blocks, s.width) for s in seen[0]} == {(1 << 30, 2048, 16)}
    assert (re.search(r"on this GPU in \d+ s", quick.ops_note)
            and "`kprof peak` measures every configuration" in quick.ops_note)
    assert ("quick: each mix once" in render_bench.ceilings_line(quick)
            and "in 18 s" in render_bench.ceilings_line(quick))
    again = pipeline.peak(arch="sm_90", quick=True)
    assert again.quick and again.cached and len(seen) == 1  # the next bench reads them
    # kprof peak, no --refresh: quick ceilings are measured again in full
    full = api.run_peak(arch="sm_90")
    assert not full.quick and len(seen) == 2 and len(seen[1]) == 24 and [s for s in seen[1] if s.op]
