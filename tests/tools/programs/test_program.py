"""kprof on the user's own program, without a GPU: the allocator switches, the exit-code shim, the
launch site and allocation from a record, the classification of a run, tool inference for
--from-xml,
kprof sanitize -- CMD and kprof profile -- CMD through stand-in tools, and kprof.range."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest

import kprof
from kprof import findings as findings_mod
from kprof import proc
from kprof.commands import cli
from kprof.errors import UsageError
from kprof.tools.programs import allocators, hostframes, ranks
from kprof.tools.programs.exitcode import Status
from kprof.tools.sanitizers import compute_sanitizer, sanitizer_xml, toolrun
from kprof.tools.sanitizers import compute_sanitizer as sanitize

DATA = "sanitizer"


# ---------------------------------------------------------------------------- allocator switches

def test_every_switch_is_set_and_said():
    env, notes = allocators.environment({"PATH": "/bin"})
    assert env["PYTORCH_NO_CUDA_MEMORY_CACHING"] == "1" and env["KPROF_CUPY_NO_POOL"] == "1"
    assert env["XLA_PYTHON_CLIENT_ALLOCATOR"] == "platform"
    assert env["PYTHONPATH"].split(":")[0] == str(allocators.HOOKS)
    assert len(notes) == len(allocators.SWITCHES) and any("PyTorch" in n for n in notes)


def test_a_switch_the_user_set_is_kept_and_pools_can_stay():
    env, notes = allocators.environment({"PYTORCH_NO_CUDA_MEMORY_CACHING": "0", "PYTHONPATH": "/mine"})
    assert env["PYTORCH_NO_CUDA_MEMORY_CACHING"] == "0" and env["PYTHONPATH"].endswith(":/mine")
    assert "kept as you set it" in notes[0]
    env, notes = allocators.environment({"PATH": "/bin"}, pools=True)
    assert "PYTORCH_NO_CUDA_MEMORY_CACHING" not in env and "left on" in notes[0]


def test_the_cupy_pools_go_off_when_cupy_is_imported(tmp_path):
    pkg = tmp_path / "cupy" / "cuda"
    pkg.mkdir(parents=True)
    (tmp_path / "cupy" / "__init__.py").write_text("from . import cuda\n")
    (pkg / "__init__.py").write_text("calls = []\ndef set_allocator(a): calls.append(('device', a))\n"
                                     "def set_pinned_memory_allocator(a): calls.append(('pinned', a))\n")
    (tmp_path / "sitecustomize.py").write_text("import os\nos.environ['NEXT_SITECUSTOMIZE_RAN'] = '1'\n")
    code = "import cupy, os; print(cupy.cuda.calls, os.environ.get('NEXT_SITECUSTOMIZE_RAN'))"
    env, _ = allocators.environment({"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[('device', None), ('pinned', None)] 1", "pools off, and the user's sitecustomize still ran"


# ---------------------------------------------------------------------------- the exit-code shim

@pytest.mark.parametrize("code, expected", [("raise SystemExit(3)", {"returncode": 3}), ("pass", {"returncode": 0}),
                                            ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
                                             {"returncode": -9, "signal": "SIGKILL"})])
def test_the_shim_records_the_programs_exit(tmp_path, code, expected):
    status = tmp_path / "s.json"
    done = proc.run([sys.executable, "-m", "kprof.tools.programs.exitcode", str(status), "--", sys.executable, "-c", code], timeout=60)
    assert json.loads(status.read_text()) == expected
    assert done.returncode == (expected["returncode"] if expected["returncode"] >= 0 else 128 + 9)


def test_the_shim_says_a_missing_program(tmp_path):
    status = tmp_path / "s.json"
    proc.run([sys.executable, "-m", "kprof.tools.programs.exitcode", str(status), "--", "no-such-program-kprof"], timeout=60)
    assert "no-such-program-kprof" in json.loads(status.read_text())["error"]


# ---------------------------------------------------------------------------- records of a program

STACK = """<record><kind>Precise</kind><hostStack>
  <frame><pc>0x1</pc><module>/usr/lib/x86_64-linux-gnu/libcuda.so.1</module></frame>
  <frame><func>_PyEval_EvalFrameDefault</func><module>/usr/bin/python3</module></frame>
  <frame><func>run</func><path>/venv/lib/python3.12/site-packages/triton/backends/nvidia/driver.py</path><line>444</line></frame>
  <frame><func>&lt;lambda&gt;</func><path>/venv/lib/python3.12/site-packages/triton/runtime/jit.py</path><line>390</line></frame>
  <frame><func>main</func><path>/home/me/proj/prog.py</path><line>33</line></frame>
  <frame><func>&lt;module&gt;</func><path>/home/me/proj/prog.py</path><line>38</line></frame>
  <frame><func>_run_code</func><path>&lt;frozen runpy&gt;</path><line>88</line></frame>
