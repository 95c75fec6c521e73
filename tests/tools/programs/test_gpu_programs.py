"""kprof on users' programs, on a real GPU: each example (buggy and its clean control) under
``kprof sanitize --``, under ``kprof.sanitize([...])``, and as a test file under
``pytest --kprof-sanitize``; a hanging program stopped at the timeout; a failing one reported as
such."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import kprof
from kprof.commands import cli

# No xdist group: each test is its own programs under the tools, timing nothing, so they spread over
# the workers (one group ran them one after another on one worker: 9 tests of up to 40 s each).
pytestmark = pytest.mark.gpu
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
PY = sys.executable


def _needs(module: str) -> None:
    pytest.importorskip(module, reason=f"the example needs {module}")


def test_triton_store_without_mask_is_found_at_its_line_with_launch_site_and_allocation(capsys):
    _needs("triton")
    code = cli.main(["sanitize", "--tool", "memcheck", "--json", "--", PY,
                     str(EXAMPLES / "triton_scale.py")])
    data = json.loads(capsys.readouterr().out)
    assert code == 1, data
    f = data["findings"][0]
    assert f["kind"] == "out-of-bounds-write" and f["file"].endswith("triton_scale.py") and f["line"] == 27, f
    assert f["launch"].endswith("triton_scale.py:34"), f
    assert "past the end of a 4,000-byte allocation" in (f["detail"] or ""), f


def test_triton_clean_control_is_clean_under_every_tool():
    _needs("triton")
    # the tools side by side
    report = kprof.sanitize([PY, str(EXAMPLES / "triton_scale.py"), "--fixed"], jobs=None)
    assert report.clean, report.to_json()
    assert [r.tool for r in report.results] == ["memcheck", "racecheck", "initcheck", "synccheck"]


def test_cuda_python_race_is_found_at_its_cu_lines_with_launch_site():
    _needs("cuda.bindings")
    report = kprof.sanitize([PY, str(EXAMPLES / "cuda_python_sum.py")], tools=["racecheck"])
    races = [f for f in report.findings if f.kind.startswith("race")]
    assert races, report.to_json()
    assert races[0].file.endswith("block_sum.cu") and races[0].lines() & {10}, races[0]
    source = (EXAMPLES / "cuda_python_sum.py").read_text().splitlines()
    launch_line = next(i for i, text in enumerate(source, 1) if "cuLaunchKernel(" in text)
    assert races[0].launch and races[0].launch.endswith(f"cuda_python_sum.py:{launch_line}"), races[0]
    assert (kprof.sanitize([PY, str(EXAMPLES / "cuda_python_sum.py"), "--fixed"], tools=["racecheck"]).clean)


def test_cupy_read_past_the_end_is_found_only_with_the_pool_off():
    _needs("cupy")
    cmd = [PY, str(EXAMPLES / "cupy_shift.py")]
    found = kprof.sanitize(cmd, tools=["memcheck"])
    assert [f.kind for f in found.findings][:1] == ["out-of-bounds-read"], found.to_json()
    # the line of cupy_shift.py in the kernel's string, not CuPy's deleted copy
    f = found.findings[0]
    assert (f.file, f.line) == (str(EXAMPLES / "cupy_shift.py"), _marked(EXAMPLES / "cupy_shift.py", "// BUG")), f
    assert f.extra.reported_at.endswith(".cubin.cu:5"), f
    assert kprof.sanitize(cmd, tools=["memcheck"], keep_pools=True).clean, "inside CuPy's pool memcheck sees nothing"
    assert kprof.sanitize(cmd + ["--fixed"], tools=["memcheck"]).clean


def _marked(path: Path, mark: str) -> int:
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if mark in text)


def test_a_kernel_cupy_generated_is_reported_at_the_call_that_launched_it():
    _needs("cupy")
    program = EXAMPLES / "cupy_elementwise.py"
    found = kprof.sanitize([PY, str(program)], tools=["memcheck"])
    (f,) = [f for f in found.findings if f.kind == "out-of-bounds-read"]
    assert (f.file, f.line) == (str(program), _marked(program, "# LAUNCH")), f
    assert f.extra.source.startswith("CuPy generated this kernel's source"), f


def test_an_nvrtc_program_with_a_bare_name_is_reported_at_its_python_line(tmp_path):
    """The program names its source ``block_sum.cu``; the tool reports ``<cwd>/block_sum.cu``, which
    is not there; kprof reports the line of the string in nvrtc_inline.py."""
    _needs("cuda.bindings")
    program = EXAMPLES / "nvrtc_inline.py"
    report = kprof.sanitize([PY, str(program)], tools=["racecheck"], cwd=tmp_path)
    races = [f for f in report.findings if f.kind.startswith("race")]
    assert races, report.to_json()
    assert races[0].file == str(program) and races[0].lines() & {_marked(program, "// BUG")}, races[0]
    assert races[0].extra.reported_at.startswith(f"{tmp_path}/block_sum.cu:"), races[0]
    assert kprof.sanitize([PY, str(program), "--fixed"], tools=["racecheck"], cwd=tmp_path).clean


def test_a_cpp_programs_finding_names_its_launch_line(tmp_path):
    """A plain C++ program built with -g -lineinfo: the kernel's line, and the host line that
    launched it."""
    import shutil

    from kprof.build import toolchain

    compiler = toolchain.compiler_for("sm_90")
    if compiler.kind != "nvcc" or not shutil.which("addr2line"):
        pytest.skip("needs nvcc (a host program) and binutils' addr2line")
    source = EXAMPLES / "vecadd.cu"
    arch = toolchain.detect_arch()
    for name, flags in (("vecadd", []), ("vecadd_fixed", ["-DFIXED"])):
        subprocess.run([*compiler.program, f"-arch={arch}", "-g", "-lineinfo", *flags, "-o",
                        str(tmp_path / name), str(source)], check=True, capture_output=True)
    report = kprof.sanitize([str(tmp_path / "vecadd")], tools=["memcheck"])
    # the read of a[n], first
    (f,) = [f for f in report.findings if f.kind.startswith("out-of-bounds")]
    assert f.file.endswith("vecadd.cu") and f.line == _marked(source, "// BUG"), f
    assert f.launch == f"{source}:{_marked(source, '// LAUNCH')} (launch in vecadd)", f
    assert kprof.sanitize([str(tmp_path / "vecadd_fixed")], tools=["memcheck"]).clean


def test_a_race_in_global_memory_is_found_by_the_values_detector_and_missed_by_every_sanitizer():
    """51,200 threads doing counter[0] = counter[0] + 1: the four tools see nothing; two runs
    differ."""
    _needs("cupy")
    program = EXAMPLES / "cupy_counter.py"
    assert kprof.sanitize([PY, str(program)], jobs=None).clean, "a race in global memory: no sanitizer sees it"
    report = kprof.sanitize([PY, str(program)], tools=["values"])
    (f,) = report.findings
    assert (f.kind, f.kernel) == ("race", "count") and f.launch == f"{program}:{_marked(program, '# LAUNCH')}", f
    assert kprof.sanitize([PY, str(program), "--fixed"], tools=["values"]).clean
    summed = kprof.sanitize([PY, str(program), "--float-sum"], tools=["values"])
    # a float sum in another order is said in a note, not a finding
    assert summed.clean, summed.to_json()


def test_a_program_that_launches_no_kernel_is_not_checked():
    report = kprof.sanitize([PY, "-c", "print(1)"], tools=["memcheck", "values"])
    assert [r.status for r in report.results] == ["not-checked", "not-checked"], report.to_json()


def test_a_program_that_uses_cuda_but_launches_no_kernel_is_not_checked():
    """An allocation and a synchronisation, no kernel: compute-sanitizer starts on it and reports
    nothing; kprof's launch count saw no launch, so no tool is called clean."""
    _needs("cupy")
    report = kprof.sanitize([PY, "-c",
                             "import cupy; cupy.empty(4); cupy.cuda.Device().synchronize()"],
                            tools=["memcheck", "racecheck"])
    assert [r.status for r in report.results] == ["not-checked", "not-checked"], report.to_json()
    assert all(r.checked and r.checked.launches == 0 for r in report.results), report.to_json()
    assert "launched no kernel" in report.results[0].message


