"""pytest glue: ``pytest --kprof-sanitize[=TOOLS]`` runs the selected tests under compute-sanitizer.

Inert unless asked for. With ``--kprof-sanitize``, the selected tests of this process run in one
``python -m pytest`` child per tool (:func:`kprof.sanitize_tests`, :mod:`kprof.tools.suites.suite`),
the tools side by side (``--kprof-jobs``), framework pools off, padding, racecheck's full report,
each test under its own time limit. Each finding lands on the test that launched the kernel, from
the host stack the tool saves; that test fails with the findings (kind, ``file:line``, the launch
site in your files, the allocation an access missed), and the others pass. When a tool stops the
CUDA context, the tests the child had not finished run again in a new child; a test that crashes a
child is run alone. ``--kprof-per-test`` keeps one child per test and tool, for suites whose tests
cannot share a process. Selected tests are those marked ``@pytest.mark.kprof_sanitize`` when any
collected test carries the mark, else every collected test.

Under pytest-xdist each worker gives its children one GPU of the host (``CUDA_VISIBLE_DEVICES``,
round robin over the GPUs NVML sees, or over the ones already listed there), and batches the tests
queued to it. This module is glue only: running and classifying is :mod:`kprof.commands.api` and
:mod:`kprof.tools.suites.suite`, printing is :mod:`kprof.results.render`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

if TYPE_CHECKING:
    from kprof.tools.suites.suite import Progress as TestProgress
    from kprof.tools.suites.suiteverdict import Test

MARK = "kprof_sanitize"
# every checker that can check tests (kprof.tools.sanitizers.checkers.for_tests), resolved when
# asked for
DEFAULT_TOOLS = "all"


def _safe(longrepr: object) -> object:
    """A failure's text with control characters escaped: a report's text (a kernel name, a message)
    is not the terminal's to act on."""
    from kprof.inputs import terminal_safe

    return terminal_safe(longrepr) if isinstance(longrepr, str) else longrepr


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kprof", "kprof: compute-sanitizer over each test")
    group.addoption("--kprof-sanitize", nargs="?", const=DEFAULT_TOOLS, default=None,
                    metavar="TOOLS",
                    help="run each selected test in its own process under these "
                         "compute-sanitizer tools "
                    "(default all: every tool that can check tests, "
                    "kprof.tools.sanitizers.checkers.for_tests) and fail it with their findings")
    group.addoption("--kprof-timeout", default="600", metavar="S",
                    help="seconds one test may take under one tool before it "
                         "counts as hung (default 600)")
    group.addoption("--kprof-keep-pools", action="store_true",
                    help="leave framework memory pools on (accesses inside a pool then go unseen)")
    group.addoption("--kprof-per-test", action="store_true",
                    help="one child per test and tool (slower: for tests "
                         "that cannot share a process)")
    group.addoption("--kprof-all-kernels", action="store_true",
                    help="racecheck and synccheck check library kernels too (cuBLAS, cuDNN, "
                         "CUTLASS, NCCL, PyTorch's "
                    "own; by default they check the kernels the tests' own code wrote, memcheck "
                    "and initcheck all)")
    group.addoption("--kprof-jobs", default=None, metavar="N",
                    help="tools run side by side (default: what the GPU's free "
                         "memory and the CPUs allow; "
                    "1 runs them one after another)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers",
                            f"{MARK}: run this test under compute-sanitizer when "
                            "--kprof-sanitize is given")
    tools = config.getoption("--kprof-sanitize")
    if tools is None:
        return
    explicit = any(str(a).startswith("--kprof-sanitize=") for a in config.invocation_params.args)
    names, timeout = check_options(tools, config.getoption("--kprof-timeout"), explicit=explicit)
    jobs = check_jobs(config.getoption("--kprof-jobs"))
    # once, in the process the user started (not per xdist worker)
    if not hasattr(config, "workerinput"):
        _check_machine()
    sanitizer = _Sanitizer(config, names, timeout, jobs)
    config.pluginmanager.register(sanitizer, "kprof-sanitizer")
    assign_worker_gpu()
    sanitizer.prestart()


def pytest_unconfigure(config: pytest.Config) -> None:
    sanitizer = config.pluginmanager.get_plugin("kprof-sanitizer")
    if isinstance(sanitizer, _Sanitizer) and sanitizer.early is not None:
        # children no batch took (nothing was selected, or the session stopped)
        sanitizer.early.cancel()


