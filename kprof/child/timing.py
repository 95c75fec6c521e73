"""``kprof bench``'s timing loop, in the child: verify once, warm up, then sample until the stop
rule.

A sample is one launch held behind a blocking kernel (cold: after an L2 flush; warm: caches as they
are), or a replayed CUDA graph of many launches (hot). The time of a sample is the kernel's own
GPU start-to-end from CUPTI's activity records where cupti-python works, else CUDA events around
the launch; the events' reading is kept as a second series either way. The statistics and the
stop rule are :mod:`kprof.stats` (pure); this module only measures.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kprof.errors import UsageError
from kprof.launch.job import TimingMode

if TYPE_CHECKING:
    from kprof.child.workspace import Result, Workspace
    from kprof.spec import ResolvedBuffer


def timing_mode(ws: Workspace, mode: TimingMode, result: Result) -> int:
    from kprof.child import framework

    resets = [b.arg.name for b in ws.target.buffers if b.arg.reset]
    if resets and mode.mode == "hot":
        raise UsageError(f"{ws.target.name}: {', '.join(resets)} is written again before each "
                         "launch (reset: true), which a CUDA graph of many launches cannot do "
                         "untimed: use --mode cold or warm")
    stream = ws.dev.stream()
    ws.upload()
    run_once, first, poison_pool = _routine(ws, mode, stream, result.data)
    # the timed sampler writes the consumed buffers itself, before its window opens
    timed_call = run_once
    # a buffer the kernel consumes (a write index) as it was before every other launch too
    if resets:
        run_once, first = _resetting(ws, resets, run_once), _resetting(ws, resets, first)
    # uploaded again, so what its prepare wrote hides neither an
    if framework.prepared(result.data):
        ws.upload()  # unwritten output nor an in-place update
    gpu = _DeviceChecks(ws, mode.integrity_cubin, stream) if mode.integrity and mode.integrity_cubin else None
    # A wrong kernel is never timed.
    first()
    ws.dev.stream_synchronize(stream)
    # kept for the stale-output check after the loop
    expected = ws.expected() if mode.integrity else None
    checks = ws.verify(ws.download(), expected=expected)
    result.phase("verified", checks=checks)
    if not all(ch["ok"] for ch in checks):
        result.finish("failed")
        return 1
    if gpu is not None:
        gpu.verified = gpu.outputs()
    clock = _clock(mode, result)
    events = _Events(ws, stream)
    one = _warm_up(run_once, events, mode.warmup)
    clock, warm_flags = _check_clock(clock, mode, result)
    sampler = _HotSampler(ws, stream, run_once, events, clock, mode.batch, one=one) if mode.mode == "hot" else \
        _SingleSampler(ws, stream, timed_call, events, clock, mode, resets=resets)
    samples, stop, host_seconds = _loop(sampler, mode, ws.target.name)
    if clock is not None:
        clock.close()
    counts = sorted(getattr(sampler, "kernels", []))
    result.phase("timed", samples=samples, event_samples=events.samples,
                 timer="cupti" if clock else "events",
                 stop=stop, batch=sampler.batch, host_seconds=host_seconds,
                 kernels_per_call=counts[len(counts) // 2] if counts else None,
                 call_kernels=_call_kernels(getattr(sampler, "calls", [])))
    sampler.close()  # before its kernel's module is unloaded
    if mode.integrity:
        seen = _Seen(sampler, samples, events.samples, host_seconds, clock is not None, warm_flags)
        _integrity(ws, stream, first, poison_pool, expected, seen, gpu=gpu, result=result)
    result.finish("ok")
    return 0


def _resetting(ws: Workspace, names: list[str], call: Callable[[], None]) -> Callable[[], None]:
    def again() -> None:
        ws.restore(names)
        call()

    return again


class _Seen:
    """What the timing loop recorded that the integrity checks read."""

    def __init__(self, sampler: Any, samples: list[float], event_samples: list[float],
                 host_seconds: float, cupti: bool, warm_flags: list[str]) -> None:
        self.batch, self.calls = sampler.batch, getattr(sampler, "calls", [])
        self.samples, self.event_samples, self.host_seconds = samples, event_samples, host_seconds
        self.cupti, self.warm_flags = cupti, warm_flags


# kprof_double's kind argument
DOUBLED_KINDS = {"float16": 0, "bfloat16": 1, "float32": 2, "float64": 3}


class _DeviceChecks:
    """The integrity checks' work on the GPU (kprof_fingerprint.cu): a fingerprint of every input
    and output, so "unchanged" and "the same result" cost a kernel over the buffer, not a copy to
    the host and a float64 comparison; and the generated floating-point inputs doubled in place
    (exactly, in their exponent), new values in the same buffers at the cost of a kernel."""

    def __init__(self, ws: Workspace, cubin: str, stream: object) -> None:
        dev = ws.dev
        module = dev.load_module(Path(cubin).read_bytes())
        self.ws, self.dev, self.stream = ws, dev, stream
        self.fingerprint_fn = dev.function(module, "kprof_fingerprint")
        self.double_fn = dev.function(module, "kprof_double")
        self.sum = dev.alloc(8)
        self.grid = (ws.info.sm_count * 4, 1, 1)
        self.uploaded = self.inputs()  # the inputs as uploaded, before any call
        self.verified: dict[str, int] = {}  # the outputs of the verified call

    def of(self, buf: ResolvedBuffer) -> int:
        import numpy as np

        self.dev.memset32(self.sum, 0, 2)
        self.dev.synchronize()
        self.dev.launch(self.fingerprint_fn, self.grid, (256, 1, 1), 0,
                        [("ptr", self.ws.pointers[buf.arg.name]), ("int64", buf.nbytes),
                         ("ptr", self.sum)],
                        stream=self.stream)
        self.dev.stream_synchronize(self.stream)
        got = np.zeros(1, dtype=np.uint64)
        self.dev.download(self.sum, got)
        return int(got[0])

    def inputs(self) -> dict[str, int]:
        return {b.arg.name: self.of(b) for b in self.ws.target.buffers if b.arg.role == "in"}

    def outputs(self) -> dict[str, int]:
        return {b.arg.name: self.of(b) for b in self.ws.outputs()}

    def changed(self) -> list[str]:
        """The inputs whose contents differ from what was uploaded."""
        return [name for name, value in self.inputs().items() if self.uploaded.get(name) != value]

    def double_inputs(self) -> list[str]:
        """Every generated floating-point input (role in or inout) doubled on the device; integer
        inputs (indices, bins) keep their values, which a doubling could take out of range."""
        import numpy as np

        from kprof.child import hostdata

        names = []
        for buf in self.ws.generated():
            kind = DOUBLED_KINDS.get(buf.arg.dtype)
            if kind is None:
                continue
            count = buf.nbytes // np.dtype(hostdata.numpy_dtype(buf.arg.dtype)).itemsize
            self.dev.launch(self.double_fn, self.grid, (256, 1, 1), 0,
                            [("ptr", self.ws.pointers[buf.arg.name]), ("int64", count), ("int32", kind)],
                            stream=self.stream)
            names.append(buf.arg.name)
        self.dev.stream_synchronize(self.stream)
        return names

    def close(self) -> None:
        self.dev.free(self.sum)


def _integrity(ws: Workspace, stream: object, first: Callable[[], None],
               poison_pool: Callable[[], None], expected: Any,
               seen: _Seen, *, gpu: _DeviceChecks | None, result: Result) -> None:
    """The benchmark-integrity checks (:mod:`kprof.child.integrity`) on what the loop recorded, then
    two verified calls: outputs poisoned first, then the inputs doubled. The results of both are
    compared with the verified call's on the GPU (fingerprints); only a result that differs where it
    should not, or stays where it should change, is compared on the host, against the reference. The
    flags and the checks' cost go in the result."""
    from kprof.child import integrity

    t0 = time.perf_counter()
    flags = integrity.timer_flags(seen.samples, seen.host_seconds, seen.batch) + seen.warm_flags
    who = _who(result)
    if seen.calls:
        flags += integrity.kernel_flags(seen.calls)
        flags += integrity.extra_work_flags(seen.calls, who)
        flags += integrity.window_flags(seen.samples, seen.event_samples)
    flags += integrity.dtype_flags(result.data.get("baseline_converted")
                                   or result.data.get("operation_converted") or [], who)
    checked = {"kernels per call": bool(seen.calls), "extra work": bool(seen.calls),
               "window": bool(seen.calls),
               "timer": True, "result dtype": who != "kernel's timed call"}
    if gpu is None:  # no integrity kernels: the loop's checks only
        result.phase("integrity", integrity=integrity.summary(flags, checked),
                     integrity_seconds=round(time.perf_counter() - t0, 4),
                     integrity_cupti=seen.cupti)
        return
    changed = gpu.changed()
    flags += integrity.input_flags(changed)
    # inputs as they were (inout buffers and any a call changed), outputs poisoned: the call must
    # write its result
    ws.restore(changed + [b.arg.name for b in ws.target.buffers if b.arg.role == "inout"])
    ws.poison_outputs()
    poison_pool()  # and a framework's free memory of the outputs' sizes too
    first()
    ws.dev.stream_synchronize(stream)
    again = gpu.outputs()
    stale = [] if again == gpu.verified else [c["message"]
                                              for c in ws.verify(ws.download(), expected=expected)
                                              if not c["ok"]]
    doubled = gpu.double_inputs()
    ignores: list[str] = []
    if doubled:
        inout = [b.arg.name for b in ws.target.buffers if b.arg.role == "inout"
                 and b.arg.name in doubled]
        ws.reload(inout)  # now: the call overwrites them, and the reference must see what it read
        ws.poison_outputs()
        poison_pool()
        first()
        ws.dev.stream_synchronize(stream)
        # the result did not change with its inputs: right only if the reference agrees
        if gpu.outputs() == again:
            ws.reload([n for n in doubled if n not in inout])
            ignores = [c["message"] for c in ws.verify(ws.download()) if not c["ok"]]
    gpu.close()
    flags += integrity.reverify_flags(stale, ignores)
    checked.update({"inputs": True, "poisoned outputs": True, "new inputs": bool(doubled)})
    result.phase("integrity", integrity=integrity.summary(flags, checked),
                 integrity_seconds=round(time.perf_counter() - t0, 4), integrity_cupti=seen.cupti)


