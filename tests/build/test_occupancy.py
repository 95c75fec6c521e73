"""Every architecture from sm_61 to sm_121: the GPU model against NVIDIA's published numbers, the
compiler each one gets, what a spec's ``requires`` does, and a fake device of compute capability 6.1
and 7.5 (what runs, what is skipped and why, what ``profile`` says without Nsight Compute)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from fakedevice import FakeDevice, job_for, run_job

from kprof import spec as spec_mod
from kprof.build import build, nvrtc, occupancy, toolchain
from kprof.commands import cli
from kprof.errors import EXIT_OK, EXIT_USAGE, SpecError, ToolNotFoundError, UnsupportedArchError, UsageError
from kprof.launch.job import RunMode
from kprof.measure import profiling
from kprof.spec import catalog
from kprof.spec import fields as spec_fields
from kprof.tools.machine import doctor
from kprof.tools.nsight import ncu

KB = 1024

# The CUDA C++ Programming Guide, "Technical Specifications per Compute Capability" (held apart from
# kprof/build/occupancy.py on purpose: a row typed twice in two shapes): resident threads, blocks
# and warps per SM, shared memory per SM and the most one block may have (KB), and, from "Arithmetic
# Instructions", 32-bit floating-point add, multiply and FMA results per clock per SM.
GUIDE = {
    #        threads/SM  blocks/SM  smem/SM  smem/block  FP32/clock
    "sm_61": (2048, 32, 96, 48, 128),
    "sm_70": (2048, 32, 96, 96, 64),
    "sm_75": (1024, 16, 64, 64, 64),
    "sm_80": (2048, 32, 164, 163, 64),
    "sm_86": (1536, 16, 100, 99, 128),
    "sm_87": (1536, 16, 164, 163, 128),
    "sm_89": (1536, 24, 100, 99, 128),
    "sm_90": (2048, 32, 228, 227, 128),
    "sm_100": (2048, 32, 228, 227, 128),
    # 24 blocks: CUDA 13.0's cuda_occupancy.h (cudaOccMaxBlocksPerMultiprocessor)
    "sm_120": (1536, 24, 100, 99, 128),
}


@pytest.mark.parametrize("arch", sorted(GUIDE, key=spec_mod.arch_number))
def test_the_model_of_each_architecture_is_the_guides(arch):
    threads, blocks, smem_sm, smem_block, fp32 = GUIDE[arch]
    lim = occupancy.limits_for(arch)
    assert lim.max_threads_per_sm == threads and lim.max_warps_per_sm == threads // 32
    assert lim.max_blocks_per_sm == blocks
    assert lim.smem_per_sm == smem_sm * KB and lim.max_smem_per_block == smem_block * KB
    assert (lim.regs_per_sm == 64 * KB and lim.max_regs_per_block == 64 * KB
            and lim.max_regs_per_thread == 255)
    assert lim.max_threads_per_block == 1024 and lim.default_smem_per_block == 48 * KB
    assert lim.fp32_lanes == fp32
    # 1 KB of shared memory per block is the system's from sm_80 on (the guide's footnote); none
    # before
    assert lim.reserved_smem_per_block == (KB if spec_mod.arch_number(arch) >= 80 else 0)
    from kprof.measure import ceilings

    assert ceilings.FP32_LANES[arch] == fp32


@pytest.mark.parametrize("arch, block, regs, smem, blocks, limiter", [
    # sm_61: 96 KB and 256-byte units, no reserve; 64 warps
    ("sm_61", 256, 32, 0, 8, "nothing (the maximum)"),
    # 64 x 32 = 2048 registers a warp; 16 K per partition: 8 warps
    ("sm_61", 256, 64, 0, 4, "registers"),
    ("sm_61", 128, 32, 20000, 4, "shared memory"),  # 20000 -> 20224 B; 98304 // 20224 = 4
    ("sm_61", 32, 16, 0, 32, "blocks"),  # 32 blocks of one warp: the block cap, half the warps
    # sm_75: 32 warps, 16 blocks, 64 KB
    ("sm_75", 256, 32, 0, 4, "nothing (the maximum)"),
    ("sm_75", 1024, 64, 0, 1, "nothing (the maximum)"),
    ("sm_75", 64, 32, 0, 16, "nothing (the maximum)"),  # 16 blocks x 2 warps = 32 warps
    ("sm_75", 256, 128, 0, 2, "registers"),
    ("sm_75", 128, 32, 33 * KB, 1, "shared memory"),
    # sm_120: 48 warps, 24 blocks
    ("sm_120", 64, 32, 0, 24, "nothing (the maximum)"),
    ("sm_120", 32, 32, 0, 24, "blocks"),
])  # fmt: skip
def test_occupancy_on_older_and_newer_architectures(arch, block, regs, smem, blocks, limiter):
    occ = occupancy.compute(occupancy.limits_for(arch), block, regs, smem)
    assert (occ.blocks_per_sm, occ.limiter) == (blocks, limiter)


@pytest.mark.parametrize("arch", ["sm_61", "sm_70", "sm_75", "sm_87", "sm_100", "sm_120"])
def test_kprof_occupancy_knows_each_architecture_offline(arch, capsys, monkeypatch):
    """No GPU: the kernel's resource usage comes from a stand-in build, the limits from the
    model."""
    spec = catalog.load("tiled_matmul")

    def built(spec, arch, **kw):
        usage = {"tiled_matmul": build.ResourceUsage(registers=40, shared_static=8192)}
        return build.BuildResult(spec.name, Path("/x.cubin"), arch, usage, True, log="", argv=(),
                                 compiler="NVRTC 12.9")

    monkeypatch.setattr(build, "build", built)
    code = cli.main(["occupancy", str(spec.path), "--arch", arch, "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK and data["arch"] == arch and data["registers"] == 40


# ----------------------------------------------------------------------------------- compilers


def _compiler(kind, major, archs):
    program = ("/usr/bin/nvcc",) if kind == "nvcc" else ("python", "-m", "kprof.build.nvrtc")
    name = f"nvcc {major}.0" if kind == "nvcc" else f"NVRTC {major}.9"
    return toolchain.Compiler(kind, program, name, major, tuple(archs), name)


NVCC13 = _compiler("nvcc", 13, [75, 80, 86, 87, 89, 90, 100, 103, 120, 121])
NVRTC12 = _compiler("nvrtc", 12,
                    [50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 120,
                     121])


@pytest.fixture
def compilers(monkeypatch):
    """A machine with CUDA 13's nvcc and NVRTC 12 (as the [cuda12] extra beside a system
    toolkit)."""
    found = {"nvcc": NVCC13, "nvrtc": NVRTC12}

    def stand_in(kind):
        def get():
            if found[kind] is None:
                raise ToolNotFoundError(kind, "not installed")
            return found[kind]
        return get

    monkeypatch.setattr(toolchain, "_nvcc_compiler", stand_in("nvcc"))
    monkeypatch.setattr(toolchain, "_nvrtc_compiler", stand_in("nvrtc"))
    monkeypatch.setattr(toolchain, "driver_cuda_major", lambda: None)
    monkeypatch.delenv("KPROF_COMPILER", raising=False)
    return found


def test_nvcc_builds_what_it_can_and_nvrtc_the_rest(compilers):
    assert toolchain.compiler_for("sm_90") is NVCC13
    assert toolchain.compiler_for("sm_61") is NVRTC12  # CUDA 13 dropped Pascal


def test_a_cuda_12_driver_gets_cubins_it_loads(compilers, monkeypatch):
    monkeypatch.setattr(toolchain, "driver_cuda_major", lambda: 12)
    assert toolchain.compiler_for("sm_86") is NVRTC12


def test_kprof_compiler_chooses(compilers, monkeypatch):
    monkeypatch.setenv("KPROF_COMPILER", "nvrtc")
    assert toolchain.compiler_for("sm_90") is NVRTC12
    monkeypatch.setenv("KPROF_COMPILER", "clang")
    with pytest.raises(UsageError, match="KPROF_COMPILER=clang: write nvcc, nvrtc or auto"):
        toolchain.compiler_for("sm_90")


def test_no_compiler_for_pascal_is_one_line_that_says_what_to_install(compilers):
    compilers["nvrtc"] = None
    with pytest.raises(ToolNotFoundError) as info:
        toolchain.compiler_for("sm_61")
    text = str(info.value)
    assert ("nvcc 13.0 does not build sm_61" in text
            and "CUDA 13 dropped Maxwell, Pascal and Volta" in text)
    assert "kprof[cuda12]" in text and "\n" not in text


def test_the_cache_key_holds_the_compiler(compilers, monkeypatch, tmp_path):
    """The same source built by nvcc and by NVRTC are two cache entries, never one for both."""
    seen = []

    def fake_run(argv, **kw):
        seen.append(argv)
        Path(argv[argv.index("-o") + 1]).write_bytes(b"cubin")
        from kprof import proc

        return proc.Completed(tuple(argv), 0,
                              "ptxas info    : Compiling entry function 'vector_add' for 'sm_86'\n"
                              "ptxas info    : Used 10 registers\n", "", 0.0)

    monkeypatch.setattr(build.proc, "run", fake_run)
    spec = catalog.load("vector_add")
    first = build.build(spec, "sm_86")
    monkeypatch.setenv("KPROF_COMPILER", "nvrtc")
    second = build.build(spec, "sm_86")
    assert first.cubin != second.cubin and not second.cached
    assert first.compiler == "nvcc 13.0" and second.compiler == "NVRTC 12.9"
    assert seen[0][0] == "/usr/bin/nvcc" and seen[1][:3] == ["python", "-m", "kprof.build.nvrtc"]
    # nvcc alone also keeps its PTX for the line scan (build.ptx)
    nvcc = seen[0][:seen[0].index("--keep")]
    assert seen[0][-3:-1] == ["--keep", "--keep-dir"] and first.argv == tuple(nvcc)
    assert nvcc[1:][:-2] == seen[1][3:][:-2]  # the same options, output and source apart


@pytest.mark.parametrize("nvcc_argv, options", [
    (["-cubin", "-arch=sm_61", "-lineinfo", "--resource-usage", "-std=c++17", "-DTILE=32"],
     ["--gpu-architecture=sm_61", "--generate-line-info", "--ptxas-options=-v", "--std=c++17",
      "-DTILE=32"]),
    (["-maxrregcount=64", "--use_fast_math", "-Xptxas=-dlcm=cg", "--ftz=true", "-O3", "-w", "-G",
      "-restrict"],
     ["--maxrregcount=64", "--use_fast_math", "--ptxas-options=-dlcm=cg", "--ftz=true",
      "--disable-warnings", "--device-debug", "--restrict"]),
    (["--include-path=/k/inc", "-I/k/other", "-UX", "--expt-relaxed-constexpr"],
     ["-I/k/inc", "-I/k/other", "-UX"]),
])  # fmt: skip
def test_nvcc_options_become_nvrtcs(nvcc_argv, options):
    got, source, output = nvrtc.translate([*nvcc_argv, "-o", "/c/a.cubin", "/k/a.cu"])
    assert got == options and source == Path("/k/a.cu") and output == Path("/c/a.cubin")


def test_every_flag_a_spec_may_give_translates():
    """ALLOWED_FLAGS names what a spec's nvcc_flags may hold; NVRTC takes every one of them."""
    flags = ["-O0", "-O3", "-maxrregcount=32", "--maxrregcount=32", "-std=c++17", "--std=c++20",
             "-DX=1", "-UX",
             "-lineinfo", "-G", "--use_fast_math", "-use_fast_math", "--ftz=false",
             "--prec-div=true",
             "--prec-sqrt=false", "--fmad=false", "-restrict", "--restrict",
             "--extra-device-vectorization",
             "--expt-relaxed-constexpr", "--expt-extended-lambda", "-Xptxas=-v",
             "--ptxas-options=-v",
             "-Xptxas=-O3", "-Xptxas=-dlcm=ca", "--ptxas-options=--warn-on-spills", "-w", "-I/x"]
    folder = Path("/tmp")
    for flag in flags:  # each is one the spec loader accepts
        spec_fields.load_nvcc_flags([flag.replace("/x", ".") if flag.startswith("-I") else flag],
                                    folder,
                                  lambda f, p: SpecError("k.yaml", f, p))
    nvrtc.translate([*flags, "-o", "o", "s.cu"])


