"""The pytest plugin without a GPU: option handling, selection, the per-worker GPU, and the report
of a failing test, with a stand-in compute-sanitizer that reports a race for one test only."""

from __future__ import annotations

import sys

import pytest

from kprof import pytest_plugin

pytest_plugins = ["pytester"]

FAKE = """#!{python}
import json, os, shutil, subprocess, sys
args = sys.argv[1:]
save = args[args.index("--save") + 1]
start = args.index({python!r})
code = subprocess.call(args[start:])
# the tests it ran: those on its command line, or, for a child started before they were known (its command
# line names what it collects), only those handed to it (kprof's go file)
go = os.environ.get("KPROF_SUITE_GO", "")
named = json.load(open(go)) if go and os.path.exists(go) else args
racy = any("test_racy" in a for a in named)
if racy:
    shutil.copy({xml!r}, save)
else:
    open(save, "w").write("<ComputeSanitizerOutput/>")
sys.exit(99 if racy else code)
"""

TESTS = """
import pytest

def test_fine():
    assert 1 + 1 == 2

def test_racy():
    assert True

def test_plain_failure():
    assert 1 == 2

@pytest.mark.kprof_sanitize
def test_marked():
    pass
"""


def _plugin_args() -> list[str]:
    """Installed, pytest finds the plugin through its entry point; from a source tree on PYTHONPATH
    (no entry point), it is named with -p, as a user of such a tree would."""
    from importlib.metadata import entry_points

    installed = any(ep.value == "kprof.pytest_plugin" for ep in entry_points(group="pytest11"))
    return ["-p", "no:cacheprovider"] + ([] if installed else ["-p", "kprof.pytest_plugin"])


@pytest.fixture
def sandbox(pytester, monkeypatch, tmp_path, data_dir):
    import kprof.child.device

    exe = tmp_path / "compute-sanitizer"
    exe.write_text(FAKE.format(python=sys.executable,
                               xml=str(data_dir / "sanitizer" / "rec_race.racecheck_default.xml")))
    exe.chmod(0o755)
    monkeypatch.setenv("KPROF_COMPUTE_SANITIZER", str(exe))
    monkeypatch.setattr(kprof.child.device, "probe", lambda: None)
    return pytester


def test_inert_unless_asked(sandbox):
    sandbox.makepyfile(test_user_suite=TESTS)
    result = sandbox.runpytest_inprocess(*_plugin_args())
    result.assert_outcomes(passed=3, failed=1)


def test_findings_fail_exactly_the_buggy_test(sandbox):
    sandbox.makepyfile(test_user_suite=TESTS.replace("@pytest.mark.kprof_sanitize\n", ""))
    result = sandbox.runpytest_inprocess(*_plugin_args(), "--kprof-sanitize=racecheck")
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    assert "test_racy" in out and "race-" in out and "kprof sanitize (racecheck)" in out
    # test_plain_failure fails as itself
    assert "the test failed under racecheck with nothing found" in out


def test_a_project_that_runs_under_xdist_by_default_is_checked(sandbox):
    """A project whose ini gives ``addopts = -n 2`` (as kprof's own does): the tool's child reads
    the same ini, so it must turn xdist off with ``-n 0``, not unload the plugin that owns
    ``-n``."""
    pytest.importorskip("xdist")
    sandbox.makeini("[pytest]\naddopts = -n 2 --dist loadgroup\n")
    sandbox.makepyfile(test_user_suite=TESTS.replace("@pytest.mark.kprof_sanitize\n", ""))
    # -n 0 here keeps this run in one process (its workers would not see the stand-in); the tool's
    # child still reads the ini's -n 2
    result = sandbox.runpytest_inprocess(*_plugin_args(), "-n", "0", "--kprof-sanitize=racecheck")
    out = result.stdout.str()
    assert "unrecognized arguments" not in out and "ran none of the tests" not in out, out
    result.assert_outcomes(passed=2, failed=2)
    assert "test_racy" in out and "race-" in out


