"""What a sanitized suite's children decided, read without running anything: the selected tests, a
child's events (the tests in the order they ran, those that finished, where the context broke), each
record of the tool given to the test that launched its kernel, one child's outcome (decided, to run
again, alone), and the tests' verdicts over every tool. :mod:`kprof.tools.suites.suite` runs the
children and hands their output here. Pure."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kprof.tools.programs import hostframes
from kprof.tools.programs.coverage import Coverage
from kprof.tools.sanitizers import checkers
from kprof.tools.sanitizers.toolrun import ToolResult, ToolStatus
from kprof.tools.suites import suiteevents
from kprof.tools.suites.pytest_child import FRAME_PREFIX
from kprof.tools.suites.suiteevents import Finish

_FRAME = re.compile(re.escape(FRAME_PREFIX) + r"([0-9]{1,9})\Z")


@dataclass(frozen=True)
class Test:
    """One selected test: its node id, and the file and function its frames show."""

    nodeid: str
    path: str  # the test module, absolute
    func: str  # the test function's name, without parameters


@dataclass(frozen=True)
class ChildRun:
    """What one child's events say: the tests in the order they started, those that finished, and
    the test after which the context broke."""

    order: list[str]
    finished: dict[str, Finish]  # the finish event of each test that finished
    dead: str | None = None
    dead_error: str = ""
    collect_errors: list[str] = field(default_factory=list)

    @property
    def running(self) -> str | None:
        """The test that started and did not finish: where the child was when it stopped."""
        return next((n for n in reversed(self.order) if n not in self.finished), None)


@dataclass(frozen=True)
class TestVerdict:
    """One test's results, one :class:`~kprof.tools.sanitizers.toolrun.ToolResult` per tool, and its
    skip reason when every tool's child skipped it."""

    nodeid: str
    results: list[ToolResult]
    skipped: str | None = None

    @property
    def clean(self) -> bool:
        return all(r.status == "clean" for r in self.results)

    @property
    def passes(self) -> bool:
        """Nothing against it: every tool clean, or NOT CHECKED where the test launched no kernel (a
        test of host code passes under --kprof-sanitize; the session's summary names it)."""
        return all(r.status in ("clean", "not-checked") for r in self.results)


def read_events(text: str) -> ChildRun:
    """A child's event lines (:mod:`kprof.tools.suites.suiteevents`; a torn last line is ignored).
    Pure."""
    order: list[str] = []
    finished: dict[str, Finish] = {}
    dead, dead_error, errors = None, "", []
    for event in suiteevents.read(text):
        if isinstance(event, suiteevents.Start) and event.nodeid not in order:
            order.append(event.nodeid)
        elif isinstance(event, suiteevents.Finish):
            finished[event.nodeid] = event
        elif isinstance(event, suiteevents.Dead):
            dead, dead_error = event.nodeid, event.error
        elif isinstance(event, suiteevents.CollectError):
            errors.append(f"{event.nodeid}: {event.message}")
    return ChildRun(order, finished, dead, dead_error, errors)


def attribute(records: list[ET.Element], run: ChildRun,
              tests: Sequence[Test]) -> tuple[dict[str, list[ET.Element]],
                                               list[ET.Element]]:
    """Each record to the test that launched its kernel; and the records no test could be given.

    A record's host stack (innermost first) names the test by kprof's ``kprof_test_<i>`` frame,
    ``i`` the test's place in ``run.order``; without that frame, by a frame in a test's file and
    function, where only one test of the run has them (a parametrized test's cases share both). A
    record with no host stack (racecheck's summary of the hazards before it) goes with the record
    before it. Pure."""
    by_place: dict[tuple[str, str], list[str]] = {}
    started = set(run.order)
    for t in tests:
        if t.nodeid in started:
            by_place.setdefault((t.path, t.func), []).append(t.nodeid)
    out: dict[str, list[ET.Element]] = {}
    lost: list[ET.Element] = []
    previous: str | None = None
    for rec in records:
        stack = hostframes.frames(rec)
        owner = _owner(stack, run.order, by_place) if stack else previous
        if owner is None:
            lost.append(rec)
        else:
            out.setdefault(owner, []).append(rec)
        previous = owner
    return out, lost


def _owner(stack: list[hostframes.Frame], order: list[str],
           by_place: dict[tuple[str, str], list[str]]) -> str | None:
    for frame in stack:
        m = _FRAME.match(frame.func or "")
        if m and int(m.group(1)) < len(order):
            return order[int(m.group(1))]
    for frame in stack:
        owners = by_place.get((frame.path or "", frame.func or ""))
        if owners:
            return owners[0] if len(owners) == 1 else None
    return None


@dataclass(frozen=True)
class Settled:
    """One child's outcome: the tests it decided and the tests to run again (``alone``: in a child
    of its own, the test a crash or hang stopped)."""

    decided: dict[str, ToolResult]
    again: list[str]
    alone: str | None = None
    skipped: dict[str, str] = field(default_factory=dict)