</hostStack></record>"""


def test_the_launch_site_is_the_innermost_frame_in_the_users_files():
    site = hostframes.launch_site(hostframes.frames(ET.fromstring(STACK)))
    assert site is not None and site.where() == "/home/me/proj/prog.py:33" and site.func == "main"


def test_kprofs_own_frames_are_never_the_launch_site(data_dir):
    """Recorded on the H200: kprof's runner launched it, so there is no user frame."""
    root = ET.parse(data_dir / DATA / "rec_oob.memcheck.xml").getroot()
    stack = hostframes.frames(root.find("record"))
    assert any(f.path and f.path.endswith("kprof/runner.py") for f in stack)
    assert (all(not hostframes.is_user_file(f.path or "") for f in stack if f.path and "kprof" in f.path))


TEXT = """========= Invalid __global__ write of size 4 bytes
=========     at scale+0x1b0 in /home/me/proj/prog.py:25
=========     by thread (104,0,0) in block (3,0,0)
=========     Address 0x7f3a5c000fa0 is out of bounds
=========     and is 0 bytes after the nearest allocation at 0x7f3a5c000000 of size 4,000 bytes
=========     Address 0x7f3a5c000000 is out of bounds
=========     and is 16 bytes before the nearest allocation at 0x7f3a5c000010 of size 512 bytes
"""


def test_the_allocation_an_access_missed_comes_from_the_text_report():
    found = sanitizer_xml.nearest_allocations(TEXT)
    assert (found[0x7F3A5C000FA0] == "immediately past the end of a 4,000-byte allocation at 0x7f3a5c000000 (the nearest one)")
    assert found[0x7F3A5C000000].startswith("16 bytes before the start of a 512-byte allocation")


def test_a_program_record_gets_launch_site_allocation_and_demangled_kernel(data_dir):
    xml = (data_dir / DATA / "rec_oob.memcheck.xml").read_text()
    rec = ET.fromstring(xml).find("record")
    address = int(rec.findtext("what/address"), 0)
    text = TEXT.replace("0x7f3a5c000fa0", hex(address))
    findings, _ = sanitizer_xml.parse_xml(xml, "memcheck", tool_text=text)
    f = findings[0]
    assert f.kind == "out-of-bounds-write" and f.buffer is None
    assert f.detail.startswith("immediately past the end of a 4,000-byte allocation")
    assert f.launch is None  # kprof's runner, not a user file


def test_a_trap_gets_a_message_a_person_can_act_on():
    xml = ("<ComputeSanitizerOutput><record><kind>Imprecise</kind><what><text></text>"
           "<error>Warp Illegal Instruction</error></what></record></ComputeSanitizerOutput>")
    (f,), _ = sanitizer_xml.parse_xml(xml, "memcheck")
    assert (f.kind == "hardware-exception" and "__trap()" in f.message and "Warp Illegal Instruction" in f.message)


@pytest.mark.parametrize("name, tool", [("rec_oob.memcheck.xml", "memcheck"), ("rec_race.racecheck_default.xml", "racecheck"),
                                        ("rec_uninit.initcheck.xml", "initcheck"), ("rec_sync.synccheck.xml", "synccheck")])
def test_from_xml_works_out_the_tool(data_dir, name, tool):
    assert sanitizer_xml.infer_tool((data_dir / DATA / name).read_text()) == tool
    assert sanitize.from_xml(data_dir / DATA / name, None).tool == tool


def test_from_xml_refuses_a_tool_its_records_contradict_and_asks_when_it_cannot_tell(data_dir, tmp_path):
    with pytest.raises(UsageError, match="--tool racecheck, but its records were written by memcheck"):
        sanitize.from_xml(data_dir / DATA / "rec_oob.memcheck.xml", "racecheck")
    clean = tmp_path / "clean.xml"
    clean.write_text("<ComputeSanitizerOutput/>")
    with pytest.raises(UsageError, match="give --tool"):
        sanitize.from_xml(clean, None)


# ---------------------------------------------------------------------------- classification

def _done(rc=0, out="", err="", timed_out=False):
    return proc.Completed(("cs",), None if timed_out else rc, out, err, 1.0, timed_out)


def test_a_program_that_fails_with_nothing_found_is_told_apart():
    r = toolrun.classify_program("memcheck", _done(3, err="Traceback...\nValueError: bad"), Status(3), [], [], 60, have_xml=True)
    assert (r.status == "target-error" and "exited with code 3" in r.message and "ValueError" in r.log)
    r = toolrun.classify_program("memcheck", _done(137), Status(-9, "SIGKILL"), [], [], 60, have_xml=True)
    assert r.status == "target-error" and "killed by SIGKILL" in r.message
    assert (toolrun.classify_program("memcheck", _done(0), Status(0), [], [], 60, have_xml=True).status == "clean")
    r = toolrun.classify_program("memcheck", _done(1, err="no driver"), None, [], [], 60, have_xml=False)
    assert r.status == "tool-error" and "before the program ran" in r.message
    r = toolrun.classify_program("memcheck", _done(timed_out=True), None, [], [], 5, have_xml=False)
    assert r.status == "timeout" and "whole process group" in r.message


