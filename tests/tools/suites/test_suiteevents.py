"""The pytest child's events (kprof.tools.suites.suiteevents): what the writer writes is what the
reader reads, a torn or foreign line is skipped, and the child writes through the one writer."""

from __future__ import annotations

import io

from kprof.tools.programs.coverage import Coverage
from kprof.tools.suites import suiteevents
from kprof.tools.suites.suiteevents import CollectError, Dead, Finish, Start


def test_every_event_reads_back_as_it_was_written():
    checked = Coverage(3, kernels=2, with_lines=1, unknown_lines=0, alongside=True,
                       names=("scale", "nvjet_x"))
    events = [Start("t.py::a", 0), Finish("t.py::a", 0, "failed", "assert 1 == 2", 0.25, checked),
              Finish("t.py::b", 1, "passed", "", 0.0, None),
              Dead("t.py::a", 0, "CUDA_ERROR_ILLEGAL_ADDRESS"),
              CollectError("t.py", "ImportError: no module named torch")]
    text = "".join(suiteevents.line(e) for e in events)
    assert suiteevents.read(text) == events


def test_torn_and_foreign_lines_are_skipped():
    text = ('{"event": "start", "nodeid": "t.py::a", "i": 0}\n{"event": "finish", "nodeid": '
            '3}\n[1]\n{"event": "later", "nodeid": "t.py::a"}\n{"event": "finish", "nodeid": '
            '"t.py::a", "seconds": "x"}\n{"event": "dead", "nod')
    assert suiteevents.read(text) == [Start("t.py::a", 0),
                                      Finish("t.py::a", 0, "passed", "", 0.0, None)]


def test_the_child_writes_through_the_one_writer():
    from kprof.tools.suites import pytest_child

    out = io.StringIO()
    pytest_child.Recorder(out).emit(Dead("t.py::a", 2, "CUDA_ERROR_LAUNCH_FAILED"))
    assert suiteevents.read(out.getvalue()) == [Dead("t.py::a", 2, "CUDA_ERROR_LAUNCH_FAILED")]
