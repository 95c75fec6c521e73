"""``pytest --kprof-sanitize`` in one child per tool, with no GPU: the pure halves (events,
attribution, what a stopped child decides, the default number of jobs, progress lines), then whole
suites under a stand-in compute-sanitizer (tests/data/fake_compute_sanitizer.py) that saves host
stacks as the real tool does and stops the target in a faulting test."""

from __future__ import annotations

import json
import re
import sys

import pytest

from kprof import parallel
from kprof.tools.suites import suite, suiteverdict

pytest_plugins = ["pytester"]


def _start(i: int, nodeid: str) -> dict:
    return {"event": "start", "i": i, "nodeid": nodeid}


def _finish(i: int, nodeid: str, outcome: str = "passed", message: str = "") -> dict:
    return {"event": "finish", "i": i, "nodeid": nodeid, "outcome": outcome, "message": message,
            "seconds": 0.5}




@pytest.mark.parametrize("count, free, cpus, jobs", [
    (4, 140 * 2**30, 16, 4),   # an H200 host: every tool at once
    (4, 15 * 2**30, 2, 1),     # a Colab T4: two CPUs
    (4, 6 * 2**30, 16, 1),     # a laptop GPU with 6 GiB free
    (4, None, 16, 1),          # no NVML
    (100, 140 * 2**30, 128, parallel.MAX_JOBS),
])
def test_default_jobs_follow_the_gpus_memory_and_the_cpus(count, free, cpus, jobs):
    assert parallel.default_jobs(count, free, cpus) == jobs


def test_progress_lines_count_and_estimate():
    lines: list[str] = []
    steps = parallel.Progress(3, write=lines.append)
    for name in ("a", "b", "c"):
        steps.step(f"{name} memcheck 1.0 s")
    assert re.fullmatch(r"\[1/3\] a memcheck 1\.0 s, at \d+ s, about \d+ s left", lines[0]), lines[0]
    assert re.fullmatch(r"\[3/3\] c memcheck 1\.0 s, at \d+ s", lines[2]), lines[2]


# ------------------------------------------------------------------ whole suites, stand-in tool

SUITE = '''
import time
import pytest

@pytest.mark.parametrize("n", range(12))
def test_clean(n):
    assert n >= 0

def test_racy():
    pass

@pytest.mark.parametrize("n", [1, 2])
def test_racy_param(n):
    pass

def test_noframe():
    pass

def test_plain_failure():
    assert 1 == 2

def test_skipped():
    pytest.skip("needs two GPUs")

def test_fault():
    time.sleep(1)  # the stand-in tool stops the child here, as it sees the test start (it looks every 0.02 s)

@pytest.mark.parametrize("n", range(3))
def test_after(n):
    pass
'''
HANG = '''
import time

def test_first():
    pass

def test_hang():
    time.sleep(600)

def test_last():
    pass
'''


def _plugin_args() -> list[str]:
    from importlib.metadata import entry_points

    installed = any(ep.value == "kprof.pytest_plugin" for ep in entry_points(group="pytest11"))
    return ["-p", "no:cacheprovider"] + ([] if installed else ["-p", "kprof.pytest_plugin"])


@pytest.fixture
def fake(pytester, monkeypatch, tmp_path, data_dir):
    import kprof.child.device

    exe = tmp_path / "compute-sanitizer"
    exe.write_text(f"#!{sys.executable}\n" + (data_dir / "fake_compute_sanitizer.py").read_text())
    exe.chmod(0o755)
    calls = tmp_path / "calls.jsonl"
    calls.touch()
    monkeypatch.setenv("KPROF_COMPUTE_SANITIZER", str(exe))
    monkeypatch.setenv("KPROF_FAKE_CALLS", str(calls))
    monkeypatch.setattr(kprof.child.device, "probe", lambda: None)
    lines = lambda: [json.loads(line) for line in calls.read_text().splitlines()]  # noqa: E731
    pytester.calls = lambda: [e for e in lines() if e["event"] == "start"]
    pytester.ends = lambda: [e for e in lines() if e["event"] == "end"]
    return pytester


