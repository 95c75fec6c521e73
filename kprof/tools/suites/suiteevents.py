"""The events kprof's pytest child writes for each test under a tool
(:mod:`kprof.tools.suites.pytest_child`) and the suite reads (:mod:`kprof.tools.suites.suite`): one
schema, one writer (:func:`line`), one reader (:func:`read`).

One JSON object per line, each with the test's node id; a line torn by a child stopped mid-write, or
one that is not an event of this schema, is skipped. Pure.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from kprof import inputs
from kprof.tools.programs.coverage import Coverage


@dataclass(frozen=True)
class Start:
    """A test started (``i``: its index in the child, the ``kprof_test_<i>`` frame its launches
    carry)."""
    nodeid: str
    i: int = 0


@dataclass(frozen=True)
class Finish:
    nodeid: str
    i: int = 0
    outcome: str = "passed"  # passed | failed | skipped
    message: str = ""
    seconds: float = 0.0
    # what the test launched (the launch tally's count, in the count run)
    checked: Coverage | None = None


@dataclass(frozen=True)
class Dead:
    """The test left the CUDA context broken: the child stops after it."""
    nodeid: str
    i: int = 0
    error: str = ""


@dataclass(frozen=True)
class CollectError:
    nodeid: str
    message: str = ""


Event = Start | Finish | Dead | CollectError
_KIND = {Start: "start", Finish: "finish", Dead: "dead", CollectError: "collect-error"}


def line(event: Event) -> str:
    """The event as the child writes it: one JSON line (a Finish's coverage as the tally's
    counts)."""
    data: dict[str, object] = {"event": _KIND[type(event)], **asdict(event)}
    if isinstance(event, Finish):
        c = event.checked
        data["checked"] = None if c is None else {"launches": c.launches, "kernels": c.kernels,
                                                 "with_lines": c.with_lines,
                                                 "unknown_lines": c.unknown_lines,
                                                 "names": list(c.names)}
    return json.dumps(data) + "\n"


def checked_of(raw: object) -> Coverage | None:
    """A finish event's ``checked`` (the test's launches, kernels, line information, names) as a
    Coverage."""
    if not isinstance(raw, dict) or not all(isinstance(raw.get(k), int)
                                            for k in ("launches", "kernels")):
        return None
    names = raw.get("names")
    return Coverage(raw["launches"], kernels=raw["kernels"],
                    with_lines=int(raw.get("with_lines") or 0),
                    unknown_lines=int(raw.get("unknown_lines") or 0), alongside=True,
                    names=tuple(str(n) for n in names) if isinstance(names, list) else ())


def _event(raw: dict[str, object]) -> Event | None:
    nodeid, kind = raw.get("nodeid"), raw.get("event")
    if not isinstance(nodeid, str):
        return None
    i = raw.get("i") if isinstance(raw.get("i"), int) else 0
    assert isinstance(i, int)
    if kind == "start":
        return Start(nodeid, i)
    if kind == "finish":
        seconds = raw.get("seconds")
        return Finish(nodeid, i, str(raw.get("outcome") or "passed"), str(raw.get("message") or ""),
                      float(seconds) if isinstance(seconds, (int, float)) else 0.0,
                      checked_of(raw.get("checked")))
    if kind == "dead":
        return Dead(nodeid, i, str(raw.get("error") or ""))
    if kind == "collect-error":
        return CollectError(nodeid, str(raw.get("message") or ""))
    return None


def read(text: str) -> list[Event]:
    """The events of ``text``, in order."""
    return [e for e in map(_event, inputs.json_objects(text)) if e is not None]
