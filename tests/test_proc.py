import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kprof import proc
from kprof.errors import ToolNotFoundError


def test_runs_list_argv_and_keeps_output():
    done = proc.run([sys.executable, "-c",
                     "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"])
    assert done.returncode == 3 and done.stdout.strip() == "out" and done.stderr.strip() == "err"
    assert not done.timed_out and "out" in done.tail()


def test_timeout_kills_the_group_and_keeps_what_was_printed():
    code = "import subprocess, sys, time; print('started', flush=True); subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    done = proc.run([sys.executable, "-c", code], timeout=1.5)
    assert done.timed_out and done.returncode is None
    assert "started" in done.stdout and done.seconds < 30


SESSION_OF_ITS_OWN = """
import os, subprocess, sys, time
# a grandchild in a session of its own, as MPICH's hydra_pmi_proxy makes one, and its own child (a rank)
inner = "import os, subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
inner += "open(sys.argv[1], 'w').write(f'{os.getpid()} {p.pid}'); time.sleep(60)"
subprocess.Popen([sys.executable, "-c", inner, sys.argv[1]], start_new_session=True)
print("started", flush=True)
time.sleep(60)
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            # a zombie waits for its parent: nothing runs
            return f.read().split(") ")[1].startswith("Z")
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                    reason="no /proc: only the child's group is stopped")
def test_a_timeout_stops_what_the_child_started_in_a_session_of_its_own(tmp_path):
    """The group's kill missed a process that made a session of its own (MPICH's proxy) and its
    children (the ranks): they ran on after kprof gave up. Every process below the child is stopped
    now."""
    marks = tmp_path / "pids"
    done = proc.run([sys.executable, "-c", SESSION_OF_ITS_OWN, str(marks)], timeout=3)
    assert done.timed_out and "started" in done.stdout
    for _ in range(50):
        if marks.is_file() and marks.read_text():
            break
        time.sleep(0.1)
    pids = [int(p) for p in marks.read_text().split()]
    deadline = time.monotonic() + 5
    while not all(_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_gone(p) for p in pids), pids


def test_a_program_that_ends_leaving_a_daemon_is_done_not_timed_out():
    """A program that starts a server in a session of its own and ends (Ray's, a notebook kernel's):
    the server keeps stdout open. kprof waited for the pipe until the timeout, and called the
    finished program one that timed out; it reads on a few seconds after the exit now, keeps what
    was printed, and says why it stopped."""
    code = ("import subprocess, sys; d = subprocess.Popen([sys.executable, '-c', 'import time; "
            "time.sleep(60)'], start_new_session=True); print('daemon', d.pid, flush=True); "
            "print('bye')")
    done = proc.run([sys.executable, "-c", code], timeout=30)
    daemon = int(done.stdout.split()[1])
    try:
        assert not done.timed_out and done.returncode == 0 and done.stdout.endswith("bye\n")
        assert (done.seconds < proc.PIPE_GRACE_S + 10
                and "kept its output open after it ended" in done.stderr)
    finally:
        os.kill(daemon, 9)


def test_a_child_the_program_did_not_wait_for_is_still_waited_for():
    """Its own work, in its process group (a shell's background job): kprof reads on until it is
    done, past the grace a daemon gets, as before."""
    late = "import time; time.sleep(7); print('late work done', flush=True)"
    code = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {late!r}]); print('parent done')"
    done = proc.run([sys.executable, "-c", code], timeout=60)
    assert (not done.timed_out and done.returncode == 0 and "late work done" in done.stdout
            and done.seconds >= 7)
    assert "kept its output open" not in done.stderr


def test_the_tree_of_a_process_is_it_and_what_it_started():
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                              "subprocess.Popen([sys.executable, '-c', 'import time; "
                              "time.sleep(30)'], start_new_session=True); print(flush=True); "
                              "time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        child.stdout.readline()
        time.sleep(0.2)
        got = proc.tree(child.pid)
        assert child.pid in got and len(got) == 2 and os.getpid() not in got
    finally:
        for pid in proc.tree(child.pid):
            os.kill(pid, 9)
        child.wait()


def test_signal_name():
    done = proc.run([sys.executable, "-c",
                     "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"])
    assert done.signal_name == "SIGSEGV"


def test_missing_program():
    with pytest.raises(ToolNotFoundError):
        proc.run(["/nonexistent/tool-xyz"])


@pytest.mark.parametrize("tool, words",
                         [("compute-sanitizer", "nvidia-cuda-sanitizer-api"),
                          ("ncu", "not on pip")])
def test_find_tool_hint(monkeypatch, tool, words):
    monkeypatch.setenv("KPROF_" + tool.upper().replace("-", "_"), "/nonexistent")
    with pytest.raises(ToolNotFoundError, match="is not an executable"):
        proc.find_tool(tool)
    assert words in proc.INSTALL_HINTS[tool]


def _wheel_sanitizer(tmp_path, monkeypatch):
    """compute-sanitizer as the CUDA 12 wheel installs it: mode 0644, under a folder on sys.path
    that cuda-pathfinder does not search (a pip --target folder), and nowhere else."""
    exe = tmp_path / "nvidia" / "cuda_sanitizer_api" / "bin" / "compute-sanitizer"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\necho sanitizer\n")
    exe.chmod(0o644)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("KPROF_COMPUTE_SANITIZER", raising=False)
    # no cuda-pathfinder: the sys.path search
    monkeypatch.setitem(sys.modules, "cuda.pathfinder", None)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    return exe


def test_a_wheels_sanitizer_without_its_executable_bit_gets_it_at_first_use(tmp_path, monkeypatch):
    """nvidia-cuda-sanitizer-api-cu12 12.9.79 ships compute-sanitizer as 0644: kprof sets the bit
    (where it is readable) the first time it looks for it, so a new user's first `kprof sanitize`
    runs."""
    exe = _wheel_sanitizer(tmp_path, monkeypatch)
    assert proc.find_tool("compute-sanitizer") == exe
    assert exe.stat().st_mode & 0o777 == 0o755
    assert proc.run([str(exe)]).stdout.strip() == "sanitizer"


def test_a_sanitizer_kprof_may_not_change_is_one_line_with_the_fix(tmp_path, monkeypatch):
    exe = _wheel_sanitizer(tmp_path, monkeypatch)
    monkeypatch.setattr(type(exe), "chmod", lambda self,
                        mode: (_ for _ in ()).throw(PermissionError(1, "read-only")))
    with pytest.raises(ToolNotFoundError, match=f"could not set the bit: chmod \\+x {exe}"):
        proc.find_tool("compute-sanitizer")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_ends_when_kprof_is_killed_with_sigkill(tmp_path):
    """SIGKILL reaches kprof alone and no handler runs: its child (a GPU runner, a tool) must not
    run on."""
    import os
    import signal
    import subprocess
    import time

    mark = f"KPROF_TEST_MARK={os.getpid()}-{time.monotonic_ns()}".encode()
    started = tmp_path / "started"
    driver = ("import sys; from kprof import proc; open(sys.argv[1], 'w').close(); "
              "proc.run([sys.executable, '-c', 'import time; time.sleep(60)'], timeout=120)")
    parent = subprocess.Popen([sys.executable, "-c", driver, str(started)],
                              env=dict(os.environ, KPROF_TEST_MARK=mark.decode().split("=", 1)[1]))

    def marked() -> list[int]:
        pids = []
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != parent.pid:
                try:
                    with open(f"/proc/{entry}/environ", "rb") as f:
                        if mark in f.read().split(b"\0"):
                            pids.append(int(entry))
                except OSError:
                    continue
        return pids

    deadline = time.monotonic() + 20
    while not (started.exists() and marked()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marked(), "the child did not start"
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 5
    while marked() and time.monotonic() < deadline:
        time.sleep(0.05)
    left = marked()
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, "kprof's child outlived kprof's SIGKILL"


def test_a_long_output_keeps_its_head_and_tail_and_says_what_was_left_out(monkeypatch):
    monkeypatch.setattr(proc, "KEEP_HEAD", 1000)
    monkeypatch.setattr(proc, "KEEP_TAIL", 5000)
    code = "import sys\nfor i in range(20000):\n    sys.stdout.write(f'line {i}\\n')\n"
    done = proc.run([sys.executable, "-c", code], timeout=60)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and lines[0] == "line 0" and lines[-1] == "line 19999"
    (said,) = [ln for ln in lines if ln.startswith("(kprof:")]
    left_out = int(said.split()[1].replace(",", ""))
    total = sum(len(f"line {i}\n") for i in range(20000))
    assert (1000 <= len(done.stdout) - len(said) - 2 <= 1000 + 5000 + (1 << 16)
            and left_out == total - (len(done.stdout) - len(said) - 2))


def test_an_interrupted_child_is_asked_to_stop_and_cleans_up_before_it_is_killed(tmp_path):
    """Issue 79: Ctrl-C or SIGTERM during a build killed nvcc with SIGKILL, so its tmpxft_* files
    stayed in TMPDIR. The child's group is sent SIGINT (then SIGTERM), and a child that removes its
    temporary file on SIGINT does so before kprof ends; nothing of it is left running."""
    import signal

    scratch = tmp_path / "tmpxft_scratch"
    started = tmp_path / "started"
    child = ("import os, signal, sys, time\n"
             "open(sys.argv[1], 'w').close(); open(sys.argv[2], 'w').close()\n"
             "def bye(*_):\n    os.unlink(sys.argv[1]); sys.exit(1)\n"
             "signal.signal(signal.SIGINT, bye)\n"
             "time.sleep(60)\n")
    driver = ("import sys\nfrom kprof import proc\n"
              "try:\n    proc.run([sys.executable, '-c', sys.argv[1], sys.argv[2], sys.argv[3]], timeout=120)\n"
              "except KeyboardInterrupt:\n    sys.exit(130)\n")
    parent = subprocess.Popen([sys.executable, "-c", driver, child, str(scratch), str(started)])
    deadline = time.monotonic() + 20
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), "the child did not start"
    parent.send_signal(signal.SIGINT)
    assert parent.wait(30) == 130
    assert not scratch.exists(), "the child was killed before it could clean up"


def test_interrupts_are_held_over_a_block_and_delivered_after_it():
    """What must be done whole (a cache entry committed, a JSON document written) runs with Ctrl-C
    held: the interrupt comes after the block, not in the middle of it (in a process of its own:
    signals reach a main thread, and pytest-xdist runs tests in another)."""
    code = ("import os, signal, time\nfrom kprof import proc\ndone = []\n"
            "try:\n    with proc.deferred_interrupts():\n"
            "        os.kill(os.getpid(), signal.SIGINT)\n        time.sleep(0.05)\n"
            "        done.append('the rest of the block')\n"
            "except KeyboardInterrupt:\n    print('interrupted after', done)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "interrupted after ['the rest of the block']", done.stderr


def test_ctrl_c_stops_the_children_other_threads_run_and_starts_no_more(tmp_path):
    """Issue 79: Ctrl-C reaches the main thread alone, so kprof build --all went on building every
    kernel before it said interrupted, and a second Ctrl-C cut the threads off with their files
    behind. parallel.map_jobs stops the other threads' children (asked, then killed), starts no
    queued one, and lets each thread clean up before kprof ends."""
    import signal

    started = tmp_path / "started"
    started.mkdir()
    child = ("import os, signal, sys, time\n"
             "mark = os.path.join(sys.argv[1], str(os.getpid()))\nopen(mark, 'w').close()\n"
             "def bye(*_):\n    os.unlink(mark); sys.exit(1)\n"
             "signal.signal(signal.SIGINT, bye)\ntime.sleep(60)\n")
    driver = ("import sys\nfrom kprof import parallel, proc\n"
              "def one(i):\n    return proc.run([sys.executable, '-c', sys.argv[1], sys.argv[2]], timeout=120)\n"
              "try:\n    parallel.map_jobs(one, range(8), 3)\n"
              "except KeyboardInterrupt:\n    sys.exit(130)\n")
    t0 = time.monotonic()
    parent = subprocess.Popen([sys.executable, "-c", driver, child, str(started)])
    deadline = time.monotonic() + 20
    while len(list(started.iterdir())) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(list(started.iterdir())) == 3, "three children did not start"
    parent.send_signal(signal.SIGINT)
    assert parent.wait(30) == 130
    assert time.monotonic() - t0 < 20, "it ran the queued items before it stopped"
    assert not list(started.iterdir()), "a child was killed before it could clean up, or a queued one started"