def _outcomes(result) -> dict[str, str]:
    """nodeid -> outcome, from -rA's short summary."""
    out = {}
    for line in result.stdout.lines:
        for word in ("PASSED", "FAILED", "SKIPPED"):
            if line.startswith(word + " "):
                out[line.split()[1]] = word
    return out


def test_a_suite_of_twenty_tests_runs_in_one_child_per_tool(fake):
    fake.makepyfile(test_kernels=SUITE.replace("def test_fault", "def _not_a_fault"))
    result = fake.runpytest_inprocess(*_plugin_args(), "--kprof-sanitize=memcheck,racecheck",
                                      "--kprof-jobs=2", "-rA")
    ran = [e for e in fake.ends() if e["ran"]]  # memcheck's spare child, never needed, ran nothing
    assert (sorted(e["tool"] for e in ran) == ["memcheck", "racecheck"]
            and all(c["batch"] for c in fake.calls()))
    assert all(len(e["ran"]) == 21 for e in ran)
    assert (sorted(c["tool"] for c in fake.calls()) == ["memcheck"] * (1 + suite.SPARES) + ["racecheck"])
    outcomes = _outcomes(result)
    failed = {n for n, o in outcomes.items() if o == "FAILED"}
    assert failed == {"test_kernels.py::test_racy", "test_kernels.py::test_racy_param[1]",
                      "test_kernels.py::test_racy_param[2]",
                      "test_kernels.py::test_noframe", "test_kernels.py::test_plain_failure"}
    assert "SKIPPED [1] test_kernels.py:21: Skipped: needs two GPUs" in result.stdout.lines
    out = result.stdout.str()
    assert ("launched at" in out and "race-raw" in out
            and "the test failed under memcheck with nothing found" in out)
    assert "[42/42] " in out  # progress: every test under both tools
    # which version checked them (the stand-in's --version)
    assert "checked by compute-sanitizer 2025.3.1" in out
    # the policy, said
    assert "kprof: user kernels first: racecheck and synccheck skip library kernels" in out


def test_after_a_fault_exactly_the_unfinished_tests_run_again(fake):
    fake.makepyfile(test_kernels=SUITE)
    result = fake.runpytest_inprocess(*_plugin_args(), "--kprof-sanitize=memcheck,racecheck",
                                      "--kprof-jobs=1", "-rA")
    memcheck = [e["ran"] for e in fake.ends() if e["tool"] == "memcheck" and e["ran"]]
    assert len(memcheck) == 2 and len([c for c in fake.calls() if c["tool"] == "racecheck"]) == 1
    assert memcheck[0][-1] == "test_kernels.py::test_fault"
    # after test_fault, nothing else
    assert memcheck[1] == [f"test_kernels.py::test_after[{n}]" for n in range(3)]
    # the rerun is the spare child, started with the first: its start was paid before the stop
    starts = sorted(c["t"] for c in fake.calls() if c["tool"] == "memcheck")
    first_end = min(e["t"] for e in fake.ends() if e["tool"] == "memcheck" and e["ran"])
    assert starts[1] < first_end
    outcomes = _outcomes(result)
    assert outcomes["test_kernels.py::test_fault"] == "FAILED"
    assert all(outcomes[f"test_kernels.py::test_after[{n}]"] == "PASSED" for n in range(3))
    assert "out-of-bounds-write" in result.stdout.str()


SMALL = '''
import time
import pytest

def test_clean():
    pass

def test_racy():
    pass

@pytest.mark.parametrize("n", [1, 2])
def test_racy_param(n):
    pass

def test_plain_failure():
    assert 1 == 2

def test_fault():
    time.sleep(1)  # the stand-in tool stops the child here, as it sees the test start (it looks every 0.02 s)

def test_after():
    pass
'''


# What the per-test mode is compared on: a clean test, a race, a plain failure, a fault (each child
# of that mode is a Python start; SMALL's other tests add children, not cases)
PER_TEST = SMALL.split("@pytest.mark.parametrize")[0] + SMALL[SMALL.index("def test_plain_failure"):SMALL.index("def test_after")]


