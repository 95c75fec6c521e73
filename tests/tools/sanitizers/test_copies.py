"""The copies of a user's program kprof starts (kprof.tools.sanitizers.copies): one after another
unless the user says they are independent, each with its own temporary folder and torchrun
rendezvous, none of them reported NOT CHECKED because the launch count's own copy failed. No GPU: a
stand-in launcher and stand-in tools."""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from kprof.tools.programs import launchcount, ranks
from kprof.tools.programs.coverage import Coverage
from kprof.tools.sanitizers import checkers, copies
from kprof.tools.sanitizers.checker import Program, Settings
from kprof.tools.sanitizers.toolrun import ToolResult


@pytest.mark.parametrize("cmd, jobs, want, why", [
    (["python", "train.py"], None, 1, "one after another"),
    (["python", "train.py"], 4, 4, "--jobs 4"),
    (["torchrun", "--nproc_per_node", "2", "job.py"], None, 1, "one after another"),
    (["torchrun", "--nproc_per_node", "2", "job.py"], 3, 3, "--jobs 3"),
    (["torchrun", "--master-port", "29500", "--nproc_per_node", "2", "job.py"], 4, 1,
     "(--master-port)"),
    (["torchrun", "--rdzv_endpoint=localhost:29400", "job.py"], 4, 1,
     "--rdzv_endpoint=localhost:29400"),
    (["python3", "-m", "torch.distributed.run", "--master_port=1234", "job.py"], 4, 1,
     "--master_port=1234"),
    (["torchrun", "--standalone", "--nproc_per_node", "2", "job.py", "--master-port", "7"], 2, 2,
     "--jobs 2"),
    (["accelerate", "launch", "train.py"], 4, 1, "accelerate gives what it starts a port"),
    (["deepspeed", "train.py"], 4, 1, "deepspeed gives"),
])
def test_the_copies_run_together_only_where_the_user_says_they_are_independent(cmd, jobs, want, why):
    plan = copies.schedule(cmd, jobs)
    assert plan.jobs == want and why in plan.why


def test_a_port_among_the_scripts_own_arguments_is_the_scripts():
    assert (copies.fixed_port(["torchrun", "--nproc_per_node", "2", "job.py", "--master-port", "7"]) is None)
    assert (copies.fixed_port(["torchrun", "--nnodes=1", "--master-port", "7", "job.py"]) == "--master-port")


def test_each_torchrun_copy_gets_its_own_rendezvous_through_torchruns_own_variable():
    """torchrun reads every option from PET_<OPTION> too: the user's argv is not rewritten."""
    a, b = copies.copy_env(["torchrun", "--nproc_per_node", "2", "job.py"]), copies.copy_env(["torchrun", "job.py"])
    assert (set(a) == {"PET_MASTER_PORT"} and a["PET_MASTER_PORT"].isdigit()
            and int(a["PET_MASTER_PORT"]) > 0)
    assert a != b or pytest.skip("the system gave one free port twice")
    assert copies.copy_env(["python", "train.py"]) == {}
    assert copies.copy_env(["torchrun", "--master-port", "29500", "job.py"]) == {}


def test_a_copy_has_a_temporary_folder_of_its_own_removed_after_it():
    program = Program(("python", "x.py"), {"A": "1"})
    with copies.own(program) as mine:
        folder = Path(mine.env["TMPDIR"])
        assert folder.is_dir() and mine.env["A"] == "1" and mine.cmd == program.cmd
    assert not folder.exists() and "TMPDIR" not in program.env


@pytest.mark.parametrize("name", ["accelerate", "deepspeed", "torchrun", "mpiexec"])
def test_the_launchers_are_known(name):
    assert ranks.launcher_of([name, "x.py"]) is not None


def test_a_copy_that_died_of_the_gpus_memory_is_told_apart():
    oom = ToolResult("memcheck", "target-error", [], 1.0, "the program failed",
                     log="torch.OutOfMemoryError: CUDA out of memory")
    assert copies.died_of_memory(oom)
    assert not copies.died_of_memory(ToolResult("memcheck", "findings", [], 1.0,
                                                "out of memory in a finding's text"))
    assert not copies.died_of_memory(ToolResult("memcheck", "target-error", [], 1.0, "exit 1",
                                                log="ValueError"))


