"""A pytest suite under compute-sanitizer: one child per tool for a whole batch of tests, each
finding attributed to the test that launched the kernel.

The plugin (:mod:`kprof.pytest_plugin`) hands this module its selected tests; :func:`run` returns a
:class:`TestVerdict` per test. For each tool, one ``python -m pytest NODEID...`` child runs them all
under the tool with :mod:`kprof.tools.suites.pytest_child` loaded: it runs test ``i`` inside a frame
named ``kprof_test_<i>`` and writes an event per test. A record's saved host stack names that frame,
so its finding lands on its test (:func:`attribute`); the test's function in its file is the
fallback.

When a child stops early (memcheck stopped a kernel and the context is broken, a test hung past its
time, the process crashed), the tests it had not finished run again in a new child, and a test that
crashed a child alone is run alone: one bug never fails the rest. Paying the interpreter's, the
framework's and the GPU's start once per tool instead of once per test and tool is the point:
measured in ``docs/results/README.md``.

Under memcheck, whose first finding stops the child, a spare child starts beside each batch and
waits after collection for the tests after the stop (checkers whose ``needs.stops``).

What the children decided is read by :mod:`kprof.tools.suites.suiteverdict` (pure). The run itself
is :func:`run_tool`.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from kprof.tools.programs import allocators
from kprof.tools.programs.coverage import Coverage
from kprof.tools.sanitizers import checkers, kernelpolicy, sanitizer_xml
from kprof.tools.sanitizers.checker import SuiteChild
from kprof.tools.suites import suiteevents
from kprof.tools.suites.pytest_child import EVENTS_ENV, GO_ENV
from kprof.tools.suites.suiteevents import Finish
from kprof.tools.suites.suiteverdict import (
    Settled,
    Test,
    TestVerdict,
    attribute,
    blinding_test,
    combine,
    read_events,
    settle,
)

# a child's start or end under a tool (PyTorch's import under memcheck: about 10 s on an H200)
START_S = 120.0
MAX_EVENTS_BYTES = 64 * 1024 * 1024  # one line per test event; a 10,000-test batch writes a few MB

# A child under one tool: past its limit a tool saves no record for the rest of the process, so the
# tests after the one that reached it run again in a fresh child (blinding_test), seconds each.
# initcheck runs with host frames only (compute_sanitizer.build_argv), where a record costs about 6
# ms: on an H200 (787eb2f), the user suite's two half nn.Linear tests under initcheck took 5.6 s
# with 5 records saved and 8.7 s with 514 (7.9 MB of XML); with device frames, 1,000 records had
# cost 105 s. So initcheck keeps 1,000 records a child, the others 200.
SUITE_PRINT_LIMIT = 200
SUITE_PRINT_LIMITS = {"initcheck": 1000}


def print_limit(tool: str) -> int:
    """The records a suite's child under ``tool`` keeps before it is blind
    (:data:`SUITE_PRINT_LIMITS`)."""
    return SUITE_PRINT_LIMITS.get(tool, SUITE_PRINT_LIMIT)


def count_tests(tests: Sequence[Test], *, timeout: float, env: dict[str, str],
                cwd: str | Path) -> dict[str, Coverage]:
    """What each test launches, counted in a run of them beside the tools' (CUPTI cannot run under
    compute-sanitizer): kprof's pytest child with the launch tally, each test's count in its finish
    event. Each test has its own time limit, as under the tools: a test past it is stopped with its
    child and has no count, and the tests after it are counted in a child of their own (the run once
    waited ``timeout`` times the number of tests for one hung test). A test whose child ended by
    itself mid-run (a fault) has none either."""
    from kprof import inputs, proc
    from kprof.tools.sanitizers.checkers import COUNT

    nodeids, counted = [t.nodeid for t in tests], {}
    while nodeids:
        with tempfile.TemporaryDirectory(prefix="kprof-count-") as tmp:
            events = Path(tmp) / "events.jsonl"
            run_env = allocators.with_hooks({**env, EVENTS_ENV: str(events),
                                             "KPROF_LAUNCH_TALLY": str(Path(tmp) / "tally.jsonl")})
            watch = _Watch(events, COUNT, timeout, None)
            proc.run(child_argv(nodeids), env=run_env, cwd=cwd, watch=watch, poll=HANDOFF_POLL_S)
            text = inputs.read_text(events, "the suite's events", limit=MAX_EVENTS_BYTES, errors="replace") if (
                events.is_file()) else ""
        counted.update({n: f.checked for n, f in read_events(text).finished.items()
                        if f.checked is not None})
        # it ended by itself, or stopped before any test: no more
        if not (watch.expired and watch.current):
            break
        nodeids = [n for n in nodeids if n not in watch.started_tests]
    return counted


def no_xdist() -> list[str]:
    """The options that run a child pytest in one process. Where pytest-xdist is installed, ``-n 0``
    (its own off switch): the child reads the user's ini, and an ``addopts = -n auto`` there is an
    unknown option once the plugin is unloaded (``-p no:xdist``), so every test would be lost."""
    import importlib.util

    return ["-n", "0"] if importlib.util.find_spec("xdist") is not None else ["-p", "no:xdist"]


def child_argv(nodeids: Sequence[str]) -> list[str]:
    """The child: this interpreter's pytest over the batch, kprof's recorder loaded, no xdist, no
    cache."""
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *no_xdist(),
            "-p", "kprof.tools.suites.pytest_child", *nodeids]


Progress = Callable[[str, str, Finish], None]


# The checkers that stop a child at a test's first bug (Needs.stops: memcheck stops the kernel at
# its first invalid access and the context is broken). For these SPARES spare children start beside
# each batch and wait, their interpreter, imports and collection done, for the tests after a stop: a
# rerun skips that start. Two, so the rerun after a second stop soon after the first need not wait
# for a new spare's start (measured on an H200, ea69f0c: a suite with two memcheck findings waited
# for the second).
SPARES = 2
# The other checkers' children are blind past their record limit (blinding_test): the tests after it
# run again. Where the machine holds them (parallel.spare_room), one spare each is kept ready beside
# each batch for that rerun (a new one only once a rest took the last): on an H200 (e711d75),
# racecheck's rerun of the user suite's last 3 tests after its racy CuPy test took 9 s in a fresh
# child, most of the suite's time under the tools; at e0ff3c3, under compute-sanitizer 2025.3.1,
# racecheck's child was blinded three times in one suite.
SPARES_BLIND = 1
HANDOFF_POLL_S = 0.1  # how often the parent looks for a child's word that its context broke


class Early:
    """Children started before the tests are known, one per tool, each collecting ``collect`` (the
    paths pytest was given) and then waiting: started while the user's pytest still collects, so the
    interpreter, the imports and the collection under each tool overlap with it. :func:`run_tool`
    hands its tool's child the first batch; what no batch took is stopped (:meth:`cancel`)."""

    def __init__(self, collect: list[str], tools: Sequence[str], *, timeout: float,
                 env: dict[str, str],
                 cwd: str | Path, padding: int = 256, all_kernels: bool = False) -> None:
        from kprof.tools.sanitizers import compute_sanitizer as san

        self.children = {tool: _Child(list(collect), True, tool, {}, timeout, env, cwd=cwd,
                                      padding=padding, progress=None,
                                      san=san, all_kernels=all_kernels)
                         for tool in tools}

    def take(self, tool: str) -> _Child | None:
        return self.children.pop(tool, None)

    def cancel(self) -> None:
        for child in self.children.values():
            child.cancel()
        self.children.clear()


