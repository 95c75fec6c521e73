"""Tool children side by side, and what a long run says while it runs.

Each tool's run is its own process, so the tools of one run (and the cases of ``kprof cases``) need
no more than threads waiting on children: :func:`map_jobs`. How many at once (:func:`default_jobs`)
comes from the GPU's free memory and the host's CPUs; ``--jobs 1`` keeps the one-after-another
order.

:class:`Progress` prints ``[3/12] test_x memcheck 4.1 s, about 30 s left``: plain lines (CI logs, a
pipe), or one tqdm bar on a terminal where tqdm is installed.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import IO, Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# What one sanitized child may hold on the GPU: its context, the tool's own state and its padding,
# and a framework's tensors (a sanitized PyTorch test took under 2 GiB on an H200).
CHILD_GPU_BYTES = 4 * 2**30
RUNNER_GPU_BYTES = 2**30  # kprof's runner over a spec at its sanitize sizes: a context and a few MB
MAX_JOBS = 8


def default_jobs(count: int, free_bytes: int | None, cpus: int | None,
                 child_bytes: int = CHILD_GPU_BYTES) -> int:
    """How many of ``count`` children run at once: what the GPU's free memory holds at
    ``child_bytes`` each and half the CPUs keep busy (a child under a tool spends a core), at least
    1. No reading of
    the GPU (no NVML): 1. Pure."""
    if count < 1 or free_bytes is None:
        return 1
    by_memory = free_bytes // child_bytes
    by_cpu = max(1, (cpus or 1) // 2)
    return max(1, min(count, by_memory, by_cpu, MAX_JOBS))


def jobs_for(count: int, jobs: int | None, child_bytes: int = CHILD_GPU_BYTES) -> int:
    """``jobs`` as given, else the default for this machine's GPU and CPUs."""
    if jobs is not None:
        return max(1, jobs)
    from kprof import telemetry

    return default_jobs(count, telemetry.free_memory(), os.cpu_count(), child_bytes)


# chunks of host work at once (NumPy releases the GIL): a 1 GiB output judged in seconds, not a
# minute
SCAN_THREADS = 8


def scan_threads(chunks: int) -> int:
    """Threads for host work over ``chunks`` chunks (the verdict, making and widening inputs, a
    row-wise reference): up to SCAN_THREADS and the CPUs this process may use
    (``KPROF_VERDICT_THREADS`` overrides; 1 does one chunk at a time)."""
    wanted = os.environ.get("KPROF_VERDICT_THREADS", "")
    cap = int(wanted) if wanted.isascii() and wanted.isdigit() and int(wanted) > 0 else SCAN_THREADS
    cpus = host_cpus()
    return max(1, min(cap, cpus, chunks))


BUILD_JOBS = 8  # compiler processes at once (kprof build --all, kprof cases, kprof peak)


def build_jobs(count: int) -> int:
    """How many builds to run side by side: each is an nvcc process of one CPU."""
    return max(1, min(count, BUILD_JOBS, os.cpu_count() or 1))


def map_jobs(fn: Callable[[T], R], items: Iterable[T], jobs: int) -> list[R]:
    """``[fn(x) for x in items]``, ``jobs`` at a time, in order. The children started meanwhile
    share the host's threads (:func:`shared_threads`)."""
    items = list(items)
    if jobs <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    from kprof import proc

    with shared_threads(min(jobs, len(items))):
        pool = ThreadPoolExecutor(max_workers=jobs)
        try:
            return list(pool.map(fn, items))
        except KeyboardInterrupt:
            # Ctrl-C reaches this thread alone: the children the others run are stopped too (asked,
            # then killed), no queued item starts, and each thread's own clean-up runs before kprof
            # ends; a second Ctrl-C waits for that (a thread cut off would leave its files behind)
            with proc.deferred_interrupts():
                proc.stop_children()
                pool.shutdown(wait=True, cancel_futures=True)
                proc.children_may_run()
            raise
        finally:
            pool.shutdown(wait=True)


def spare_room(children: int, free_bytes: int | None, cpus: int | None,
               child_bytes: int = CHILD_GPU_BYTES) -> int:
    """How many more children, past ``children`` already running, a machine holds for spares that
    mostly wait (a suite's children started ahead to take over a batch): one a CPU, and what the
    GPU's free memory holds at ``child_bytes`` each; none without a reading of the GPU. Pure."""
    if free_bytes is None:
        return 0
    return max(0, min(cpus or 1, free_bytes // child_bytes) - children)


def host_cpus() -> int:
    """The CPUs this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def threads_each(children: int) -> int:
    """Host threads for each of ``children`` processes at once: the CPUs over their number, at least
    1."""
    return max(1, host_cpus() // max(1, children))


# What a child's host work may thread over: NumPy's BLAS (a float64 reference) and kprof's verdict.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                    "KPROF_VERDICT_THREADS")
_env_lock = threading.Lock()


@contextmanager
def shared_threads(children: int) -> Iterator[None]:
    """While ``children`` children run at once, each may use the host's CPUs over ``children``
    threads: the variables of THREAD_VARIABLES the user did not set are set for the children started
    meanwhile, and unset after. Otherwise each child of ``kprof mutants --jobs 12`` would start a
    BLAS thread per core."""
    share = str(threads_each(children))
    with _env_lock:
        added = [name for name in THREAD_VARIABLES if name not in os.environ]
        for name in added:
            os.environ[name] = share
    try:
        yield
    finally:
        with _env_lock:
            for name in added:
                os.environ.pop(name, None)


class Progress:
    """``[done/total] what  4.1 s, at 12 s, about 30 s left``, one line per step (``at``: since the
    start), safe from several threads."""

    def __init__(self, total: int, *, stream: IO[str] | None = None,
                 write: Callable[[str], None] | None = None, bar: bool | None = None) -> None:
        self.total, self.done = total, 0
        self.stream = stream or sys.stderr
        self.write = write
        self.start = time.monotonic()
        self.lock = threading.Lock()
        self.bar: Any = None
        if bar is None:
            bar = write is None and _isatty(self.stream)
        if bar:
            try:
                from tqdm import tqdm  # type: ignore[import-untyped, unused-ignore]

                self.bar = tqdm(total=total, file=self.stream, unit="run", dynamic_ncols=True,
                                leave=False)
            except ImportError:
                self.bar = None

    def line(self, text: str) -> str:
        """The line for one more step done (and counts it)."""
        self.done += 1
        # a test run again after a stopped child is one more step
        self.total = max(self.total, self.done)
        elapsed = time.monotonic() - self.start
        left = f", at {elapsed:.0f} s"
        if 0 < self.done < self.total:
            left += f", about {elapsed / self.done * (self.total - self.done):.0f} s left"
        return f"[{self.done}/{self.total}] {text}{left}"

    def step(self, text: str) -> None:
        with self.lock:
            line = self.line(text)
            if self.bar is not None:
                self.bar.set_postfix_str(text[:60], refresh=False)
                self.bar.update(1)
            elif self.write is not None:
                self.write(line)
            else:
                print(line, file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
