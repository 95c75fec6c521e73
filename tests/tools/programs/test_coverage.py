"""What each tool's run checked (kprof.tools.programs.coverage) and kprof's launch tally
(kprof/hooks/launch_tally.py), without a GPU: real cubins from nvcc, the tally's log as its
processes write it, its callbacks on fake CUPTI data, the exit-code shim that hands the tally to the
program only, and the verdict, text, JSON and SARIF that carry it."""

from __future__ import annotations

import ctypes
import importlib.util
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

import kprof
from kprof import findings, proc
from kprof.results import render_sanitize
from kprof.tools.programs import coverage, exitcode
from kprof.tools.sanitizers import toolrun
from kprof.tools.sanitizers.toolrun import ToolResult

HOOKS = Path(kprof.__file__).parent / "hooks"


def _tally_module():
    spec = importlib.util.spec_from_file_location("launch_tally", HOOKS / "launch_tally.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cubin(tmp_path: Path, *flags: str) -> bytes:
    source = tmp_path / "k.cu"
    source.write_text('extern "C" __global__ void plain(float* x) { x[threadIdx.x] += 1; }\n'
                      "template <int N> __global__ void scaled(float* x) { x[threadIdx.x] *= N; }\n"
                      "template __global__ void scaled<3>(float*);\n")
    out = tmp_path / f"k{len(flags)}.cubin"
    done = subprocess.run([str(proc.find_tool("nvcc")), "-cubin", "-arch=sm_90", *flags, "-o",
                           str(out), str(source)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out.read_bytes()


@pytest.mark.nvcc
def test_a_cubins_kernels_and_line_information_are_read_from_its_sections(tmp_path):
    tally = _tally_module()
    bare, lined = _cubin(tmp_path), _cubin(tmp_path, "-lineinfo")
    assert tally.cubin_facts(bare) == ({"plain", "_Z6scaledILi3EEvPf"}, False)
    assert tally.cubin_facts(lined) == ({"plain", "_Z6scaledILi3EEvPf"}, True)
    # a fatbin-like image: its uncompressed ELF images found inside it
    assert (tally.cubin_facts(b"\x50\xed\x55\xba" + b"\0" * 60 + lined) == ({"plain", "_Z6scaledILi3EEvPf"}, True))


def test_an_image_that_is_not_an_elf_kprof_reads_is_unknown():
    tally = _tally_module()
    assert tally.cubin_facts(b"") is None
    assert tally.cubin_facts(b".version 8.0\n.target sm_90\n") is None  # PTX
    # section headers past the end
    assert tally.cubin_facts(b"\x7fELF\x02\x01" + b"\xff" * 58) is None
    assert tally.cubin_facts(b"\x7fELF\x01\x01" + b"\0" * 58) is None  # 32-bit


def _lines(*events):
    return "\n".join(json.dumps(e) for e in events) + "\n"


def test_the_tally_of_one_process_that_reached_its_exit():
    text = _lines({"pid": 7, "event": "tally", "ok": True},
                  {"pid": 7, "event": "kernel", "name": "count", "lineinfo": True, "launches": 1},
                  {"pid": 7, "event": "kernel", "name": "elementwise_copy", "lineinfo": False,
                   "launches": 2},
                  {"pid": 7, "event": "total", "launches": 5})
    c = coverage.from_tally(text, pools_off=True)
    assert (c.launches, c.kernels, c.with_lines, c.unknown_lines, c.complete) == (5, 2, 1, 0, True)
    assert c.text() == "5 launches of 2 kernels, 1 with line information, pools off"
    assert not c.saw_nothing and c.to_dict()["launches"] == 5


def test_a_process_stopped_before_its_exit_counts_at_least_its_kernel_lines():
    text = _lines({"pid": 7, "event": "tally", "ok": True},
                  {"pid": 7, "event": "kernel", "name": "a", "lineinfo": None, "launches": 1},
                  {"pid": 7, "event": "kernel", "name": "b", "lineinfo": True, "launches": 4}) + '{"pid": 7, "eve'
    c = coverage.from_tally(text)
    assert (c.launches, c.complete, c.unknown_lines) == (4, False, 1)
    assert c.text().startswith("at least 4 launches of 2 kernels, 1 with line information, 1 "
                               "unknown")


def test_every_process_of_the_program_is_added_up():
    text = _lines({"pid": 1, "event": "tally", "ok": True},
                  {"pid": 2, "event": "tally", "ok": True},
                  {"pid": 2, "event": "kernel", "name": "k", "lineinfo": True, "launches": 1},
                  {"pid": 1, "event": "kernel", "name": "k", "lineinfo": True, "launches": 1},
                  {"pid": 1, "event": "total", "launches": 3},
                  {"pid": 2, "event": "total", "launches": 2})
    c = coverage.from_tally(text)
    assert (c.launches, c.kernels, c.with_lines, c.complete) == (5, 1, 1, True)


def test_no_launch_at_the_programs_end_is_nothing_checked():
    c = coverage.from_tally(_lines({"pid": 1, "event": "tally", "ok": True},
                                   {"pid": 1, "event": "total", "launches": 0}))
    assert c.saw_nothing and c.text() == "0 launches of 0 kernels, 0 with line information"


def test_a_program_kprof_could_not_count_in_says_why():
    c = coverage.from_tally("")  # a C++ binary: no Python process, no line
    assert not c.counted and not c.saw_nothing and c.why == coverage.NOT_PYTHON
    failed = coverage.from_tally(_lines({"pid": 1, "event": "tally", "ok": False,
                                         "why": "No module named 'cupti'"}))
    assert (not failed.counted and "cupti" in failed.why
            and failed.text().startswith("launches not counted ("))


def test_the_values_detectors_launches_and_a_specs():
    from kprof.tools.programs.launchlog import Launch

    c = coverage.of_launches([Launch(0, "a", None), Launch(1, "a", None), Launch(2, "b", None)],
                             cut=None, pools_off=True)
    assert c.text() == "3 launches of 2 kernels, pools off"
    assert (coverage.of_launches([Launch(0, "a", None)], cut=20_000, pools_off=True).text().startswith("at least 20,000"))
    assert coverage.of_spec(2, 1).text() == "2 launches of 1 kernel, 1 with line information"


class _Sites:
    ENTER, EXIT = "enter", "exit"


def _fake_tally(tmp_path, tally):
    t = tally.Tally(str(tmp_path / "tally.jsonl"))
    t.sites, t.resource_domain, t.runtime_domain = (_Sites.ENTER, _Sites.EXIT), "resource", "runtime"
    return t


def _module_data(image: bytes):
    """A CUpti_ModuleResourceData in memory (moduleId, cubinSize, pCubin) and the ResourceData that
    points at it."""
    blob = ctypes.create_string_buffer(image, len(image))

    class Module(ctypes.Structure):
        _fields_ = [("module_id", ctypes.c_uint32), ("cubin_size", ctypes.c_size_t),
                    ("p_cubin", ctypes.c_void_p)]

    module = Module(1, len(image), ctypes.addressof(blob))
    return (blob, module), SimpleNamespace(resource_descriptor=ctypes.addressof(module))


@pytest.mark.nvcc
def test_the_tally_counts_driver_and_runtime_launches_once_each_and_knows_their_lines(tmp_path):
    tally = _tally_module()
    t = _fake_tally(tmp_path, tally)
    keep, data = _module_data(_cubin(tmp_path, "-lineinfo"))
    t._callback(None, "resource", 0, data)  # the module loaded before its first launch
    drv = SimpleNamespace(callback_site=_Sites.EXIT, symbol_name="plain",
                          function_name="cuLaunchKernel")
    t._callback(None, "driver", 0, drv)
    # enter: not a launch
    t._callback(None, "driver", 0, SimpleNamespace(callback_site=_Sites.ENTER, symbol_name="plain"))
    rt_enter = SimpleNamespace(callback_site=_Sites.ENTER, symbol_name="_Z6scaledILi3EEvPf")
    rt_exit = SimpleNamespace(callback_site=_Sites.EXIT, symbol_name="_Z6scaledILi3EEvPf")
    t._callback(None, "runtime", 0, rt_enter)
    # the runtime's own driver call inside it: not counted again
    t._callback(None, "driver", 0, drv)
    t._callback(None, "runtime", 0, rt_exit)
    t._callback(None, "driver", 0,
                SimpleNamespace(callback_site=_Sites.EXIT, symbol_name="",
                                function_name="cuGraphLaunch"))
    t.finish()
    t.out.close()
    del keep
    # no "tally" line: never started
    assert not coverage.from_tally((tmp_path / "tally.jsonl").read_text()).counted
    lines = [json.loads(ln) for ln in (tmp_path / "tally.jsonl").read_text().splitlines()]
    kernels = {e["name"]: e["lineinfo"] for e in lines if e["event"] == "kernel"}
    assert kernels == {"plain": True, "_Z6scaledILi3EEvPf": True, "cuGraphLaunch": None}
    assert lines[-1] == {"pid": t.pid, "event": "total", "launches": 3}
    with_start = coverage.from_tally(_lines({"pid": t.pid, "event": "tally", "ok": True}) +
                                     (tmp_path / "tally.jsonl").read_text())
    assert ((with_start.launches, with_start.kernels, with_start.with_lines, with_start.unknown_lines) == (3, 3, 2, 1))


def test_a_callback_it_cannot_read_is_a_line_and_the_program_goes_on(tmp_path):
    tally = _tally_module()
    t = _fake_tally(tmp_path, tally)
    t._callback(None, "resource", 0, SimpleNamespace(resource_descriptor="not a pointer"))
    t.out.close()
    (event,) = [json.loads(ln) for ln in (tmp_path / "tally.jsonl").read_text().splitlines()]
    assert event["event"] == "error" and "ValueError" in event["why"]


def test_without_cupti_the_tally_says_so_and_the_program_runs(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupti", None)  # import cupti raises ImportError
    tally = _tally_module()
    t = tally.Tally(str(tmp_path / "tally.jsonl"))
    t.start()
    t.out.close()
    c = coverage.from_tally((tmp_path / "tally.jsonl").read_text())
    assert not c.counted and "could not start" in c.why and "cupti" in c.why


def test_the_shim_hands_the_tally_to_the_program_not_to_itself(tmp_path):
    status, tally = tmp_path / "status.json", tmp_path / "tally.jsonl"
    probe = "import os, sys; sys.stdout.write(os.environ.get('KPROF_LAUNCH_TALLY', '-'))"
    argv = exitcode.wrap([sys.executable, "-c", probe], status, tally)
    assert argv[3:6] == [str(status), "--tally", str(tally)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=proc.child_env())
    assert done.returncode == 0 and done.stdout == str(tally), done.stderr
    assert exitcode.read_status(status) == exitcode.Status(0)
    # no tally: the shim as before
    assert exitcode.wrap(["true"], status)[3:] == [str(status), "--", "true"]


def _done(code=0):
    return proc.Completed(["x"], code, "", "", 1.0, False)


def test_a_run_that_would_be_clean_while_the_program_launched_nothing_is_not_checked():
    nothing = coverage.from_tally(_lines({"pid": 1, "event": "tally", "ok": True},
                                         {"pid": 1, "event": "total", "launches": 0}))
    clean = toolrun.classify_program("memcheck", _done(), exitcode.Status(0), [], [], 60,
                                     have_xml=True)
    r = toolrun.with_coverage(clean, nothing)
    assert r.status == "not-checked" and "launched no kernel" in r.message and r.checked == nothing
    some = coverage.Coverage(3, kernels=1, with_lines=1, pools_off=True, alongside=True)
    assert toolrun.with_coverage(clean, some) == replace(clean, checked=some)
    uncounted = toolrun.with_coverage(clean, coverage.from_tally(""))
    # a C++ program: clean, launches not counted
    assert uncounted.status == "clean" and not uncounted.checked.counted
    # stopped before its end with nothing counted: not "nothing launched"
    killed = coverage.Coverage(0, complete=False)
    assert toolrun.with_coverage(clean, killed).status == "clean"
    found = ToolResult("memcheck", "findings", ["f"], 1.0)
    # a finding is never hidden by the count
    assert toolrun.with_coverage(found, nothing).status == "findings"
    assert toolrun.with_coverage(clean, None) is clean


def test_the_count_runs_the_program_once_with_the_tally_and_reads_it(tmp_path, monkeypatch):
    """kprof.tools.programs.launchcount: the program behind the exit-code shim, the tally's path
    handed to it, its lines read back; here a stand-in program writes what the tally would."""
    from kprof.tools.programs import launchcount

    program = tmp_path / "prog.py"
    program.write_text("import json, os\n"
                       "with open(os.environ['KPROF_LAUNCH_TALLY'], 'a') as f:\n"
                       "    for e in ({'event': 'tally', 'ok': True}, {'event': 'kernel', 'name': "
                       "'k', 'lineinfo': True, 'launches': 1},\n              {'event': 'total', "
                       "'launches': 2}):\n        f.write(json.dumps({'pid': os.getpid(), **e}) + "
                       "'\\n')\n")
    # -S: no site hooks, so a real tally (where cupti is installed) does not write beside the
    # stand-in
    c = launchcount.count([sys.executable, "-S", str(program)], timeout=60, env=proc.child_env(),
                          pools_off=True)
    assert ((c.launches, c.kernels, c.with_lines, c.complete, c.alongside, c.pools_off) == (2, 1, 1, True, True, True))
    assert (c.text() == "2 launches of 1 kernel (counted in a run beside the tool's), 1 with line "
                        "information, pools off")


def test_the_report_json_and_sarif_say_what_each_tool_checked():
    some = coverage.Coverage(12, kernels=3, with_lines=2, unknown_lines=1, pools_off=True)
    results = [ToolResult("memcheck", "clean", [], 2.0, checked=some),
               ToolResult("racecheck", "not-checked", [], 1.0, "racecheck saw no kernel launch",
                          checked=coverage.Coverage(0, pools_off=True))]
    text = render_sanitize.sanitize_report(results)
    assert ("checked: 12 launches of 3 kernels, 2 with line information, 1 unknown, pools off" in text)
    assert "NOT CHECKED" in text and "checked: 0 launches of 0 kernels" in text
    assert results[0].summary()["checked"]["launches"] == 12
    sarif = findings.to_sarif(results, "1.0")
    invocation = sarif["runs"][0]["invocations"][0]
    assert invocation["properties"]["checked"]["memcheck"]["with_lines"] == 2
    assert invocation["executionSuccessful"] is False  # NOT CHECKED is never a successful run


def test_the_tallys_struct_offsets_are_the_headers(tmp_path):
    """CUpti_ModuleResourceData's cubinSize and pCubin, as the tally reads them, from CUPTI's own
    header."""
    import shutil

    cc = shutil.which("cc") or shutil.which("gcc")
    try:
        root = Path(str(proc.find_tool("nvcc"))).resolve().parent.parent
    except Exception:  # no toolkit here
        root = None
    candidates = [root / "include", root / "targets" / "x86_64-linux" / "include", root / "extras" / "CUPTI" / "include"] if root else []
    include = next((d for d in candidates if (d / "cupti_callbacks.h").exists()), None)
    cuda_h = next((d for d in candidates if (d / "cuda.h").exists()), None)
    if cc is None or include is None or cuda_h is None:
        pytest.skip("needs a C compiler and the CUDA toolkit's headers (cuda.h, cupti_callbacks.h)")
    source = tmp_path / "offsets.c"
    source.write_text("#include <stdio.h>\n#include <stddef.h>\n#include <cuda.h>\n#include "
                      "<cupti_callbacks.h>\nint main(void) { printf(\"%zu %zu\\n\", "
                      "offsetof(CUpti_ModuleResourceData, cubinSize), "
                      "offsetof(CUpti_ModuleResourceData, pCubin)); return 0; }\n")
    binary = tmp_path / "offsets"
    built = subprocess.run([cc, f"-I{include}", f"-I{cuda_h}", str(source), "-o", str(binary)],
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    size_at, cubin_at = map(int,
                            subprocess.run([str(binary)], capture_output=True, text=True,
                                           timeout=30, check=True).stdout.split())
    assert (size_at, cubin_at) == _tally_module()._MODULE_CUBIN


def test_under_compute_sanitizer_the_tally_cannot_start_as_recorded_on_the_h200(data_dir):
    """Recorded: the tally loaded in a program under memcheck (scripts/gpu-check.sh
    record-programs): compute-sanitizer holds CUPTI's one subscriber, so kprof counts in a run of
    its own."""
    c = coverage.from_tally((data_dir / "programs" / "tally.under-memcheck.jsonl").read_text())
    assert not c.counted and "MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" in c.why


@pytest.mark.parametrize("name, text", [
    # curand's two kernels, then the RawKernel
    ("cupy", "3 launches of 3 kernels, 1 with line information, pools off"),
    # PyTorch's kernels, then Triton's scale
    ("triton", "17 launches of 13 kernels, 1 with line information, pools off"),
])
def test_the_tallys_lines_as_recorded_on_the_h200(data_dir, name, text):
    """The tally in a CuPy and a Triton program on the H200 (no tool): driver-API launches (CuPy's
    RawKernel, Triton's kernel, with -lineinfo) and runtime-API ones (curand's, PyTorch's,
    without)."""
    c = coverage.from_tally((data_dir / "programs" / f"tally.{name}.jsonl").read_text(),
                            pools_off=True)
    assert c.text() == text and c.complete


def test_each_tests_count_is_in_its_finish_event_and_a_test_that_launched_nothing_is_not_checked():
    """The batch plugin: the count run's pytest child says what each test launched (its finish
    event); combine gives it to every tool's result, and a test that launched no kernel is NOT
    CHECKED."""
    from kprof.tools.suites import suiteverdict

    events = "\n".join(json.dumps(e) for e in (
        {"event": "start", "i": 0, "nodeid": "t::gpu"},
        {"event": "finish", "i": 0, "nodeid": "t::gpu", "outcome": "passed", "seconds": 0.5,
         "checked": {"launches": 4, "kernels": 2, "with_lines": 2, "unknown_lines": 0}},
        {"event": "start", "i": 1, "nodeid": "t::host"},
        {"event": "finish", "i": 1, "nodeid": "t::host", "outcome": "passed", "seconds": 0.1,
         "checked": {"launches": 0, "kernels": 0, "with_lines": 0, "unknown_lines": 0}},
        # no tally there
        {"event": "finish", "i": 2, "nodeid": "t::old", "outcome": "passed", "seconds": 0.1}))
    run = suiteverdict.read_events(events)
    assert run.finished["t::gpu"].checked == coverage.Coverage(4, kernels=2, with_lines=2,
                                                               alongside=True)
    assert run.finished["t::old"].checked is None
    counts = {n: f.checked for n, f in run.finished.items() if f.checked is not None}
    clean = {n: suiteverdict.TestVerdict(n, [ToolResult("memcheck", "clean", [], 1.0)])
             for n in ("t::gpu", "t::host", "t::old")}
    found = {"t::gpu": suiteverdict.TestVerdict("t::gpu",
                                                [ToolResult("racecheck", "findings",
                                                            [findings.Finding("racecheck", "race-raw", "k", "k.cu", 3, thread=None, block=None, count=1, message="")], 1.0)])}
    verdicts = suiteverdict.combine(["t::gpu", "t::host", "t::old"], ["memcheck", "racecheck"],
                             [clean, {**found, "t::host": clean["t::host"], "t::old": clean["t::old"]}], counts)
    gpu, host, old = (verdicts[n] for n in ("t::gpu", "t::host", "t::old"))
    assert ([r.status for r in gpu.results] == ["clean", "findings"]
            and gpu.results[0].checked.launches == 4)
    assert ([r.status for r in host.results] == ["not-checked", "not-checked"] and host.passes
            and not host.clean)
    assert [r.status for r in old.results] == ["clean", "clean"] and old.results[0].checked is None


def test_the_tally_says_what_was_launched_since_a_mark(tmp_path):
    tally = _tally_module()
    t = _fake_tally(tmp_path, tally)
    launch = SimpleNamespace(callback_site=_Sites.EXIT, symbol_name="a")
    t._callback(None, "driver", 0, launch)
    mark = t.mark()
    t._callback(None, "driver", 0, launch)
    t._callback(None, "driver", 0, SimpleNamespace(callback_site=_Sites.EXIT, symbol_name="b"))
    assert t.since(mark) == {"launches": 2, "kernels": 2, "with_lines": 0, "unknown_lines": 2,
                             "names": ["a", "b"]}
    assert t.since(t.mark()) == {"launches": 0, "kernels": 0, "with_lines": 0, "unknown_lines": 0,
                                 "names": []}
    assert tally.running() is None  # installed by the site hook only
    t.out.close()


def test_the_count_run_of_a_suite_reads_each_tests_finish_event(tmp_path):
    """kprof.tools.suites.suite.count_tests: the tests once more in kprof's pytest child, no tool;
    where no tally can count (cupti-python missing, no GPU), no test has a count and every tool's
    verdict stays as it is."""
    from kprof.tools.suites import suite, suiteverdict

    (tmp_path / "test_x.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    tests = [suiteverdict.Test(f"test_x.py::test_{n}", str(tmp_path / "test_x.py"), f"test_{n}")
             for n in "ab"]
    counts = suite.count_tests(tests, timeout=60, env=proc.child_env(), cwd=tmp_path)
    assert set(counts) <= {"test_x.py::test_a", "test_x.py::test_b"}
    # where cupti counts: nothing launched
    assert all(c.launches == 0 and c.alongside for c in counts.values())


def test_a_hung_test_costs_the_count_run_its_own_limit_and_the_rest_are_counted(tmp_path, monkeypatch):
    """The count run stops a test past its own limit, as the tools' children do, and counts the
    tests after it in a new child: it once waited the limit times the number of tests (a day for 144
    tests at 600 s)."""
    from kprof.tools.suites import suite, suiteverdict

    ran = tmp_path / "ran"
    (tmp_path / "test_x.py").write_text(
        "import pathlib, time\n\ndef test_a():\n    pass\n\ndef test_hang():\n    "
        f"time.sleep(600)\n\ndef test_b():\n    pathlib.Path({str(ran)!r}).write_text('b')\n")
    tests = [suiteverdict.Test(f"test_x.py::test_{n}", str(tmp_path / "test_x.py"), f"test_{n}")
             for n in ("a", "hang", "b")]
    children, real_run = [], proc.run

    def run(argv, **kw):
        done = real_run(argv, **kw)
        children.append(([a.split("::")[-1] for a in argv if "::" in a], kw.get("timeout"),
                         done.timed_out))
        return done

    monkeypatch.setattr(proc, "run", run)
    counts = suite.count_tests(tests, timeout=1, env=proc.child_env(), cwd=tmp_path)
    # no limit on a child as a whole: the watch holds each test to its own, and stopped the hung one
    assert children == [(["test_a", "test_hang", "test_b"], None, True), (["test_b"], None, False)]
    assert ran.read_text() == "b" and "test_x.py::test_hang" not in counts