def test_an_option_nvrtc_lacks_is_named():
    with pytest.raises(UsageError, match="NVRTC has no equivalent of the nvcc option --keep"):
        nvrtc.translate(["--keep", "-o", "o", "s.cu"])


def _nvrtc_missing() -> str | None:
    try:
        nvrtc.version()
    except ToolNotFoundError as exc:
        return str(exc)
    return None


@pytest.mark.skipif(_nvrtc_missing() is not None, reason=f"no NVRTC here: {_nvrtc_missing()}")
@pytest.mark.parametrize("arch", ["sm_61", "sm_75"])
def test_nvrtc_builds_a_shipped_kernel_with_the_same_report(arch, monkeypatch):
    monkeypatch.setenv("KPROF_COMPILER", "nvrtc")
    if int(arch[3:]) not in nvrtc.supported_archs():
        pytest.skip(f"NVRTC {nvrtc.version()} does not build {arch}")
    result = build.build(catalog.load("tiled_matmul"), arch, force=True)
    usage = result.usage_of("tiled_matmul")
    assert (result.compiler.startswith("NVRTC") and usage.registers > 0
            and usage.shared_static == 8192)
    assert result.cubin.read_bytes()[:4] == b"\x7fELF"
    assert "-lineinfo" in result.argv and "kprof.build.nvrtc" in result.argv