def run_tool(tests: Sequence[Test], tool: str, *, timeout: float, env: dict[str, str],
             cwd: str | Path,
             padding: int = 256, progress: Progress | None = None, early: _Child | None = None,
             all_kernels: bool = False, blind_spares: int = 0) -> dict[str, TestVerdict]:
    """Every test of ``tests`` under ``tool``, in as few children as the run allows; never raises
    for a test's sake. ``timeout``: seconds one test may take before its child is stopped.
    ``early``: this tool's child from :class:`Early`, handed the first batch. ``blind_spares``:
    spare children kept ready beside each batch of a checker that does not stop, for the tests after
    its record limit (:data:`SPARES_BLIND`)."""
    from kprof.tools.sanitizers import compute_sanitizer as san

    by_id = {t.nodeid: t for t in tests}
    results: dict[str, TestVerdict] = {}
    queue: list[list[str]] = [[t.nodeid for t in tests]] if tests else []

    def start(collect: list[str], spare: bool) -> _Child:
        return _Child(collect, spare, tool, by_id, timeout, env, cwd=cwd, padding=padding,
                      progress=progress, san=san, all_kernels=all_kernels)

    spares: list[_Child] = []
    # a child handed the tests after a stop while the stopped one still ended
    pending: list[_Child] = []

    def wait(child: _Child) -> tuple[Settled, bool]:
        """The child's outcome. When it says the context broke, the tests it will never start go to
        a spare (or a new child) at once: the stopped child's end under the tool (seconds under
        memcheck with torch loaded) is no longer waited for before the rerun starts."""
        while child.thread.is_alive():
            child.thread.join(HANDOFF_POLL_S)
            if not pending and (rest := child.rest_after_stop()):
                pending.append(_ready_spare(spares, rest) or start(rest, spare=False))
        return child.wait()

    first: _Child | None = None  # the early child, if it took the first batch
    # it collected the paths pytest was given: what it lacks of the batch runs again
    if early is not None:
        early.by_id, early.watch.progress = by_id, progress
        if queue and early.go(queue[0]):
            pending.append(early)
            first = early
        else:
            early.cancel()
    try:
        while queue:
            batch = queue.pop(0)
            # a child given this batch before it was due
            handed = pending.pop() if pending else None
            # decided otherwise (records of no test): dropped
            if handed is not None and handed.batch != batch:
                handed.stop()
                handed = None
            child = handed or _ready_spare(spares, batch) or start(batch, spare=False)
            if checkers.get(tool).needs.stops and len(batch) > 1:
                spares += [start(batch, spare=True) for _ in range(SPARES - len(spares))]
            # one kept ready while a batch runs, for the rest after a limit
            elif blind_spares and len(batch) > 1:
                spares += [start(batch, spare=True) for _ in range(blind_spares - len(spares))]
            settled, lost = wait(child)
            if child is first and not child.watch.started_tests:
                # its collection had none of them (or failed): the batch in a child of its own
                first = None
                queue.insert(0, batch)
                continue
            if lost and len(batch) > 1:
                # Records no test could be given (no host stack at all): halve the batch until each
                # such record can only be its child's one test's. Rare: every launch of a Python
                # program has a stack.
                half = len(batch) // 2
                queue[:0] = [batch[:half], batch[half:]]
                continue
            for nodeid, result in settled.decided.items():
                results[nodeid] = TestVerdict(nodeid, [result], settled.skipped.get(nodeid))
            rest = [n for n in settled.again if n != settled.alone]
            if rest:
                queue.insert(0, rest)
            if settled.alone:
                queue.insert(0, [settled.alone])
    finally:
        for spare in spares:  # no stop left a rest for it: stopped where it is
            spare.cancel()
        for left in pending:
            left.stop()
    # which compute-sanitizer checked them: said in each result
    checked_by = san.installed_version()
    return {n: replace(v, results=[replace(r, version=checked_by) for r in v.results])
            for n, v in results.items()}


