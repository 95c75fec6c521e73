"""The small child program that every tool wraps: ``python -m kprof.runner JOB.json RESULT.json``.

It loads the spec and the cubin, makes one plain allocation per buffer (recording name, base
address and size, so a sanitizer report can name the buffer), fills the inputs from a fixed
seed, poisons the outputs, launches inside an NVTX push/pop range in domain ``kprof`` named after
the kernel, synchronises, checks the outputs against the float64 reference, and writes a JSON
result. It never is the CLI: compute-sanitizer and ncu wrap this process, so a fault or a hang
takes down this child only. The result file is rewritten at each phase, so the parent knows how
far a child got before it died.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

RESULT_VERSION = 1


class _Result:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = {"version": RESULT_VERSION, "status": "started", "phase": "start"}

    def phase(self, name: str, **fields: Any) -> None:
        self.data["phase"] = name
        self.data.update(fields)
        self.write()

    def write(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, default=str))
        tmp.replace(self.path)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m kprof.runner JOB.json RESULT.json", file=sys.stderr)
        return 2
    job = json.loads(Path(args[0]).read_text())
    result = _Result(Path(args[1]))
    try:
        return _run(job, result)
    except Exception as exc:  # reported to the parent in the result file, never lost
        from kprof.errors import CudaError, KprofError

        error: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
        if isinstance(exc, CudaError):
            error.update(call=exc.call, result=exc.result)
        if not isinstance(exc, KprofError):
            error["traceback"] = traceback.format_exc()
        result.data["status"] = "error"
        result.data["error"] = error
        result.write()
        return 3


def _run(job: dict[str, Any], result: _Result) -> int:
    import numpy as np

    from kprof import reference, spec as spec_mod, verify
    from kprof.device import Device
    from kprof.errors import UsageError

    spec = spec_mod.load(job["spec"])
    if job.get("twin"):
        spec = spec.twin_spec()
    if job.get("params"):  # kprof bench --param: compile-time defines that also shape the launch
        from dataclasses import replace

        spec = replace(spec, defines=tuple({**dict(spec.defines), **job["params"]}.items()))
    resolved = spec.resolve(job.get("sizes") or {}, preset=job.get("preset", "default"))
    result.phase("init", kernel=spec.name, sizes=resolved.sizes,
                 launch={"grid": resolved.grid, "block": resolved.block, "shared_mem": resolved.shared_mem})

    dev = Device(job.get("device", 0))
    info = dev.info()
    result.phase("device", device=info.__dict__)
    free, _ = dev.mem_info()
    need = resolved.total_bytes
    if need > free:
        raise UsageError(
            f"{spec.name} at {resolved.size_text()} needs {need / 2**30:.2f} GiB of device memory "
            f"but {free / 2**30:.2f} GiB is free: use smaller --size values"
        )

    module = dev.load_module(Path(job["cubin"]).read_bytes())
    funcs: dict[str, Any] = {}
    for st in resolved.steps:
        if st.entry == spec_mod.CUBLAS_SGEMM:
            continue
        func = funcs.get(st.entry) or dev.function(module, st.entry)
        funcs[st.entry] = func
        if st.shared_mem + dev.function_attribute(func, "SHARED_SIZE_BYTES") > 48 * 1024:
            dev.set_max_dynamic_shared(func, st.shared_mem)  # opt in past the default 48 KiB
    result.phase("loaded", registers=dev.function_attribute(funcs[spec.entry], "NUM_REGS"),
                 **({"steps": [{"entry": st.entry, "grid": st.grid, "block": st.block} for st in resolved.steps]}
                    if len(resolved.steps) > 1 else {}))

    rng = np.random.default_rng(job.get("seed", 0))
    inputs: dict[str, Any] = {}
    pointers: dict[str, int] = {}
    allocations = []
    for buf in resolved.buffers:
        ptr = dev.alloc(buf.nbytes)
        pointers[buf.arg.name] = ptr
        allocations.append({
            "name": buf.arg.name, "base": ptr, "nbytes": buf.nbytes, "dtype": buf.arg.dtype,
            "shape": list(buf.shape), "role": buf.arg.role,
        })  # fmt: skip
        if buf.arg.role in ("in", "inout"):
            inputs[buf.arg.name] = verify.make_input(buf, rng)
    result.phase("allocated", allocations=allocations)

    def upload_all(alternate: bool = False) -> None:
        for buf in resolved.buffers:
            if buf.arg.role in ("in", "inout"):
                dev.upload(pointers[buf.arg.name], inputs[buf.arg.name])
            elif job.get("poison", True):
                dev.upload(pointers[buf.arg.name], verify.poison(buf, alternate))
            # poison: false leaves out/scratch buffers as cuMemAlloc gave them, so initcheck can
            # see a read of memory nothing wrote (poison would count as initialised).

    def download_outputs() -> dict[str, Any]:
        out = {}
        for buf in resolved.buffers:
            if buf.arg.role in ("out", "inout"):
                got = np.empty(buf.shape, dtype=verify.numpy_dtype(buf.arg.dtype))
                dev.download(pointers[buf.arg.name], got)
                out[buf.arg.name] = got
        return out

    def expected_outputs() -> dict[str, Any]:
        # Only the inputs a reference names are widened to float64.
        refs = dict(spec.reference)
        used = set().union(*(reference.names(e) for e in refs.values())) if refs else set()
        env: dict[str, Any] = dict(resolved.sizes)
        env.update({a.name: v for a, v in resolved.scalars})
        dtypes = {b.arg.name: b.arg.dtype for b in resolved.buffers}
        env.update({k: verify.decode(dtypes[k], v).astype(np.float64) for k, v in inputs.items() if k in used})
        return {name: reference.evaluate(expr, env) for name, expr in refs.items()}

    by_name = {a.name: a for a in spec.args}
    scalar_values = {a.name: v for a, v in resolved.scalars}

    def packed_arg(name: str) -> tuple[str, Any]:
        arg = by_name[name]
        if isinstance(arg, spec_mod.BufferArg):
            return ("ptr", pointers[name])
        value = scalar_values[name]
        if arg.dtype == "float16":
            value = int(np.float16(value).view(np.uint16))
        elif arg.dtype == "bfloat16":
            value = int(verify.to_bf16(value))
        return (arg.dtype, value)

    blas = None
    closers: list[Any] = []  # library handles to close before the context (_close)
    if any(st.entry == spec_mod.CUBLAS_SGEMM for st in resolved.steps):
        from kprof.cublas import MATH_MODE

        result.data["math_mode"] = MATH_MODE
    steps = []  # (callable(stream)) per launch, in order
    for st in resolved.steps:
        if st.entry == spec_mod.CUBLAS_SGEMM:
            if blas is None:
                blas = _cublas()
                closers.append(blas.close)
            a, b, c = (pointers[n] for n in st.args[:3])
            m, n, k = (scalar_values[n] for n in st.args[3:])
            steps.append(lambda stream, a=a, b=b, c=c, m=m, n=n, k=k: (blas.set_stream(stream), blas.sgemm_row_major(a, b, c, m, n, k)))
        else:
            args = [packed_arg(n) for n in st.args]
            steps.append(lambda stream, f=funcs[st.entry], st=st, args=args:
                         dev.launch(f, st.grid, st.block, st.shared_mem, args, stream=stream))

    def launch_all(stream: Any = 0) -> None:
        for run_step in steps:
            run_step(stream)

    nvtx = _nvtx()
    result.data["nvtx"] = nvtx is not None

    def launch() -> None:
        if nvtx is not None:
            nvtx.push_range(job.get("name", spec.name), domain="kprof")
        try:
            launch_all()
        finally:
            if nvtx is not None:
                nvtx.pop_range(domain="kprof")

    if job.get("values"):
        from kprof import values

        scrub = _scrubber(dev, info, job.get("scrub_cubin"))
        runs = []
        for alternate in values.run_plan(int(job["values"].get("repeats", 4))):
            upload_all(alternate)
            if scrub is not None:
                scrub(values.smem_pattern(alternate))
            result.phase("launch")
            launch()
            dev.synchronize()
            runs.append((alternate, download_outputs()))
        result.phase("launched")
        findings = values.analyse(spec, resolved, runs, expected_outputs())
        _close(dev, closers)
        result.data["status"] = "ok"
        result.phase("done", findings=[f.to_dict() for f in findings], scrubbed=scrub is not None)
        return 0

    if job.get("bench"):
        return _bench(job, result, dev, info, spec, resolved, launch_all, pointers, upload_all,
                      download_outputs, expected_outputs, nvtx, closers)

    upload_all()
    result.phase("launch")
    for _ in range(max(1, int(job.get("repeat", 1)))):  # repeat: for a profiler that times every launch
        launch()
    dev.synchronize()
    result.phase("launched")

    checks = []
    if job.get("verify", True):
        got = download_outputs()
        expected = expected_outputs()
        for buf in resolved.buffers:
            if buf.arg.name not in got:
                continue
            sentinel = verify.poison(buf).flat[0] if buf.arg.role == "out" else None
            checks.append(verify.compare(buf.arg.name, verify.decode(buf.arg.dtype, got[buf.arg.name]),
                                         expected[buf.arg.name], spec.rtol, sentinel).to_dict())
        result.phase("verified", checks=checks)

    timing = None
    if job.get("time", False):
        start, end = dev.event(), dev.event()
        launch()  # warm-up: first-launch costs (module load, caches) stay out of the number
        dev.synchronize()
        dev.record(start)
        launch()
        dev.record(end)
        timing = dev.elapsed_ms(start, end)
        result.phase("timed", time_ms=timing)

    _close(dev, closers)
    ok = all(c["ok"] for c in checks)
    result.data["status"] = "ok" if ok else "failed"
    result.phase("done")
    return 0 if ok else 1


def _bench(job, result, dev, info, spec, resolved, launch_all, pointers, upload_all, download_outputs,
           expected_outputs, nvtx, closers) -> int:
    """Verify, warm up, then time samples until the stop rule says enough (kprof bench)."""
    import time

    from kprof import stats, verify
    from kprof.errors import UsageError

    cfg = job["bench"]
    rule = stats.StopRule(**cfg["rule"])
    stream = dev.stream()
    baseline = cfg.get("baseline")
    if baseline == "cublas_sgemm":
        from kprof.cublas import MATH_MODE

        blas = _cublas()
        closers.append(blas.close)
        blas.set_stream(stream)
        m, n, k = (resolved.sizes[d] for d in ("M", "N", "K"))
        a, b, c = (pointers[x] for x in ("A", "B", "C"))
        result.data["math_mode"] = MATH_MODE

        def run_once() -> None:
            blas.sgemm_row_major(a, b, c, m, n, k)
    elif baseline is None:
        def run_once() -> None:
            launch_all(stream)
    else:
        raise ValueError(f"unknown baseline {baseline!r}")

    # A wrong kernel is never timed.
    upload_all()
    run_once()
    dev.stream_synchronize(stream)
    got, expected = download_outputs(), expected_outputs()
    checks = []
    for buf in resolved.buffers:
        if buf.arg.name in got:
            sentinel = verify.poison(buf).flat[0] if buf.arg.role == "out" else None
            checks.append(verify.compare(buf.arg.name, verify.decode(buf.arg.dtype, got[buf.arg.name]),
                                         expected[buf.arg.name], spec.rtol, sentinel).to_dict())
    result.phase("verified", checks=checks)
    if not all(ch["ok"] for ch in checks):
        result.data["status"] = "failed"
        result.phase("done")
        return 1

    start_ev, end_ev = dev.event(), dev.event()

    def timed(body) -> float:
        dev.record(start_ev, stream)
        body()
        dev.record(end_ev, stream)
        return dev.elapsed_ms(start_ev, end_ev) / 1e3

    # The timer: CUPTI's kernel timestamps where cupti-python works, else CUDA events. The
    # events' reading is kept as a second series either way.
    clock, timer = None, "events"
    if cfg.get("timer", "auto") != "events":
        from kprof import cupti_timer

        why = cupti_timer.unavailable()
        if why is None:
            try:
                clock, timer = cupti_timer.KernelClock(hw_trace=os.environ.get("KPROF_CUPTI_HW_TRACE") == "1"), "cupti"
                result.data["cupti_hw_trace"] = clock.hw_trace
            except Exception as exc:
                why = f"CUPTI activity tracing could not start: {exc}"
        if why is not None:
            if cfg.get("timer") == "cupti":
                raise UsageError(f"--timer cupti: {why}")
            result.data["timer_note"] = why

    # Warm-up by time: clocks ramp up, caches and the instruction cache fill, lazy loading is done.
    t0 = time.perf_counter()
    one = timed(run_once)
    while time.perf_counter() - t0 < cfg.get("warmup", 0.2):
        one = timed(run_once)
    if clock is not None and cupti_timer.span_seconds(clock.take()) is None:
        clock.close()
        clock, timer = None, "events"
        if cfg.get("timer") == "cupti":
            raise UsageError("--timer cupti: CUPTI delivered no kernel record for the warm-up launches")
        result.data["timer_note"] = "CUPTI delivered no kernel record for the warm-up launches"

    event_samples: list[float] = []
    batch = 1
    if cfg["mode"] == "hot":
        # Replay a graph of many launches, so launch overhead is paid once per graph. CUPTI gives
        # each kernel's own duration inside the replay; events give throughput per launch, where
        # back-to-back kernels also overlap their ramp-up and drain.
        batch = int(cfg.get("batch") or max(1, min(10_000, int(2e-3 / max(one, 1e-7)))))
        graph = dev.capture(stream, lambda: [run_once() for _ in range(batch)])

        def sample() -> float:
            seconds = timed(lambda: dev.graph_launch(graph, stream)) / batch
            event_samples.append(seconds)
            if clock is None:
                return seconds
            busy = cupti_timer.busy_seconds_per_launch(clock.take(), batch)
            if busy is None:
                raise RuntimeError("CUPTI delivered no kernel record for a graph replay")
            return busy
    else:
        # One launch at a time, as ncu times it. A blocking kernel holds the stream until the
        # start event, the kernel and the end event are all queued, so no host gap is timed.
        # Cold: first read a buffer twice the L2's size, so the kernel finds none of its data in L2.
        flag, flag_dev = dev.host_flag()
        spin = dev.function(dev.load_module(Path(cfg["spin_cubin"]).read_bytes()), "kprof_spin")
        flush_args = None
        if cfg["mode"] == "cold":
            flush_fn = dev.function(dev.load_module(Path(cfg["flush_cubin"]).read_bytes()), "kprof_flush")
            words4 = 2 * info.l2_bytes // 16
            flush_buf, sink = dev.alloc(words4 * 16), dev.alloc(4)
            dev.memset32(flush_buf, 0, words4 * 4)
            flush_args = [("ptr", flush_buf), ("int64", words4), ("ptr", sink)]

        def sample() -> float:
            flag.value = 0
            if flush_args is not None:
                dev.launch(flush_fn, (info.sm_count * 4, 1, 1), (512, 1, 1), 0, flush_args, stream=stream)
            dev.launch(spin, (1, 1, 1), (1, 1, 1), 0, [("ptr", flag_dev), ("int64", 1_000_000)], stream=stream)
            dev.record(start_ev, stream)
            run_once()
            dev.record(end_ev, stream)
            flag.value = 1
            seconds = dev.elapsed_ms(start_ev, end_ev) / 1e3
            event_samples.append(seconds)
            if clock is None:
                return seconds
            span = cupti_timer.span_seconds(clock.take())
            if span is None:
                raise RuntimeError("CUPTI delivered no kernel record for a timed launch")
            return span

    samples: list[float] = []
    if nvtx is not None:
        nvtx.push_range(job.get("name", spec.name), domain="kprof")
    t0 = time.perf_counter()
    reason = None
    while reason is None:
        samples.append(sample())
        reason = rule.check(samples, time.perf_counter() - t0)
    if nvtx is not None:
        nvtx.pop_range(domain="kprof")
    if clock is not None:
        clock.close()
    result.phase("timed", samples=samples, event_samples=event_samples, timer=timer, stop=reason, batch=batch,
                 host_seconds=time.perf_counter() - t0)
    if cfg["mode"] == "hot":
        dev.graph_destroy(graph)  # before its kernel's module is unloaded
    _close(dev, closers)
    result.data["status"] = "ok"
    result.phase("done")
    return 0


def _close(dev, closers: list[Any]) -> None:
    """Library handles first (cuBLAS frees its workspace only when destroyed; memcheck's leak check
    counts what is still allocated when the context goes), then the context."""
    for close in closers:
        close()
    dev.close()


def _cublas():
    """cuBLAS in plain FP32: TF32 off even if the user's environment allows it."""
    from kprof.cublas import Cublas

    os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
    return Cublas()


def _scrubber(dev, info, cubin: str | None):
    """A launcher that fills every SM's shared memory with a pattern, or None without its cubin.

    Shared memory is not cleared between kernels, so a kernel that reads shared memory it never
    wrote sees what the scrubber left: different patterns between runs make such reads visible.
    """
    if not cubin:
        return None
    func = dev.function(dev.load_module(Path(cubin).read_bytes()), "kprof_scrub")
    smem = info.max_shared_per_block_optin
    dev.set_max_dynamic_shared(func, smem)

    def scrub(pattern: int) -> None:
        dev.launch(func, (info.sm_count * 2, 1, 1), (1024, 1, 1), smem,
                   [("uint32", pattern), ("uint32", smem // 4)])
        dev.synchronize()

    return scrub


def _nvtx():
    try:
        import nvtx

        return nvtx
    except ImportError:  # reported as nvtx: false; ncu's NVTX filter will then match nothing
        return None


if __name__ == "__main__":
    sys.exit(main())
