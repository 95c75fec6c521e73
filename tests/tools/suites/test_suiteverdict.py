"""What a sanitized suite's children decided, with nothing run: a child's events, each record given
to its test, what a stopped child decides, and the verdict over every tool
(kprof.tools.suites.suiteverdict)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from kprof.tools.sanitizers.toolrun import ToolResult
from kprof.tools.suites import suiteevents, suiteverdict
from kprof.tools.suites.pytest_child import named_call

TESTS = [suiteverdict.Test("t.py::test_a", "/r/t.py", "test_a"),
         suiteverdict.Test("t.py::test_p[1]", "/r/t.py", "test_p"),
         suiteverdict.Test("t.py::test_p[2]", "/r/t.py", "test_p")]
RUN = suiteverdict.ChildRun(["t.py::test_a", "t.py::test_p[1]", "t.py::test_p[2]"], {})


def _events(*lines: dict) -> str:
    return "".join(json.dumps(e) + "\n" for e in lines)


def _start(i: int, nodeid: str) -> dict:
    return {"event": "start", "i": i, "nodeid": nodeid}


def _finish(i: int, nodeid: str, outcome: str = "passed", message: str = "") -> dict:
    return {"event": "finish", "i": i, "nodeid": nodeid, "outcome": outcome, "message": message,
            "seconds": 0.5}


def test_events_keep_order_outcomes_and_a_torn_last_line():
    text = _events(_start(0, "t.py::a"), _finish(0, "t.py::a"), _start(1, "t.py::b"),
                   _finish(1, "t.py::b", "failed", "call: assert 1 == 2"), _start(2, "t.py::c")) + '{"event": "fin'
    run = suiteverdict.read_events(text)
    assert run.order == ["t.py::a", "t.py::b", "t.py::c"]
    assert (run.finished["t.py::b"].outcome == "failed" and run.running == "t.py::c"
            and run.dead is None)


def _record(*frames: tuple[str, str]) -> ET.Element:
    stack = "".join(f"<frame><func>{f}</func><path>{p}</path><line>3</line></frame>"
                    for f, p in frames)
    return ET.fromstring(f"<record><kind>Hazard</kind>{'<hostStack>' + stack + '</hostStack>' if frames else ''}</record>")


def test_a_record_lands_on_the_test_its_kprof_frame_names_parametrized_or_not():
    recs = [_record(("launch", "/r/helpers.py"), ("test_p", "/r/t.py"),
                    ("kprof_test_2", "/k/pytest_child.py")),
            # racecheck's summary after its hazards: no stack, goes with the record before
            _record(),
            # no kprof frame: the test's own function, one test has it
            _record(("test_a", "/r/t.py")),
            _record(("test_p", "/r/t.py")),  # shared by two parametrized tests: nobody's
            _record(("kprof_test_9", "/k/pytest_child.py"))]  # an index this child never ran
    owned, lost = suiteverdict.attribute(recs, RUN, TESTS)
    assert owned == {"t.py::test_p[2]": recs[:2], "t.py::test_a": [recs[2]]}
    assert lost == recs[3:]


def test_a_named_frame_is_what_a_saved_host_stack_shows():
    import traceback

    def inner():
        return traceback.extract_stack()[-2].name

    assert named_call(7)(inner) == "kprof_test_7"


def _found(*nodeids: str, stops: bool = False) -> dict:
    return {n: (["finding"], [], stops) for n in nodeids}


def test_after_a_fault_only_the_unfinished_tests_run_again():
    batch = ["a", "b", "c", "d"]
    run = suiteverdict.ChildRun(["a", "b"], {"a": suiteevents.Finish("a", 0, "passed", "", 1.0)})
    s = suiteverdict.settle("memcheck", batch, run, _found("b", stops=True), "crash", "log",
                            timeout=60)
    assert (set(s.decided) == {"a", "b"} and s.decided["b"].status == "findings"
            and s.again == ["c", "d"])
    assert s.alone is None


def test_the_tests_after_a_tool_reached_its_record_limit_run_again():
    """compute-sanitizer saves no record past --print-limit for the rest of the process: on an H200,
    initcheck reached 1,000 records in a half-precision nn.Linear and then passed the next test's
    uninitialised read. The test in which the limit was reached is where the batch is cut."""
    order = ["a", "b", "c", "d"]
    assert suiteverdict.blinding_test(order, {"a": 3, "b": 150, "c": 60}, 213, 200) == "c"
    assert suiteverdict.blinding_test(order, {"b": 199}, 199, 200) is None
    # records no test owns: the last test that ran
    assert suiteverdict.blinding_test(order, {}, 250, 200) == "d"
    run = suiteverdict.ChildRun(order,
                                {n: suiteevents.Finish(n, 0, "passed", "", 0.1) for n in order})
    found = {"c": (["finding"], ["limit"], True)}
    s = suiteverdict.settle("initcheck", order, run, found, None, "", timeout=60)
    assert set(s.decided) == {"a", "b", "c"} and s.again == ["d"]


def test_a_broken_context_cuts_the_batch_after_its_test():
    run = suiteverdict.ChildRun(["a", "b", "c"],
                                {n: suiteevents.Finish(n, 0, "passed" if n != "c" else "failed", "",
                                                       0.1)
                                           for n in "abc"}, dead="b", dead_error="CUDA_ERROR_LAUNCH_FAILED")
    s = suiteverdict.settle("racecheck", list("abcd"), run, {}, None, "", timeout=60)
    # c failed only because b broke the context
    assert set(s.decided) == {"a", "b"} and s.again == ["c", "d"]


def test_a_crash_with_nothing_found_runs_that_test_alone_then_says_so():
    run = suiteverdict.ChildRun(["a", "b"], {"a": suiteevents.Finish("a", 0, "passed", "", 0.1)})
    s = suiteverdict.settle("initcheck", ["a", "b", "c"], run, {}, "crash", "Segmentation fault",
                            timeout=60)
    assert set(s.decided) == {"a"} and s.alone == "b" and s.again == ["b", "c"]
    alone = suiteverdict.settle("initcheck", ["b"], suiteverdict.ChildRun(["b"], {}), {}, "crash",
                                "Segmentation fault", timeout=60)
    assert alone.decided["b"].status == "tool-error" and alone.again == []
    hung = suiteverdict.settle("initcheck", ["b"], suiteverdict.ChildRun(["b"], {}), {}, "timeout",
                               "", timeout=60)
    assert hung.decided["b"].status == "timeout" and "within 60 s" in hung.decided["b"].message


def test_a_child_that_ran_nothing_says_why_once():
    run = suiteverdict.ChildRun([], {}, collect_errors=["t.py: ImportError: no module named torch"])
    s = suiteverdict.settle("memcheck", ["a", "b"], run, {}, None, "log", timeout=60)
    assert {r.status for r in s.decided.values()} == {"tool-error"} and s.again == []
    assert "ran none of the tests: t.py: ImportError" in s.decided["a"].message


def test_a_test_is_skipped_only_where_every_tool_skipped_it():
    clean = ToolResult("memcheck", "clean", [], 0.1)
    per_tool = [{"a": suiteverdict.TestVerdict("a", [clean], "no GPU"),
                 "b": suiteverdict.TestVerdict("b", [clean], "x")},
                {"a": suiteverdict.TestVerdict("a", [clean], "no GPU"),
                 "b": suiteverdict.TestVerdict("b", [clean])}]
    out = suiteverdict.combine(["a", "b", "c"], ["memcheck", "racecheck"], per_tool)
    assert out["a"].skipped == "no GPU" and out["b"].skipped is None and out["b"].clean
    assert not out["c"].clean and "no verdict from memcheck" in out["c"].results[0].message