def test_a_clean_run_says_what_each_tool_checked():
    """The launch count beside every tool's run: CuPy's RawKernel (driver API, NVRTC with line
    information) and PyTorch's own kernels (runtime API) are counted, the pools said to be off."""
    _needs("cupy")
    program = EXAMPLES / "cupy_counter.py"
    report = kprof.sanitize([PY, str(program), "--fixed"], jobs=None)
    assert report.clean, report.to_json()
    for r in report.results:
        c = r.checked
        assert c and c.complete and c.launches >= 1 and c.kernels >= 1 and c.pools_off, (r.tool, c)
        # its RawKernel has -lineinfo
        assert r.tool == "values" or (c.alongside and c.with_lines >= 1), (r.tool, c)
    _needs("torch")
    torch_report = kprof.sanitize([PY, "-c",
                                   "import torch; x = torch.ones(1000, device='cuda'); "
                                   "print(float((x * 2).sum()))"],
                                  tools=["memcheck"])
    (t,) = torch_report.results
    assert t.status == "clean" and t.checked and t.checked.launches >= 2, torch_report.to_json()


def test_a_hanging_program_is_stopped_at_the_timeout():
    report = kprof.sanitize([PY, "-c", "import time; time.sleep(600)"], tools=["memcheck"],
                            timeout=10)
    assert (report.results[0].status == "timeout"
            and "did not finish within 10 s" in report.results[0].message)


