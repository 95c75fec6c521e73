import sys

import pytest

from kprof import proc
from kprof.errors import ToolNotFoundError


def test_runs_list_argv_and_keeps_output():
    done = proc.run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"])
    assert done.returncode == 3 and done.stdout.strip() == "out" and done.stderr.strip() == "err"
    assert not done.timed_out and "out" in done.tail()


def test_timeout_kills_the_group_and_keeps_what_was_printed():
    code = "import subprocess, sys, time; print('started', flush=True); subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    done = proc.run([sys.executable, "-c", code], timeout=1.5)
    assert done.timed_out and done.returncode is None
    assert "started" in done.stdout and done.seconds < 30


def test_signal_name():
    done = proc.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"])
    assert done.signal_name == "SIGSEGV"


def test_missing_program():
    with pytest.raises(ToolNotFoundError):
        proc.run(["/nonexistent/tool-xyz"])


@pytest.mark.parametrize("tool, words", [("compute-sanitizer", "nvidia-cuda-sanitizer-api"), ("ncu", "not on pip")])
def test_find_tool_hint(monkeypatch, tool, words):
    monkeypatch.setenv("KPROF_" + tool.upper().replace("-", "_"), "/nonexistent")
    with pytest.raises(ToolNotFoundError, match="is not an executable"):
        proc.find_tool(tool)
    assert words in proc.INSTALL_HINTS[tool]