def test_the_same_tests_fail_with_the_same_findings_in_the_per_test_mode(fake):
    fake.makepyfile(test_kernels=PER_TEST)
    batch = fake.runpytest_inprocess(*_plugin_args(), "--kprof-sanitize=memcheck,racecheck",
                                     "--kprof-jobs=4", "-rA")
    before = len(fake.calls())
    alone = fake.runpytest_inprocess(*_plugin_args(), "--kprof-sanitize=memcheck,racecheck",
                                     "--kprof-per-test", "--kprof-jobs=4", "-rA")
    # one child per test and tool (no spare: one test each)
    assert len(fake.calls()) - before == 2 * 4
    b, a = _outcomes(batch), _outcomes(alone)
    assert {n for n, o in b.items() if o == "FAILED"} == {n for n, o in a.items() if o == "FAILED"}

    def kinds(result, test):
        text = result.stdout.str().split(f"_ {test} _", 1)[1].split("\n_", 1)[0]
        return sorted(w for w in text.split() if w in ("race-raw", "out-of-bounds-write"))

    for test in ("test_racy", "test_fault"):
        assert kinds(batch, test) == kinds(alone, test) and kinds(batch, test)


def test_a_hung_test_fails_alone_and_the_rest_still_run(fake):
    fake.makepyfile(test_hang=HANG)
    # a second: the limit is each test's own (a child's start is not counted), and the others take
    # microseconds
    result = fake.runpytest_inprocess(*_plugin_args(), "--kprof-sanitize=memcheck",
                                      "--kprof-timeout=1", "-rA")
    outcomes = _outcomes(result)
    assert outcomes == {"test_hang.py::test_first": "PASSED", "test_hang.py::test_hang": "FAILED",
                        "test_hang.py::test_last": "PASSED"}
    assert "did not finish within 1 s under memcheck" in result.stdout.str()
    ran = [e["ran"] for e in fake.ends()]  # the stopped children wrote no end: the last one did
    assert ran == [["test_hang.py::test_last"]]
    assert len(fake.calls()) == 3  # the batch, its spare (then test_hang alone), test_last


def test_a_bad_jobs_option_is_one_usage_error(fake):
    fake.makepyfile(test_kernels="def test_a():\n    pass\n")
    result = fake.runpytest_inprocess(*_plugin_args(), "--kprof-sanitize=memcheck",
                                      "--kprof-jobs=0")
    assert (result.ret == pytest.ExitCode.USAGE_ERROR
            and "--kprof-jobs=0: give a whole number" in result.stderr.str())


def test_the_drivers_entry_point_lookups_are_no_finding():
    """cuda-bindings asks cuGetProcAddress for symbols the driver lacks: 34 records under memcheck
    from a correct cuda-python launch on an H200 (driver 580.159.04); a failed launch stays a
    finding."""
    from kprof.tools.sanitizers import sanitizer_xml

    def api(name: str, error: str) -> str:
        return (f"<record><kind>Api</kind><what><text>Program hit {error}</text><api>{name}</api>"
                f"<error>{error}</error></what></record>")

    text = ("<ComputeSanitizerOutput>" + api("cuGetProcAddress_v2", "CUDA_ERROR_INVALID_VALUE") * 3
            + api("cuLaunchKernel", "CUDA_ERROR_INVALID_VALUE") + "</ComputeSanitizerOutput>")
    findings, notes = sanitizer_xml.parse_xml(text, "memcheck")
    assert [f.detail for f in findings] == ["cuLaunchKernel -> CUDA_ERROR_INVALID_VALUE"]
    assert len(notes) == 1 and "entry point it lacks" in notes[0]


