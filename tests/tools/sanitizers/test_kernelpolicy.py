"""The user's kernels first (kprof.tools.sanitizers.kernelpolicy): library kernels told by their
mangled names as the launch tally recorded them on an H200, the options that keep racecheck and
synccheck off them, and the report line that counts and names what they skipped."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from kprof.findings import Extra, Finding
from kprof.tools.programs import coverage
from kprof.tools.sanitizers import compute_sanitizer, kernelpolicy, sanitizer_xml
from kprof.tools.sanitizers.checker import Settings
from kprof.tools.sanitizers.toolrun import ToolResult
from kprof.tools.suites import suiteevents

USER = ["scale", "count", "block_sum", "_Z10add_kernelPfS_i", "_Z6scaledILi3EEvPf",
        "triton_poi_fused_gelu_2", "my_ns_kernel"]
LIBRARY = {
    "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT": "cuBLAS",
    "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__"
    "5x_cublas": "cuBLAS",
    "ampere_sgemm_128x64_nn": "cuBLAS",
    "_ZN8cublasLt19splitKreduce_kernelILi32ELi16EiffffLb1ELb0ELb0EEEvNS_18cublasSplitKParamsIT4_EEPKT2_": "cuBLAS",
    "cudnn_infer_ampere_scudnn_128x32_relu_small_nn_v1": "cuDNN",
    "_ZN7cutlass6KernelINS_4gemm6kernel4GemmEEEvNT_6ParamsE": "CUTLASS",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL": "NCCL",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_10AbsFunctorIfEESt5arrayIPcLm2EEEEviT0_T1_": "PyTorch",
    "_ZN7pytorch_flash20flash_fwd_kernelEv": "PyTorch",
    "_ZN3cub17CUB_200200_900_NS11EmptyKernelIvEEvv": "CUB/Thrust",
    "_Z11init_curandI19curand_pseudo_stateI17curandStateXORWOWEEvlml": "cuRAND",
}


@pytest.mark.parametrize("name", USER)
def test_the_users_kernels_are_no_librarys(name):
    assert kernelpolicy.library_of(name) is None


@pytest.mark.parametrize(("name", "library"), LIBRARY.items())
def test_library_kernels_are_told_by_their_mangled_names(name, library):
    assert kernelpolicy.library_of(name) == library


def test_the_tally_of_a_cupy_program_on_an_h200_names_its_libraries(data_dir):
    names = [json.loads(line)["name"] for f in ("tally.cupy.jsonl", "tally.triton.jsonl")
             for line in (data_dir / "programs" / f).read_text().splitlines() if '"kernel"' in line]
    libs = {n: kernelpolicy.library_of(n) for n in names}
    assert (libs["count"] is None and libs["scale"] is None
            and {v for v in libs.values() if v} == {"PyTorch", "cuRAND"})


def test_racecheck_and_synccheck_skip_library_kernels_in_a_program_and_not_in_a_spec():
    from kprof.tools.sanitizers import checkers

    assert [n for n in checkers.names() if checkers.skips(n, False)] == ["racecheck", "synccheck"]
    assert not any(checkers.skips(n, True) for n in checkers.names())
    for tool in ("racecheck", "synccheck"):
        argv = compute_sanitizer.build_argv("cs", tool, "x.xml", program=True, skip_libraries=True,
                                            tool_version="2026.4.0")
        patterns = [argv[i + 1] for i, a in enumerate(argv) if a == "--kernel-name-exclude"]
        assert (len(patterns) == len(kernelpolicy.LIBRARIES)
                and all(p.startswith("regex=") for p in patterns))
        # what compute-sanitizer is asked to leave out is what kprof calls a library's
        for name in LIBRARY:
            assert any(re.search(p.removeprefix("regex="), name) for p in patterns), name
        assert not any(re.search(p.removeprefix("regex="), n) for p in patterns for n in USER)
        assert ("--kernel-name-exclude" not in compute_sanitizer.build_argv("cs", tool, "x.xml", program=True))
        # a spec's kernel
        assert "--kernel-name-exclude" not in compute_sanitizer.build_argv("cs", tool, "x.xml")


def test_what_a_tool_skipped_is_counted_and_named_in_its_line():
    names = [*LIBRARY, *USER]
    left = kernelpolicy.skipped(names, True)
    assert len(left.kernels) == len(LIBRARY)
    text = left.text()
    assert (text.startswith(f"library kernels not checked: {len(LIBRARY)} (cuBLAS 4, ")
            and "nvjet_sm90" in text)
    assert (kernelpolicy.skipped(names, False) == kernelpolicy.Skipped()
            and kernelpolicy.Skipped().text() == "")
    tally = "".join(json.dumps(e) + "\n" for e in [{"pid": 1, "event": "tally", "ok": True},
                                                   {"pid": 1, "event": "kernel",
                                                    "name": "ampere_sgemm_128x64_nn",
                                                    "lineinfo": False, "launches": 1},
                                                   {"pid": 1, "event": "kernel", "name": "scale",
                                                    "lineinfo": True,
                                                    "launches": 2}, {"pid": 1, "event": "total", "launches": 2}])
    checked = coverage.from_tally(tally)
    assert checked.names == ("ampere_sgemm_128x64_nn", "scale")
    race = kernelpolicy.applied(checked, not Settings().all_kernels)
    assert race.text().endswith("; library kernels not checked: 1 (cuBLAS 1: "
                                "ampere_sgemm_128x64_nn)")
    assert kernelpolicy.applied(checked, False) == checked
    from kprof.tools.sanitizers.toolrun import ToolResult
    from kprof.tools.suites import suiteverdict

    per_test = suiteevents.checked_of({"launches": 3, "kernels": 2, "with_lines": 1,
                                       "names": ["scale", "ampere_sgemm_128x64_nn"]})
    verdicts = [{"t": suiteverdict.TestVerdict("t", [ToolResult(tool, "clean", [], 1.0, "")], None)}
                for tool in ("memcheck", "racecheck")]
    mem, race = suiteverdict.combine(["t"], ["memcheck", "racecheck"], verdicts, {"t": per_test})["t"].results
    assert (mem.checked.skipped == ""
            and race.checked.skipped == "library kernels not checked: 1 (cuBLAS 1: "
                                        "ampere_sgemm_128x64_nn)")
    all_kernels = suiteverdict.combine(["t"], ["memcheck", "racecheck"], verdicts, {"t": per_test},
                                       all_kernels=True)
    assert all_kernels["t"].results[1].checked.skipped == ""


def test_the_options_reach_the_tools(monkeypatch):
    from kprof.commands import cli

    seen: list[bool] = []

    def sanitize(*args, all_kernels=False, **kw):
        seen.append(all_kernels)
        raise KeyboardInterrupt  # stop here: the options are what this test is about

    monkeypatch.setattr("kprof.commands.api.sanitize", sanitize)
    for extra in (["--all-kernels"], []):
        cli.main(["sanitize", *extra, "--json", "--", "python", "prog.py"])
    assert seen == [True, False]


def test_a_finding_inside_a_library_is_the_librarys_and_nccls_known_overread_is_set_aside():
    from kprof.findings import Finding
    from kprof.results import render_sanitize
    from kprof.tools.sanitizers.toolrun import ToolResult

    def at(kernel, kind="out-of-bounds-read", size=16):
        return Finding("memcheck", kind, kernel, None, None, thread=(0, 0, 0), block=(0, 0, 0),
                       count=3, message="Invalid __global__ read", size=size)

    mine, gemm = at("scale", "out-of-bounds-write", 4), at("void at::native::reduce_kernel<512, 1>",
                                                           size=4)
    nccl, nccl_big = at("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), at("ncclDevKernel_AllReduce_Sum_f32_RING_LL", size=64)
    kept, notes = kernelpolicy.libraries_own([mine, gemm, nccl, nccl_big])
    assert [f.kernel for f in kept] == ["scale", gemm.kernel, nccl.kernel] and kept[0] == mine
    assert (kept[1].extra == Extra(library="PyTorch") and kept[2].size == 64
            and kept[2].extra.library == "NCCL")
    (note,) = notes
    assert "16 bytes in NCCL's ncclDevKernel_AllReduce_Sum_f32_RING_LL (3 record(s))" in note and "nccl#265" in note
    text = render_sanitize.sanitize_report([ToolResult("memcheck", "findings", kept, 1.0, "")])
    assert (text.count("inside ") == 2
            and "inside PyTorch's own kernel: the library's code, not yours" in text)



def test_nccls_probe_of_its_own_kernels_is_set_aside_and_another_api_error_inside_it_is_kept(data_dir):
    """On an H200 (NCCL 2.28.9, PyTorch 2.11), every rank of a job whose collective runs through
    NCCL reported cudaFuncGetAttributes -> cudaErrorNoKernelImageForDevice, raised inside libnccl.so
    (recorded: the finding as kprof sanitize --json wrote it). That is NCCL's own probe: a note. Any
    other API error NCCL meets is kept."""
    from kprof.findings import Finding

    recorded = json.loads((data_dir / "programs" / "nccl_probe_findings.json").read_text())
    probe = [Finding.from_dict(f) for f in recorded]
    assert {f.rank for f in probe} == {0, 1} and all(f.extra.launched_by == "NCCL" for f in probe)
    illegal = Finding("memcheck", "api-error", None, None, None, thread=None, block=None, count=1,
                      message="Program hit cudaErrorIllegalAddress",
                      detail="cudaStreamSynchronize -> cudaErrorIllegalAddress",
                      extra=Extra(launched_by="NCCL"))
    mine = Finding("memcheck", "api-error", None, None, None, thread=None, block=None, count=1,
                   message="Program hit ...",
                   # the same error from the user's own call is the user's
                   detail=kernelpolicy.NCCL_PROBE)
    kept, notes = kernelpolicy.libraries_own([*probe, illegal, mine])
    assert kept == [replace(illegal, extra=replace(illegal.extra, library="NCCL")), mine]
    assert len(notes) == 2 and all("NCCL asks for the attributes of kernels" in n
                                   and "(8 record(s))" in n for n in notes)


# ---------------------------------------------------------------------------- initcheck's unseen
# writers

# the half GEMM of examples/gemm_initcheck.py on an H200
NVJET = "nvjet_sm90_hsh_64x64_64x13_2x1_v_bz_bias_TNT"
COPY = "_ZN2at6native27unrolled_elementwise_kernelINS0_21direct_copy_kernel_cudaEEEviT_"


def _uninit(kernel: str, library: str | None) -> Finding:
    return Finding("initcheck", "uninitialized-read", kernel, None, None, thread=(96, 0, 0),
                   block=(225, 0, 0), count=257,
                   message="Uninitialized __global__ memory read of size 2 bytes",
                   extra=Extra(library=library))


def _initcheck(*found: Finding) -> ToolResult:
    return ToolResult("initcheck", "findings", list(found), 4.6)


def test_a_read_of_a_tma_gemms_output_is_set_aside_with_its_reason():
    # measured: the GEMM into torch.empty reports these reads, into torch.zeros none; the results
    # right both times
    done = kernelpolicy.unseen_writes(_initcheck(_uninit(COPY, "PyTorch")),
                                      ["_Z5fill", NVJET, COPY])
    assert done.status == "clean" and done.findings == []
    assert len(done.notes) == 1 and NVJET in done.notes[0] and "torch.zeros" in done.notes[0]
    assert "PyTorch" in done.notes[0] and "257 record(s)" in done.notes[0]


# test_mean_of_empty: no GEMM, a real bug
@pytest.mark.parametrize("names", [["_ZN2at6native13reduce_kernelEv"],
                                   ["sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3",
                                    COPY]])  # FP32
def test_without_a_writer_initcheck_cannot_see_a_librarys_read_stays_a_finding(names):
    result = _initcheck(_uninit(COPY, "PyTorch"))
    assert kernelpolicy.unseen_writes(result, names) is result


def test_the_users_own_kernels_read_stays_a_finding_beside_a_tma_gemm():
    mine, theirs = _uninit("scale", None), _uninit(COPY, "PyTorch")
    done = kernelpolicy.unseen_writes(_initcheck(mine, theirs), [NVJET])
    assert done.status == "findings" and done.findings == [mine] and len(done.notes) == 1


def test_only_initcheck_is_excused():
    other = ToolResult("memcheck", "findings", [replace(_uninit(COPY, "PyTorch"), tool="memcheck",
                                                         kind="out-of-bounds-read")], 1.0)
    assert kernelpolicy.unseen_writes(other, [NVJET]) is other


def test_settle_applies_coverage_the_skip_line_and_the_unseen_writers_together():
    checked = coverage.Coverage(3, kernels=3, with_lines=1, alongside=True,
                                names=(NVJET, COPY, "scale"))
    done = kernelpolicy.settle(_initcheck(_uninit(COPY, "PyTorch")), checked, skips=False)
    assert (done.status == "clean" and done.checked is not None
            and done.checked.names == checked.names)
    raced = kernelpolicy.settle(ToolResult("racecheck", "clean", [], 1.0, version="2026.4.0"),
                                checked, skips=True)
    assert (raced.checked is not None and "cuBLAS" in raced.checked.skipped
            and "PyTorch" in raced.checked.skipped)
    old = kernelpolicy.settle(ToolResult("racecheck", "clean", [], 1.0, version="2025.3.1"),
                              checked, skips=True)
    assert (old.checked is not None and "cuBLAS" not in old.checked.skipped
            and "PyTorch 1" in old.checked.skipped)


@pytest.mark.parametrize(("version", "older"),
                         [("2025.3.1", True), ("2026.1.0", True), ("2026.4.0", False),
                           ("2027.1", False), ("", True), ("x.y", True)])
def test_a_tool_version_is_older_than_a_release_and_an_unknown_one_counts_as_older(version, older):
    assert kernelpolicy.older(version, kernelpolicy.RACECHECK_SEES_TMA) is older


def test_racecheck_before_2026_4_checks_cublas_tma_gemms_all_the_same():
    """Measured on an H200: 2025.3.1's racecheck with the nvjet GEMM excluded fails inside it (an
    Internal Sanitizer Error, then an illegal address in the program). So before 2026.4 the
    exclusion leaves nvjet out, and only for racecheck; every other cuBLAS kernel and library stays
    excluded."""
    def excluded(tool: str, version: str, name: str) -> bool:
        argv = kernelpolicy.exclude_args(tool, version)
        return any(re.search(p.removeprefix("regex="), name) for p in argv[1::2])

    for name in LIBRARY:
        tma = re.match(kernelpolicy.TMA_GEMMS, name) is not None
        assert excluded("racecheck", "2025.3.1", name) is not tma, name
        assert excluded("racecheck", "2026.4.0", name) and excluded("synccheck", "2025.3.1", name), name
    # the table above has an nvjet kernel
    assert any(re.match(kernelpolicy.TMA_GEMMS, n) for n in LIBRARY)
    assert not any(excluded("racecheck", "2025.3.1", n) for n in USER)


def _hazard(kernel: str) -> Finding:
    return Finding("racecheck", "race-war", kernel, None, None, thread=None, block=None, count=200,
                   message="Potential WAR hazard detected", extra=Extra(library="cuBLAS"))


def test_racecheck_hazards_inside_an_nvjet_gemm_are_set_aside_before_2026_4_only():
    nvjet, xmma = _hazard(NVJET), _hazard("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8")
    old = kernelpolicy.tool_false_reports(ToolResult("racecheck", "findings", [nvjet, xmma], 1.0,
                                                     version="2025.3.1"))
    assert old.findings == [xmma] and old.status == "findings"
    assert len(old.notes) == 1 and "2025.3.1" in old.notes[0] and "2026.4" in old.notes[0]
    alone = kernelpolicy.tool_false_reports(ToolResult("racecheck", "findings", [nvjet], 1.0,
                                                       version="2025.3.1"))
    assert alone.status == "clean" and not alone.findings
    new = ToolResult("racecheck", "findings", [nvjet], 1.0, version="2026.4.0")
    assert kernelpolicy.tool_false_reports(new) is new


@pytest.mark.parametrize(("modules", "library"), [
    (["/v/nvidia/cu13/lib/libcudart.so.13", "/v/nvidia/cu13/lib/libcudart.so.13", "/v/torch/lib/libtorch_cuda.so"], "PyTorch"),
    (["/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/v/nvidia/cublas/lib/libcublasLt.so.13"],
     "cuBLAS"),
    (["/v/nvidia/cu13/lib/libcudart.so.13", "/home/me/ext/build/my_ext.cpython-312-x86_64-linux-gnu.so"], None),
    # a Python frame: the user's Triton or CuPy
    (["/usr/lib/x86_64-linux-gnu/libcuda.so.1", None], None),
    ([], None),
])
def test_the_library_that_launched_a_kernel_is_the_first_module_past_the_cuda_runtime(modules, library):
    assert kernelpolicy.launched_by(modules) == library


def test_a_kernel_named_in_short_is_told_a_librarys_by_the_module_that_launched_it(data_dir):
    """initcheck with host frames only, on an H200 (787eb2f): PyTorch's copy kernel is named
    "unrolled_elementwise_kernel", launched from libtorch_cuda.so; it is PyTorch's, and beside an
    nvjet GEMM in the same test its read is set aside."""
    (found,), _ = sanitizer_xml.parse_xml((data_dir / "programs" / "linear_half.initcheck.xml").read_text(),
                                              "initcheck")
    assert (found.kernel == "unrolled_elementwise_kernel"
            and kernelpolicy.library_of(found.kernel) is None)
    (mine,), _ = kernelpolicy.libraries_own([found])
    assert mine.extra.library == "PyTorch"
    done = kernelpolicy.unseen_writes(_initcheck(mine), [NVJET])
    assert done.status == "clean" and not done.findings and NVJET in done.notes[0]


def test_a_sessions_tally_names_what_each_skipping_tool_left_out_over_its_tests():
    """A test that passes prints no report: the pytest plugin's summary says what racecheck and
    synccheck left out over every test, each kernel once, by library; memcheck (which checks all)
    adds nothing."""
    one = coverage.Coverage(3, kernels=3, with_lines=1, alongside=True,
                            names=(NVJET, COPY, "scale"))
    two = coverage.Coverage(2, kernels=2, with_lines=0, alongside=True,
                            names=(COPY, "_ZN3cub11DeviceScanKernel"))
    tally = kernelpolicy.SkipTally()
    skips = {"racecheck": True, "synccheck": True, "memcheck": False}.__getitem__
    tally.add([ToolResult("memcheck", "clean", [], 1.0, checked=one),
               ToolResult("racecheck", "clean", [], 1.0, checked=one, version="2026.4.0")], skips)
    tally.add([ToolResult("racecheck", "clean", [], 1.0, checked=two, version="2026.4.0"),
               ToolResult("synccheck", "clean", [], 1.0, checked=two, version="2025.3.1")], skips)
    assert tally.text() == ("racecheck left out 3 library kernel(s) in 2 test(s) (CUB/Thrust 1, "
                            "PyTorch 1, cuBLAS 1); synccheck left out 2 library kernel(s) in 1 "
                            "test(s) (CUB/Thrust 1, PyTorch 1)")
    old = kernelpolicy.SkipTally()
    old.add([ToolResult("racecheck", "clean", [], 1.0, checked=one, version="2025.3.1")], skips)
    # nvjet checked there
    assert old.text() == "racecheck left out 1 library kernel(s) in 1 test(s) (PyTorch 1)"
    assert kernelpolicy.SkipTally().text() == ""
