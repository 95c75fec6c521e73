"""scripts/interrupts.py on a machine with no GPU: its scenarios run against a stand-in kprof that
behaves well or leaves a process or a temporary file behind, and the script tells them apart (so its
GPU table can fail)."""

from __future__ import annotations

import importlib.util
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("interrupts", ROOT / "scripts" / "interrupts.py")
interrupts = importlib.util.module_from_spec(_spec)
sys.modules["interrupts"] = interrupts
_spec.loader.exec_module(interrupts)

STAND_IN = """
import os, signal, subprocess, sys, time
how = os.environ["STAND_IN"]
if how == "orphan":  # a child in its own session that outlives kprof
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
if how in ("temp", "ncu-lock"):
    name = "kprof-left.tmp" if how == "temp" else "nvidia/nsight_compute/lock"
    os.makedirs(os.path.dirname(os.path.join(os.environ["TMPDIR"], name)), exist_ok=True)
    open(os.path.join(os.environ["TMPDIR"], name), "w").close()
print("running memcheck ...", file=sys.stderr, flush=True)  # a progress line before the signal
if how == "quick":
    sys.exit(0)
def stop(sig, frame):
    if how == "traceback":
        print("Traceback (most recent call last):", file=sys.stderr)
    print("kprof: interrupted", file=sys.stderr)
    sys.exit(128 + sig)
signal.signal(signal.SIGINT, stop)
signal.signal(signal.SIGTERM, stop)
time.sleep(30)
"""


def _scenario(tmp_path, monkeypatch, how):
    fake = tmp_path / "fake_kprof.py"
    fake.write_text(textwrap.dedent(STAND_IN))
    monkeypatch.setenv("STAND_IN", how)
    return interrupts.Scenario(tmp_path / "out", "s", [sys.executable, str(fake)],
                               tmp_path / "cache", tmp_path / "history.sqlite")


@pytest.mark.parametrize("sig, group, code",
                         [(signal.SIGINT, True, 130), (signal.SIGTERM, False, 143)])
def test_a_kprof_that_ends_cleanly_passes(tmp_path, monkeypatch, sig, group, code):
    outcome = interrupts.interrupted(_scenario(tmp_path, monkeypatch, "clean"), ["bench"], sig, 0.5,
                                     group, code)
    assert outcome.passed, outcome
    assert outcome.says == "kprof: interrupted" and outcome.runs[0].rc == code


def test_a_process_left_running_fails_the_scenario_and_is_ended(tmp_path, monkeypatch):
    sc = _scenario(tmp_path, monkeypatch, "orphan")
    outcome = interrupts.interrupted(sc, ["bench"], signal.SIGTERM, 1.0, False, 143)
    assert (not outcome.passed and len(outcome.left_processes) == 1
            and "time.sleep(60)" in outcome.left_processes[0])
    assert interrupts.marked_processes(sc.mark) == [], "the script ends what it found, so the next scenario starts clean"


def test_a_temporary_file_left_fails_the_scenario(tmp_path, monkeypatch):
    outcome = interrupts.interrupted(_scenario(tmp_path, monkeypatch, "temp"), ["bench"],
                                     signal.SIGINT, 0.5, True, 130)
    assert not outcome.passed and outcome.left_temp_files == ["kprof-left.tmp"]


def test_a_wrong_exit_code_fails_the_scenario(tmp_path, monkeypatch):
    outcome = interrupts.interrupted(_scenario(tmp_path, monkeypatch, "clean"), ["bench"],
                                     signal.SIGINT, 0.5, True, 143)
    assert not outcome.passed and outcome.checks == {"exit 143": False,
                                                     "signalled while running": True,
                                                     "its last line says interrupted": True,
                                                     "no traceback": True}


def test_a_traceback_fails_the_scenario(tmp_path, monkeypatch):
    outcome = interrupts.interrupted(_scenario(tmp_path, monkeypatch, "traceback"), ["bench"],
                                     signal.SIGTERM, 0.5, False, 143)
    assert not outcome.passed and not outcome.checks["no traceback"] and outcome.checks["exit 143"]


def test_a_command_that_ends_before_its_signal_is_no_test_of_it(tmp_path, monkeypatch):
    """On the H200 kprof profile finished in 4.6 s, before a signal sent at 6 s: exit 0, not a
    pass."""
    outcome = interrupts.interrupted(_scenario(tmp_path, monkeypatch, "quick"), ["profile"],
                                     signal.SIGTERM, 3.0, False, 143)
    assert not outcome.passed and not outcome.checks["signalled while running"]


def test_nsight_computes_own_lock_is_not_kprofs_leftover(tmp_path, monkeypatch):
    outcome = interrupts.interrupted(_scenario(tmp_path, monkeypatch, "ncu-lock"), ["profile"],
                                     signal.SIGINT, 0.5, True, 130)
    assert outcome.passed and outcome.left_temp_files == []


def test_the_marker_finds_only_its_own_processes(tmp_path):
    import os
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                             env=dict(os.environ, **{interrupts.MARK: "abc"}))
    try:
        deadline = time.monotonic() + 5
        while not interrupts.marked_processes("abc") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [pid for pid, _ in interrupts.marked_processes("abc")] == [child.pid]
        assert interrupts.marked_processes("abd") == []
    finally:
        child.kill()
        child.wait()