def test_the_time_limit_is_each_tests_not_the_childs(tmp_path):
    """A child of many short tests runs past the limit of one test; only a test (or the gap before
    the next) running past it stops the child."""
    import time

    events = tmp_path / "events.jsonl"
    events.write_text("")
    watch = suite._Watch(events, "memcheck", 0.3, None)
    for i in range(4):
        with open(events, "a") as f:
            f.write(json.dumps(_start(i, f"t.py::t{i}")) + "\n")
        assert not watch()
        time.sleep(0.2)
        with open(events, "a") as f:
            f.write(json.dumps(_finish(i, f"t.py::t{i}")) + "\n")
        assert not watch()  # 0.8 s in all, past the 0.3 s limit, and no test over it
    time.sleep(0.4)
    # between tests (or at the end, the tool writing its report): not a test's time
    assert not watch()
    with open(events, "a") as f:
        f.write(json.dumps(_start(9, "t.py::t9")) + "\n")
    assert not watch()
    time.sleep(0.4)
    assert watch() and watch.expired  # a test running past its 0.3 s
    spare = suite._Watch(events, "memcheck", 0.1, None, armed=False)
    time.sleep(0.2)
    assert not spare()  # a spare child waiting for its tests is not late
    spare.arm()
    assert not spare()


def test_an_xdist_worker_batches_the_tests_queued_to_it():
    """Under pytest-xdist a worker's batch is the test at hand, the next one and those still queued
    to it (their indices into the session's items), not every collected test."""
    import collections
    import contextlib

    from kprof.pytest_plugin import queued

    class TestQueue:
        def __init__(self, items):
            self._items = collections.deque(items)

        @contextlib.contextmanager
        def lock(self):
            yield self._items

    class WorkerInteractor:  # the name xdist's worker plugin has
        def __init__(self):
            self.torun, self.nextitem_index = TestQueue([5, 6, "SHUTDOWN"]), 3

    class Session:
        items = [f"item{i}" for i in range(8)]

    assert (queued(Session(), "item1", [object(), WorkerInteractor()]) == ["item1", "item3", "item5", "item6"])
    # no xdist: from this test on
    assert queued(Session(), "item6", [object()]) == ["item6", "item7"]


def test_after_two_faults_both_reruns_are_spares_started_with_the_first_child(fake):
    """Two tests that stop memcheck's child: each rerun is a spare whose start was paid before the
    first stop, so neither waits for an interpreter, imports and collection."""
    fake.makepyfile(test_kernels=SUITE.replace("def test_after(n):\n    pass",
                                               "def test_after(n):\n    pass\n\ndef "
                                               "test_fault_again():\n    time.sleep(1)\n\ndef "
                                               "test_last():\n    pass"))
    result = fake.runpytest_inprocess(*_plugin_args(), "--kprof-sanitize=memcheck",
                                      "--kprof-jobs=1", "-rA")
    ran = [e["ran"] for e in fake.ends() if e["tool"] == "memcheck" and e["ran"]]
    assert [r[-1] for r in ran] == ["test_kernels.py::test_fault",
                                    "test_kernels.py::test_fault_again",
                                    "test_kernels.py::test_last"]
    starts = sorted(c["t"] for c in fake.calls() if c["tool"] == "memcheck")
    first_end = min(e["t"] for e in fake.ends() if e["tool"] == "memcheck" and e["ran"])
    assert len([t for t in starts if t < first_end]) == 1 + suite.SPARES
    outcomes = _outcomes(result)
    assert (outcomes["test_kernels.py::test_fault"] == outcomes["test_kernels.py::test_fault_again"] == "FAILED")
    assert outcomes["test_kernels.py::test_last"] == "PASSED"