def test_marked_tests_only_when_any_is_marked(sandbox):
    sandbox.makepyfile(test_user_suite=TESTS)
    result = sandbox.runpytest_inprocess(*_plugin_args(), "--kprof-sanitize=memcheck", "-v")
    out = result.stdout.str()
    result.assert_outcomes(passed=3, failed=1)  # test_plain_failure ran as usual, unsanitized
    assert "test_marked PASSED" in out


@pytest.mark.parametrize("worker, visible, count, gpu", [
    ("gw0", None, 2, "0"), ("gw3", None, 2, "1"), ("gw1", "4,5,6", 8, "5"), ("gw0", None, 0, None),
    ("master", None, 2, None),
])
def test_each_worker_takes_its_own_gpu(worker, visible, count, gpu):
    assert pytest_plugin.gpu_for_worker(worker, visible, count) == gpu


def test_the_gpu_tests_lock_is_per_gpu_a_worker_sees():
    """kprof's own suite (tests/conftest.py): spread over a host's GPUs, a ``gpu_alone`` test waits
    only for the tests on its GPU; workers that see the same GPUs share one lock."""
    from conftest import gpu_lock_names

    workers = {w: pytest_plugin.gpu_for_worker(w, None, 2) for w in ("gw0", "gw1", "gw2", "gw3")}
    names = {w: gpu_lock_names(gpu) for w, gpu in workers.items()}
    assert names["gw0"] == names["gw2"] != names["gw1"] == names["gw3"]
    assert gpu_lock_names(None) == gpu_lock_names(" ") == ("kprof-gpu-all.turnstile",
                                                           "kprof-gpu-all.lock")
    assert gpu_lock_names("0,1") == ("kprof-gpu-0_1.turnstile", "kprof-gpu-0_1.lock")
    assert gpu_lock_names("GPU-8f3a/../x")[1] == "kprof-gpu-GPU_8f3a____x.lock", "a UUID or odd value stays one file name"


def test_other_gpu_tests_wait_for_the_gpu_alone_ones_a_bounded_time(tmp_path, monkeypatch):
    """tests/conftest.py: a GPU test waits (at most ALONE_GATE_S) until the session's gpu_alone
    tests have written that they ran, so none of them queues behind a long GPU test another worker
    started."""
    import threading
    import time

    import conftest

    done = tmp_path / "kprof-gpu-all.lock.alone-done"
    t0 = time.monotonic()
    conftest._wait_for_alone(done, 0)  # none in the session: no wait
    assert time.monotonic() - t0 < 0.5
    threading.Timer(0.5, lambda: done.write_text("tests/tools/sanitizers/test_gpu_compute_sanitizer.py::test_alone\n")).start()
    conftest._wait_for_alone(done, 1)
    assert 0.4 < time.monotonic() - t0 < 5
    monkeypatch.setattr(conftest, "ALONE_GATE_S", 0.5)
    t1 = time.monotonic()
    # the second never ran (deselected by a worker's order): bounded
    conftest._wait_for_alone(done, 2)
    assert 0.4 < time.monotonic() - t1 < 5