def _ready_spare(spares: list[_Child], batch: list[str]) -> _Child | None:
    """A waiting spare that collected every test of ``batch``, taken from ``spares`` and handed
    them; spares that ended before they were needed (their collection failed) are put away."""
    for spare in list(spares):
        if not spare.thread.is_alive():
            spares.remove(spare)
            spare.wait()
    for spare in list(spares):
        if set(batch) <= set(spare.collect):
            spares.remove(spare)
            if spare.go(batch):
                return spare
            spare.wait()
    return None


class _Child:
    """One child under the tool, run in a thread from the start. A spare one collects ``collect``
    and waits for :meth:`go` to name the tests (a subset) it is to run."""

    def __init__(self, collect: list[str], spare: bool, tool: str, by_id: dict[str, Test],
                 timeout: float,
                 env: dict[str, str], *, cwd: str | Path, padding: int, progress: Progress | None,
                 san: Any, all_kernels: bool = False) -> None:
        import threading

        self.collect, self.tool, self.by_id, self.timeout = list(collect), tool, by_id, timeout
        self.batch: list[str] = [] if spare else list(collect)
        self.folder = Path(tempfile.mkdtemp(prefix="kprof-suite-"))
        self.events = self.folder / "events.jsonl"
        self.events.touch()
        self.go_path = self.folder / "go.json" if spare else None
        self.watch = _Watch(self.events, tool, timeout, progress, armed=not spare)
        self.env = {**env, EVENTS_ENV: str(self.events)} | ({GO_ENV: str(self.go_path)}
                                                            if self.go_path else {})
        self.cwd, self.padding, self.san, self.all_kernels = cwd, padding, san, all_kernels
        self.outcome: tuple[Settled, bool] | None = None
        self.error: BaseException | None = None
        self.lock = threading.Lock()
        self.finished = False
        self.thread = threading.Thread(target=self._run, name=f"kprof-{tool}", daemon=True)
        self.thread.start()

    def go(self, batch: Sequence[str]) -> bool:
        """Hand a spare child its tests; False when it already ended (it then runs nothing)."""
        with self.lock:
            if self.finished:
                return False
            self.batch = list(batch)
            assert self.go_path is not None
            part = self.go_path.with_suffix(".part")
            part.write_text(json.dumps(self.batch))
            part.replace(self.go_path)  # whole or not at all: the child reads it once it exists
            self.watch.arm()
            return True

    def cancel(self) -> None:
        """Stop a spare that was never handed tests (its process group at the next poll) and wait
        for it: one started late would otherwise keep the run waiting for its interpreter, imports
        and collection (on an H200, 3234126: a spare started at the last rerun)."""
        with self.lock:
            if not self.batch:
                self.watch.cancelled = True
        self.thread.join()

    def stop(self) -> None:
        """Stop this child whatever it is doing (its process group at the next poll) and wait for
        it; what it found is dropped (a child handed tests early whose predecessor decided
        otherwise)."""
        self.watch.cancelled = True
        self.thread.join()

    def rest_after_stop(self) -> list[str] | None:
        """Once the child said the context broke: the tests of its batch it never started (what
        :func:`settle` will run again), before the child has ended; else None."""
        if self.watch.dead is None:
            return None
        return [n for n in self.batch if n not in self.watch.started_tests]

    def wait(self) -> tuple[Settled, bool]:
        self.thread.join()
        if self.error is not None:
            raise self.error
        assert self.outcome is not None
        return self.outcome

    def _run(self) -> None:
        import shutil

        try:
            done, xml_text = checkers.get(self.tool).check_suite_child(child_argv(self.collect), SuiteChild(
                self.env, self.cwd, watch=self.watch, padding=self.padding,
                all_kernels=self.all_kernels, print_limit=print_limit(self.tool)))
            with self.lock:
                self.finished = True
            self.outcome = _decide(self.batch, self.tool, self.by_id, self.timeout, self.san, done,
                                   xml_text=xml_text,
                                   events=self.events, expired=self.watch.expired)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread by wait()
            self.error = exc
        finally:
            with self.lock:
                self.finished = True
            shutil.rmtree(self.folder, ignore_errors=True)