def test_a_spare_child_that_ended_early_is_replaced_and_no_test_is_lost(monkeypatch):
    """memcheck's spare child dies in its collection; the tests after a stop still run, in a new
    child."""
    from kprof import proc
    from kprof.tools.sanitizers import compute_sanitizer as real
    from kprof.tools.suites.pytest_child import EVENTS_ENV, GO_ENV

    children = []

    def run_wrapped(cmd, tool, *, timeout, env, cwd, watch=None, padding=256, skip_libraries=False,
                    print_limit=200):
        nodeids = [a for a in cmd if "::" in a]
        children.append("spare" if GO_ENV in env else nodeids)
        done = proc.Completed(tuple(cmd), 0, "", "", 0.1)
        if GO_ENV in env:
            return done, ""  # ended at once, before it was handed any test
        with open(env[EVENTS_ENV], "a") as f:
            for i, n in enumerate(nodeids):
                f.write(json.dumps(_start(i, n)) + "\n" + json.dumps(_finish(i, n)) + "\n")
                if n.endswith("b"):
                    f.write(json.dumps({"event": "dead", "i": i, "nodeid": n, "error": "CUDA_ERROR_LAUNCH_FAILED"}) + "\n")
                    break
        return done, ""

    monkeypatch.setattr(real, "run_wrapped", run_wrapped)
    tests = [suiteverdict.Test(f"t.py::{n}", "/r/t.py", n) for n in "abcd"]
    out = suite.run_tool(tests, "memcheck", timeout=60, env={}, cwd=".")
    assert sorted(out) == [t.nodeid for t in tests] and all(v.clean for v in out.values())
    assert [c for c in children if c != "spare"] == [[t.nodeid for t in tests],
                                                     ["t.py::c", "t.py::d"]]


def test_a_spare_no_stop_needed_is_stopped_not_waited_for(tmp_path, monkeypatch):
    """A spare still starting when the run ends (its interpreter, imports and collection under the
    tool) is stopped at the next poll, not waited for."""
    import time

    from kprof import proc

    seen = {}

    class Slow:  # a child that would take a minute to reach its tests
        @staticmethod
        def run_wrapped(argv, tool, *, timeout, env, cwd, watch, padding, skip_libraries=False,
                        print_limit=200):
            seen["done"] = proc.run([sys.executable, "-c", "import time; time.sleep(60)"],
                                    timeout=timeout, watch=watch)
            return seen["done"], ""

    by_id = {"t.py::a": suiteverdict.Test("t.py::a", "t.py", "a")}
    from kprof.tools.sanitizers import compute_sanitizer

    # what memcheck's checker runs a child with
    monkeypatch.setattr(compute_sanitizer, "run_wrapped", Slow.run_wrapped)
    spare = suite._Child(["t.py::a"], True, "memcheck", by_id, 30.0, {}, cwd=tmp_path, padding=256,
                         progress=None, san=compute_sanitizer)
    t0 = time.monotonic()
    spare.cancel()
    assert not spare.thread.is_alive() and seen["done"].timed_out and time.monotonic() - t0 < 30


BREAKS_CONFTEST = '''
import os

if os.environ.get("KPROF_SUITE_EVENTS"):  # in kprof's child only: its driver check fails after test_breaks
    import kprof.tools.suites.pytest_child as child

    _run = child.Recorder._run

    def _run_and_break(item, nextitem):
        error = _run(item, nextitem)
        return "CUDA_ERROR_LAUNCH_FAILED" if "breaks" in item.nodeid else error

    child.Recorder._run = staticmethod(_run_and_break)
'''


def test_after_a_broken_context_the_rerun_starts_before_the_stopped_child_has_ended(fake):
    """The child says its context broke after a test; the tests after it go to a spare at once, not
    once the stopped child has ended (the stand-in tool takes 3 s to end, as memcheck does)."""
    fake.makepyfile(test_kernels=SUITE.replace("def test_fault():\n    time.sleep(1)",
                                               "def test_breaks():\n    pass"))
    fake.makeconftest(BREAKS_CONFTEST)
    result = fake.runpytest_inprocess(*_plugin_args(), "--kprof-sanitize=memcheck",
                                      "--kprof-jobs=1", "-rA")
    ends = [e for e in fake.ends() if e["tool"] == "memcheck" and e["ran"]]
    assert [e["ran"][-1] for e in ends] == ["test_kernels.py::test_after[2]",
                                            "test_kernels.py::test_breaks"]
    rerun, stopped = ends  # the rerun ended first: it did not wait for the stopped child's end
    assert rerun["ran"] == [f"test_kernels.py::test_after[{n}]" for n in range(3)]
    outcomes = _outcomes(result)
    assert (outcomes["test_kernels.py::test_breaks"] == "FAILED"
            and "out-of-bounds-write" in result.stdout.str())
    assert all(outcomes[f"test_kernels.py::test_after[{n}]"] == "PASSED" for n in range(3))