LAUNCHER = """
import os, socket, sys, time
port = int(os.environ.get("PET_MASTER_PORT", "29500"))  # as torchrun does without --master-port
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 0)
try:
    s.bind(("127.0.0.1", port))
except OSError as exc:
    print("EADDRINUSE", exc, file=sys.stderr)
    sys.exit(1)
s.listen()
with open(os.path.join(os.environ["TMPDIR"], "ckpt"), "w") as f:  # a file of a fixed name, in its TMPDIR
    f.write("x")
time.sleep(0.3)
print(port, os.environ["TMPDIR"])
"""


def test_every_copy_of_a_torchrun_job_gets_its_port_and_folder_and_none_collide(tmp_path, monkeypatch):
    """Four tools and the count over a stand-in torchrun that binds its rendezvous port: by default
    one after another, each with a port and TMPDIR of its own; none fails, and none shares
    another's."""
    script = tmp_path / "torchrun"
    script.write_text(f"#!{sys.executable}\n" + LAUNCHER)
    script.chmod(0o755)
    seen: list[tuple[str, str, str, float, float]] = []
    lock = threading.Lock()

    def run(name: str, program: Program) -> ToolResult:
        import subprocess

        start = time.monotonic()
        done = subprocess.run(list(program.cmd), env={**os.environ, **program.env},
                              capture_output=True, text=True)
        with lock:
            seen.append((name, program.env.get("PET_MASTER_PORT", ""), program.env["TMPDIR"], start,
                         time.monotonic()))
        return ToolResult(name, "clean" if done.returncode == 0 else "target-error", [], 0.3,
                          done.stderr)

    monkeypatch.setattr(checkers, "run_program", lambda name, program, settings: run(name, program))
    monkeypatch.setattr(launchcount, "count", lambda cmd,
                        **k: (run("count", Program(tuple(cmd), k["env"])),
                              Coverage(3, kernels=1))[1])
    cmd = [str(script), "--nproc_per_node", "2", "job.py"]
    plan = copies.schedule(cmd, None)
    results = checkers.check_program(["memcheck", "racecheck", "initcheck", "synccheck"],
                                     Program(tuple(cmd), {}), Settings(60.0, 256), jobs=plan.jobs)
    assert [r.status for r in results] == ["clean"] * 4, [r.message for r in results]
    # each its own folder, and a port of its own when it ran (one after another, the system may give
    # one twice)
    assert all(port for _, port, *_ in seen) and len({folder for _, _, folder, *_ in seen}) == 5
    spans = sorted((a, b) for *_, a, b in seen)
    # one after another
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans))
    assert not any(Path(folder).exists() for _, _, folder, *_ in seen)


def test_side_by_side_a_copy_that_died_of_memory_runs_again_alone(monkeypatch):
    calls: list[str] = []

    def run(name: str, program: Program, settings: Settings) -> ToolResult:
        calls.append(name)
        if name == "racecheck" and calls.count("racecheck") == 1:
            return ToolResult(name, "target-error", [], 1.0, "failed",
                              log="CUDA_ERROR_OUT_OF_MEMORY")
        return ToolResult(name, "clean", [], 1.0)

    monkeypatch.setattr(checkers, "run_program", run)
    monkeypatch.setattr(launchcount, "count", lambda cmd, **k: Coverage(2, kernels=1))
    results = checkers.check_program(["memcheck", "racecheck"], Program(("python", "x.py"), {}),
                                     Settings(60.0, 256), jobs=2)
    assert [r.status for r in results] == ["clean", "clean"] and calls.count("racecheck") == 2


def test_a_launch_count_whose_own_run_failed_leaves_the_verdict_to_the_tool():
    """The count's copy of a torchrun job lost the port race and launched nothing: the fixed job was
    NOT CHECKED, exit 8. A count that failed says so and counts nothing; the tool's clean run stays
    clean."""
    from kprof.tools.programs.exitcode import Status
    from kprof.tools.sanitizers.toolrun import with_coverage

    clean = ToolResult("memcheck", "clean", [], 1.0)
    failed = launchcount.settle(Coverage(0), Status(1), timed_out=False)
    assert (failed.launches is None
            and "the count's own run of the program exited with code 1" in failed.why)
    assert (with_coverage(clean, failed).status == "clean"
            and "counted nothing" in with_coverage(clean, failed).checked.text())
    hung = launchcount.settle(Coverage(0), None, timed_out=True)
    assert hung.launches is None and "timed out" in hung.why
    # it ran to its end and launched nothing
    ran = launchcount.settle(Coverage(0), Status(0), timed_out=False)
    assert ran.launches == 0 and with_coverage(clean, ran).status == "not-checked"
    # it launched, then failed
    some = launchcount.settle(Coverage(5, kernels=2), Status(1), timed_out=False)
    assert some.launches == 5 and some.alongside