def settle(tool: str, batch: Sequence[str], run: ChildRun,
           found: dict[str, tuple[list[Any], list[str], bool]],
           stopped: str | None, log: str, *, timeout: float) -> Settled:
    """What one child's run decides. ``found``: nodeid -> (findings, notes, stops_the_context) from
    its records; ``stopped``: why the child ended early ("timeout" of the running test, "crash", or
    None when pytest finished). Tests after the one that broke the context (or after the first whose
    findings stop it) run again; a child that stopped in a test with no findings runs that test
    alone, unless it was alone already, and then that is its verdict. Pure."""
    decided: dict[str, ToolResult] = {}
    skipped: dict[str, str] = {}
    cut = run.dead
    if cut is None:
        cut = next((n for n in run.order if n in found and found[n][2]), None)
    running = run.running if stopped else None
    ran = run.order[: run.order.index(cut) + 1] if cut is not None else list(run.order)
    for nodeid in ran:
        if nodeid == running and nodeid not in found:
            continue
        findings, notes, _ = found.get(nodeid, ([], [], False))
        done = run.finished.get(nodeid)
        seconds = done.seconds if done else 0.0
        if findings:
            decided[nodeid] = ToolResult(tool, "findings", findings, seconds, "", notes=notes,
                                         log=log)
        elif done is None:
            continue  # stopped before it finished with nothing found: it runs again
        elif done.outcome == "failed":
            decided[nodeid] = ToolResult(tool, "target-error", [], seconds,
                                         f"the test failed under {tool} with nothing found",
                                         notes=notes, log=done.message)
        else:
            if done.outcome == "skipped":
                skipped[nodeid] = done.message
            decided[nodeid] = ToolResult(tool, "clean", [], seconds, "", notes=notes)
    again = [n for n in batch if n not in decided]
    alone = None
    if running is not None and running not in decided:
        if len(batch) == 1:
            status: ToolStatus = "timeout" if stopped == "timeout" else "tool-error"
            why = (f"the test did not finish within {timeout:g} s under {tool}; its process group "
                   "was stopped (sanitizers slow kernels down 20x to 100,000x: a smaller problem "
                   "or a longer --kprof-timeout)"
                   if stopped == "timeout"
                   else f"the test's process ended under {tool} before the test finished")
            decided[running] = ToolResult(tool, status, [], 0.0, why, notes=[], log=log)
            again = [n for n in again if n != running]
        else:
            alone = running
    # the child ran none of them: say so, once
    if not run.order and again and len(again) == len(batch):
        why = f"pytest under {tool} ran none of the tests" + (f": {run.collect_errors[0][:300]}"
                                                             if run.collect_errors
                                                             else "; its last lines are below")
        for nodeid in again:
            decided[nodeid] = ToolResult(tool, "tool-error", [], 0.0, why, notes=[], log=log)
        again = []
    return Settled(decided, again, alone, skipped)


def blinding_test(order: Sequence[str], records: dict[str, int], total: int,
                  limit: int) -> str | None:
    """The test in which a child's tool reached its record limit (``--print-limit``: it saves no
    record after it, so it is blind to every later test in that process), or None while it did not.
    Pure."""
    if total < limit:
        return None
    seen = 0
    for nodeid in order:
        seen += records.get(nodeid, 0)
        if seen >= limit:
            return nodeid
    return order[-1] if order else None


def combine(nodeids: Sequence[str], tools: Sequence[str],
            per_tool: Sequence[dict[str, TestVerdict]],
            counts: dict[str, Coverage] | None = None, *,
            all_kernels: bool = False) -> dict[str, TestVerdict]:
    """One verdict per test over every tool's run, in the tools' order; skipped only where every
    tool's child skipped it; with ``counts`` (:func:`count_tests`), each tool's result says what the
    test launched (and what that tool skipped of it: :mod:`kprof.tools.sanitizers.kernelpolicy`),
    and a test that launched none is NOT CHECKED (toolrun.with_coverage). Pure."""
    from kprof.tools.sanitizers import kernelpolicy

    out = {}
    for nodeid in nodeids:
        results: list[ToolResult] = []
        skips: list[str | None] = []
        for tool, verdicts in zip(tools, per_tool):
            v = verdicts.get(nodeid)
            if v is None:
                results.append(ToolResult(tool, "tool-error", [], 0.0,
                                          f"no verdict from {tool}'s run for this test"))
                skips.append(None)
            else:
                checked = (counts or {}).get(nodeid)
                results += [kernelpolicy.settle(r, checked, checkers.skips(r.tool, all_kernels))
                            if v.skipped is None else r for r in v.results]
                skips.append(v.skipped)
        skipped = skips[0] if skips and all(s is not None for s in skips) else None
        out[nodeid] = TestVerdict(nodeid, results, skipped)
    return out