SLOW_COLLECTION_CONFTEST = '''
import os
import time

def pytest_collection_finish(session):
    if not os.environ.get("KPROF_SUITE_EVENTS"):  # the user's pytest, not kprof's child
        with open(os.environ["KPROF_TEST_COLLECTED"], "w") as f:
            f.write(str(time.time()))
'''


def test_each_tools_child_starts_while_pytest_still_collects(fake, monkeypatch, tmp_path):
    """The user's pytest takes 3 s to collect (a slow import); each tool's child starts at once and
    collects beside it, then takes its tests: the children's starts come before the collection's
    end."""
    collected = tmp_path / "collected.txt"
    monkeypatch.setenv("KPROF_TEST_COLLECTED", str(collected))
    fake.makeconftest(SLOW_COLLECTION_CONFTEST)
    fake.makepyfile(test_kernels="import time\ntime.sleep(1.5)\n" + SUITE.replace("def test_fault", "def _not_a_fault"))
    result = fake.runpytest_inprocess(*_plugin_args(), "--kprof-sanitize=memcheck,racecheck",
                                      "--kprof-jobs=2", "-rA")
    end_of_collection = float(collected.read_text())
    firsts = {tool: min(c["t"] for c in fake.calls() if c["tool"] == tool)
              for tool in ("memcheck", "racecheck")}
    assert all(t < end_of_collection for t in firsts.values()), (firsts, end_of_collection)
    ran = [e for e in fake.ends() if e["ran"]]
    assert (sorted(e["tool"] for e in ran) == ["memcheck", "racecheck"]
            and all(len(e["ran"]) == 21 for e in ran))
    failed = {n for n, o in _outcomes(result).items() if o == "FAILED"}
    assert failed == {"test_kernels.py::test_racy", "test_kernels.py::test_racy_param[1]",
                      "test_kernels.py::test_racy_param[2]", "test_kernels.py::test_noframe",
                      "test_kernels.py::test_plain_failure"}


def test_initcheck_in_a_suite_runs_without_device_frames_and_says_how_to_get_the_users_line(fake):
    # device frames cost 51 s of 72 on one GEMM's output read by PyTorch's copy kernel (an H200,
    # 2025.3.1)
    fake.makepyfile(test_kernels="def test_ldg():\n    pass\n\n\ndef test_clean():\n    pass\n")
    result = fake.runpytest_inprocess(*_plugin_args(), "--kprof-sanitize=initcheck",
                                      "--kprof-jobs=1", "-rA")
    assert {c["backtrace"] for c in fake.calls()} == {"host"}
    assert _outcomes(result) == {"test_kernels.py::test_ldg": "FAILED",
                                 "test_kernels.py::test_clean": "PASSED"}
    out = result.stdout.str()
    assert "kprof sanitize --tool initcheck -- python -m pytest test_kernels.py::test_ldg" in out, out


ONE_RACE = (SMALL.replace("def test_fault", "def _not_a_fault").replace("test_racy_param", "test_param")
            # a first child that takes a while
            .replace("def test_racy():\n    pass", "def test_racy():\n    time.sleep(1)"))


def test_after_a_record_limit_the_rest_runs_on_a_spare_started_beside_the_first_child(fake, monkeypatch):
    """racecheck does not stop at its first finding, but past its record limit its child is blind:
    where the machine holds one (here: a GPU with memory free, as NVML would say), a spare starts
    beside the first batch and takes the tests after the limit, its start already paid."""
    from kprof import parallel, telemetry

    monkeypatch.setattr(telemetry, "free_memory", lambda index=0: 64 * 2**30)
    monkeypatch.setattr(parallel, "host_cpus", lambda: 16)
    monkeypatch.setattr(suite, "SUITE_PRINT_LIMIT", 1)  # the first race fills it
    fake.makepyfile(test_kernels=ONE_RACE)
    result = fake.runpytest_inprocess(*_plugin_args(), "--kprof-sanitize=racecheck",
                                      "--kprof-jobs=2", "-rA")
    started = {c["pid"]: c["t"] for c in fake.calls() if c["tool"] == "racecheck"}
    ran = [e for e in fake.ends() if e["tool"] == "racecheck" and e["ran"]]
    assert len(ran) == 2, ran
    # it ran on, blind
    assert ran[0]["ran"][:2] == ["test_kernels.py::test_clean", "test_kernels.py::test_racy"]
    assert ran[1]["ran"] == ["test_kernels.py::test_param[1]", "test_kernels.py::test_param[2]",
                             "test_kernels.py::test_plain_failure", "test_kernels.py::test_after"]
    # the rest's child, a spare, started before the first child ended
    assert started[ran[1]["pid"]] < ran[0]["t"]
    outcomes = _outcomes(result)
    assert (outcomes["test_kernels.py::test_racy"] == "FAILED"
            and outcomes["test_kernels.py::test_param[2]"] == "PASSED")
    assert "reached its limit of 1 records" in result.stdout.str()