@pytest.mark.parametrize("args, words", [
    (["--kprof-sanitize=bogus"], "--kprof-sanitize=bogus: unknown tool 'bogus'"),
    (["--kprof-sanitize=,"], "name at least one tool"),
    (["--kprof-sanitize=values"], "the values detector runs kprof's own launches of a spec"),
    (["--kprof-sanitize=memcheck", "--kprof-timeout=-1"],
     "--kprof-timeout=-1: give a number of seconds from 1"),
    (["--kprof-sanitize=memcheck", "--kprof-timeout=nan"],
     "--kprof-timeout=nan: give a number of seconds from 1"),
    (["--kprof-sanitize=memcheck", "--kprof-timeout=abc"],
     "--kprof-timeout=abc: give a number of seconds"),
    (["--kprof-sanitize", "tests/"],
     "--kprof-sanitize read 'tests/' as its list of tools: write --kprof-sanitize=all tests/"),
])
def test_a_bad_option_stops_the_run_once(sandbox, args, words):
    """One usage error (pytest's exit 4) before any test runs, not the same failure in every
    test."""
    sandbox.makepyfile(test_user_suite=TESTS)
    (sandbox.path / "tests").mkdir()
    result = sandbox.runpytest_inprocess(*_plugin_args(), *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert words in result.stderr.str() and "passed" not in result.stdout.str()


def test_no_gpu_stops_the_run_once(sandbox, monkeypatch):
    import kprof.child.device

    monkeypatch.setattr(kprof.child.device, "probe",
                        lambda: "no CUDA driver: cuInit -> libcuda not found")
    sandbox.makepyfile(test_user_suite=TESTS)
    result = sandbox.runpytest_inprocess(*_plugin_args(), "--kprof-sanitize=all")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert ("--kprof-sanitize: no CUDA driver: cuInit -> libcuda not found" in err
            and err.count("no CUDA driver") == 1)


def test_no_compute_sanitizer_stops_the_run_once(sandbox, monkeypatch, tmp_path):
    monkeypatch.setenv("KPROF_COMPUTE_SANITIZER", str(tmp_path / "missing"))
    sandbox.makepyfile(test_user_suite=TESTS)
    result = sandbox.runpytest_inprocess(*_plugin_args(), "--kprof-sanitize=memcheck")
    assert (result.ret == pytest.ExitCode.USAGE_ERROR
            and "compute-sanitizer not found" in result.stderr.str())


@pytest.mark.parametrize("text", ["²", "٣", "0", "-1", "1.5", "", "9" * 5000, str(2**31)])
def test_a_jobs_option_that_is_not_a_plain_whole_number_is_one_usage_error(text):
    """``--kprof-jobs=²``: a digit to str.isdigit that int() refuses (it was a pytest
    INTERNALERROR)."""
    from kprof.pytest_plugin import check_jobs

    with pytest.raises(pytest.UsageError, match="give a whole number of tools to run at once"):
        check_jobs(text)
    assert check_jobs("3") == 3 and check_jobs(None) is None


@pytest.mark.parametrize("option, value", [("--kprof-jobs", "\x1b[2J" + "7" * 100_000),
                                           ("--kprof-sanitize", "\x1b]0;t\x07" + "m" * 100_000),
                                           ("--kprof-timeout", "\x1b[31m" + "9" * 100_000)])
def test_an_options_value_is_echoed_escaped_and_cut_short(option, value):
    """Issue 79: the plugin echoed an option's value raw (an ESC reached the terminal) and whole
    (100,000 characters)."""
    from kprof.pytest_plugin import check_jobs, check_options

    with pytest.raises(pytest.UsageError) as info:
        if option == "--kprof-jobs":
            check_jobs(value)
        elif option == "--kprof-sanitize":
            check_options(value, "600", explicit=True)
        else:
            check_options("memcheck", value)
    said = str(info.value)
    assert "\x1b" not in said and len(said) < 600 and "\\x1b" in said, said[:200]


def test_an_explicit_tool_list_is_never_read_as_a_path(tmp_path, monkeypatch):
    """Issue 79: ``--kprof-sanitize=memcheck`` with a file named memcheck in the folder was refused as
    a path; given with '=', the tools are what was meant. Given apart (``--kprof-sanitize memcheck``),
    the name is ambiguous and still said."""
    from kprof.pytest_plugin import check_options

    monkeypatch.chdir(tmp_path)
    (tmp_path / "memcheck").write_text("")
    assert check_options("memcheck", "600", explicit=True)[0] == ["memcheck"]
    with pytest.raises(pytest.UsageError, match="read 'memcheck' as its list of tools"):
        check_options("memcheck", "600")