def test_a_torch_extension_is_reported_in_the_file_torch_generated_and_said_so():
    """load_inline writes the kernel's string to <build folder>/cuda.cu: the line stays there (the
    file exists), the note says torch generated it, the launch is the user's call."""
    _needs("torch")
    from torch.utils.cpp_extension import is_ninja_available

    if not is_ninja_available():
        pytest.skip("torch builds an extension with ninja, which is not installed")
    program = EXAMPLES / "torch_extension.py"
    report = kprof.sanitize([PY, str(program)], tools=["memcheck"], timeout=600)
    found = [f for f in report.findings if f.kind == "out-of-bounds-read"]
    assert len(found) == 1, report.to_json()
    f = found[0]
    assert f.file.endswith("/cuda.cu") and "load_inline" in (f.extra.source or ""), f
    assert "// BUG" in Path(f.file).read_text().splitlines()[f.line - 1], f
    assert f.launch == f"{program}:{_marked(program, '# LAUNCH')}", f
    assert kprof.sanitize([PY, str(program), "--fixed"], tools=["memcheck"], timeout=600).clean


def test_a_bad_warp_mask_is_an_invalid_warp_sync_at_the_users_line():
    _needs("cupy")
    program = EXAMPLES / "cupy_syncwarp.py"
    report = kprof.sanitize([PY, str(program)], tools=["synccheck"])
    (f,) = report.findings
    assert (f.kind, f.file, f.line) == ("invalid-warp-sync", str(program), _marked(program, "// BUG")), f
    assert f.launch == f"{program}:{_marked(program, '# LAUNCH')}", f


def test_a_write_to_freed_device_heap_memory_says_device_heap():
    _needs("cupy")
    program = EXAMPLES / "cupy_heap.py"
    report = kprof.sanitize([PY, str(program)], tools=["memcheck"])
    (f,) = [f for f in report.findings if f.kind == "out-of-bounds-write"]
    assert (f.file, f.line) == (str(program), _marked(program, "// BUG")) and "device heap" in (f.detail or ""), f