def test_the_json_report_keeps_a_failed_programs_last_lines():
    from kprof import findings

    failed = toolrun.classify_program("memcheck", _done(3, err="Traceback...\nValueError: bad"), Status(3),
                                      [], [], 60, have_xml=True)
    clean = toolrun.classify_program("racecheck", _done(0, out="noise"), Status(0), [], [], 60, have_xml=True)
    tools = findings.to_json([failed, clean], "prog.py")["tools"]
    assert "ValueError: bad" in tools[0]["log"] and tools[1]["log"] == ""


# ---------------------------------------------------------------------------- end to end, stand-in
# tools

FAKE_SANITIZER = """#!{python}
import shutil, subprocess, sys
args = sys.argv[1:]
save = args[args.index("--save") + 1]
start = args.index({python!r})  # the program part: python -m kprof.tools.programs.exitcode STATUS -- CMD
xml = {xml!r}
if xml:
    shutil.copy(xml, save)
else:
    open(save, "w").write("<ComputeSanitizerOutput/>")
print({text!r})
code = subprocess.call(args[start:])
sys.exit(99 if xml else code)
"""


@pytest.fixture
def fake_sanitizer(tmp_path, monkeypatch):
    import kprof.child.device

    monkeypatch.setattr(kprof.child.device, "probe", lambda: None)
    # the run beside the tool's that counts the launches (kprof.tools.programs.launchcount): a
    # stand-in too, as if the program launched one kernel (the programs here launch none, and cupti
    # counts where it is installed)
    from kprof.tools.programs import coverage, launchcount

    monkeypatch.setattr(launchcount, "count", lambda *a, **k: coverage.Coverage(1, kernels=1, with_lines=1, alongside=True))

    def make(xml="", text=""):
        exe = tmp_path / "compute-sanitizer"
        exe.write_text(FAKE_SANITIZER.format(python=sys.executable, xml=str(xml), text=text))
        exe.chmod(0o755)
        monkeypatch.setenv("KPROF_COMPUTE_SANITIZER", str(exe))

    return make


