"""The child side of ``pytest --kprof-sanitize``: loaded with ``-p kprof.tools.suites.pytest_child``
in the one ``python -m pytest`` child a compute-sanitizer tool wraps for a whole batch of tests.

Inert unless ``KPROF_SUITE_EVENTS`` names a file. Then it

- runs each test (setup, call and teardown) inside a Python frame named ``kprof_test_<i>``, ``i``
its
  place in this child's run. compute-sanitizer saves the host stack of every launch, Python frames
  included, so each record says which test launched the kernel, parametrized tests and fixtures too;
- writes one JSON line per event to that file (``start``, ``finish`` with the outcome, ``dead``),
  flushed at once, so the parent shows progress and knows what finished if the child is stopped;
- in a spare child (``KPROF_SUITE_GO``), waits after collection until the parent names the tests to
  run: the interpreter, the imports and the collection are paid before they are needed;
- after each test, asks the driver whether the test left the CUDA context broken (a sticky error:
  memcheck stopped a kernel, a fault). A broken context fails every later test of the process, so
  the child says ``dead`` and stops; the parent runs the tests after it again in a new child.

Nothing here imports CUDA: the driver is asked only when the test already loaded it.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import time
import types
from collections.abc import Callable
from typing import IO, Any

import pytest

from kprof.tools.suites import suiteevents

EVENTS_ENV = "KPROF_SUITE_EVENTS"
# a spare child: wait after collection until this file names the tests to run
GO_ENV = "KPROF_SUITE_GO"
GO_WAIT_S = 24 * 3600  # a parent gone for good: give up waiting
FRAME_PREFIX = "kprof_test_"
MESSAGE_CHARS = 4000  # a failed test's report, as the parent shows it: its last lines

# CUresult values after which the context is unusable for the rest of the process (CUDA's driver API
# reference: "the context cannot be used, so it must be destroyed").
STICKY = {700: "CUDA_ERROR_ILLEGAL_ADDRESS", 702: "CUDA_ERROR_LAUNCH_TIMEOUT",
          710: "CUDA_ERROR_ASSERT",
          714: "CUDA_ERROR_HARDWARE_STACK_ERROR", 715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
          716: "CUDA_ERROR_MISALIGNED_ADDRESS", 717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
          718: "CUDA_ERROR_INVALID_PC", 719: "CUDA_ERROR_LAUNCH_FAILED"}


def _call(fn: Callable[..., object], *args: object, **kwargs: object) -> object:
    return fn(*args, **kwargs)


def named_call(i: int) -> Callable[..., Any]:
    """``_call`` under the name ``kprof_test_<i>``: the frame compute-sanitizer's host stack
    shows."""
    name = f"{FRAME_PREFIX}{i}"
    changes: dict[str, Any] = {"co_name": name}
    # Python 3.11+: tracebacks and profilers show the qualname
    if hasattr(_call.__code__, "co_qualname"):
        changes["co_qualname"] = name
    return types.FunctionType(_call.__code__.replace(**changes), _call.__globals__, name)


def context_error() -> str | None:
    """The sticky error of this thread's CUDA context, or None: no driver loaded, no context, or a
    context that still works. Asked through the driver already in the process; never loads it."""
    flags = getattr(os, "RTLD_NOLOAD", None)
    if flags is None:
        return None
    try:
        lib = ctypes.CDLL("libcuda.so.1", mode=flags | os.RTLD_LAZY)
    except OSError:
        return None
    ctx = ctypes.c_void_p()
    if lib.cuCtxGetCurrent(ctypes.byref(ctx)) != 0 or not ctx.value:
        return None
    return STICKY.get(int(lib.cuCtxSynchronize()))


class Recorder:
    """Writes the events; one per child."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.index: dict[str, int] = {}
        self.outcome: dict[str, str] = {}
        self.message: dict[str, str] = {}
        self.started: dict[str, float] = {}

    def emit(self, event: suiteevents.Event) -> None:
        self.stream.write(suiteevents.line(event))
        self.stream.flush()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool:
        i = self.index.setdefault(item.nodeid, len(self.index))
        self.started[item.nodeid] = time.monotonic()
        self.emit(suiteevents.Start(item.nodeid, i))
        tally = _tally()
        mark = tally.mark() if tally is not None else None
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        # The driver is asked inside the test's frame too: the tool's record of that call (an API
        # error once the context is broken) is then the test's, a consequence of its finding, not
        # nobody's.
        error = named_call(i)(self._run, item, nextitem)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        self.emit(suiteevents.Finish(item.nodeid, i, self.outcome.get(item.nodeid, "passed"),
                                     self.message.get(item.nodeid, ""),
                                     round(time.monotonic() - self.started[item.nodeid], 3),
                                     suiteevents.checked_of(tally.since(mark)) if tally is not None
                                     and mark is not None else None))
        if error is not None:
            self.emit(suiteevents.Dead(item.nodeid, i, error))
            item.session.shouldstop = f"kprof: {item.nodeid} left the CUDA context broken ({error})"
        return True

    @staticmethod
    def _run(item: pytest.Item, nextitem: pytest.Item | None) -> str | None:
        from _pytest.runner import runtestprotocol

        runtestprotocol(item, nextitem=nextitem)
        return context_error()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        now = self.outcome.get(report.nodeid, "passed")
        if report.failed:
            self.outcome[report.nodeid] = "failed"
            text = report.longreprtext.strip()
            self.message[report.nodeid] = f"{report.when}: {text[-MESSAGE_CHARS:]}"
        elif report.skipped and now == "passed":
            self.outcome[report.nodeid] = "skipped"
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr or "")
            self.message[report.nodeid] = str(reason)[:MESSAGE_CHARS]

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        path = os.environ.get(GO_ENV)
        if not path:
            return
        wanted = wait_for_tests(path)
        order = {n: k for k, n in enumerate(wanted)}
        kept = sorted((i for i in items if i.nodeid in order), key=lambda i: order[i.nodeid])
        dropped = [i for i in items if i.nodeid not in order]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.emit(suiteevents.CollectError(report.nodeid, report.longreprtext[-MESSAGE_CHARS:]))


def _tally() -> Any:
    """kprof's launch tally in this process (loaded by kprof's site hook under
    ``KPROF_LAUNCH_TALLY``: the count run beside the tools', kprof.tools.suites.suite.count_tests),
    or None: a test's finish then says what it launched."""
    module = sys.modules.get("_kprof_launch_tally")
    return module.running() if module is not None else None


def wait_for_tests(path: str) -> list[str]:
    """The node ids the parent writes to ``path`` (a JSON list) once it knows them; [] when it never
    does."""
    folder = os.path.dirname(path)
    deadline = time.monotonic() + GO_WAIT_S
    while time.monotonic() < deadline and os.path.isdir(folder):
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            return [n for n in data if isinstance(n, str)] if isinstance(data, list) else []
        time.sleep(0.02)
    return []


def pytest_configure(config: pytest.Config) -> None:
    path = os.environ.get(EVENTS_ENV)
    if not path:
        return
    stream = open(path, "a", encoding="utf-8")  # noqa: SIM115 - open for the whole session, closed at its end
    config.pluginmanager.register(Recorder(stream), "kprof-suite-recorder")
    config.add_cleanup(stream.close)