def test_no_spare_for_the_record_limit_where_the_machine_has_no_room(fake, monkeypatch):
    from kprof import telemetry

    monkeypatch.setattr(suite, "SUITE_PRINT_LIMIT", 1)
    # no NVML reading: no room said, none started
    monkeypatch.setattr(telemetry, "free_memory", lambda index=0: None)
    fake.makepyfile(test_kernels=ONE_RACE)
    fake.runpytest_inprocess(*_plugin_args(), "--kprof-sanitize=racecheck", "--kprof-jobs=2", "-rA")
    calls = [c for c in fake.calls() if c["tool"] == "racecheck"]
    ran = [e for e in fake.ends() if e["tool"] == "racecheck" and e["ran"]]
    # the rerun's child started after the first ended
    assert len(calls) == 2 and calls[1]["t"] > ran[0]["t"]


@pytest.mark.parametrize(("children", "free", "cpus", "room"), [
    (7, 140 * 2**30, 16, 9), (7, 140 * 2**30, 8, 1), (7, 20 * 2**30, 16, 0), (7, None, 16, 0),
    (2, 8 * 2**30, 4, 0)])
def test_spare_room_is_what_the_cpus_and_the_gpus_free_memory_hold_past_the_running(children, free, cpus, room):
    from kprof import parallel

    assert parallel.spare_room(children, free, cpus) == room


TWO_RACES = ONE_RACE.replace("def test_plain_failure():",
                             "def test_racy_again():\n    time.sleep(1)\n\ndef "
                             "test_plain_failure():")


def test_a_second_limit_in_the_rest_runs_on_a_spare_made_ready_beside_the_first_rest(fake, monkeypatch):
    """Blinded twice (2025.3.1's racecheck filled its limit in each half nn.Linear test on an H200):
    a spare is kept ready beside each batch, so the rest after the second limit does not wait for a
    new child's start either."""
    from kprof import parallel, telemetry

    monkeypatch.setattr(telemetry, "free_memory", lambda index=0: 64 * 2**30)
    monkeypatch.setattr(parallel, "host_cpus", lambda: 16)
    monkeypatch.setattr(suite, "SUITE_PRINT_LIMIT", 1)
    fake.makepyfile(test_kernels=TWO_RACES)
    result = fake.runpytest_inprocess(*_plugin_args(), "--kprof-sanitize=racecheck",
                                      "--kprof-jobs=2", "-rA")
    started = {c["pid"]: c["t"] for c in fake.calls() if c["tool"] == "racecheck"}
    ran = [e for e in fake.ends() if e["tool"] == "racecheck" and e["ran"]]
    assert len(ran) == 3 and ran[2]["ran"] == ["test_kernels.py::test_plain_failure",
                                               "test_kernels.py::test_after"]
    # each rest's child was ready
    assert started[ran[1]["pid"]] < ran[0]["t"] and started[ran[2]["pid"]] < ran[1]["t"]
    outcomes = _outcomes(result)
    assert (outcomes["test_kernels.py::test_racy"] == "FAILED"
            and outcomes["test_kernels.py::test_racy_again"] == "FAILED")
    assert outcomes["test_kernels.py::test_after"] == "PASSED"