def _shown(text: str, limit: int = 60) -> str:
    """An option's value as a message shows it: control characters escaped (an ESC never reaches the
    terminal) and cut to ``limit`` characters (a 100,000-character value is not echoed whole)."""
    from kprof.inputs import one_line, terminal_safe

    return one_line(terminal_safe(text[:limit] + ("..." if len(text) > limit else "")))


def check_options(tools: str, timeout_text: str, *, explicit: bool = False) -> tuple[list[str], float]:
    """The plugin's options, checked once before any test runs: a typo is one usage error (pytest's
    exit 4), not the same failure in every test. ``explicit``: the tools were given as
    ``--kprof-sanitize=TOOLS``, so a file of that name beside them is not what was meant. Raises
    :class:`pytest.UsageError`."""
    from kprof.commands import api
    from kprof.errors import KprofError
    from kprof.inputs import MAX_SECONDS, MIN_TIMEOUT

    shown = _shown(tools)
    if os.sep in tools or tools.endswith(".py") or (not explicit and os.path.exists(tools)):
        raise pytest.UsageError(
            f"--kprof-sanitize read {shown!r} as its list of tools: write --kprof-sanitize=all "
            f"{shown} (or name the tools: --kprof-sanitize=memcheck,racecheck {shown})")
    names = [t.strip() for t in tools.split(",") if t.strip()]
    try:
        names = api.program_tools(names)
    except KprofError as exc:
        raise pytest.UsageError(f"--kprof-sanitize={shown}: {_shown(str(exc), 300)}") from None
    try:
        timeout = float(timeout_text) if len(timeout_text) <= 40 else float("nan")
    except ValueError:
        raise pytest.UsageError(f"--kprof-timeout={_shown(timeout_text)}: give a number of "
                                "seconds") from None
    if not MIN_TIMEOUT <= timeout <= MAX_SECONDS:  # also refuses nan
        raise pytest.UsageError(f"--kprof-timeout={_shown(timeout_text)}: give a number of seconds "
                                f"from {MIN_TIMEOUT:g} (a child takes about that to start) to a week")
    return names, timeout


def check_jobs(text: str | None) -> int | None:
    """``--kprof-jobs``: a whole number from 1 to :data:`kprof.inputs.MAX_COUNT`, or None (the
    machine's default); its digits counted before Python's ``int`` reads them (5,000 digits were
    an INTERNALERROR)."""
    from kprof.inputs import MAX_COUNT

    if text is None:
        return None
    # '²' is a digit int() refuses; a count of more than 10 digits is past MAX_COUNT
    if not (text.isascii() and text.isdigit()) or len(text) > 10 or not 1 <= int(text) <= MAX_COUNT:
        raise pytest.UsageError(f"--kprof-jobs={_shown(text)}: give a whole number of tools to run "
                                f"at once, from 1 to {MAX_COUNT:,}")
    return int(text)


def _check_machine() -> None:
    """No GPU or no compute-sanitizer: said once, before the first test, as a usage error."""
    from kprof.commands import api
    from kprof.errors import KprofError

    try:
        api.require_gpu("compute-sanitizer")
    except KprofError as exc:
        raise pytest.UsageError(f"--kprof-sanitize: {exc}") from None


def assign_worker_gpu() -> None:
    """In a pytest-xdist worker, give this process (and the children it starts) one GPU of the host:
    ``CUDA_VISIBLE_DEVICES`` set from the worker's number. Nothing outside a worker."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        gpu = gpu_for_worker(worker, os.environ.get("CUDA_VISIBLE_DEVICES"), gpu_count())
        if gpu is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = gpu


def gpu_for_worker(worker: str, visible: str | None, count: int) -> str | None:
    """``gw3`` on a host with 2 GPUs -> "1"; with ``CUDA_VISIBLE_DEVICES=4,5`` -> "5". Pure."""
    ids = [v.strip() for v in visible.split(",") if v.strip()] if visible else [str(i) for i in range(count)]
    digits = "".join(c for c in worker if c.isdigit())
    if not ids or not digits:
        return None
    return ids[int(digits) % len(ids)]


def gpu_count() -> int:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no NVML: leave CUDA_VISIBLE_DEVICES alone
        return 0


def as_test(item: pytest.Item) -> Test:
    """The suite's view of a collected test: node id, file, function (without its parameters)."""
    from kprof.tools.suites.suiteverdict import Test

    func = getattr(item, "originalname", None) or item.name.split("[", 1)[0]
    return Test(item.nodeid, str(getattr(item, "path", item.fspath)), func)


