"""kprof's launch recorder, loaded into a program by kprof's sitecustomize when ``KPROF_LAUNCH_LOG`` is
set (``kprof sanitize --tool values -- CMD``): after every kernel launched through the driver API
(``cuLaunchKernel``, ``cuLaunchKernelEx``: Triton, CuPy, cuda-python, numba-cuda) it waits for the
kernel, and hashes every device allocation an argument points into. The log format and what is made
of it are :mod:`kprof.launchlog` (the parent, after the runs). Launches through the runtime API
(``cudaLaunchKernel``: PyTorch's own kernels, C++ programs) are not seen: the report says how many
launches were compared.

It reads CUPTI's callback data and the launch's parameters at their C layouts (``CUpti_CallbackData``,
``cuLaunchKernel_params``, ``cuLaunchKernelEx_params``); anything it cannot start or read is a line in
the log, never an exception in the program.
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
_CB_FUNCTION_PARAMS = 16  # offsetof(CUpti_CallbackData, functionParams)
_KERNEL_PARAMS = {"cuLaunchKernel": (0, 48), "cuLaunchKernel_ptsz": (0, 48),  # (offset of f, of kernelParams)
                  "cuLaunchKernelEx": (8, 16), "cuLaunchKernelEx_ptsz": (8, 16)}


class Recorder:
    def __init__(self, log_path: str) -> None:
        self.out = open(log_path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - the program's lifetime
        self.seq = 0
        self.capture = _capture_wanted(os.environ.get("KPROF_LAUNCH_CAPTURE", ""))
        self.capture_dir = os.environ.get("KPROF_LAUNCH_CAPTURE_DIR", "")
        self.driver: Any = None
        self.subscriber: Any = None
        self.exit_site: Any = None  # CUPTI's API_EXIT, looked up once: the callback runs at every launch

    def emit(self, **event: object) -> None:
        self.out.write(json.dumps(event) + "\n")

    def start(self) -> None:
        try:
            from cuda.bindings import driver
            from cupti import cupti

            self.driver, self.exit_site = driver, cupti.ApiCallbackSite.API_EXIT
            self.subscriber = cupti.subscribe(self._callback, None)
            ids = cupti.driver_api_trace_cbid
            for name in _KERNEL_PARAMS:
                cupti.enable_callback(1, self.subscriber, cupti.CallbackDomain.DRIVER_API, getattr(ids, name))
        except Exception as exc:  # noqa: BLE001 - the program runs on; the parent says what was not checked
            self.emit(event="recorder", ok=False, why=f"kprof's launch recorder could not start: {exc}")
            return
        self.emit(event="recorder", ok=True)

    def _callback(self, userdata: Any, domain: Any, cbid: Any, cbdata: Any) -> None:
        try:
            if getattr(cbdata, "callback_site", None) != self.exit_site:
                return
            name = str(getattr(cbdata, "function_name", ""))
            if name not in _KERNEL_PARAMS:
                return
            self._launched(cbdata, name)
        except Exception as exc:  # noqa: BLE001 - a launch it cannot read is said, the program goes on
            self.emit(event="error", seq=self.seq, why=f"{type(exc).__name__}: {exc}")

    def _launched(self, cbdata: Any, name: str) -> None:
        seq, self.seq = self.seq, self.seq + 1
        if seq >= MAX_LAUNCHES:
            if seq == MAX_LAUNCHES:
                self.emit(event="cut", after=seq)
            return
        drv = self.driver
        assert drv is not None
        data = int(getattr(cbdata, "ptr", 0) or int(cbdata))
        params = ctypes.c_void_p.from_address(data + _CB_FUNCTION_PARAMS).value or 0
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
    return (int(seq), int(arg)) if seq.isdigit() and arg.isdigit() else None


def _site() -> str | None:
    """The innermost Python frame of the user's own files (past this file, kprof, the standard library
    and installed packages)."""
    try:
        from kprof.hostframes import is_user_file
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
