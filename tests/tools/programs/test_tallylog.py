"""The launch tally's log as typed events (kprof.tools.programs.tallylog): each event the hook
writes, a cut line, foreign lines, and the lines the tally wrote on an H200."""

from __future__ import annotations

import json

from kprof.tools.programs import tallylog
from kprof.tools.programs.tallylog import Kernel, Site, Started, Total


def _lines(*events: object) -> str:
    return "".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in events)


def test_each_event_the_tally_writes_is_read_as_its_type():
    text = _lines({"pid": 7, "event": "tally", "ok": True},
                  {"pid": 7, "event": "kernel", "name": "scale", "lineinfo": True, "launches": 1},
                  {"pid": 7, "event": "site", "name": "scale", "path": "/u/p.py", "line": 3,
                   "func": "main", "launches": 1},
                  {"pid": 7, "event": "site", "name": "bwd", "path": None, "line": None,
                   "func": None, "launches": 2},
                  {"pid": 8, "event": "tally", "ok": False,
                   "why": "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"},
                  {"pid": 7, "event": "total", "launches": 2})
    assert tallylog.read(text) == [
        Started(7, True), Kernel(7, "scale", True, 1), Site(7, "scale", "/u/p.py", 3, "main", 1),
        Site(7, "bwd", None, None, None, 2),
        Started(8, False, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"), Total(7, 2)]


def test_cut_and_foreign_lines_are_skipped():
    text = _lines('{"pid": 7, "event": "kern', "[1, 2]", {"event": "tally", "ok": True},
                  {"pid": "7", "event": "tally"},
                  {"pid": 7, "event": "kernel", "name": "x"},
                  {"pid": 7, "event": "error", "why": "ValueError"},
                  {"pid": 7, "event": "kernel", "launches": 3, "lineinfo": "yes"})
    assert tallylog.read(text) == [Kernel(7, "?", None, 3)]


def test_the_lines_the_tally_wrote_on_an_h200(data_dir):
    for name in ("tally.cupy.jsonl", "tally.triton.jsonl"):
        events = tallylog.read((data_dir / "programs" / name).read_text())
        assert isinstance(events[0], Started) and events[0].ok
        assert any(isinstance(e, Kernel) for e in events) and isinstance(events[-1], Total)