def queued(session: pytest.Session, item: pytest.Item,
           plugins: Iterable[object]) -> list[pytest.Item]:
    """The tests this process will run from ``item`` on: under pytest-xdist, those its controller
    has queued to this worker so far (a test taken back later for another worker then runs twice,
    with the same verdict); else every collected test from ``item`` on."""
    worker: Any = next((p for p in plugins if type(p).__name__ == "WorkerInteractor" and hasattr(p, "torun")), None)
    if worker is None:
        items = session.items
        return items[items.index(item):] if item in items else [item]
    items = session.items
    with worker.torun.lock() as pending:
        indices = [worker.nextitem_index, *pending]
    return [item] + [items[i] for i in indices if isinstance(i, int) and 0 <= i < len(items)]


class _Sanitizer:
    def __init__(self, config: pytest.Config, tools: list[str], timeout: float,
                 jobs: int | None) -> None:
        self.config = config
        self.tools = tools
        self.timeout = timeout
        self.jobs = jobs
        self.marked_only = False
        self.verdicts: dict[str, Any] = {}
        self.ran_any = False  # some test's verdict was read
        # kprof.tools.suites.suite.Early: each tool's child, started during the collection
        self.early: Any = None
        # tests that launched no kernel: passed, NOT CHECKED, named at the end
        self.unchecked: list[str] = []
        from kprof.tools.sanitizers.kernelpolicy import SkipTally

        # the library kernels each tool left out, over every test: said at the end
        self.left_out = SkipTally()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.unchecked:
            shown = ", ".join(self.unchecked[:5]) + (f" and {len(self.unchecked) - 5} more"
                                                     if len(self.unchecked) > 5 else "")
            terminalreporter.write_line(f"kprof: {len(self.unchecked)} test(s) launched no kernel, "
                                        "so no tool checked anything in them (NOT CHECKED, "
                                        f"passed): {shown}")
        from kprof.tools.sanitizers import checkers, kernelpolicy

        all_kernels = self.config.getoption("--kprof-all-kernels")
        if self.ran_any and any(checkers.skips(t, all_kernels) for t in self.tools):
            terminalreporter.write_line(f"kprof: {kernelpolicy.POLICY}")
            if said := self.left_out.text():
                terminalreporter.write_line(f"kprof: {said}")

    def _tally(self, results: list[Any]) -> None:
        from kprof.tools.sanitizers import checkers

        all_kernels = self.config.getoption("--kprof-all-kernels")
        self.ran_any = True
        self.left_out.add(results, lambda tool: checkers.skips(tool, all_kernels))

    def prestart(self) -> None:
        """One child per tool, started now so that its start under the tool overlaps this process's
        collection; not in the per-test mode, not under pytest-xdist (a worker's tests come from its
        controller), not for --collect-only."""
        import kprof
        from kprof.errors import KprofError

        config = self.config
        if (config.getoption("--kprof-per-test") or hasattr(config, "workerinput")
            or config.option.collectonly
                or getattr(config.option, "numprocesses", None)):
            return
        here = Path(config.invocation_params.dir)
        collect = [str(here / a) for a in config.args] or [str(here)]
        try:
            self.early = kprof.prestart_tests(collect, self.tools, timeout=self.timeout,
                                              jobs=self.jobs,
                                              keep_pools=config.getoption("--kprof-keep-pools"),
                                              cwd=config.rootpath,
                                              all_kernels=config.getoption("--kprof-all-kernels"))
        except (KprofError, OSError):
            self.early = None  # the batch starts its own children, as without this

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.marked_only = any(item.get_closest_marker(MARK) for item in items)

    def selected(self, item: pytest.Item) -> bool:
        return not self.marked_only or item.get_closest_marker(MARK) is not None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item,
                                nextitem: pytest.Item | None) -> bool | None:
        if not self.selected(item):
            return None
        ihook = item.ihook
        ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        start = time.time()
        if self.config.getoption("--kprof-per-test"):
            outcome, longrepr = self._run_alone(item)
        else:
            outcome, longrepr = self._from_batch(item)
        stop = time.time()
        phases: list[tuple[Literal["setup", "call", "teardown"], Any, Any]] = [
            ("setup", "skipped" if outcome == "skipped" else "passed",
             longrepr if outcome == "skipped" else None),
            ("call", outcome, _safe(longrepr)), ("teardown", "passed", None)]
        if outcome == "skipped":
            phases = phases[:1] + phases[2:]  # as pytest reports a skip: no call phase
        for when, result, text in phases:
            report = pytest.TestReport(item.nodeid, item.location, dict.fromkeys(item.keywords, 1),
                                       result, text, when,
                                       sections=[],
                                       duration=stop - start if when == "call" else 0.0,
                                       start=start, stop=stop)
            ihook.pytest_runtest_logreport(report=report)
        ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    def _from_batch(self, item: pytest.Item) -> tuple[str, Any]:
        import kprof
        from kprof.errors import KprofError
        from kprof.results import render_sanitize

        if item.nodeid not in self.verdicts:
            batch = [i for i in queued(item.session, item, self.config.pluginmanager.get_plugins())
                     if self.selected(i) and i.nodeid not in self.verdicts]
            batch = list({i.nodeid: i for i in batch}.values())
            progress = self._progress(len(batch) * len(self.tools))
            try:
                early, self.early = self.early, None  # the first batch only
                self.verdicts.update(kprof.sanitize_tests(
                    [as_test(i) for i in batch], self.tools, timeout=self.timeout,
                    keep_pools=self.config.getoption("--kprof-keep-pools"),
                    cwd=self.config.rootpath, jobs=self.jobs, progress=progress, early=early,
                    all_kernels=self.config.getoption("--kprof-all-kernels")))
                if early is not None:
                    early.cancel()  # a tool the run had no child for at the start
            except KprofError as exc:
                return "failed", f"kprof: {exc}"
        verdict = self.verdicts.pop(item.nodeid, None)
        if verdict is None:
            return "failed", "kprof: no verdict for this test (it was not in the batch its tools ran)"
        self._tally(verdict.results)
        if verdict.skipped is not None and verdict.passes:
            return "skipped", (str(item.path), (item.location[1] or 0) + 1,
                               f"Skipped: {verdict.skipped}")
        if not verdict.clean and verdict.passes:
            self.unchecked.append(item.nodeid)
        if verdict.passes:
            return "passed", None
        return "failed", (f"kprof sanitize ({', '.join(self.tools)}):\n"
                          + render_sanitize.sanitize_report(verdict.results))

    def _progress(self, total: int) -> TestProgress:
        """``[3/12] test_x memcheck 4.1 s`` on the terminal, past pytest's output capture."""
        from kprof.parallel import Progress

        capman = self.config.pluginmanager.getplugin("capturemanager")
        reporter = self.config.pluginmanager.getplugin("terminalreporter")

        def write(line: str) -> None:
            if reporter is None:
                return  # an xdist worker: its controller prints the reports
            if capman is not None:
                with capman.global_and_fixture_disabled():
                    reporter.write_line(line)
            else:
                reporter.write_line(line)

        steps = Progress(total, write=write)
        return lambda tool, nodeid, done: steps.step(f"{nodeid} {tool} {done.outcome} "
                                                     f"{done.seconds:.1f} s")

    def _run_alone(self, item: pytest.Item) -> tuple[str, Any]:
        import kprof
        from kprof.errors import KprofError
        from kprof.results import render_sanitize
        from kprof.tools.suites import suite

        cmd = [sys.executable, "-m", "pytest", item.nodeid, "-q", "-p", "no:cacheprovider",
               *suite.no_xdist()]
        try:
            report = kprof.sanitize(cmd, self.tools, timeout=self.timeout, jobs=self.jobs,
                                    keep_pools=self.config.getoption("--kprof-keep-pools"),
                                    cwd=self.config.rootpath,
                                    all_kernels=self.config.getoption("--kprof-all-kernels"))
        except KprofError as exc:
            return "failed", f"kprof: {exc}"
        self._tally(report.results)
        if report.clean:
            return "passed", None
        if all(r.status in ("clean", "not-checked") for r in report.results):
            # a test of host code: nothing to check, said at the end
            self.unchecked.append(item.nodeid)
            return "passed", None
        return "failed", (f"kprof sanitize ({', '.join(self.tools)}):\n"
                          + render_sanitize.sanitize_report(report.results))
