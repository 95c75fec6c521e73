"""kprof's launch recorder, loaded into a program by kprof's sitecustomize when ``KPROF_LAUNCH_LOG``
is set (``kprof sanitize --tool values -- CMD``): after every kernel launched through the driver API
(``cuLaunchKernel``, ``cuLaunchKernelEx``: Triton, CuPy, cuda-python, numba-cuda) it waits for the
kernel, and hashes every device allocation an argument points into. The log format and what is made
of it are :mod:`kprof.tools.programs.launchlog` (the parent, after the runs).

With ``KPROF_LAUNCH_CROWD`` set (one of the runs), just before each of the first :data:`CROWDED`
launches it starts a kernel of its own on a stream of its own that fills every SM but one with
waiting threads, until the program's kernel has finished (a flag in mapped host memory the recorder
sets then) or at most ``KPROF_LAUNCH_CROWD_US`` microseconds (default :data:`CROWD_US`, for a kernel
that cannot start beside it): the program's kernel runs on a crowded GPU, its blocks in another
order and fewer at a time. A kernel whose result depends on that order (a race in global memory,
which on an idle GPU often ends the same way every run) writes something else than in the run on an
idle GPU; a correct kernel writes the same. The flag, not a time alone, ends the crowd: on a GPU
other processes share, the program's context can be switched out for longer than any fixed spin
(seen on an H200 under 16 pytest workers: a 1 ms crowd had ended before the kernel ran). Launches
through the runtime API (``cudaLaunchKernel``: PyTorch's own kernels, C++ programs) are not seen:
the report says how many launches were compared.

It reads CUPTI's callback data and the launch's parameters at their C layouts
(``CUpti_CallbackData``, ``cuLaunchKernel_params``, ``cuLaunchKernelEx_params``); anything it cannot
start or read is a line in the log, never an exception in the program.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import traceback
from typing import Any

MAX_LAUNCHES = 20_000  # launches hashed per run; the log's "cut" line says where it stopped
MAX_HASHED = 1 << 30  # bytes of one allocation hashed, at most
CROWDED = 2_000  # launches started on a crowded GPU in the crowded run
# the crowd's deadline where the flag never comes: a kernel that cannot start beside it
CROWD_US = 50_000
CROWD_THREADS = 256  # threads per block of the crowd kernel
# The crowd: thread 0 of each block polls the flag (mapped host memory) until it is set or the
# global timer passes the deadline; the block's other threads wait at the barrier, holding their
# SM's slots. PTX, compiled by the driver: no compiler needed in the program's environment, and any
# GPU it runs.
CROWD_PTX = b"""
.version 6.0
.target sm_50
.address_size 64
.visible .entry kprof_crowd(.param .u64 kprof_crowd_flag, .param .u64 kprof_crowd_ns)
{
    .reg .pred %p;
    .reg .b32 %r<3>;
    .reg .b64 %rd<5>;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p, %r1, 0;
    @%p bra WAIT;
    ld.param.u64 %rd1, [kprof_crowd_flag];
    ld.param.u64 %rd2, [kprof_crowd_ns];
    mov.u64 %rd3, %globaltimer;
    add.u64 %rd2, %rd2, %rd3;
POLL:
    ld.volatile.global.u32 %r2, [%rd1];
    setp.ne.u32 %p, %r2, 0;
    @%p bra WAIT;
    mov.u64 %rd4, %globaltimer;
    setp.lt.u64 %p, %rd4, %rd2;
    @%p bra POLL;
WAIT:
    bar.sync 0;
    ret;
}
\0"""
_CB_FUNCTION_PARAMS = 16  # offsetof(CUpti_CallbackData, functionParams)
# (offset of f, of kernelParams)
_KERNEL_PARAMS = {"cuLaunchKernel": (0, 48), "cuLaunchKernel_ptsz": (0, 48),
                  "cuLaunchKernelEx": (8, 16), "cuLaunchKernelEx_ptsz": (8, 16)}
# offsetof(cuLaunchKernel_params, hStream); for the Ex calls, offsetof(CUlaunchConfig, hStream)
# (config at 0)
_STREAM_AT = {"cuLaunchKernel": 40, "cuLaunchKernel_ptsz": 40, "cuLaunchKernelEx": 32,
              "cuLaunchKernelEx_ptsz": 32}


class Recorder:
    def __init__(self, log_path: str) -> None:
        self.out = open(log_path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - the program's lifetime
        self.seq = 0
        self.capture = _capture_wanted(os.environ.get("KPROF_LAUNCH_CAPTURE", ""))
        self.capture_dir = os.environ.get("KPROF_LAUNCH_CAPTURE_DIR", "")
        self.driver: Any = None
        self.subscriber: Any = None
        # CUPTI's API_EXIT, looked up once: the callback runs at every launch
        self.exit_site: object = None
        self.enter_site: object = None
        self.crowd_ns = _crowd_ns(os.environ.get("KPROF_LAUNCH_CROWD", ""),
                                  os.environ.get("KPROF_LAUNCH_CROWD_US", ""))
        # context -> (function, stream, grid, flag host, flag device)
        self.crowds: dict[int, tuple[Any, ...]] = {}
        self.crowded = 0
        # the host side of the flag of the crowd running now, None when none is
        self.flag: Any = None
        self.inside = False  # the crowd's own launch, seen by this same callback

    def emit(self, **event: object) -> None:
        self.out.write(json.dumps(event) + "\n")

    def start(self) -> None:
        try:
            from cuda.bindings import driver
            from cupti import cupti

            self.driver, self.exit_site = driver, cupti.ApiCallbackSite.API_EXIT
            self.enter_site = cupti.ApiCallbackSite.API_ENTER
            self.subscriber = cupti.subscribe(self._callback, None)
            ids = cupti.driver_api_trace_cbid
            for name in _KERNEL_PARAMS:
                cupti.enable_callback(1, self.subscriber, cupti.CallbackDomain.DRIVER_API,
                                      getattr(ids, name))
        except Exception as exc:  # noqa: BLE001 - the program runs on; the parent says what was not checked
            self.emit(event="recorder", ok=False,
                      why=f"kprof's launch recorder could not start: {exc}")
            return
        self.emit(event="recorder", ok=True,
                  crowd_us=self.crowd_ns // 1000 if self.crowd_ns else None)

    def _callback(self, userdata: Any, domain: Any, cbid: Any, cbdata: Any) -> None:
        if self.inside:
            return
        try:
            site = getattr(cbdata, "callback_site", None)
            name = str(getattr(cbdata, "function_name", ""))
            if name not in _KERNEL_PARAMS:
                return
            if site == self.exit_site:
                self._launched(cbdata, name)
            elif site == self.enter_site and self.crowd_ns and self.crowded < CROWDED and self.seq < MAX_LAUNCHES:
                self.crowded += 1
                self.inside = True
                try:
                    self._crowd()
                finally:
                    self.inside = False
        except Exception as exc:  # noqa: BLE001 - a launch it cannot read is said, the program goes on
            self.emit(event="error", seq=self.seq, why=f"{type(exc).__name__}: {exc}")

    def _crowd(self) -> None:
        """The crowd kernel on every SM but one, started before the program's launch goes in."""
        drv = self.driver
        err, ctx = drv.cuCtxGetCurrent()
        if int(err) != 0 or not int(ctx):
            return
        if int(ctx) not in self.crowds:
            self.crowds[int(ctx)] = _crowd_kernel(drv)
        func, stream, blocks, flag, flag_device = self.crowds[int(ctx)]
        flag.value = 0
        args = (ctypes.c_uint64(flag_device), ctypes.c_uint64(self.crowd_ns))
        params = (ctypes.c_void_p * 2)(*(ctypes.addressof(a) for a in args))
        _check(drv.cuLaunchKernel(func, blocks, 1, 1, CROWD_THREADS, 1, 1, 0, stream,
                                  ctypes.addressof(params), 0),
               "the crowd kernel's launch")
        self.flag = flag

    def _release(self, params: int, name: str) -> None:
        """The crowd ends once the program's kernel has: its stream synchronized, then the flag
        set."""
        flag, self.flag = self.flag, None
        try:
            at = _STREAM_AT[name]
            if name.startswith("cuLaunchKernelEx"):  # the stream is in the launch's CUlaunchConfig
                config = ctypes.c_void_p.from_address(params).value or 0
                stream = ctypes.c_void_p.from_address(config + at).value or 0 if config else 0
            else:
                stream = ctypes.c_void_p.from_address(params + at).value or 0
            if not stream and name.endswith("_ptsz"):
                stream = 2  # CU_STREAM_PER_THREAD
            _check(self.driver.cuStreamSynchronize(self.driver.CUstream(stream)),
                   "the launch's stream")
        finally:
            flag.value = 1

    def _launched(self, cbdata: Any, name: str) -> None:
        data = int(getattr(cbdata, "ptr", 0) or int(cbdata))
        params = ctypes.c_void_p.from_address(data + _CB_FUNCTION_PARAMS).value or 0
        if self.flag is not None:  # a crowd runs for this launch: ended whatever else happens to it
            self._release(params, name)
        seq, self.seq = self.seq, self.seq + 1
        if seq >= MAX_LAUNCHES:
            if seq == MAX_LAUNCHES:
                self.emit(event="cut", after=seq)
            return
        drv = self.driver
        assert drv is not None
        f_at, kp_at = _KERNEL_PARAMS[name]
        func = ctypes.c_void_p.from_address(params + f_at).value or 0
        kernel_params = ctypes.c_void_p.from_address(params + kp_at).value or 0
        drv.cuCtxSynchronize()  # the kernel's writes are done before they are read
        args: list[list[object]] = []
        seen: set[int] = set()
        for index, value in _pointer_arguments(drv, func, kernel_params):
            err, base, size = drv.cuMemGetAddressRange(value)
            if int(err) != 0 or int(base) in seen:
                continue
            seen.add(int(base))
            data_bytes = _copy(drv, int(base), min(int(size), MAX_HASHED))
            args.append([index, int(size), hashlib.blake2b(data_bytes, digest_size=16).hexdigest()])
            if (seq, index) == self.capture and self.capture_dir:
                path = os.path.join(self.capture_dir, f"launch-{seq}-arg-{index}.bin")
                with open(path, "wb") as f:
                    f.write(data_bytes)
                self.emit(event="capture", seq=seq, arg=index, path=path)
        self.emit(event="launch", seq=seq, kernel=str(getattr(cbdata, "symbol_name", "") or "?"),
                  site=_site(), args=args)