@pytest.mark.skipif(_nvrtc_missing() is not None, reason=f"no NVRTC here: {_nvrtc_missing()}")
def test_nvrtc_reports_a_compile_error_with_file_and_line(monkeypatch, data_dir):
    from kprof.errors import BuildError

    monkeypatch.setenv("KPROF_COMPILER", "nvrtc")
    with pytest.raises(BuildError) as info:
        build.build(spec_mod.load(data_dir / "kernels" / "broken_syntax.yaml"), "sm_75")
    assert "broken_syntax.cu(2): error" in info.value.log and str(info.value).startswith("NVRTC 1")


# ---------------------------------------------------------------------------- requires


def _spec(tmp_path, requires):
    """vector_add's spec and source in a folder of the test's, named k, with ``requires`` added."""
    (tmp_path / "vector_add.cu").write_bytes((catalog.KERNELS_DIR / "vector_add.cu").read_bytes())
    text = (catalog.KERNELS_DIR / "vector_add.yaml").read_text()
    text = "name: k\nsource: vector_add.cu\n" + "\n".join(ln for ln in text.splitlines()
                                                          if not ln.startswith(("name:", "source:")))
    (tmp_path / "k.yaml").write_text(text + (f"\nrequires: {requires}\n" if requires else "\n"))
    return tmp_path / "k.yaml"