def _decide(batch: list[str], tool: str, by_id: dict[str, Test], timeout: float, san: Any,
            done: Any, *, xml_text: str, events: Path, expired: bool) -> tuple[Settled, bool]:
    """What one finished child decided, from its events and the tool's report."""
    from kprof import inputs

    run = read_events(inputs.read_text(events, "the suite's events", limit=MAX_EVENTS_BYTES,
                                       errors="replace"))
    recs = sanitizer_xml.records(xml_text) if xml_text.strip() else []
    per_test, lost = attribute(recs, run, [by_id[n] for n in batch])
    if lost and len(run.order) == 1:
        per_test.setdefault(run.order[0], []).extend(lost)  # one test ran: they can only be its
        lost = []
    if lost:
        # Records that add no finding (the API errors after a stopped kernel, read beside the record
        # that stopped it): nobody's to fail, and no reason to split the batch.
        stopper = [r for r in recs if (r.findtext("kind") or "") in sanitizer_xml.STOPS_THE_CONTEXT][:1]
        alone = len(sanitizer_xml.parse_records(stopper, tool)[0]) if stopper else 0
        if len(sanitizer_xml.parse_records(stopper + lost, tool, tool_text=done.stdout)[0]) <= alone:
            lost = []
    found: dict[str, tuple[list[Any], list[str], bool]] = {}
    blinded = blinding_test(run.order, {n: len(r) for n, r in per_test.items()}, len(recs),
                            print_limit(tool))
    for nodeid, mine in per_test.items():
        findings, notes = sanitizer_xml.parse_records(mine, tool, tool_text=done.stdout)
        findings, set_aside = kernelpolicy.libraries_own(findings)
        notes = [*notes, *set_aside]
        # a suite's child runs once: say how to get the user's line
        if san.needs_device_frames(tool, findings):
            notes.append(f"{tool} stopped inside a CUDA header here and ran without device frames "
                         f"(they cost seconds a record); `kprof sanitize --tool {tool} -- python "
                         f"-m pytest {nodeid}` reruns it with them and names your line")
        stops = any((r.findtext("kind") or "") in sanitizer_xml.STOPS_THE_CONTEXT for r in mine)
        if nodeid == blinded:
            stops = True
            notes.append(f"{tool} reached its limit of {print_limit(tool)} records in this test "
                         "and reports no more in that process: the tests after it "
                         "ran again in a fresh one")
        if findings or stops:
            found[nodeid] = (findings, notes, stops)
    stopped = "timeout" if expired else ("crash" if run.running and run.dead is None else None)
    return settle(tool, batch, run, found, stopped, done.tail(40), timeout=timeout), bool(lost)