def test_a_write_the_programs_nvtx_permissions_forbid_is_not_writable(tmp_path):
    from kprof.build import toolchain

    compiler = toolchain.compiler_for("sm_90")
    if compiler.kind != "nvcc":
        pytest.skip("needs nvcc (a host program)")
    source = EXAMPLES / "nvtx_readonly.cu"
    for name, flags in (("nvtx_readonly", []), ("nvtx_fixed", ["-DFIXED"])):
        subprocess.run([*compiler.program, f"-arch={toolchain.detect_arch()}", "-g", "-lineinfo",
                        *flags, "-o",
                        str(tmp_path / name), str(source)], check=True, capture_output=True)
    report = kprof.sanitize([str(tmp_path / "nvtx_readonly")], tools=["memcheck"])
    found = [f for f in report.findings if f.file and f.file.endswith("nvtx_readonly.cu")]
    assert len(found) == 1, report.to_json()
    f = found[0]
    assert f.kind == "invalid-access" and "not writable" in (f.detail or "") and f.line == _marked(source, "// BUG"), f
    assert kprof.sanitize([str(tmp_path / "nvtx_fixed")], tools=["memcheck"]).clean


def test_a_program_that_fails_without_a_finding_is_said():
    report = kprof.sanitize([PY, "-c", "raise SystemExit('no such model file: weights.pt')"],
                            tools=["memcheck"])
    r = report.results[0]
    assert (r.status == "target-error" and "exited with code 1" in r.message
            and "weights.pt" in r.log)


def test_pytest_kprof_sanitize_fails_exactly_the_buggy_test():
    _needs("triton")
    from importlib.metadata import entry_points

    # Installed, kprof's plugin comes through its pytest11 entry point; from a source tree, name it.
    installed = any(ep.value == "kprof.pytest_plugin" for ep in entry_points(group="pytest11"))
    plugin = [] if installed else ["-p", "kprof.pytest_plugin"]
    # one pytest process, as a user's suite runs (the project's pyproject.toml adds -n auto for its
    # own tests)
    done = subprocess.run([PY, "-m", "pytest", str(EXAMPLES / "test_gpu_ops.py"), "-p",
                           "no:cacheprovider", "-q", "-n", "0",
                           *plugin, "--kprof-sanitize=memcheck"], capture_output=True, text=True, timeout=900)
    assert "1 failed, 9 passed" in done.stdout, done.stdout[-3000:]
    assert "FAILED examples/test_gpu_ops.py::test_scale_unmasked" in done.stdout


# one ncu at a time on the GPU: a second beside it once failed one (exit code 9)
@pytest.mark.xdist_group("ncu")
def test_profile_a_triton_kernel_in_a_program(capsys):
    _needs("triton")
    code = cli.main(["profile", "--kernel", "scale", "--json", "--", PY,
                     str(EXAMPLES / "triton_scale.py"), "--fixed"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["kernels"] and data["kernels"][0]["kernel"].startswith("scale"), data
    assert data["kernels"][0]["duration_s"] > 0
    # the user's line that launched it, from a second run of the program without ncu (CUPTI's one
    # subscriber)
    source = (EXAMPLES / "triton_scale.py").read_text().splitlines()
    line = next(i for i, text in enumerate(source, 1) if text.strip().startswith("scale[("))
    (ranked,) = data["ranking"]
    assert data["sites"]["counted"], data["sites"]
    assert ranked["sites"] == [f"{EXAMPLES / 'triton_scale.py'}:{line} (main)"] and ranked["sites_by"] == "name", ranked


@pytest.mark.xdist_group("ranks")
def test_a_two_rank_job_names_the_rank_of_its_bug_and_a_clean_one_is_clean():
    """torchrun with two ranks on one GPU (gloo): every rank under memcheck on its own, the finding
    in rank 1 at the Triton kernel's line, the fixed job clean under each tool."""
    _needs("triton")
    job = [PY, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(EXAMPLES / "two_ranks.py")]
    report = kprof.sanitize(job, "memcheck", timeout=240)
    (r,) = report.results
    assert r.status == "findings", (r.message, r.notes, r.log)
    assert {f.rank for f in r.findings} == {1} and all(f.file and f.file.endswith("two_ranks.py")
                                                       for f in r.findings)
    assert r.notes[0] == "2 rank(s), each under memcheck on its own"
    clean = kprof.sanitize([*job, "--fixed"], ["memcheck", "racecheck"], timeout=240)
    assert clean.clean, [(x.tool, x.status, x.message, x.notes) for x in clean.results]