@pytest.mark.parametrize("requires, message", [
    ("sm_80", "requires: must be a mapping {arch: sm_XY, why: the feature that needs it}"),
    ("{arch: sm_80}", "requires: must be a mapping"),
    ("{arch: 80, why: cp.async}", "requires.arch: 80: write it as sm_XY"),
    ("{arch: sm_80, why: ''}", "requires.why: must name the feature"),
    ("{arch: sm_80, why: x, extra: 1}", "requires: must be a mapping"),
])  # fmt: skip
def test_a_bad_requires_is_one_line_at_load(tmp_path, requires, message):
    with pytest.raises(SpecError, match=message.replace("{", r"\{").replace("}", r"\}")):
        spec_mod.load(_spec(tmp_path, requires))


def test_requires_names_the_kernel_the_feature_and_the_target(tmp_path):
    spec = spec_mod.load(_spec(tmp_path, "{arch: sm_80, why: cp.async copies}"))
    assert spec.unsupported_on("sm_80") is None and spec.unsupported_on("sm_90a") is None
    assert (spec.unsupported_on("sm_75") == "k needs sm_80 or newer (cp.async copies); sm_75 is "
                                            "older")
    assert (spec.twin is None
            and spec_mod.load(_spec(tmp_path, None)).unsupported_on("sm_61") is None)
    with pytest.raises(UnsupportedArchError, match="k needs sm_80"):
        build.build(spec, "sm_61")


