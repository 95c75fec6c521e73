"""pytest glue: ``pytest --kprof-sanitize[=TOOLS]`` runs each selected test under compute-sanitizer.

Inert unless asked for. With ``--kprof-sanitize``, each selected test runs in its own child process
(``python -m pytest NODEID``) under each tool through :func:`kprof.sanitize` (framework pools off,
padding, racecheck's full report, a timeout that stops the whole process group), and fails with the
findings: kind, ``file:line``, the launch site in your files, the allocation an access missed. A test
that crashes the GPU context fails alone; the run goes on. Selected tests are those marked
``@pytest.mark.kprof_sanitize`` when any collected test carries the mark, else every collected test.

Under pytest-xdist each worker gives its children one GPU of the host (``CUDA_VISIBLE_DEVICES``,
round robin over the GPUs NVML sees, or over the ones already listed there), so a suite spreads over
every GPU. This module is glue only: running and classifying is :mod:`kprof.api`, printing is
:mod:`kprof.render`.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Literal

import pytest

MARK = "kprof_sanitize"
DEFAULT_TOOLS = "memcheck,racecheck,initcheck,synccheck"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kprof", "kprof: compute-sanitizer over each test")
    group.addoption("--kprof-sanitize", nargs="?", const=DEFAULT_TOOLS, default=None, metavar="TOOLS",
                    help=f"run each selected test in its own process under these compute-sanitizer tools "
                    f"(default {DEFAULT_TOOLS}) and fail it with their findings")
    group.addoption("--kprof-timeout", default="600", metavar="S",
                    help="seconds per test and tool before it counts as hung (default 600)")
    group.addoption("--kprof-keep-pools", action="store_true",
                    help="leave framework memory pools on (accesses inside a pool then go unseen)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARK}: run this test under compute-sanitizer when --kprof-sanitize is given")
    tools = config.getoption("--kprof-sanitize")
    if tools is None:
        return
    names, timeout = check_options(tools, config.getoption("--kprof-timeout"))
    if not hasattr(config, "workerinput"):  # once, in the process the user started (not per xdist worker)
        _check_machine()
    config.pluginmanager.register(_Sanitizer(config, names, timeout), "kprof-sanitizer")
    assign_worker_gpu()


def check_options(tools: str, timeout_text: str) -> tuple[list[str], float]:
    """The plugin's options, checked once before any test runs: a typo is one usage error (pytest's exit
    4), not the same failure in every test. Raises :class:`pytest.UsageError`."""
    from kprof import api
    from kprof.errors import KprofError
    from kprof.inputs import MAX_SECONDS

    if os.sep in tools or tools.endswith(".py") or os.path.exists(tools):
        raise pytest.UsageError(
            f"--kprof-sanitize read {tools!r} as its list of tools: write --kprof-sanitize=all {tools} "
            f"(or name the tools: --kprof-sanitize=memcheck,racecheck {tools})")
    names = [t.strip() for t in tools.split(",") if t.strip()]
    try:
        names = api.program_tools(names)
    except KprofError as exc:
        raise pytest.UsageError(f"--kprof-sanitize={tools}: {exc}") from None
    try:
        timeout = float(timeout_text)
    except ValueError:
        raise pytest.UsageError(f"--kprof-timeout={timeout_text}: give a number of seconds") from None
    if not 0 < timeout <= MAX_SECONDS:  # also refuses nan
        raise pytest.UsageError(f"--kprof-timeout={timeout_text}: give a positive number of seconds, at most a week")
    return names, timeout


def _check_machine() -> None:
    """No GPU or no compute-sanitizer: said once, before the first test, as a usage error."""
    from kprof import api
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


class _Sanitizer:
    def __init__(self, config: pytest.Config, tools: list[str], timeout: float) -> None:
        self.config = config
        self.tools = tools
        self.timeout = timeout
        self.marked_only = False

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.marked_only = any(item.get_closest_marker(MARK) for item in items)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
        if self.marked_only and not item.get_closest_marker(MARK):
            return None
        ihook = item.ihook
        ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        start = time.time()
        outcome, longrepr = self._run(item)
        stop = time.time()
        phases: list[tuple[Literal["setup", "call", "teardown"], Literal["passed", "failed"], str | None]] = [
            ("setup", "passed", None), ("call", outcome, longrepr), ("teardown", "passed", None)]
        for when, result, text in phases:
            report = pytest.TestReport(item.nodeid, item.location, dict.fromkeys(item.keywords, 1), result, text, when,
                                       sections=[], duration=stop - start if when == "call" else 0.0,
                                       start=start, stop=stop)
            ihook.pytest_runtest_logreport(report=report)
        ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    def _run(self, item: pytest.Item) -> tuple[Literal["passed", "failed"], str | None]:
        import kprof
        from kprof import render
        from kprof.errors import KprofError

        cmd = [sys.executable, "-m", "pytest", item.nodeid, "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
        try:
            report = kprof.sanitize(cmd, self.tools, timeout=self.timeout,
                                    keep_pools=self.config.getoption("--kprof-keep-pools"), cwd=self.config.rootpath)
        except KprofError as exc:
            return "failed", f"kprof: {exc}"
        if report.clean:
            return "passed", None
        return "failed", f"kprof sanitize ({', '.join(self.tools)}):\n" + render.sanitize_report(report.results)
