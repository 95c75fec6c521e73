"""The values detector for any program (kprof sanitize --tool values -- CMD), on CPU: the comparison
of two runs' launch logs (kprof.tools.programs.launchlog), the verdict on the first output that
differs (a race, or a float sum added up in another order), and the runs themselves with a stand-in
program that writes the launch recorder's log lines (tests/data/fake_launch_program.py)."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest

from kprof import proc
from kprof.commands import cli
from kprof.tools.programs import launchlog
from kprof.tools.sanitizers import values

FAKE = Path(__file__).parents[2] / "data" / "fake_launch_program.py"


def _log(*launches, ok=True, cut=False) -> launchlog.Run:
    lines = [{"event": "recorder", "ok": ok}] + [
        {"event": "launch", "seq": i, "kernel": k, "site": f"p.py:{10 + i}", "args": a}
        for i, (k, a) in enumerate(launches)]
    if cut:
        lines.append({"event": "cut", "after": len(launches)})
    return launchlog.read("\n".join(json.dumps(x) for x in lines) + "\nnot json\n[1]\n")


def test_two_runs_agree_or_part_at_their_first_difference():
    a = _log(("fill", [[0, 400, "aa"]]), ("count", [[0, 400, "aa"], [2, 4, "bb"]]))
    assert launchlog.compare(a, a) is None
    b = _log(("fill", [[0, 400, "aa"]]), ("count", [[0, 400, "aa"], [2, 4, "cc"]]))
    d = launchlog.compare(a, b)
    assert (d is not None
            and (d.seq, d.kernel, d.site, d.arg, d.what) == (1, "count", "p.py:11", 2, "output"))
    c = _log(("fill", [[0, 400, "aa"]]), ("scale", []))
    assert launchlog.compare(a, c).what == "kernel"
    short = _log(("fill", [[0, 400, "aa"]]))
    assert launchlog.compare(a, short).what == "count"
    # past a cut: not compared
    assert launchlog.compare(_log(("fill", []), cut=True), _log(("fill", []), ("fill", []))) is None


def test_a_race_is_far_apart_and_a_float_sum_in_another_order_is_not():
    race = launchlog.difference(struct.pack("<ii", 7, 37), struct.pack("<ii", 7, 51200))
    assert not race.rounding and race.first == 1 and "37 vs 51200 as int32" in race.text()
    near = launchlog.difference(struct.pack("<f", 1000.0),
                                struct.pack("<f", 1000.0 + 6.103515625e-05))
    assert near.rounding and near.max_rel < 1e-6
    # close integers: no floats
    counts = launchlog.difference(struct.pack("<i", 51200), struct.pack("<i", 51199))
    assert not counts.rounding and counts.max_rel is None
    nan = launchlog.difference(struct.pack("<f", 1.0), struct.pack("<f", float("nan")))
    assert not nan.rounding
    assert launchlog.difference(b"abcd", b"abcd").differing == 0


def _run(mode: str):
    return values.run_program([sys.executable, str(FAKE), mode], timeout=60, env=proc.child_env())


def test_a_program_whose_launch_differs_between_runs_is_a_race_at_that_launch():
    r = _run("race")
    assert r.status == "findings", (r.message, r.log)
    (f,) = r.findings
    assert (f.tool, f.kind, f.kernel, f.launch) == ("values", "race", "count", f"{FAKE}:41")
    assert "argument 2 of launch 1" in f.detail and "37 vs 51200 as int32" in f.detail
    assert r.notes == ["2 launches compared over 2 runs, one on a crowded GPU"]


def test_a_race_that_ends_the_same_on_an_idle_gpu_is_found_on_a_crowded_one(monkeypatch):
    """counter[0]++ by 51,200 threads ends at 1 every run on an idle H200: two idle runs agree. The
    detector's second run (and second copy) starts each kernel on a crowded GPU, where it ends
    otherwise."""
    r = _run("quiet-race")
    assert r.status == "findings", (r.message, r.log)
    (f,) = r.findings
    assert (f.kind, f.kernel, f.launch) == ("race", "count", f"{FAKE}:41") and "1 vs 25 as int32" in f.detail, f.detail
    assert "crowded GPU" in f.message
    # both runs idle: the race is not seen, which is why one is crowded
    monkeypatch.setattr(values, "CROWD", {})
    assert _run("quiet-race").status == "clean"


def test_the_recorders_crowd_is_asked_for_and_bounded():
    import importlib.util

    spec = importlib.util.spec_from_file_location("launch_recorder",
                                                  Path(values.__file__).parents[2] / "hooks" / "launch_recorder.py")
    rec = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rec)
    assert rec._crowd_ns("", "") == 0 and rec._crowd_ns("0", "500") == 0  # no crowd unless asked
    assert rec._crowd_ns("1", "") == rec.CROWD_US * 1000 and rec._crowd_ns("1", "250") == 250_000
    # out of range: default
    assert rec._crowd_ns("1", "-5") == rec._crowd_ns("1", "9" * 30) == rec.CROWD_US * 1000
    assert (rec.CROWD_PTX.endswith(b"\0") and b".entry kprof_crowd" in rec.CROWD_PTX
            and b"%globaltimer" in rec.CROWD_PTX)


def test_a_float_sum_in_another_order_is_said_not_reported():
    r = _run("atomics")
    assert r.status == "clean" and not r.findings
    assert "nondeterministic on purpose" in r.notes[1] and "launch 1 of count" in r.notes[1]


@pytest.mark.parametrize("mode, status, words", [
    ("same", "clean", ""),
    ("nokernel", "not-checked", "saw no kernel launched through the driver API"),
    ("norecorder", "not-checked", "never started in the program"),
    ("fails", "target-error", "exited with code 3"),
    ("unreadable", "not-checked", "could not read the program's launches: TypeError")])
def test_what_each_program_gets(mode, status, words):
    r = _run(mode)
    assert r.status == status and words in r.message, (r.status, r.message)


def test_kprof_sanitize_tool_values_on_a_program(monkeypatch, capsys):
    from kprof.commands import api

    monkeypatch.setattr(api, "require_gpu", lambda tool: None)
    code = cli.main(["sanitize", "--tool", "values", "--json", "--", sys.executable, str(FAKE),
                     "race"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and [f["kind"] for f in data["findings"]] == ["race"], data
    assert [t["tool"] for t in data["tools"]] == ["values"]


def test_the_crowd_kernels_ptx_assembles_for_old_and_new_gpus(tmp_path):
    """The driver compiles the crowd's PTX in the program; ptxas (where the toolkit is here) checks
    it for the oldest GPU CUDA 13 builds for and for the H200."""
    import shutil
    import subprocess

    from kprof import proc

    try:
        ptxas = str(Path(str(proc.find_tool("nvcc"))).with_name("ptxas"))
    except Exception:  # no toolkit here
        ptxas = shutil.which("ptxas")
    if ptxas is None or not Path(ptxas).exists():
        pytest.skip("no ptxas here (the CUDA toolkit's assembler)")
    import importlib.util

    spec = importlib.util.spec_from_file_location("launch_recorder",
                                                  Path(values.__file__).parents[2] / "hooks" / "launch_recorder.py")
    rec = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rec)
    ptx = tmp_path / "crowd.ptx"
    ptx.write_bytes(rec.CROWD_PTX.rstrip(b"\0"))
    for arch in ("sm_75", "sm_90"):
        done = subprocess.run([ptxas, f"-arch={arch}", str(ptx), "-o",
                               str(tmp_path / f"{arch}.cubin")],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr


def test_the_recorders_struct_offsets_are_the_headers(tmp_path):
    """The launch recorder reads CUPTI's callback data and the launches' parameters at fixed offsets
    (kprof/hooks/launch_recorder.py); the C compiler reads them from the toolkit's own headers."""
    import importlib.util
    import shutil
    import subprocess

    from kprof import proc

    cc = shutil.which("cc") or shutil.which("gcc")
    try:
        root = Path(str(proc.find_tool("nvcc"))).resolve().parent.parent
    except Exception:  # no toolkit here
        root = None
    include = next((d
                    for d in ([root / "include", root / "targets" / "x86_64-linux" / "include"]
                              if root else [])
                    if (d / "generated_cuda_meta.h").exists() and (d / "cupti_callbacks.h").exists()), None)
    if cc is None or include is None:
        pytest.skip("needs a C compiler and the CUDA toolkit's headers (generated_cuda_meta.h, "
                    "cupti_callbacks.h)")
    source = tmp_path / "offsets.c"
    # __CUDA_API_VERSION_INTERNAL: cuda.h then declares the _v1 types generated_cuda_meta.h's older
    # calls use
    source.write_text("#include <stdio.h>\n#include <stddef.h>\n#define "
                      "__CUDA_API_VERSION_INTERNAL 1\n#include <cuda.h>\n#include "
                      "<cupti_callbacks.h>\n#include <generated_cuda_meta.h>\nint main(void) {\n"
                      "  printf(\"%zu %zu %zu %zu %zu %zu %zu\\n\", offsetof(CUpti_CallbackData, "
                      "functionParams),\n    offsetof(cuLaunchKernel_params, f), "
                      "offsetof(cuLaunchKernel_params, kernelParams),\n    "
                      "offsetof(cuLaunchKernel_params, hStream), offsetof(cuLaunchKernelEx_params, "
                      "f),\n    offsetof(cuLaunchKernelEx_params, kernelParams), "
                      "offsetof(CUlaunchConfig, hStream));\n  return 0;\n}\n")
    binary = tmp_path / "offsets"
    built = subprocess.run([cc, f"-I{include}", str(source), "-o", str(binary)],
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    cb, f, kp, stream, ex_f, ex_kp, ex_stream = map(int,
                                                    subprocess.run([str(binary)], capture_output=True, text=True,
                                                                  timeout=30, check=True).stdout.split())
    spec = importlib.util.spec_from_file_location("launch_recorder",
                                                  Path(values.__file__).parents[2] / "hooks" / "launch_recorder.py")
    rec = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rec)
    assert cb == rec._CB_FUNCTION_PARAMS
    assert (rec._KERNEL_PARAMS["cuLaunchKernel"] == rec._KERNEL_PARAMS["cuLaunchKernel_ptsz"] == (f, kp))
    assert (rec._KERNEL_PARAMS["cuLaunchKernelEx"] == rec._KERNEL_PARAMS["cuLaunchKernelEx_ptsz"] == (ex_f, ex_kp))
    assert (rec._STREAM_AT["cuLaunchKernel"] == stream
            and rec._STREAM_AT["cuLaunchKernelEx"] == ex_stream)


def test_a_launch_is_read_typed_and_what_is_not_an_argument_is_left_out():
    from kprof.tools.programs.launchlog import Launch, read

    text = ('{"event": "recorder", "ok": true}\n'
            '{"event": "launch", "seq": 0, "kernel": "count", "site": "p.py:12", "args": [[0, 4, '
            '"ab"], [1, "x", "c"], 7]}\n{"event": "launch", "seq": "1", "kernel": "count", "args": '
            '[]}\n{"event": "launch", "seq": 2, "args": [[2, 8, 99]], "site": 3}\n')
    run = read(text)
    assert run.ok and run.launches == [Launch(0, "count", "p.py:12", ((0, 4, "ab"),)),
                                       Launch(2, "?", None, ((2, 8, "99"),))]
