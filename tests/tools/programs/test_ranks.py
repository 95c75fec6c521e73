"""A multi-process job under the tools, rank by rank (kprof.tools.programs.ranks,
kprof/hooks/rank_wrap.py), without a GPU: a stand-in launcher named torchrun that starts two Python
ranks with RANK set, MPICH's own mpiexec (pip's mpich, the dev extra's) with PMI_RANK, and a
stand-in compute-sanitizer that runs its target and saves a record for the rank the test seeds a bug
in. Each finding carries its rank; a rank that dies or hangs before its report is named; the
launcher itself and a program without ranks are never wrapped."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from kprof.tools.programs import ranks
from kprof.tools.sanitizers import compute_sanitizer, toolrun

FAKE_TOOL = r'''
import os, subprocess, sys
args = sys.argv[1:]
save, log = args[args.index("--save") + 1], args[args.index("--log-file") + 1]
assert "--error-exitcode" not in args, args  # a rank keeps its own exit code
cmd = args[args.index(sys.executable):]
rank = os.environ.get("RANK") or os.environ.get("PMI_RANK", "?")  # torchrun's, MPICH's
if os.environ.get("FAKE_HANG_RANK") == rank:
    import time; time.sleep(60)
if os.environ.get("FAKE_DIE_RANK") == rank:
    os._exit(9)
code = subprocess.call(cmd)
bug = os.environ.get("FAKE_BUG_RANK") == rank
record = ("<record><kind>Precise</kind><who><threadIdx><x>7</x><y>0</y><z>0</z></threadIdx><blockIdx><x>3</x>"
          "<y>0</y><z>0</z></blockIdx></who><what><text>Invalid __global__ write of size 4 bytes</text>"
          "<space>__global__</space><size>4</size><direction>write</direction><error>out of bounds</error>"
          "<address>0x7f0000001000</address></what><where><func>scale</func><path>/src/scale.cu</path>"
          "<line>27</line></where></record>") if bug else ""
open(save, "w").write("<?xml version='1.0'?><ComputeSanitizerOutput>" + record + "</ComputeSanitizerOutput>")
open(log, "w").write(f"========= rank {rank} checked\n")
sys.exit(code)
'''

FAKE_TORCHRUN = r'''
import os, subprocess, sys
n = int(sys.argv[sys.argv.index("--nproc_per_node") + 1])
prog = sys.argv[sys.argv.index("--nproc_per_node") + 2:]
procs = [subprocess.Popen([sys.executable, *prog], env={**os.environ, "RANK": str(r), "WORLD_SIZE": str(n)})
         for r in range(n)]
sys.exit(max(p.wait() for p in procs))
'''


@pytest.fixture
def job(tmp_path, monkeypatch):
    tool = tmp_path / "compute-sanitizer"
    tool.write_text(f"#!{sys.executable}\n{FAKE_TOOL}")
    tool.chmod(0o755)
    launcher = tmp_path / "torchrun"
    launcher.write_text(f"#!{sys.executable}\n{FAKE_TORCHRUN}")
    launcher.chmod(0o755)
    prog = tmp_path / "prog.py"
    prog.write_text("import os\nprint('rank', os.environ['RANK'], 'wrapped', "
                    "os.environ.get('KPROF_RANK_WRAPPED'))\n")
    monkeypatch.setenv("KPROF_COMPUTE_SANITIZER", str(tool))
    return [str(launcher), "--nproc_per_node", "2", str(prog)]


def _mpiexec() -> str:
    """MPICH's mpiexec from pip (the dev extra installs ``mpich`` beside this Python), else one on
    PATH."""
    import shutil

    found = shutil.which("mpiexec",
                         path=os.pathsep.join([str(Path(sys.executable).parent),
                                               os.environ.get("PATH", "")]))
    if not found:
        pytest.skip("no mpiexec: pip install mpich (the dev extra has it)")
    return found


def test_an_mpich_job_as_its_docs_type_it_is_checked_rank_by_rank(job, tmp_path, monkeypatch):
    """``kprof sanitize -- mpiexec -n 2 python prog.py`` with MPICH's real launcher (Hydra): each
    rank, told by its PMI_RANK, restarts under the tool with its own report; the finding carries
    rank 1, both ranks ran wrapped."""
    prog = tmp_path / "mpi_prog.py"
    # one write a line: the ranks' output reaches mpiexec's side by side, and print's pieces
    # interleave
    prog.write_text("import os\nos.write(1, f\"rank {os.environ['PMI_RANK']} wrapped "
                    "{os.environ.get('KPROF_RANK_WRAPPED')}\\n\".encode())\n")
    cmd = [_mpiexec(), "-n", "2", sys.executable, str(prog)]
    assert ranks.launcher_of(cmd) == "mpirun"
    monkeypatch.setenv("FAKE_BUG_RANK", "1")
    r = compute_sanitizer.run_program(cmd, "memcheck", timeout=60)
    assert r.status == "findings", (r.message, r.notes, r.log)
    (f,) = r.findings
    assert f.rank == 1 and f.kernel == "scale" and f.line == 27
    assert r.notes[0] == "2 rank(s), each under memcheck on its own", r.notes
    assert "rank 0 wrapped 1" in r.log and "rank 1 wrapped 1" in r.log, r.log
    monkeypatch.delenv("FAKE_BUG_RANK")
    clean = compute_sanitizer.run_program(cmd, "memcheck", timeout=60)
    assert clean.status == "clean" and not clean.findings, (clean.message, clean.notes)


def test_kprof_sanitize_of_an_mpich_job_as_typed_names_the_rank(job, tmp_path, monkeypatch, capsys):
    """``kprof sanitize --tool memcheck -- mpiexec -n 2 python prog.py``, the command as a user
    types it (the GPU and the launch count stood in for): exit 1, the finding at rank 1 in the JSON
    and in the text."""
    import kprof.child.device
    from kprof.commands import cli
    from kprof.tools.programs import coverage, launchcount

    monkeypatch.setattr(kprof.child.device, "probe", lambda: None)
    monkeypatch.setattr(launchcount, "count", lambda *a,
                        **k: coverage.Coverage(2, kernels=1, with_lines=1, alongside=True))
    prog = tmp_path / "mpi_prog.py"
    prog.write_text("import os\nos.write(1, b'ran\\n')\n")
    monkeypatch.setenv("FAKE_BUG_RANK", "1")
    argv = ["sanitize", "--tool", "memcheck", "--json", "--", _mpiexec(), "-n", "2", sys.executable,
            str(prog)]
    assert cli.main(argv) == 1
    data = json.loads(capsys.readouterr().out)
    assert [f["rank"] for f in data["findings"]] == [1] and data["findings"][0]["line"] == 27
    assert cli.main(argv[:3] + argv[4:]) == 1 and "rank 1: memcheck" in capsys.readouterr().out


def test_an_mpich_job_past_its_time_leaves_no_rank_running(job, tmp_path):
    """A job past its --timeout (a Ctrl-C takes the same stop): MPICH's proxy, in a session of its
    own, is outside the launcher's process group; kprof stops every process below the launcher, and
    no rank runs on."""
    prog = tmp_path / "slow.py"
    prog.write_text("import os, time\nopen(os.path.join(os.path.dirname(__file__), 'pid' + "
                    "os.environ['PMI_RANK']), 'w').write(str(os.getpid()))\ntime.sleep(60)\n")
    r = compute_sanitizer.run_program([_mpiexec(), "-n", "2", sys.executable, str(prog)],
                                      "memcheck", timeout=4)
    assert r.status == "timeout", (r.message, r.notes)
    pids = [int((tmp_path / f"pid{rank}").read_text()) for rank in (0, 1)]

    def runs(pid: int) -> bool:  # a zombie waits for its parent's wait: it runs nothing
        try:
            return " Z " not in Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False

    def running() -> list[int]:
        return [p for p in pids if runs(p)]

    deadline = time.monotonic() + 5
    while running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not running(), running()


def test_an_mpich_jobs_ranks_say_who_they_are_for_the_profile(tmp_path):
    """``kprof profile -- mpiexec -n 2 python prog.py``: ncu follows every process, and each rank,
    with the profile's environment (kprof's hooks, ``ranks.mark_env``), writes its pid under its
    PMI_RANK: the pids the ranks print."""
    import subprocess

    from kprof.tools.programs import allocators

    prog = tmp_path / "who.py"
    prog.write_text("import os\nos.write(1, f\"{os.environ['PMI_RANK']} "
                    "{os.getpid()}\\n\".encode())  # a line a write\n")
    # as kprof.measure.profiling
    env = {**allocators.with_hooks(dict(os.environ)), **ranks.mark_env(tmp_path)}
    done = subprocess.run([_mpiexec(), "-n", "2", sys.executable, str(prog)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    printed = {int(pid): int(rank)
               for rank, pid in (line.split() for line in done.stdout.splitlines())}
    assert ranks.pids(tmp_path) == printed and sorted(printed.values()) == [0, 1]


def test_launchers_are_told_from_programs():
    assert ranks.launcher_of(["torchrun", "--nproc_per_node", "2", "train.py"]) == "torchrun"
    assert (ranks.launcher_of(["/usr/bin/python3", "-m", "torch.distributed.run", "train.py"]) == "torchrun")
    assert ranks.launcher_of(["mpiexec", "-n", "2", "python", "prog.py"]) == "mpirun"
    assert ranks.launcher_of(["srun", "python", "prog.py"]) == "srun"
    assert ranks.launcher_of(["python", "train.py"]) is None and ranks.launcher_of([]) is None


def test_each_rank_keeps_its_own_report_and_exit_code():
    argv = compute_sanitizer.build_argv("cs", "memcheck", "x.xml", program=True)
    got = ranks.rank_argv(argv, Path("/r"), "memcheck")
    assert ("--error-exitcode" not in got
            and got[got.index("--save") + 1] == "/r/memcheck.rank{rank}.xml")
    assert (got[-2:] == ["--log-file", "/r/memcheck.rank{rank}.txt"]
            and got[:3] == ["cs", "--tool", "memcheck"])


def test_a_finding_names_the_rank_it_came_from(job, monkeypatch):
    monkeypatch.setenv("FAKE_BUG_RANK", "1")
    r = compute_sanitizer.run_program(job, "memcheck", timeout=60)
    assert r.status == "findings", (r.message, r.notes, r.log)
    (f,) = r.findings
    assert f.rank == 1 and f.kernel == "scale" and f.line == 27 and f.to_dict()["rank"] == 1
    assert r.notes[0] == "2 rank(s), each under memcheck on its own"
    from kprof.results import render_sanitize

    assert "- rank 1: memcheck" in render_sanitize.sanitize_report([r])


def test_a_clean_job_is_clean_and_every_rank_ran_under_the_tool(job):
    r = compute_sanitizer.run_program(job, "racecheck", timeout=60)
    assert r.status == "clean" and not r.findings, (r.message, r.notes, r.log)


def test_a_rank_that_dies_or_hangs_is_named(job, monkeypatch):
    monkeypatch.setenv("FAKE_DIE_RANK", "0")
    r = compute_sanitizer.run_program(job, "memcheck", timeout=60)
    assert r.status == "target-error" and any("rank 0 started under memcheck but left no report: "
                                              "it ended before" in n and "died" in n
                                              for n in r.notes), (r.message, r.notes)
    monkeypatch.delenv("FAKE_DIE_RANK")
    monkeypatch.setenv("FAKE_HANG_RANK", "1")
    r = compute_sanitizer.run_program(job, "memcheck", timeout=5)
    assert r.status == "timeout" and any("rank 1 started under memcheck but left no report: it was "
                                         "still running"
                                         in n for n in r.notes), (r.message, r.notes)


def test_a_job_with_no_python_rank_runs_under_the_tool_whole(tmp_path, job, monkeypatch):
    shell_rank = tmp_path / "torchrun"
    # a launcher whose 'ranks' set no rank variable
    shell_rank.write_text("#!/bin/sh\nexec \"$@\"\n")
    seen = []
    monkeypatch.setattr(compute_sanitizer, "classify_program", lambda tool, done, status, findings,
                        notes, *a, **k: seen.append(notes)
                        or toolrun.ToolResult(tool, "clean", [], 0.0))
    compute_sanitizer.run_program([str(shell_rank), "true"], "memcheck", timeout=30)
    assert any("ranks not told apart" in n for n in seen[-1])


def _hook(monkeypatch, folder: Path, argv: list[str]):
    """kprof/hooks/rank_wrap.py loaded as a program's Python loads it, told to wrap ranks with
    ``argv`` (none: mark only), with no rank in this process yet and its exec recorded
    (``hook.execs``), not done."""
    import importlib.util

    import kprof

    spec = importlib.util.spec_from_file_location("rank_wrap",
                                                  Path(kprof.__file__).parent / "hooks" / "rank_wrap.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    hook.execs = []
    monkeypatch.setattr(hook.os, "execv", lambda exe, argv: hook.execs.append(argv))
    monkeypatch.setenv("KPROF_RANK_WRAP", json.dumps({"argv": argv, "folder": str(folder)}))
    # as kprof sets it (allocators.with_hooks)
    monkeypatch.setenv("KPROF_RANK_VARS", ",".join(ranks.RANK_VARS))
    for var in ranks.RANK_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("KPROF_RANK_WRAPPED", raising=False)
    return hook


def test_the_hook_wraps_a_rank_once_and_never_the_launcher(tmp_path, monkeypatch):
    hook = _hook(monkeypatch, tmp_path, ["cs", "--save", "/r/m.rank{rank}.xml"])
    execs = hook.execs
    hook.install()  # the launcher: no rank
    assert execs == []
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "3")
    hook.install()
    assert execs[0][:3] == ["cs", "--save", "/r/m.rank3.xml"] and execs[0][3] == sys.executable
    assert json.loads((tmp_path / "rank3.json").read_text())["rank"] == 3
    hook.install()  # now marked wrapped: never twice
    assert len(execs) == 1


def test_the_hook_only_marks_a_rank_when_there_is_no_tool_to_start(tmp_path, monkeypatch):
    """``kprof profile -- torchrun ...``: ncu follows every process itself, so a rank writes who it
    is and runs on."""
    hook = _hook(monkeypatch, tmp_path, [])
    execs = hook.execs
    monkeypatch.setenv("RANK", "1")
    hook.install()
    assert (execs == [] and ranks.pids(tmp_path) == {os.getpid(): 1}
            and "KPROF_RANK_WRAPPED" not in os.environ)


def test_each_launcher_is_one_row_read_by_detection_copies_and_the_hooks():
    """The launchers' table: every row's commands (and modules) are found as that launcher, its rank
    variables are among what the hooks read, and its copies share nothing a row does not say
    (kprof.tools.sanitizers.copies)."""
    from kprof.tools.programs import allocators
    from kprof.tools.sanitizers import copies

    assert [r.name for r in ranks.LAUNCHERS] == ["torchrun", "mpirun", "srun", "accelerate",
                                                 "deepspeed"]
    assert ranks.RANK_VARS == ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                               "SLURM_PROCID")
    for row in ranks.LAUNCHERS:
        for command in row.commands:
            assert ranks.launcher([f"/usr/bin/{command}", "x.py"]) is row
        for module in row.modules:
            assert ranks.launcher(["python3", "-m", module, "x.py"]) is row
        assert row.rank_vars and set(row.rank_vars) <= set(ranks.RANK_VARS)
        cmd = [row.commands[0], "x.py"]
        assert (copies.schedule(cmd, 4).jobs == 1) == (row.own_port
                                                       or bool(row.port_options
                                                               and copies.fixed_port(cmd)))
        assert set(copies.copy_env(cmd)) == ({row.port_env} if row.port_env else set())
    assert allocators.with_hooks({})["KPROF_RANK_VARS"] == ",".join(ranks.RANK_VARS)