SHIPPED_NEEDS = {"async_matmul": "sm_80", "linear_bias_relu": "sm_90",
                 "linear_bias_relu_rb8": "sm_90",
                 "streamk_matmul": "sm_70", "mma_matmul": "sm_80", "flash_attention": "sm_80",
                 "flash_attention_causal": "sm_80", "ldmatrix_wrong_layout": "sm_80",
                 "missing_mbarrier_wait": "sm_90", "wgmma_matmul": "sm_90a",
                 "missing_proxy_fence": "sm_90", "mbarrier_double_init": "sm_90",
                 "tma_box_overflow": "sm_90",
                 "wgmma_attention": "sm_90a", "wgmma_attention_causal": "sm_90a"}
SHIPPED_TWINS = {"ldmatrix_wrong_layout_fixed", "missing_mbarrier_wait_fixed",
                 "missing_proxy_fence_fixed", # the cases' fixed twins: built too
                 "mbarrier_double_init_fixed", "tma_box_overflow_fixed"}


def test_the_shipped_kernels_that_need_a_newer_gpu_say_so():
    found = {e.name: catalog.load(e.name).requires.arch for e in catalog.entries()
             if catalog.load(e.name).requires}
    assert found == SHIPPED_NEEDS


@functools.lru_cache(maxsize=1)
def _shipped_launches() -> tuple[tuple[Any, tuple[tuple[str, int, int], ...]], ...]:
    """Each shipped kernel spec with the (preset, threads, dynamic shared memory) of each of its
    launches at its default and sanitize sizes: the same on every architecture, so worked out once
    for all of them."""
    out = []
    for entry in catalog.entries():
        spec = catalog.load(entry.name)
        if spec.python:
            continue
        launches = tuple((which, st.block[0] * st.block[1] * st.block[2], st.shared_mem)
                         for which in ("default", "sanitize")
                         for st in spec.resolve(preset=which).steps)
        out.append((spec, launches))
    return tuple(out)


@pytest.mark.parametrize("arch", sorted(GUIDE, key=spec_mod.arch_number))
def test_every_shipped_kernel_launches_within_each_architectures_limits(arch):
    """The threads and the dynamic shared memory of each shipped spec at its defaults, on every
    architecture it claims (not older than its ``requires``): within the guide's most a block may
    have, so a kernel that builds for an RTX 4090 (sm_89, 99 KB a block) also launches there."""
    _, _, _, smem_block, _ = GUIDE[arch]
    over = [f"{spec.name} ({which}): {threads} threads, {shared:,} B"
            for spec, launches in _shipped_launches() if not spec.unsupported_on(arch)
            for which, threads, shared in launches if threads > 1024 or shared > smem_block * KB]
    assert not over, f"over {arch}'s limits: " + "; ".join(over)


def test_build_all_for_pascal_skips_them_with_the_reason_and_exits_0(capsys, monkeypatch):
    def fake_build(spec, arch, force=False):
        if why := spec.unsupported_on(arch):
            raise UnsupportedArchError(why)
        return build.BuildResult(spec.name, Path("/x.cubin"), arch, {}, True, log="", argv=(),
                                 compiler="NVRTC 12.9")

    monkeypatch.setattr(build, "build", fake_build)
    code = cli.main(["build", "--all", "--arch", "sm_61", "--json"])
    rows = json.loads(capsys.readouterr().out)
    skipped = {r["name"]: r["skipped"] for r in rows if "skipped" in r}
    assert code == EXIT_OK and set(skipped) == set(SHIPPED_NEEDS) | SHIPPED_TWINS
    assert skipped["async_matmul"] == ("async_matmul needs sm_80 or newer (cp.async copies from "
                                       "global to shared memory); sm_61 is older")
    assert not any("error" in r for r in rows)


