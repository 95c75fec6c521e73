"""The one device layer: the only module that imports ``cuda.bindings``.

It owns the context, modules, buffers, events, launches and argument packing, and turns every
driver result tuple into a value or a :class:`~kprof.errors.CudaError` that names the call and
the ``CUresult``. It uses ``cuda.bindings.driver`` directly: cuda.core 1.2 makes a
``cuCtxGetDevice`` call that fails under compute-sanitizer, which counts it as an API error in
the user's report (``docs/architecture.md``), and the sanitized runner must not produce noise.
Buffers are plain ``cuMemAlloc`` allocations, one per argument, never a pool: a pool hides an
out-of-bounds access that lands inside it.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from kprof.errors import CudaError, NoGPUError
from kprof.launch.childresult import DeviceInfo

_SCALAR_CTYPES: dict[str, Any] = {
    "float16": ctypes.c_uint16,  # packed by the caller as raw bits
    "bfloat16": ctypes.c_uint16,  # likewise
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
    "int8": ctypes.c_int8,
    "uint8": ctypes.c_uint8,
    "int32": ctypes.c_int32,
    "uint32": ctypes.c_uint32,
    "int64": ctypes.c_int64,
    "uint64": ctypes.c_uint64,
}


def _driver() -> Any:
    from cuda.bindings import driver

    return driver


def check(call: str, result: object) -> Any:
    """Unwrap a ``(CUresult, *values)`` tuple; raise :class:`CudaError` naming the result."""
    if isinstance(result, tuple):
        err, *values = result
    else:
        err, values = result, []
    if int(err) != 0:
        name = getattr(err, "name", str(err))
        raise CudaError(call, name, _error_string(err))
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def _error_string(err: object) -> str:
    try:
        res, text = _driver().cuGetErrorString(err)
        if int(res) == 0 and text:
            return text.decode() if isinstance(text, bytes) else str(text)
    except Exception:  # noqa: BLE001 - the error string is a courtesy; the name is what matters
        pass
    return ""


def init() -> None:
    """cuInit(0), with the two ways it fails on a machine without a GPU said plainly."""
    try:
        driver = _driver()
    except ImportError as exc:
        raise NoGPUError(f"cuda-python is not installed ({exc}): pip install cuda-bindings") from None
    try:
        result = driver.cuInit(0)
    except Exception as exc:  # noqa: BLE001 - cuda-pathfinder's DynamicLibNotFoundError: no libcuda at all
        raise NoGPUError(f"no CUDA driver: cuInit -> libcuda not found ({type(exc).__name__})") from None
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        raise NoGPUError(f"no usable GPU: cuInit -> {getattr(err, 'name', err)}")


def probe() -> str | None:
    """None when a GPU is usable, else the reason (used by tests to skip honestly)."""
    try:
        init()
        if check("cuDeviceGetCount", _driver().cuDeviceGetCount()) < 1:
            return "no GPU: cuDeviceGetCount -> 0"
    except (NoGPUError, CudaError) as exc:
        return str(exc)
    return None


# -- launching in someone else's context (kprof.op: a kernel called on a framework's arrays)
# ---------
def foreign_function(image: bytes, entry: str, ordinal: int) -> Any:
    """``entry`` of a cubin, loaded into the context current on this thread (the framework's); GPU
    ``ordinal``'s primary context is made current first if none is (as PyTorch and CuPy use it)."""
    init()
    drv = _driver()
    ctx = check("cuCtxGetCurrent", drv.cuCtxGetCurrent())
    if ctx is None or int(ctx) == 0:
        dev = check("cuDeviceGet", drv.cuDeviceGet(ordinal))
        check("cuCtxSetCurrent",
              drv.cuCtxSetCurrent(check("cuDevicePrimaryCtxRetain",
                                        drv.cuDevicePrimaryCtxRetain(dev))))
    module = check("cuModuleLoadData", drv.cuModuleLoadData(image))
    return check("cuModuleGetFunction", drv.cuModuleGetFunction(module, entry.encode()))


def allow_dynamic_shared(func: object, nbytes: int) -> None:
    drv = _driver()
    attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    check("cuFuncSetAttribute", drv.cuFuncSetAttribute(func, attr, nbytes))


def launch(func: object, grid: Sequence[int], block: Sequence[int], shared_mem: int,
           args: Sequence[tuple[str, Any]], stream: object = 0) -> None:
    """cuLaunchKernel with ``args`` as ``(dtype, value)`` pairs ("ptr" for device pointers), packed
    for this one launch; the driver copies the values at launch."""
    launch_packed(func, grid, block, shared_mem, ArgPack(args), stream)


TENSORMAP_BYTES = 128  # CU_TENSOR_MAP_NUM_QWORDS x 8


def encode_tensor_map(drv: Any, ptr: int, tm: Any) -> bytes:
    """cuTensorMapEncodeTiled for :meth:`Device.tensor_map` (the spec's rules were checked at
    resolve time; each of ``kprof.spec.schema.TENSORMAP_DTYPES`` is the driver's data type of its
    name in capitals)."""
    rank = len(tm.shape)
    swizzle = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}[tm.arg.swizzle]
    tmap = check("cuTensorMapEncodeTiled", drv.cuTensorMapEncodeTiled(
        getattr(drv.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{tm.dtype.upper()}"), rank, ptr,
        [drv.cuuint64_t(d) for d in reversed(tm.shape)],
        [drv.cuuint64_t(s) for s in tm.driver_strides],
        [drv.cuuint32_t(b) for b in reversed(tm.box)], [drv.cuuint32_t(1)] * rank,
        drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(drv.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{swizzle}"),
        drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE))
    return ctypes.string_at(tmap.getPtr(), TENSORMAP_BYTES)


class _TensorMapParam:
    """A tensor map as a kernel parameter: 128 bytes at a 64-byte aligned address, as
    ``CUtensorMap`` is declared (``alignas(64)``)."""

    def __init__(self, data: bytes) -> None:
        self._buffer = ctypes.create_string_buffer(TENSORMAP_BYTES + 64)
        self.address = (ctypes.addressof(self._buffer) + 63) & ~63
        ctypes.memmove(self.address, data, TENSORMAP_BYTES)

    def __bytes__(self) -> bytes:
        return ctypes.string_at(self.address, TENSORMAP_BYTES)


class ArgPack:
    """A kernel's arguments packed once into the ``void*[]`` cuLaunchKernel takes: scalars written
    at construction, device pointers per launch (:meth:`fill`). ``template`` items are ``("buf",
    NAME)`` for a buffer filled per launch, ``("ptr", ADDRESS)`` for a fixed pointer, and ``(dtype,
    value)`` for a scalar (``value`` as :func:`kprof.child.hostdata.pack_scalar` gives it),
    ``("tensormap", BYTES)`` for a tensor map passed by value (:meth:`Device.tensor_map`). Iterating
    gives ``(dtype, value)`` pairs, "ptr" for pointers, as :func:`launch` takes them. Not
    thread-safe: fill and launch under one lock."""

    def __init__(self, template: Sequence[tuple[str, Any]]) -> None:
        self.kinds = tuple("ptr" if kind == "buf" else kind for kind, _ in template)
        self._values: list[Any] = [ctypes.c_uint64(0) if kind == "buf" else
                                   ctypes.c_uint64(value) if kind == "ptr" else
                                   _TensorMapParam(value) if kind == "tensormap" else
                                   _SCALAR_CTYPES[kind](value)
                                   for kind, value in template]
        self.slots = tuple((self._values[i], name) for i, (kind, name) in enumerate(template)
                           if kind == "buf")
        self._array = (ctypes.c_void_p * max(len(self._values), 1))(
            *[v.address if isinstance(v, _TensorMapParam) else ctypes.addressof(v)
              for v in self._values])
        self.address = ctypes.addressof(self._array)

    def fill(self, pointers: dict[str, int]) -> None:
        for value, name in self.slots:
            value.value = pointers[name]

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return iter([(kind, bytes(v) if kind == "tensormap" else v.value)
                     for kind, v in zip(self.kinds, self._values)])


def launch_packed(func: Any, grid: Sequence[int], block: Sequence[int], shared_mem: int,
                  pack: ArgPack, stream: object = 0) -> None:
    """cuLaunchKernel with arguments packed beforehand (:class:`ArgPack`): the host path kprof.load
    takes on every call."""
    global _LAUNCH
    if _LAUNCH is None:
        _LAUNCH = _driver().cuLaunchKernel
    result = _LAUNCH(func, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_mem,
                     stream, pack.address, 0)
    if int(result[0]) != 0:
        check("cuLaunchKernel", result)


_LAUNCH: Any = None  # cuda.bindings' cuLaunchKernel, looked up once


@contextmanager
def primary_context_held(ordinal: int) -> Iterator[None]:
    """The GPU's primary context kept alive for the block: a batch of jobs in one child (each job's
    :class:`Device` retains and releases it) then creates it once, not once a job, which the last
    release would destroy. Where there is no GPU the block runs as it is (each job says why)."""
    held: tuple[Any, Any] | None = None
    try:
        init()
        drv = _driver()
        handle = check("cuDeviceGet", drv.cuDeviceGet(ordinal))
        check("cuDevicePrimaryCtxRetain", drv.cuDevicePrimaryCtxRetain(handle))
        held = (drv, handle)
    except (CudaError, NoGPUError):
        held = None
    try:
        yield
    finally:
        if held is not None:
            held[0].cuDevicePrimaryCtxRelease(held[1])


class Device:
    """A primary context on one GPU, with every allocation it made recorded."""

    def __init__(self, ordinal: int = 0) -> None:
        init()
        drv = _driver()
        count = check("cuDeviceGetCount", drv.cuDeviceGetCount())
        if ordinal >= count:
            raise NoGPUError(f"GPU {ordinal} requested but {count} present")
        self._drv = drv
        self.handle = check("cuDeviceGet", drv.cuDeviceGet(ordinal))
        self.context = check("cuDevicePrimaryCtxRetain", drv.cuDevicePrimaryCtxRetain(self.handle))
        check("cuCtxSetCurrent", drv.cuCtxSetCurrent(self.context))
        self.ordinal = ordinal
        self._allocations: list[int] = []
        self._host_allocs: list[int] = []
        self._modules: list[Any] = []

    # -- information -------------------------------------------------------------------------
    def attribute(self, name: str) -> int:
        attr = getattr(self._drv.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
        return int(check("cuDeviceGetAttribute", self._drv.cuDeviceGetAttribute(attr, self.handle)))

    def info(self) -> DeviceInfo:
        raw = check("cuDeviceGetName", self._drv.cuDeviceGetName(256, self.handle))
        name = raw.split(b"\0", 1)[0].decode() if isinstance(raw, bytes) else str(raw)
        major = self.attribute("COMPUTE_CAPABILITY_MAJOR")
        minor = self.attribute("COMPUTE_CAPABILITY_MINOR")
        return DeviceInfo(
            ordinal=self.ordinal,
            name=name,
            arch=f"sm_{major}{minor}",
            sm_count=self.attribute("MULTIPROCESSOR_COUNT"),
            total_memory=int(check("cuDeviceTotalMem", self._drv.cuDeviceTotalMem(self.handle))),
            driver_version=int(check("cuDriverGetVersion", self._drv.cuDriverGetVersion())),
            max_shared_per_block_optin=self.attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
            max_threads_per_sm=self.attribute("MAX_THREADS_PER_MULTIPROCESSOR"),
            l2_bytes=self.attribute("L2_CACHE_SIZE"),
            memory_clock_khz=self._attribute_or_zero("MEMORY_CLOCK_RATE"),
            bus_width_bits=self._attribute_or_zero("GLOBAL_MEMORY_BUS_WIDTH"),
            clock_khz=self._attribute_or_zero("CLOCK_RATE"),
        )

    def _attribute_or_zero(self, name: str) -> int:
        """An attribute a driver may have retired (the clocks are deprecated in CUDA 13): 0 then."""
        try:
            return self.attribute(name)
        except (AttributeError, CudaError):
            return 0

    def mem_info(self) -> tuple[int, int]:
        """(free, total) bytes."""
        free, total = check("cuMemGetInfo", self._drv.cuMemGetInfo())
        return int(free), int(total)

    # -- modules -----------------------------------------------------------------------------
    def load_module(self, image: bytes) -> Any:
        module = check("cuModuleLoadData", self._drv.cuModuleLoadData(image))
        self._modules.append(module)
        return module

    def module_global(self, module: object, name: str) -> tuple[int, int]:
        """A module's global (a ``__constant__`` array, an ``extern "C"`` name): its device address
        and size."""
        ptr, size = check("cuModuleGetGlobal", self._drv.cuModuleGetGlobal(module, name.encode()))
        return int(ptr), int(size)

    def function(self, module: object, entry: str) -> Any:
        return check("cuModuleGetFunction", self._drv.cuModuleGetFunction(module, entry.encode()))

    def function_attribute(self, func: object, name: str) -> int:
        attr = getattr(self._drv.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}")
        return int(check("cuFuncGetAttribute", self._drv.cuFuncGetAttribute(attr, func)))

    def set_max_dynamic_shared(self, func: object, nbytes: int) -> None:
        attr = self._drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        check("cuFuncSetAttribute", self._drv.cuFuncSetAttribute(func, attr, nbytes))

    def occupancy(self, func: object, block_threads: int, dynamic_smem: int) -> int:
        return int(
            check(
                "cuOccupancyMaxActiveBlocksPerMultiprocessor",
                self._drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(func, block_threads, dynamic_smem),
            )
        )

    # -- memory ------------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> int:
        ptr = check("cuMemAlloc", self._drv.cuMemAlloc(max(nbytes, 1)))
        self._allocations.append(int(ptr))
        return int(ptr)

    def free(self, ptr: int) -> None:
        check("cuMemFree", self._drv.cuMemFree(ptr))
        self._allocations.remove(ptr)

    def upload(self, ptr: int, array: Any) -> None:
        check("cuMemcpyHtoD", self._drv.cuMemcpyHtoD(ptr, array.ctypes.data, array.nbytes))

    def download(self, ptr: int, array: Any) -> None:
        check("cuMemcpyDtoH", self._drv.cuMemcpyDtoH(array.ctypes.data, ptr, array.nbytes))

    def copy_async(self, dst: int, src: int, nbytes: int, stream: Any = 0) -> None:
        """Device to device, on ``stream`` (kprof peak's memcpy ceiling)."""
        check("cuMemcpyDtoDAsync", self._drv.cuMemcpyDtoDAsync(dst, src, nbytes, stream))

    def memset32(self, ptr: int, value: int, count: int) -> None:
        check("cuMemsetD32", self._drv.cuMemsetD32(ptr, value & 0xFFFFFFFF, count))

    def tensor_map(self, ptr: int, tm: Any) -> bytes:
        """The 128 bytes of a ``CUtensorMap`` (cuTensorMapEncodeTiled) of the buffer at ``ptr`` as
        ``tm`` (a :class:`~kprof.spec.ResolvedTensorMap`) describes it: its shape and box (the
        driver takes them innermost first), its swizzle, zeros for a box past the tensor's edge."""
        return encode_tensor_map(self._drv, ptr, tm)

    # -- launch ------------------------------------------------------------------------------
    def launch(
        self,
        func: Any,
        grid: Sequence[int],
        block: Sequence[int],
        shared_mem: int,
        args: Sequence[tuple[str, Any]],
        stream: object = 0,
    ) -> None:
        """Launch with ``args`` as ``(dtype, value)`` pairs; ``dtype`` "ptr" for device pointers."""
        launch(func, grid, block, shared_mem, args, stream)

    def synchronize(self) -> None:
        check("cuCtxSynchronize", self._drv.cuCtxSynchronize())

    def host_flag(self) -> tuple[Any, int]:
        """A host int the GPU can read (mapped pinned memory): (ctypes int, device pointer)."""
        flags = self._drv.CU_MEMHOSTALLOC_DEVICEMAP if hasattr(self._drv, "CU_MEMHOSTALLOC_DEVICEMAP") else 2
        host = check("cuMemHostAlloc", self._drv.cuMemHostAlloc(4, flags))
        dptr = check("cuMemHostGetDevicePointer", self._drv.cuMemHostGetDevicePointer(host, 0))
        value = ctypes.c_int.from_address(int(host))
        value.value = 0
        self._host_allocs.append(int(host))
        return value, int(dptr)

    # -- streams and graphs -------------------------------------------------------------------
    def stream(self) -> Any:
        flags = self._drv.CUstream_flags.CU_STREAM_NON_BLOCKING
        return check("cuStreamCreate", self._drv.cuStreamCreate(flags))

    def stream_synchronize(self, stream: object) -> None:
        check("cuStreamSynchronize", self._drv.cuStreamSynchronize(stream))

    def capture(self, stream: object, body: Any) -> object:
        """A CUDA graph of whatever ``body()`` enqueues on ``stream``, instantiated and ready to
        launch."""
        mode = self._drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        check("cuStreamBeginCapture", self._drv.cuStreamBeginCapture(stream, mode))
        try:
            body()
        finally:
            graph = check("cuStreamEndCapture", self._drv.cuStreamEndCapture(stream))
        return check("cuGraphInstantiate", self._drv.cuGraphInstantiate(graph, 0))

    def graph_destroy(self, graph_exec: object) -> None:
        check("cuGraphExecDestroy", self._drv.cuGraphExecDestroy(graph_exec))

    def graph_launch(self, graph_exec: object, stream: object) -> None:
        check("cuGraphLaunch", self._drv.cuGraphLaunch(graph_exec, stream))

    # -- events ------------------------------------------------------------------------------
    def event(self) -> object:
        flags = self._drv.CUevent_flags.CU_EVENT_DEFAULT
        return check("cuEventCreate", self._drv.cuEventCreate(flags))

    def record(self, event: object, stream: object = 0) -> None:
        check("cuEventRecord", self._drv.cuEventRecord(event, stream))

    def elapsed_ms(self, start: object, end: object) -> float:
        check("cuEventSynchronize", self._drv.cuEventSynchronize(end))
        return float(check("cuEventElapsedTime", self._drv.cuEventElapsedTime(start, end)))

    # -- teardown ----------------------------------------------------------------------------
    def close(self) -> None:
        """Free what this object allocated, so compute-sanitizer's leak check sees only the kernel's
        own leaks."""
        for ptr in list(self._allocations):
            self.free(ptr)
        for host in self._host_allocs:
            check("cuMemFreeHost", self._drv.cuMemFreeHost(host))
        self._host_allocs.clear()
        for module in self._modules:
            check("cuModuleUnload", self._drv.cuModuleUnload(module))
        self._modules.clear()
        check("cuDevicePrimaryCtxRelease", self._drv.cuDevicePrimaryCtxRelease(self.handle))