def test_sanitize_a_program_through_a_stand_in_tool(fake_sanitizer, data_dir, capsys):
    fake_sanitizer(xml=data_dir / DATA / "rec_race.racecheck_default.xml")
    code = cli.main(["sanitize", "--tool", "racecheck", "--json", "--", sys.executable, "-c", "print('hello')"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["findings"] and data["findings"][0]["kind"].startswith("race")
    assert any("PYTORCH_NO_CUDA_MEMORY_CACHING=1" in n for n in data["notes"])


def test_a_clean_program_and_a_failing_one(fake_sanitizer, capsys):
    fake_sanitizer()
    assert cli.main(["sanitize", "--tool", "memcheck", "--", sys.executable, "-c", "pass"]) == 0
    assert "no findings" in capsys.readouterr().out
    code = cli.main(["sanitize", "--tool", "memcheck", "--", sys.executable, "-c", "import sys; sys.exit('boom')"])
    out = capsys.readouterr().out
    assert code == 6 and "TARGET-ERROR" in out and "exited with code 1" in out and "boom" in out


def test_a_program_that_launched_no_kernel_is_not_checked_under_every_tool(fake_sanitizer, monkeypatch, capsys):
    from kprof.tools.programs import coverage, launchcount

    fake_sanitizer()
    counted: list[list[str]] = []

    def count(cmd, **kw):
        counted.append(cmd)
        return coverage.Coverage(0, alongside=True, pools_off=kw.get("pools_off"))

    monkeypatch.setattr(launchcount, "count", count)
    code = cli.main(["sanitize", "--json", "--", sys.executable, "-c", "pass"])  # the four tools
    out, err = capsys.readouterr()
    assert out, err
    data = json.loads(out)
    assert code == 8 and [t["status"] for t in data["tools"]] == ["not-checked"] * 4
    assert (data["tools"][0]["checked"]["launches"] == 0 and data["tools"][0]["checked"]["pools_off"] is True)
    assert counted == [[sys.executable, "-c", "pass"]], "one count for all the tools"


def test_the_python_api_returns_the_typed_report(fake_sanitizer):
    fake_sanitizer()
    report = kprof.sanitize([sys.executable, "-c", "pass"], tools=["memcheck", "initcheck"])
    assert report.clean and [r.tool for r in report.results] == ["memcheck", "initcheck"]
    assert report.to_json()["clean"] and report.to_sarif()["version"] == "2.1.0"
    with pytest.raises(UsageError, match="unknown tool"):
        kprof.sanitize([sys.executable, "-c", "pass"], tools=["valuez"])


FAKE_NCU = """#!{python}
import sys
args = sys.argv[1:]
assert "--launch-count" in args and args[args.index("--kernel-name") + 1] == "regex:scale"
print(open({csv!r}).read())
"""


def test_profile_a_program_through_a_stand_in_ncu(tmp_path, monkeypatch, data_dir, capsys):
    import kprof.child.device

    monkeypatch.setattr(kprof.child.device, "probe", lambda: None)
    exe = tmp_path / "ncu"
    exe.write_text(FAKE_NCU.format(python=sys.executable, csv=str(data_dir / "ncu" / "tiled_matmul.ncu_full_raw.txt")))
    exe.chmod(0o755)
    monkeypatch.setenv("KPROF_NCU", str(exe))
    code = cli.main(["profile", "--kernel", "scale", "--arch", "sm_90", "--json", "--", "python", "prog.py"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["kernels"][0]["kernel"].startswith("tiled_matmul#0")
    assert data["kernels"][0]["duration_s"] == pytest.approx(251.52e-6)


FAKE_NCU_EXPORTING = """#!{python}
import shutil, sys
args = sys.argv[1:]
if "--import" in args:  # the saved report read back as a table
    assert args[args.index("--page") + 1] == "raw"
    print(open(args[args.index("--import") + 1]).read())
    sys.exit(0)
assert "--csv" not in args and args[args.index("--force-overwrite") + 1:] == ["python", "prog.py"], args
shutil.copy({csv!r}, args[args.index("--export") + 1])  # ncu writes the report, and prints no table
"""


def test_save_report_keeps_a_programs_report_and_reads_it_back(tmp_path, monkeypatch, data_dir, capsys, as_if_a_gpu):
    """kprof profile --save-report DIR -- python prog.py: ncu exports DIR/prog.ncu-rep (the script's
    name), and the profiles come from it read back (it was silently left out before)."""
    exe = tmp_path / "ncu"
    exe.write_text(FAKE_NCU_EXPORTING.format(python=sys.executable,
                                             csv=str(data_dir / "ncu" / "tiled_matmul.ncu_full_raw.txt")))
    exe.chmod(0o755)
    monkeypatch.setenv("KPROF_NCU", str(exe))
    code = cli.main(["profile", "--save-report", str(tmp_path / "reports"), "--arch", "sm_90", "--json", "--",
                     "python", "prog.py"])
    out, err = capsys.readouterr()
    assert code == 0 and (tmp_path / "reports" / "prog.ncu-rep").is_file(), err
    data = json.loads(out)
    assert data["kernels"][0]["duration_s"] == pytest.approx(251.52e-6)


def test_a_programs_report_is_named_for_its_script():
    from kprof.measure.profiling import program_report_name

    assert program_report_name(["torchrun", "--nproc_per_node", "2", "train.py"]) == "train"
    assert program_report_name(["python", "-c", "print(1)"]) == "python"
    assert program_report_name(["./my app", "x"]) == "my_app"
    assert program_report_name(["python", "../.hidden.py"]) == "hidden"


FAKE_NCU_FOLLOWING = """#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
assert args[args.index("--target-processes") + 1] == "all"
cmd = args[args.index("base") + 1:]  # the program, after --print-units base
subprocess.run(cmd, check=True)  # its ranks mark themselves (kprof's hooks on PYTHONPATH)
folder = json.loads(os.environ["KPROF_RANK_WRAP"])["folder"]
pids = sorted(json.load(open(os.path.join(folder, f)))["pid"] for f in os.listdir(folder))
lines = open({csv!r}).read().splitlines()
row = next(i for i, line in enumerate(lines) if line.startswith('"0","1081"'))
lines[row:row + 1] = [lines[row].replace('"1081"', f'"{{pid}}"', 1) for pid in pids]  # a launch in each rank
print("\\n".join(lines))
"""

FAKE_TORCHRUN = """#!/bin/sh
# two ranks, as torchrun starts them: RANK in each one's environment
RANK=0 {python} -c "pass" && RANK=1 {python} -c "pass"
"""


def test_profile_of_a_multi_process_job_says_each_kernels_rank(tmp_path, monkeypatch, data_dir, capsys):
    """``kprof profile -- torchrun ...``: ncu follows every process; each Python rank marks its pid
    (kprof's hook, no tool started), so each profiled launch says its rank and the ranking which
    ranks launched each kernel."""
    import kprof.child.device

    monkeypatch.setattr(kprof.child.device, "probe", lambda: None)
    ncu, torchrun = tmp_path / "ncu", tmp_path / "torchrun"
    ncu.write_text(FAKE_NCU_FOLLOWING.format(python=sys.executable, csv=str(data_dir / "ncu" / "tiled_matmul.ncu_full_raw.txt")))
    torchrun.write_text(FAKE_TORCHRUN.format(python=sys.executable))
    ncu.chmod(0o755)
    torchrun.chmod(0o755)
    monkeypatch.setenv("KPROF_NCU", str(ncu))
    code = cli.main(["profile", "--arch", "sm_90", "--json", "--", str(torchrun), "train.py"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and [k["rank"] for k in data["kernels"]] == [0, 1]
    assert data["ranking"][0]["ranks"] == [0, 1] and data["ranking"][0]["launches"] == 2
    code = cli.main(["profile", "--arch", "sm_90", "--", str(torchrun), "train.py"])
    out = capsys.readouterr().out
    assert code == 0 and "RANKS" in out and "0,1" in out
    # each kernel's own section says its rank
    assert "  rank 0  [ncu]" in out and "  rank 1  [ncu]" in out


def test_rank_markers_give_each_pid_its_rank_and_pass_over_what_is_not_kprofs(tmp_path):
    (tmp_path / "rank0.json").write_text(json.dumps({"rank": 0, "pid": 101, "argv": []}))
    (tmp_path / "rank1.json").write_text(json.dumps({"rank": 1, "pid": 102}))
    (tmp_path / "rank2.json").write_text("{torn")
    (tmp_path / "rank3.json").write_text(json.dumps(["not", "a", "marker"]))
    assert ranks.pids(tmp_path) == {101: 0, 102: 1}
    assert (json.loads(ranks.mark_env(tmp_path)["KPROF_RANK_WRAP"]) == {"argv": [], "folder": str(tmp_path)})


def test_program_argv_for_ncu_picks_kernels_and_ranges():
    from kprof.tools.nsight import ncu

    argv = ncu.program_argv("ncu", kernel="add.*", nvtx_range="step", launch_skip=2, launch_count=3)
    assert argv[argv.index("--kernel-name") + 1] == "regex:add.*"
    assert ("step/" in argv and "kprof@step/" in argv and argv[argv.index("--launch-count") + 1] == "3")


# ---------------------------------------------------------------------------- the CLI without a GPU

def test_help_shows_the_program_form(capsys):
    for command in ("sanitize", "profile"):
        assert cli.main([command, "--help"]) == 0
        assert f"kprof {command} [options] -- CMD [ARG...]" in capsys.readouterr().out


@pytest.mark.parametrize("argv, code, message", [
    (["run", "tiled_matmul", "--", "python", "x.py"], 2, "`-- CMD` is for kprof sanitize and kprof profile"),
    (["sanitize", "--"], 2, "name the program after --"),
    (["sanitize", "tiled_matmul", "--", "python", "x.py"], 2, "not both"),
])
def test_program_form_errors(capsys, argv, code, message):
    assert cli.main(argv) == code
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_no_tool_or_no_gpu_is_one_line(as_if_a_gpu, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("KPROF_COMPUTE_SANITIZER", str(tmp_path / "missing"))
    assert cli.main(["sanitize", "--", "python", "x.py"]) == 3
    assert capsys.readouterr().err.count("\n") == 1
    exe = tmp_path / "cs"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    monkeypatch.setenv("KPROF_COMPUTE_SANITIZER", str(exe))
    import kprof.child.device

    monkeypatch.setattr(kprof.child.device, "probe", lambda: "no CUDA driver: cuInit -> libcuda not found")
    assert cli.main(["sanitize", "--", "python", "x.py"]) == 5
    err = capsys.readouterr().err
    assert "no CUDA driver" in err and err.count("\n") == 1


# ---------------------------------------------------------------------------- kprof.range

def test_range_without_nvtx_is_a_cheap_no_op(monkeypatch):
    import kprof.annotate as annotate

    monkeypatch.setattr(annotate, "_nvtx", False)

    @kprof.range("step")
    def step(x):
        return x + 1

    with kprof.range("outer"):
        assert step(1) == 2
    with pytest.raises(ValueError, match="without '/'"):
        kprof.range("a/b")


def test_range_pushes_and_pops_in_domain_kprof(monkeypatch):
    import kprof.annotate as annotate

    calls = []

    class FakeNvtx:
        def push_range(self, name, domain):
            calls.append(("push", name, domain))

        def pop_range(self, domain):
            calls.append(("pop", domain))

    monkeypatch.setattr(annotate, "_nvtx", FakeNvtx())
    with kprof.range("attention"):
        pass
    assert calls == [("push", "attention", "kprof"), ("pop", "kprof")]


def test_import_kprof_range_is_light():
    code = textwrap.dedent("""
        import sys
        before = set(sys.modules)  # cuda-bindings 12.x's .pth file imports the bare `cuda` namespace at start
        import kprof
        kprof.range
        print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in ('cuda', 'nvtx', 'numpy')))
    """)
    assert (subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]")


# ---------------------------------------------------------------------------- recorded on an H200

PROGRAMS = "programs"


def test_recorded_triton_missing_mask(data_dir):
    """compute-sanitizer memcheck over examples/triton_scale.py with PyTorch's pool off (text beside
    the XML)."""
    r = sanitize.from_xml(data_dir / PROGRAMS / "triton_scale.memcheck.xml", None)
    assert r.tool == "memcheck" and len(r.findings) == 1, [f.to_dict() for f in r.findings]
    f = r.findings[0]
    assert ((f.kind, f.kernel, f.location()) == ("out-of-bounds-write", "scale", "triton_scale.py:27"))
    assert f.launch.endswith("examples/triton_scale.py:34"), "the user's line, past torch's and triton's frames"
    assert (f.detail == "1 byte past the end of a 4,000-byte allocation at 0x7f5612801200 (the nearest one)")
    assert f.count == 12 and any("stopped the kernel at its first error" in n for n in r.notes)


def test_recorded_pool_hides_the_same_bug(data_dir):
    """The same program with PyTorch's caching allocator on: memcheck reports nothing."""
    assert (sanitize.from_xml(data_dir / PROGRAMS / "triton_scale.pool.xml", "memcheck").status == "clean")
    assert (sanitize.from_xml(data_dir / PROGRAMS / "cupy_shift.pool.xml", "memcheck").status == "clean")


def test_recorded_cupy_read_past_the_end(data_dir, tmp_path):
    """Read where the program is not (another machine): the tool's own place, line 5 of CuPy's copy
    of the source (tests/tools/sanitizers/test_embedded.py has it read beside the program:
    cupy_shift.py:18)."""
    saved = tmp_path / "cupy_shift.memcheck.xml"
    saved.write_text((data_dir / PROGRAMS / "cupy_shift.memcheck.xml").read_text().replace("/work/main/", "/elsewhere/"))
    saved.with_suffix(".txt").write_text((data_dir / PROGRAMS / "cupy_shift.memcheck.txt").read_text())
    r = sanitize.from_xml(saved, None)
    (f,) = r.findings
    assert ((f.kind, f.kernel, f.line) == ("out-of-bounds-read", "forward_diff", 5) and f.file.endswith(".cubin.cu"))
    assert f.launch.endswith("examples/cupy_shift.py:30"), "past CuPy's Cython frames (cupy/cuda/function.cpp)"
    assert "past the end of a 4,000-byte allocation" in f.detail


def test_recorded_cuda_python_race_is_one_headline(data_dir):
    r = sanitize.from_xml(data_dir / PROGRAMS / "cuda_python_sum.racecheck.xml", None)
    (f,) = r.findings
    assert (f.kind.startswith("race-") and f.location() == "block_sum.cu:10" and f.kernel == "block_sum")
    assert f.launch.endswith("examples/cuda_python_sum.py:54")
    assert f.launches == 1 and f.to_dict()["grids"] == [1]


def test_records_from_several_launches_merge_and_count_the_launches(data_dir, tmp_path):
    """The recorded race, as if the same launch site had run it twice more (grid ids 2 and 3)."""
    import re

    text = (data_dir / PROGRAMS / "cuda_python_sum.racecheck.xml").read_text()
    records = re.findall(r"<record>.*?</record>", text, flags=re.S)
    more = "".join(r.replace("<gridid>1</gridid>", f"<gridid>{g}</gridid>") for g in (2, 3) for r in records)
    path = tmp_path / "three.xml"
    path.write_text(text.replace("</ComputeSanitizerOutput>", more + "</ComputeSanitizerOutput>"))
    once = sanitize.from_xml(data_dir / PROGRAMS / "cuda_python_sum.racecheck.xml", None).findings[0]
    (f,) = sanitize.from_xml(path, None).findings
    assert f.launches == 3 and f.count == 3 * once.count
    sarif = findings_mod.to_sarif([sanitize.from_xml(path, None)], "test")
    assert f"[{f.count} records from 3 launches]" in json.dumps(sarif)


def test_folding_keeps_one_headline_per_place():
    from kprof.findings import Access, Finding, fold_same_place

    def race(kind, count, message):
        return Finding("racecheck", kind, "hist", "h.cu", 7, thread=None, block=None, count=count, message=message, other=Access("h.cu", 7, "write"))

    folded = fold_same_place([race("race-raw", 5, "Race condition"), race("race-raw", 3, "Potential RAW hazard detected"),
                              race("race-waw", 2, "Potential WAW hazard detected")])
    assert len(folded) == 1 and folded[0].count == 10 and folded[0].kind == "race-raw"
    assert "race-waw (2 records" in folded[0].detail


def test_consequences_are_grouped_under_the_bug_that_explains_them():
    """tiled_matmul without its bounds check, as seen on an H200: one memcheck write past C, and the
    values detector's race, uninitialized-read and wrong-result on C that follow from it."""
    from kprof.findings import Finding
    from kprof.results import render_sanitize
    from kprof.tools.sanitizers.checkers import explain
    from kprof.tools.sanitizers.toolrun import ToolResult

    oob = Finding("memcheck", "out-of-bounds-write", "tiled_matmul_no_bounds", "/k/t.cu", 15, thread=(3, 0, 0), block=(1, 2, 0), count=9,
                  message="Invalid __global__ write", buffer="C", detail="4 bytes past the end of C")
    vals = [Finding("values", k, "tiled_matmul_no_bounds", "/k/t.cu", None, thread=None, block=None, count=5, message=f"{k} on C", buffer="C")
            for k in ("race", "uninitialized-read", "wrong-result")]
    other = Finding("values", "wrong-result", "tiled_matmul_no_bounds", "/k/t.cu", None, thread=None, block=None, count=1, message="D", buffer="D")
    results = explain([ToolResult("memcheck", "findings", [oob], 1.0), ToolResult("values", "findings", vals + [other], 1.0)])
    marked = results[1].findings
    assert (all(f.extra.explained_by == "memcheck out-of-bounds-write at t.cu:15" for f in marked[:3]))
    assert marked[3].extra.explained_by is None
    text = render_sanitize.sanitize_report(results)
    assert text.count("consequence (values)") == 3
    headlines = [ln for ln in text.splitlines() if ln.startswith("- ")]
    assert len(headlines) == 2 and headlines[1].endswith(": D"), "the cause, and the wrong result on D it does not explain"


@pytest.mark.parametrize("argv, message", [
    (["--size", "M=1"], "kprof sanitize -- --size: that is an option, not a program"),
    (["no-such-program-kprof"], "no such program on PATH"),
    (["./no/such/file.py"], "no/such/file.py: no such file"),
])
def test_a_program_that_cannot_run_is_one_line_before_any_tool(argv, message, capsys):
    """Found on the GPU by the fuzz test: `kprof sanitize -- --size M=1` ran four tools on
    '--size'."""
    assert cli.main(["sanitize", "--", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and err.count("\n") == 0, err
    assert cli.main(["profile", "--", *argv]) == 2
    assert "kprof profile -- " in capsys.readouterr().err


def test_a_script_that_is_not_executable_is_told_to_use_its_interpreter(tmp_path, capsys):
    script = tmp_path / "prog.py"
    script.write_text("print(1)\n")
    assert cli.main(["sanitize", "--", str(script)]) == 2
    assert f"kprof sanitize -- python {script}" in capsys.readouterr().err


@pytest.mark.parametrize("name, limit, cut", [
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >"
     "(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)", 100,
     "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<…>, std::array<…> >"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >"
     "(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)#3", 80, "at::native::vectorized_elementwise_kernel<…>#3"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
     "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, const float*, int)", 80,
     "at::native::(anonymous namespace)::cunn_SoftMaxForward<…>"),
    ("block_sum", 80, "block_sum"),
    ("add_kernel(float*, float*, int)", 80, "add_kernel"),
    ("k" * 120, 80, "k" * 79 + "…"),
])
def test_a_kernel_name_is_cut_to_a_report_line(name, limit, cut):
    from kprof.demangle import short

    assert short(name, limit) == cut and len(cut) <= limit + 2


def test_a_program_the_tool_never_saw_is_not_checked_never_clean():
    """compute-sanitizer's words when the program made no CUDA call it could instrument (recorded on
    an H200: the CUDA 12 wheel's tool on the 13.0 driver, and a program with no kernel): NOT
    CHECKED, not clean and not a parse failure, with its own exit code."""
    from kprof.errors import EXIT_NOT_CHECKED
    from kprof.results import render_sanitize

    out = ("========= COMPUTE-SANITIZER\n========= Error: Target application terminated before first instrumented "
           "API call\n========= Error: couldn't find exit code.")
    r = toolrun.classify_program("memcheck", _done(99, out=out), Status(0), [], [], 60, have_xml=False)
    assert r.status == "not-checked" and not r.ok and "checked nothing" in r.message
    text = render_sanitize.sanitize_report([r])
    assert "NOT CHECKED" in text and "not everything was checked" in text
    assert EXIT_NOT_CHECKED == 8
    # A program that failed before its first CUDA call: its failure is what to fix (seen on an H200,
    # 31266b6: `python -c "raise SystemExit(...)"` under memcheck)
    failed = toolrun.classify_program("memcheck", _done(99, out=out), Status(1), [], [], 60, have_xml=False)
    assert (failed.status == "target-error" and "exited with code 1 before any CUDA call" in failed.message)


def test_kprofs_modules_are_known_in_either_layout_wherever_kprof_was_installed():
    """A report recorded on another machine names kprof's frames by that machine's paths, flat (an
    older kprof: kprof/device.py) or in the stage folders (kprof/child/device.py): neither is the
    user's."""
    from kprof.tools.programs import hostframes

    for path in ("/elsewhere/kprof/device.py", "/elsewhere/kprof/child/device.py", "/elsewhere/kprof/runner.py",
                 "/elsewhere/kprof/tools/sanitizers/values.py"):
        assert not hostframes.is_user_file(path), path
    for path in ("/home/u/kprof/mytest.py", "/home/u/proj/kprof/child/mine.py", "/home/u/kprof/data/device.py"):
        assert hostframes.is_user_file(path), path


def test_the_shims_record_is_read_typed(tmp_path):
    from kprof.tools.programs import exitcode

    status = tmp_path / "s.json"
    status.write_text('{"returncode": -11, "signal": "SIGSEGV"}')
    got = exitcode.read_status(status)
    assert got == Status(-11, "SIGSEGV") and got.how() == "was killed by SIGSEGV"
    status.write_text('{"returncode": null, "error": "prog: No such file or directory"}')
    assert exitcode.read_status(status).how() == "prog: No such file or directory"
    status.write_text('{"returncode": true}')
    assert exitcode.read_status(status) == Status(None)
    status.write_text("[1]")
    assert (exitcode.read_status(status) is None and exitcode.read_status(tmp_path / "none.json") is None)
    assert Status(3).how() == "exited with code 3"


# ---------------------------------------------------------------------------- initcheck's frames in
# a program

def test_initcheck_in_a_program_keeps_host_frames_only_unless_asked():
    # device frames cost 51 s of 72 on one half GEMM's output read by PyTorch's copy (an H200,
    # 2025.3.1)
    argv = " ".join(compute_sanitizer.build_argv("cs", "initcheck", "x.xml", program=True))
    assert "--show-backtrace host" in argv
    asked = compute_sanitizer.build_argv("cs", "initcheck", "x.xml", program=True, device_frames=True)
    assert "--show-backtrace" not in asked  # the tool's default: host and device frames
    for tool in ("memcheck", "racecheck", "synccheck"):
        assert ("--show-backtrace" not in compute_sanitizer.build_argv("cs", tool, "x.xml", program=True))


INITCHECK_IN_HEADER = """<?xml version="1.0" encoding="utf-8"?><ComputeSanitizerOutput><record><kind>Initcheck</kind>
<who><threadIdx><x>0</x><y>0</y><z>0</z></threadIdx><blockIdx><x>0</x><y>0</y><z>0</z></blockIdx></who>
<what><text>Uninitialized __global__ memory read of size 4 bytes</text><address>0x7f0000000200</address><size>4</size></what>
<where><func>__ldg</func><path>/usr/local/cuda/include/sm_32_intrinsics.hpp</path><line>95</line></where>
{device}</record></ComputeSanitizerOutput>"""
DEVICE_FRAMES = """<deviceStack><frame><func>__ldg</func><path>/usr/local/cuda/include/sm_32_intrinsics.hpp</path>
<line>95</line></frame><frame><func>scale</func><path>/src/scale.cu</path><line>12</line></frame></deviceStack>"""

TWO_RUN_SANITIZER = """#!{python}
import json, subprocess, sys
args = sys.argv[1:]
save = args[args.index("--save") + 1]
host_only = "--show-backtrace" in args and args[args.index("--show-backtrace") + 1] == "host"
with open({calls!r}, "a") as f:
    f.write(json.dumps(host_only) + "\\n")
open(save, "w").write({xml!r}.replace("{{device}}", "" if host_only else {frames!r}))
subprocess.call(args[args.index({python!r}):])
sys.exit(99)
"""


def test_a_read_inside_a_cuda_header_runs_initcheck_again_with_device_frames(fake_sanitizer, tmp_path, monkeypatch):
    fake_sanitizer()
    calls = tmp_path / "calls.jsonl"
    exe = tmp_path / "compute-sanitizer"
    exe.write_text(TWO_RUN_SANITIZER.format(python=sys.executable, calls=str(calls), xml=INITCHECK_IN_HEADER,
                                            frames=DEVICE_FRAMES))
    exe.chmod(0o755)
    result = compute_sanitizer.run_program([sys.executable, "-c", "pass"], "initcheck", timeout=60)
    assert [json.loads(line) for line in calls.read_text().splitlines()] == [True, False]
    f = result.findings[0]
    assert ((f.file, f.line) == ("/src/scale.cu", 12) and f.extra.reported_at.endswith("sm_32_intrinsics.hpp:95"))
    assert any("device frames" in n for n in result.notes)


def test_a_read_at_the_users_line_runs_initcheck_once(fake_sanitizer, tmp_path):
    fake_sanitizer()
    calls = tmp_path / "calls.jsonl"
    exe = tmp_path / "compute-sanitizer"
    xml = INITCHECK_IN_HEADER.replace("<func>__ldg</func><path>/usr/local/cuda/include/sm_32_intrinsics.hpp</path>"
                                      "<line>95</line></where>", "<func>scale</func><path>/src/scale.cu</path><line>12</line></where>")
    exe.write_text(TWO_RUN_SANITIZER.format(python=sys.executable, calls=str(calls), xml=xml, frames=DEVICE_FRAMES))
    exe.chmod(0o755)
    result = compute_sanitizer.run_program([sys.executable, "-c", "pass"], "initcheck", timeout=60)
    assert calls.read_text().splitlines() == ["true"] and result.findings[0].line == 12