class _Watch:
    """Reads the child's new events every poll: progress for each finished test, and the verdict on
    a test running past its time."""

    def __init__(self, path: Path, tool: str, timeout: float, progress: Progress | None,
                 armed: bool = True) -> None:
        self.path, self.tool, self.timeout, self.progress = path, tool, timeout, progress
        self.offset = 0
        self.current: tuple[str, float] | None = None
        self.started = time.monotonic()
        self.armed = armed  # a spare child's wait for its tests is no test's time
        self.expired = False
        self.cancelled = False  # a spare no stop needed: stopped, not waited for
        self.started_tests: set[str] = set()
        self.dead: str | None = None  # the test after which the child said the context broke

    def arm(self) -> None:
        self.started, self.armed = time.monotonic(), True

    def __call__(self) -> bool:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read(MAX_EVENTS_BYTES)
        except OSError:
            chunk = b""
        # a line the child is still writing waits for the next poll
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        for event in suiteevents.read(complete.decode("utf-8", errors="replace")):
            if isinstance(event, suiteevents.Start):
                self.current = (event.nodeid, time.monotonic())
                self.started_tests.add(event.nodeid)
            elif isinstance(event, suiteevents.Dead):
                self.dead = event.nodeid
            elif isinstance(event, suiteevents.Finish):
                self.current = None
                # between tests (and after the last): the next one's clock
                self.started = time.monotonic()
                if self.progress:
                    self.progress(self.tool, event.nodeid, event)
        if self.cancelled:
            return True
        if not self.armed:
            return False
        # A test has its own limit. With none running, the child is starting (the interpreter, the
        # imports and the collection under the tool) or ending (the tool writing its report): no
        # test's time, and never less than a generous START_S.
        since, limit = (self.current[1], self.timeout) if self.current else (self.started, max(self.timeout, START_S))
        self.expired = time.monotonic() - since > limit
        return self.expired


def check_tests(tests: Sequence[Test], names: list[str], *, timeout: float, env: dict[str, str],
                cwd: str | Path,
                padding: int, jobs: int | None, progress: Any = None, early: Early | None = None,
                all_kernels: bool = False) -> dict[str, TestVerdict]:
    """The tests under each checker of ``names``, one child per checker for them all (``jobs`` at
    once), and one more run that counts what each test launches (CUPTI cannot run under a tool): a
    verdict per node id. ``early``: children started while pytest collected, each given its
    checker's first batch."""
    from kprof import parallel, telemetry
    from kprof.tools.sanitizers.checkers import COUNT

    runs = [*names, COUNT]
    at_once = parallel.jobs_for(len(runs), jobs)
    stopping = [t for t in names if checkers.get(t).needs.stops]
    blind = [t for t in names if t not in stopping]
    room = parallel.spare_room(min(at_once, len(runs)) + SPARES * len(stopping),
                               telemetry.free_memory(),
                               parallel.host_cpus()) if blind and at_once >= len(runs) else 0
    spare_each = SPARES_BLIND if room >= SPARES_BLIND * len(blind) else 0

    def one(tool: str) -> Any:
        if tool == COUNT:
            return count_tests(tests, timeout=timeout, env=env, cwd=cwd)
        return run_tool(tests, tool, timeout=timeout, env=env, cwd=cwd, padding=padding,
                        progress=progress,
                        early=early.take(tool) if early is not None else None,
                        all_kernels=all_kernels, blind_spares=spare_each if tool in blind else 0)

    done = parallel.map_jobs(one, runs, at_once)
    return combine([t.nodeid for t in tests], names, done[:-1], done[-1], all_kernels=all_kernels)