def _call_kernels(calls: list[list[Any]]) -> list[list[Any]]:
    """The kernels of the timed call of median length, [name, seconds] each (kprof's helpers left
    out): what a baseline's call ran, in the JSON beside its time."""
    from kprof.child.cupti_timer import timed_records

    work = sorted((timed_records(c) for c in calls),
                  key=lambda rs: sum(r.ns for r in rs if r.complete))
    if not work:
        return []
    return [[r.name, r.ns / 1e9] for r in work[len(work) // 2] if r.complete]


def _who(result: Result) -> str:
    """Whose timed call the flags speak of: a Python baseline's, the spec's Python operation's, the
    kernel's."""
    if "baseline_framework" in result.data:
        return "baseline's timed call"
    return "operation's timed call" if "operation_framework" in result.data else "kernel's timed call"


# a library routine for kprof peak: cuMemcpyDtoDAsync, timed by events (no kernel record)
MEMCPY = "memcpy_dtod"


def _routine(ws: Workspace, mode: TimingMode, stream: object,
             data: dict[str, object]) -> tuple[Callable[[], None], Callable[[], None], Callable[[], None]]:
    """(one launch, the first launch, what poisons a framework's free memory before a verified
    call): the target's steps, a library routine on the target's buffers (``mode.library``), or a
    Python baseline (``mode.python``, whose first call also copies its result into the output
    buffers)."""
    if mode.python is not None:
        from kprof.child import framework

        return framework.routine(ws, mode.python, stream, data)
    # a Python operation: its result is copied only to verify
    if mode.library is None and ws.target.python:
        from kprof.child import framework

        return framework.routine(ws, ws.target.python, stream, data, what="operation")
    once = _library(ws, mode, stream)
    return once, once, lambda: None


def _library(ws: Workspace, mode: TimingMode, stream: object) -> Callable[[], None]:
    if mode.library is None:
        return lambda: ws.launch(stream)
    if mode.library == MEMCPY:  # the first input copied onto the first output, by the driver
        src = next(b for b in ws.target.buffers if b.arg.role == "in")
        dst = next(b for b in ws.target.buffers if b.arg.role == "out")
        nbytes = min(src.nbytes, dst.nbytes)
        return lambda: ws.dev.copy_async(ws.pointers[dst.arg.name], ws.pointers[src.arg.name],
                                         nbytes, stream)
    if mode.library != "cublas_sgemm":
        raise UsageError(f"unknown library routine {mode.library!r}")
    blas = ws.cublas()
    blas.set_stream(stream)
    m, n, k = (ws.target.sizes[d] for d in ("M", "N", "K"))
    a, b, c = (ws.pointers[x] for x in ("A", "B", "C"))
    return lambda: blas.sgemm_row_major(a, b, c, m, n, k)


def _clock(mode: TimingMode, result: Result) -> object:
    """CUPTI's kernel clock, or None (events), saying why when auto falls back."""
    if mode.timer == "events":
        return None
    from kprof.child import cupti_timer

    why = cupti_timer.unavailable()
    if why is None:
        try:
            clock = cupti_timer.KernelClock(hw_trace=mode.cupti_hw_trace)
            result.data["cupti_hw_trace"] = clock.hw_trace
            return clock
        except Exception as exc:  # noqa: BLE001 - any failure to start tracing means: use events, say why
            why = f"CUPTI activity tracing could not start: {exc}"
    if mode.timer == "cupti":
        raise UsageError(f"--timer cupti: {why}")
    result.data["timer_note"] = why
    return None


def _check_clock(clock: Any, mode: TimingMode, result: Result) -> tuple[Any, list[str]]:
    """After the warm-up: a clock that saw no kernel record is dropped for events. With the
    integrity checks on, a call that launched no kernel is their finding (a result replayed, not
    computed), timed by events and flagged, even under --timer cupti."""
    from kprof.child import cupti_timer

    if clock is None or cupti_timer.span_seconds(clock.take()) is not None:
        return clock, []
    clock.close()
    why = "CUPTI delivered no kernel record for the warm-up launches"
    if mode.timer == "cupti" and not mode.integrity:
        raise UsageError(f"--timer cupti: {why}")
    result.data["timer_note"] = why
    from kprof.child import integrity

    return None, integrity.warmup_flags() if mode.integrity else []


class _Events:
    """A start and an end event on the stream; every reading is kept as the events' series."""

    def __init__(self, ws: Workspace, stream: Any) -> None:
        self.dev, self.stream = ws.dev, stream
        self.start, self.end = ws.dev.event(), ws.dev.event()
        self.samples: list[float] = []

    def around(self, body: Callable[[], None]) -> float:
        self.dev.record(self.start, self.stream)
        body()
        self.dev.record(self.end, self.stream)
        return self.seconds()

    def seconds(self) -> float:
        return self.dev.elapsed_ms(self.start, self.end) / 1e3


def _warm_up(run_once: Callable[[], None], events: _Events, seconds: float) -> float:
    """Warm-up by time: clocks ramp up, caches and the instruction cache fill, lazy loading is done.
    The fastest launch of the warm-up: the hot batch is sized from it, and one launch slowed by
    another process's time slice on a shared GPU (seen on an H200: over 2 ms for a 65,536-element
    add, so a "graph" of one launch) must not size it."""
    t0 = time.perf_counter()
    one = events.around(run_once)
    while time.perf_counter() - t0 < seconds:
        one = min(one, events.around(run_once))
    return one


# A hot sample is a graph of this many launches at least: a warm-up that another process's time
# slices slowed throughout (on an H200 shared by twelve test workers: every launch of a
# 65,536-element add over 2 ms) must not shrink it to one launch, which is a warm sample, not a hot
# one.
HOT_MIN_BATCH = 10


class _HotSampler:
    """A graph of ``batch`` launches replayed, so launch overhead is paid once per graph. CUPTI
    gives each kernel's own duration inside the replay; events give throughput per launch, where
    back-to-back kernels also overlap their ramp-up and drain."""

    def __init__(self, ws: Workspace, stream: object, run_once: Callable[[], None], events: _Events,
                 clock: Any, batch: int | None, *, one: float) -> None:
        self.ws, self.stream, self.events, self.clock = ws, stream, events, clock
        self.batch = int(batch or min(10_000, max(HOT_MIN_BATCH, int(2e-3 / max(one, 1e-7)))))
        def body() -> None:
            for _ in range(self.batch):
                run_once()

        self.graph = ws.dev.capture(stream, body)

    def sample(self) -> float:
        from kprof.child import cupti_timer

        seconds = self.events.around(lambda: self.ws.dev.graph_launch(self.graph, self.stream)) / self.batch
        self.events.samples.append(seconds)
        if self.clock is None:
            return seconds
        busy = cupti_timer.busy_seconds_per_launch(self.clock.take(), self.batch)
        if busy is None:
            raise RuntimeError("CUPTI delivered no kernel record for a graph replay")
        return busy

    def close(self) -> None:
        self.ws.dev.graph_destroy(self.graph)


class _SingleSampler:
    """One launch at a time, as ncu times it. A blocking kernel holds the stream until the start
    event, the kernel and the end event are all queued, so no host gap is timed. Cold: first read a
    buffer twice the L2's size, so the kernel finds none of its data in L2."""

    batch = 1

    def __init__(self, ws: Workspace, stream: Any, run_once: Callable[[], None], events: _Events,
                 clock: Any, mode: TimingMode, *, resets: list[str] | None = None) -> None:
        dev, info = ws.dev, ws.info
        # written again before each timed launch, outside its window
        self.ws, self.resets = ws, list(resets or ())
        self.dev, self.stream, self.run_once, self.events, self.clock = dev, stream, run_once, events, clock
        self.integrity = mode.integrity
        self.flag, self.flag_dev = dev.host_flag()
        self.spin = dev.function(dev.load_module(Path(mode.spin_cubin).read_bytes()), "kprof_spin")
        self.flush: tuple[Any, tuple[int, int, int], list[tuple[str, int]]] | None = None
        self.kernels: list[int] = []  # kernels each timed call launched (CUPTI)
        # each timed call's CUPTI records, kprof's spin and flush with them
        self.calls: list[list[object]] = []
        if mode.mode == "cold":
            flush_fn = dev.function(dev.load_module(Path(mode.flush_cubin).read_bytes()),
                                    "kprof_flush")
            words4 = 2 * info.l2_bytes // 16
            flush_buf, sink = dev.alloc(words4 * 16), dev.alloc(4)
            dev.memset32(flush_buf, 0, words4 * 4)
            self.flush = (flush_fn, (info.sm_count * 4, 1, 1),
                          [("ptr", flush_buf), ("int64", words4), ("ptr", sink)])

    def sample(self) -> float:
        from kprof.child import cupti_timer

        # a synchronous upload: done before the spin holds the stream, so never timed
        if self.resets:
            self.ws.restore(self.resets)
        self.flag.value = 0
        if self.flush is not None:
            fn, grid, args = self.flush
            self.dev.launch(fn, grid, (512, 1, 1), 0, args, stream=self.stream)
        self.dev.launch(self.spin, (1, 1, 1), (1, 1, 1), 0,
                        [("ptr", self.flag_dev), ("int64", 1_000_000)], stream=self.stream)
        self.dev.record(self.events.start, self.stream)
        self.run_once()
        self.dev.record(self.events.end, self.stream)
        self.flag.value = 1
        seconds = self.events.seconds()
        self.events.samples.append(seconds)
        if self.clock is None:
            return seconds
        records = self.clock.take()
        self.kernels.append(len(cupti_timer.timed_records(records)))
        self.calls.append(records)
        span = cupti_timer.span_seconds(records)
        if span is None:
            # a call that launched nothing: the events' reading, and a no-kernel flag
            if self.integrity:
                return seconds
            raise RuntimeError("CUPTI delivered no kernel record for a timed launch")
        return span

    def close(self) -> None:
        pass


def _loop(sampler: _HotSampler | _SingleSampler, mode: TimingMode,
          name: str) -> tuple[list[float], str, float]:
    """Sample until the stop rule says enough: the samples, the rule that stopped them, the host
    seconds."""
    from kprof.child.workspace import nvtx_module

    rule = mode.rule
    nvtx = nvtx_module()
    samples: list[float] = []
    if nvtx is not None:
        nvtx.push_range(name, domain="kprof")
    t0 = time.perf_counter()
    reason = None
    while reason is None:
        samples.append(sampler.sample())
        reason = rule.check(samples, time.perf_counter() - t0)
    if nvtx is not None:
        nvtx.pop_range(domain="kprof")
    return samples, reason, time.perf_counter() - t0