def test_run_of_a_kernel_too_new_for_the_target_exits_2_with_the_reason(capsys, monkeypatch):
    monkeypatch.setattr("kprof.child.device.probe", lambda: None)
    code = cli.main(["run", "async_matmul", "--arch", "sm_75"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and err.count("\n") == 1
    assert ("async_matmul needs sm_80 or newer (cp.async copies from global to shared memory); "
            "sm_75 is older" in err)


def test_list_arch_marks_what_needs_a_newer_gpu(capsys):
    assert cli.main(["list", "--arch", "sm_61", "--json"]) == EXIT_OK
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert (rows["async_matmul"]["unsupported"] == "needs sm_80: cp.async copies from global to "
                                                   "shared memory")
    assert (rows["tiled_matmul"]["unsupported"] is None
            and rows["streamk_matmul"]["requires"]["arch"] == "sm_70")
    assert cli.main(["list", "--arch", "sm_61"]) == EXIT_OK
    line = next(ln for ln in capsys.readouterr().out.splitlines()
                if ln.startswith("linear_bias_relu "))
    assert "[needs sm_90: thread-block clusters" in line


# ------------------------------------------------------------------- a fake GPU of 6.1 and 7.5


@pytest.fixture(params=["sm_61", "sm_75"])
def old_gpu(request, monkeypatch, tmp_path):
    import kprof.child.device
    import kprof.child.workspace

    monkeypatch.setattr(FakeDevice, "arch", request.param)
    monkeypatch.setattr(FakeDevice, "occupancies", [])
    monkeypatch.setattr(kprof.child.device, "Device", FakeDevice)
    monkeypatch.setattr(kprof.child.workspace, "nvtx_module", lambda: None)
    return request.param


def test_a_kernel_runs_and_verifies_on_an_older_gpu_and_says_the_drivers_occupancy(old_gpu, tmp_path):
    data = run_job(tmp_path, job_for("vector_add", {"N": 1000}, RunMode(time=True)))
    assert data["status"] == "ok", data.get("error")
    assert data["device"]["arch"] == old_gpu
    lim = occupancy.limits_for(old_gpu)
    assert data["driver_blocks_per_sm"] == occupancy.compute(lim, 256, 32, 0).blocks_per_sm
    assert FakeDevice.occupancies == [(256, 0)]


def test_profile_on_pascal_says_no_nsight_compute_and_reports_what_kprof_measures(monkeypatch, capsys):
    """On sm_61 no ncu runs (it would not start): one line says so, and the report holds event
    timing, the driver's occupancy, registers and spills; exit 0."""
    from kprof.launch import launch

    monkeypatch.setattr("kprof.child.device.probe", lambda: None)
    monkeypatch.setattr(toolchain, "detect_arch", lambda: "sm_61")
    usage = {"tiled_matmul": build.ResourceUsage(registers=40, shared_static=8192, spill_stores=8,
                                                 spill_loads=4, stack_frame=16)}
    monkeypatch.setattr(build, "build", lambda spec, arch, **kw: build.BuildResult(
        spec.name, Path("/x.cubin"), arch or toolchain.detect_arch(), usage, True, log="", argv=(),
        compiler="NVRTC 12.9"))
    monkeypatch.setattr(ncu, "profile_rows", lambda *a, **k: pytest.fail("ncu ran on a Pascal GPU"))
    monkeypatch.setattr("kprof.proc.find_tool", lambda name: pytest.fail(f"{name} was looked for"))
    from kprof.launch.childresult import ChildResult, DeviceInfo

    timed = ChildResult(status="ok", kernel="tiled_matmul", time_ms=0.5,
                        device=DeviceInfo(arch="sm_61"), registers=40, driver_blocks_per_sm=1)
    monkeypatch.setattr(launch, "run_kernel", lambda job, timeout: timed)
    code = cli.main(["profile", "tiled_matmul"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    assert err.splitlines()[0] == ("kprof: Nsight Compute does not support sm_61 GPUs (it profiles "
                                   "sm_70 and newer): kprof profile reports event timing, the "
                                   "driver's occupancy, registers and spills instead")
    assert "[no Nsight Compute on sm_61]" in out
    # and the model agrees
    assert "the driver's occupancy: 1 blocks of 1024 threads per SM, 50%\n" in out
    assert "ptxas: 40 registers, 8 B spill stores, 4 B spill loads, 16 B stack frame" in out


@pytest.mark.parametrize("arch, blocks, warps", [("sm_61", 3, 64), ("sm_75", 1, 32)])
def test_the_fallback_takes_the_drivers_occupancy(arch, blocks, warps):
    prof = profiling.fallback("k", {}, 1e-3, 40, 256, 8192, dynamic_smem=0, arch=arch,
                              spec_flops=None, spec_bytes=None, reason="why",
                              source=f"no Nsight Compute on {arch}", driver_blocks=blocks,
                              spills=(0, 0, 0))
    assert (prof.occupancy.theoretical_occupancy == pytest.approx(blocks * 8 / warps)
            and prof.source.endswith(arch))


@pytest.mark.parametrize("arch", ["sm_61", "sm_62", "sm_60"])
def test_ncu_does_not_support_pascal(arch):
    assert (ncu.unsupported(arch) == f"Nsight Compute does not support {arch} GPUs (it profiles "
                                     "sm_70 and newer)")


@pytest.mark.parametrize("arch", ["sm_70", "sm_75", "sm_90", "sm_120"])
def test_ncu_supports_volta_and_newer(arch):
    assert ncu.unsupported(arch) is None


def test_doctor_says_what_works_on_a_gtx_1080_with_cuda_12_5():
    checks = {c.name: c for c in doctor.platform_lines("sm_61", 12050, "12.9.10")}
    line = checks["CUDA line"]
    assert (line.ok
            and line.detail == "the driver is CUDA 12.5: it runs the CUDA 12 line; cuda-bindings "
                               "12.9.10 is installed")
    features = checks["features on sm_61"].detail
    assert "build: CUDA 12 only (CUDA 13 builds sm_75 and newer)" in features
    assert "profile: no Nsight Compute (it profiles sm_70 and newer)" in features
    assert "not on sm_61: async_matmul (sm_80)" in features and "streamk_matmul (sm_70)" in features


def test_doctor_on_a_t4_with_cuda_13_bindings_and_a_cuda_12_driver_says_what_to_install():
    checks = {c.name: c for c in doctor.platform_lines("sm_75", 12040, "13.0.3")}
    assert not checks["CUDA line"].ok and checks["CUDA line"].fix == "pip install 'kprof[cuda12]'"
    features = checks["features on sm_75"].detail
    assert "build: CUDA 12 or 13" in features and "profile: Nsight Compute" in features
    assert "streamk_matmul" not in features and "async_matmul (sm_80)" in features


def test_the_cuda_12_sanitizer_wheel_gets_its_injection_path(tmp_path):
    """pip's CUDA 12 wheel: bin/compute-sanitizer, its libraries in lib/; a toolkit keeps them
    beside it."""
    from kprof.tools.sanitizers import compute_sanitizer as san

    wheel = tmp_path / "nvidia" / "cuda_sanitizer_api"
    (wheel / "bin").mkdir(parents=True)
    (wheel / "lib").mkdir()
    (wheel / "lib" / san.INJECTION).write_bytes(b"")
    exe = wheel / "bin" / "compute-sanitizer"
    argv = san.build_argv(exe, "memcheck", "/t/x.xml")
    assert argv[argv.index("--injection-path") + 1] == str(wheel / "lib")
    toolkit = tmp_path / "cuda" / "compute-sanitizer"
    toolkit.mkdir(parents=True)
    (toolkit / san.INJECTION).write_bytes(b"")
    assert "--injection-path" not in san.build_argv(toolkit / "compute-sanitizer", "memcheck",
                                                    "/t/x.xml")


def test_an_architecture_specific_requirement_builds_as_sm90a_on_hopper_only():
    """requires: {arch: sm_90a}: Hopper's own instructions (wgmma) exist on sm_90 alone: built as
    sm_90a there, named unavailable on an older GPU and on a newer one."""
    spec = catalog.builtin("kprof_wgmma")
    assert spec.unsupported_on("sm_90") is None and spec.target_arch("sm_90") == "sm_90a"
    assert "features of that architecture alone; sm_100 is another" in spec.unsupported_on("sm_100")
    assert spec.unsupported_on("sm_80") is not None and spec.target_arch("sm_80") == "sm_80"
    mma = catalog.builtin("kprof_mma")
    assert mma.target_arch("sm_90") == "sm_90" and mma.unsupported_on("sm_100") is None