def _crowd_kernel(drv: Any) -> tuple[Any, ...]:
    """The crowd kernel in the current context, its own non-blocking stream, and a grid that fills
    every SM but one (as many blocks of CROWD_THREADS as an SM holds threads, times SMs - 1)."""
    module = _check(drv.cuModuleLoadData(CROWD_PTX), "the crowd kernel's PTX")
    func = _check(drv.cuModuleGetFunction(module, b"kprof_crowd"), "the crowd kernel")
    # CU_STREAM_NON_BLOCKING: beside stream 0
    stream = _check(drv.cuStreamCreate(1), "the crowd's stream")
    device = _check(drv.cuCtxGetDevice(), "the context's device")
    attr = drv.CUdevice_attribute
    sms = int(_check(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device), "SMs"))
    threads = int(_check(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, device),
                         "threads per SM"))
    # CU_MEMHOSTALLOC_PORTABLE | DEVICEMAP
    host = _check(drv.cuMemHostAlloc(4, 0x3), "the crowd's flag")
    device_ptr = _check(drv.cuMemHostGetDevicePointer(host, 0), "the flag's device address")
    flag = ctypes.c_uint32.from_address(int(host))
    return func, stream, max(threads // CROWD_THREADS, 1) * max(sms - 1, 1), flag, int(device_ptr)


def _check(result: object, what: str) -> Any:
    err, *values = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise RuntimeError(f"{what}: {err}")
    return values[0] if len(values) == 1 else tuple(values)


def _crowd_ns(wanted: str, micros: str) -> int:
    """The crowd kernel's spin in nanoseconds, 0 for no crowd."""
    if wanted not in ("1", "yes", "true"):
        return 0
    return (int(micros) if micros.isascii() and micros.isdigit() and 0 < int(micros) <= 10_000_000 else CROWD_US) * 1000


def _pointer_arguments(drv: Any, func: int, kernel_params: int) -> list[tuple[int, int]]:
    """(index, value) of the launch's 8-byte arguments, from the kernel's parameter layout
    (``cuFuncGetParamInfo``); none where the launch passed its arguments another way (``extra``)."""
    if not func or not kernel_params:
        return []
    out = []
    handle = drv.CUfunction(func)
    for index in range(4096):
        err, _offset, size = drv.cuFuncGetParamInfo(handle, index)
        if int(err) != 0:
            break
        if int(size) == 8:
            at = ctypes.c_void_p.from_address(kernel_params + 8 * index).value
            if at:
                out.append((index, ctypes.c_uint64.from_address(at).value))
    return out


def _copy(drv: Any, base: int, nbytes: int) -> bytes:
    buf = (ctypes.c_char * max(nbytes, 1))()
    err, = drv.cuMemcpyDtoH(ctypes.addressof(buf), base, nbytes)
    if int(err) != 0:
        raise RuntimeError(f"cuMemcpyDtoH of {nbytes:,} bytes: {err}")
    return bytes(buf)[:nbytes]


def _capture_wanted(text: str) -> tuple[int, int] | None:
    seq, _, arg = text.partition(":")
    return (int(seq), int(arg)) if (seq + arg).isascii() and seq.isdigit() and arg.isdigit() else None


def _site() -> str | None:
    """The innermost Python frame of the user's own files (past this file, kprof, the standard
    library and installed packages)."""
    try:
        from kprof.tools.programs.hostframes import is_user_file
    except ImportError:
        return None
    for frame in reversed(traceback.extract_stack()[:-1]):
        if frame.filename != __file__ and is_user_file(frame.filename):
            return f"{frame.filename}:{frame.lineno}"
    return None


_RECORDER: list[Recorder] = []  # the program's one recorder, kept alive with its CUPTI subscriber


def install() -> None:
    path = os.environ.get("KPROF_LAUNCH_LOG")
    if path and not _RECORDER:
        _RECORDER.append(Recorder(path))
        _RECORDER[0].start()
