"""The frameworks kprof meets (PyTorch, CuPy, anything with ``__cuda_array_interface__``), in one
place: how to read an array of theirs, allocate one like it, find their current stream
(``kprof.load``,
:mod:`kprof.op`), wrap kprof's own buffers, run on kprof's stream and copy a result back (below).

A Python baseline in the timing child: the user's (or a shipped) callable timed like a kernel.

``baseline: baselines.py:torch_add`` (or ``--baseline kprof.baselines.torch_ops:rms_norm``) names a
function that runs the spec's operation with a framework. In the child:

- kprof's own input buffers are handed to it as framework tensors, without a copy: PyTorch tensors
  when PyTorch is installed, else CuPy arrays, through ``__cuda_array_interface__`` (so its inputs
  are the same bytes the kernel read); it takes them, and the sizes and scalars, by name;
- it runs on kprof's timing stream (the framework's external-stream context), so the same L2 flush,
  blocking kernel and timer apply: with CUPTI, the time from the first kernel start to the last
  kernel end of whatever it launched, and the number of kernels it launched is reported;
- before timing, its ``prepare(**inputs)`` runs if it has one (``torch.compile``: the compile time
  is reported), then one call whose result is copied into kprof's output buffer and verified
  against the spec's reference like the kernel's. An exception in it is the user's error.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

from kprof.errors import UsageError, UserCodeError
from kprof.spec import DTYPES, pyref

if TYPE_CHECKING:
    from kprof.spec import ResolvedBuffer

_TYPESTR = {"float16": "<f2", "float32": "<f4", "float64": "<f8", "int8": "|i1", "uint8": "|u1",
            "int32": "<i4", "uint32": "<u4", "int64": "<i8", "uint64": "<u8"}


class DeviceView:
    """kprof's buffer as ``__cuda_array_interface__`` (version 3): what frameworks wrap without a
    copy."""

    def __init__(self, ptr: int, buf: ResolvedBuffer) -> None:
        # bfloat16 has no interface type: it travels as its 16-bit patterns, and Torch.wrap views it
        # back
        self.dtype = buf.arg.dtype
        typestr = "<i2" if buf.arg.dtype == "bfloat16" else _TYPESTR.get(buf.arg.dtype)
        if typestr is None:
            raise UsageError(f"a Python baseline cannot take {buf.arg.name}: {buf.arg.dtype} has "
                             "no __cuda_array_interface__ type")
        self.__cuda_array_interface__ = {"shape": tuple(buf.shape), "typestr": typestr,
                                         "data": (int(ptr), False), "strides": None, "version": 3,
                                         "stream": None}


class ArrayInfo(NamedTuple):
    """What kprof needs of one GPU array (a named tuple: read on every kprof.load call)."""

    ptr: int
    shape: tuple[int, ...]
    dtype: str | None  # a kprof dtype name (float32, bfloat16, ...), None when it has none
    contiguous: bool
    # the GPU ordinal (-1: not on a GPU); None when the array does not say (a bare interface)
    device: int | None
    framework: str


class Framework:
    """One framework: read an array of its, allocate one like it, its current stream (kprof.load);
    wrap kprof's buffer, run on kprof's stream, copy a result into kprof's buffer (the child)."""

    name = "?"

    def matches(self, obj: object) -> bool:
        return False

    def info(self, obj: object) -> ArrayInfo:
        raise NotImplementedError

    def pointer(self, obj: object) -> int:
        """Only the device address (of an array this framework allocated)."""
        return self.info(obj).ptr

    def key(self, obj: object) -> Hashable:
        """What a call's checks read of ``obj`` (shape, dtype, contiguity, device; not the address),
        as one hashable value: two arrays with equal keys pass or fail them alike. kprof.load's
        repeated call compares these instead of checking again; a framework gives a cheaper one
        where it can."""
        return self.info(obj)[1:]

    def alloc(self, shape: tuple[int, ...], dtype: str, like: object, zero: bool = False) -> object:
        raise UsageError("kprof.load allocates outputs, scratch and zeroed in-out buffers with "
                         f"PyTorch or CuPy, not for a {type(like).__name__}: pass out= "
                         "(and every in-out buffer)")

    def stream(self, like: object) -> int:
        return 0

    def wrap(self, view: DeviceView) -> object:
        raise NotImplementedError

    @contextmanager
    def on_stream(self, handle: object) -> Iterator[None]:
        yield

    def copy_into(self, dst: object, src: object) -> None:
        raise NotImplementedError


class Torch(Framework):
    name = "torch"

    def __init__(self) -> None:
        self._dtypes: dict[Any, str | None] = {}  # torch.float32 -> "float32"
        self._torch_dtypes: dict[str, object] = {}  # "float32" -> torch.float32
        self._raw_stream: Any = None  # torch._C._cuda_getCurrentRawStream, where this torch has it

    def matches(self, obj: Any) -> bool:
        return type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr")

    def info(self, obj: Any) -> ArrayInfo:
        dtype = obj.dtype
        name = self._dtypes.get(dtype, "?")
        if name == "?":
            text = str(dtype).removeprefix("torch.")
            name = self._dtypes[dtype] = text if text in DTYPES else None
        return ArrayInfo(obj.data_ptr(), tuple(obj.shape), name, obj.is_contiguous(),
                         obj.get_device(), self.name)

    def pointer(self, obj: Any) -> int:
        return obj.data_ptr()  # type: ignore[no-any-return]  # an int already: no int() on every call

    def key(self, obj: Any) -> Hashable:
        return obj.shape, obj.dtype, obj.is_contiguous(), obj.get_device()

    def alloc(self, shape: tuple[int, ...], dtype: str, like: Any, zero: bool = False) -> object:
        kind = self._torch_dtypes.get(dtype)
        if kind is None:  # once per dtype: a call allocating its output pays only for new_empty
            import torch

            kind = self._torch_dtypes[dtype] = getattr(torch, dtype)
        return like.new_zeros(shape, dtype=kind) if zero else like.new_empty(shape, dtype=kind)

    def stream(self, like: Any) -> int:
        if self._raw_stream is None:
            import torch

            # the handle itself, without building a torch.cuda.Stream (as Triton reads it)
            self._raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or \
                (lambda index: torch.cuda.current_stream(index).cuda_stream)
        return int(self._raw_stream(like.get_device()))

    def wrap(self, view: DeviceView) -> object:
        import torch

        tensor = torch.as_tensor(view, device="cuda")
        return tensor.view(torch.bfloat16) if view.dtype == "bfloat16" else tensor

    @contextmanager
    def on_stream(self, handle: Any) -> Iterator[None]:
        import torch

        with torch.cuda.stream(torch.cuda.ExternalStream(int(handle))):
            yield

    def copy_into(self, dst: Any, src: Any) -> None:
        dst.copy_(src.reshape(dst.shape))


class Cupy(Framework):
    name = "cupy"

    def matches(self, obj: object) -> bool:
        return type(obj).__module__.startswith("cupy") and hasattr(obj, "data") and hasattr(obj, "device")

    def info(self, obj: Any) -> ArrayInfo:
        name = str(obj.dtype)
        return ArrayInfo(int(obj.data.ptr), tuple(int(d) for d in obj.shape),
                         name if name in DTYPES else None,
                         bool(obj.flags.c_contiguous), int(obj.device.id), self.name)

    def pointer(self, obj: Any) -> int:
        return int(obj.data.ptr)

    def key(self, obj: Any) -> Hashable:
        return obj.shape, obj.dtype, obj.flags.c_contiguous, obj.device.id

    def alloc(self, shape: tuple[int, ...], dtype: str, like: Any, zero: bool = False) -> object:
        import cupy

        with like.device:
            return (cupy.zeros if zero else cupy.empty)(shape, dtype=dtype)

    def stream(self, like: Any) -> int:
        import cupy

        return int(cupy.cuda.get_current_stream().ptr)

    def wrap(self, view: DeviceView) -> object:
        import cupy

        if view.dtype == "bfloat16":
            raise UsageError("CuPy has no bfloat16: a Python baseline of a bfloat16 spec needs "
                             "PyTorch")
        return cupy.asarray(view)

    @contextmanager
    def on_stream(self, handle: Any) -> Iterator[None]:
        import cupy

        with cupy.cuda.ExternalStream(int(handle)):
            yield

    def copy_into(self, dst: Any, src: Any) -> None:
        dst[...] = src.reshape(dst.shape)


class Interface(Framework):
    """Anything with ``__cuda_array_interface__`` (Numba, JAX's exports, ...): read only."""

    name = "__cuda_array_interface__"

    def matches(self, obj: Any) -> bool:
        return hasattr(obj, "__cuda_array_interface__")

    def info(self, obj: Any) -> ArrayInfo:
        import numpy as np

        cai = obj.__cuda_array_interface__
        shape = tuple(int(d) for d in cai["shape"])
        dt = np.dtype(cai["typestr"])
        strides = cai.get("strides")
        contiguous = strides is None or tuple(strides) == _c_strides(shape, dt.itemsize)
        return ArrayInfo(int(cai["data"][0]), shape, dt.name if dt.name in DTYPES else None,
                         contiguous, None, self.name)


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    out, step = [], itemsize
    for d in reversed(shape):
        out.append(step)
        step *= d
    return tuple(reversed(out))


FRAMEWORKS: dict[str, Callable[[], Framework]] = {"torch": Torch, "cupy": Cupy}
# how kprof.load reads an argument, first match
ADAPTERS: list[Framework] = [Torch(), Cupy(), Interface()]


def adapter_for(obj: Any, what: str) -> Framework:
    for a in ADAPTERS:
        if a.matches(obj):
            return a
    raise UsageError(f"{what}: a {type(obj).__name__} is not a GPU array kprof can read (PyTorch "
                     "tensor, CuPy array, or anything with __cuda_array_interface__)")


def choose() -> Framework:
    """PyTorch if it imports, else CuPy: the framework a baseline's inputs come as."""
    import importlib

    for name, make in FRAMEWORKS.items():
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - not installed, or broken: try the next one
            continue
        return make()
    raise UsageError("a Python baseline needs PyTorch or CuPy in the environment kprof runs in "
                     "(pip install torch, or cupy-cuda13x)")


def pointer_of(stream: Any) -> int:
    """kprof's CUstream object as the integer handle frameworks take."""
    try:
        return int(stream)
    except TypeError:
        return int(stream.getPtr())


def prepared(data: dict[str, object]) -> bool:
    """Whether ``routine`` ran a callable's ``prepare`` (into ``data``, which then holds its time):
    it ran the operation on the workspace's buffers, which must be uploaded again before a
    verdict."""
    return any(key.endswith("_prepare_s") for key in data)


def routine(ws: Any, stored: str, stream: object, data: dict[str, object],
            what: str = "baseline") -> tuple[Callable[[], None], Callable[[], None], Callable[[], None]]:
    """(call, first) over ``ws``, the child's workspace: ``call`` runs the callable once on kprof's
    stream; ``first`` does the same and copies its result into kprof's output buffers, for the
    verification. A callable that takes an output buffer by name writes it in place, and its return
    value is not used. ``data`` gets the framework and the prepare time. ``what``: a baseline, or a
    spec's Python operation. The third, ``poison_pool``, fills the framework's free memory of each
    output's size with the poison just uploaded into kprof's outputs (benchmark integrity): a
    callable that returns new, unwritten memory (``torch.empty``) still holding an earlier call's
    result then returns the poison instead."""
    ref = pyref.Ref.from_stored(stored)
    fn = pyref.load(ref, what)
    fw = choose()
    handle = pointer_of(stream)
    tensors = {b.arg.name: fw.wrap(DeviceView(ws.pointers[b.arg.name], b))
               for b in ws.target.buffers}
    # numeric defines too: a Python operation's parameters sweep with --param like a kernel's
    # (BLOCK=128,256)
    env: dict[str, object] = {**ws.target.constants, **ws.target.sizes,
                              **{a.name: v for a, v in ws.target.scalars}}
    env.update({b.arg.name: tensors[b.arg.name] for b in ws.target.buffers
                if b.arg.role in ("in", "inout")})
    outputs = [b.arg.name for b in ws.target.buffers if b.arg.role == "out"] or \
        [b.arg.name for b in ws.target.buffers if b.arg.role == "inout"]
    env.update({b.arg.name: tensors[b.arg.name] for b in ws.target.buffers
                if b.arg.role in ("out", "scratch")})
    kwargs = pyref.select(fn, env)
    dtypes = {b.arg.name: b.arg.dtype for b in ws.target.buffers}
    # it writes its outputs itself (a Triton kernel's y)
    in_place = any(name in kwargs for name in outputs)
    data.update({f"{what}_framework": fw.name, f"{what}_callable": ref.label()})

    def guarded(body: Callable[[], Any]) -> Any:
        try:
            with fw.on_stream(handle):
                return body()
        except UsageError:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's code: any exception is theirs
            raise UserCodeError(f"your {what} {ref.label()} raised {type(exc).__name__}: {exc}",
                                      pyref.user_traceback(exc, ref.path)) from None

    prepare = getattr(fn, "prepare", None)
    if callable(prepare):
        t0 = time.perf_counter()
        guarded(lambda: prepare(**kwargs))
        ws.dev.stream_synchronize(stream)
        data[f"{what}_prepare_s"] = time.perf_counter() - t0

    def first() -> None:
        result = guarded(lambda: fn(**kwargs))
        if in_place:
            return
        results = result if isinstance(result, (tuple, list)) else (result,)
        if len(results) != len(outputs):
            raise UserCodeError(f"your {what} {ref.label()} returned {len(results)} result(s); the "
                                "spec has "
                                      f"{len(outputs)} output(s) ({', '.join(outputs)})")
        def copy() -> None:
            for name, r in zip(outputs, results):
                _note_dtype(fw, r, dtypes[name], name, data, what)
                fw.copy_into(tensors[name], r)

        guarded(copy)

    def poison_pool() -> None:
        # A caching allocator hands out the block of the right size freed last: blocks poisoned and
        # freed here are the ones a torch.empty in the next call gets.
        def fill() -> None:
            held: list[object] = []  # all held at once, so each is its own block; freed on return
            for name in outputs:
                buf = next(b for b in ws.target.buffers if b.arg.name == name)
                for _ in range(POISONED_BLOCKS):
                    block = fw.alloc(tuple(buf.shape), buf.arg.dtype, tensors[name])
                    fw.copy_into(block, tensors[name])
                    held.append(block)

        try:
            with fw.on_stream(handle):  # kprof's own adapter code, not the user's: not guarded
                fill()
        # a framework kprof cannot allocate with: nothing to poison
        except (UsageError, NotImplementedError):
            return
        ws.dev.stream_synchronize(stream)

    return (lambda: guarded(lambda: fn(**kwargs))), first, poison_pool


def _note_dtype(fw: Framework, result: object, want: str, name: str, data: dict[str, Any],
                what: str) -> None:
    """A result of another dtype than the spec's output (``NAME as GOT where the spec's is WANT``)
    into ``data``: kprof converts it outside the timed window, so the call did a different job
    (benchmark integrity's ``other-dtype``)."""
    try:
        got = fw.info(result).dtype if fw.matches(result) else None
    except Exception:  # noqa: BLE001 - a result kprof cannot read the dtype of: copy_into says what is wrong
        return
    seen = data.setdefault(f"{what}_converted", [])
    if got is not None and got != want and (note := f"{name} as {got} where the spec's is {want}") not in seen:
        seen.append(note)


POISONED_BLOCKS = 4  # per output: more than a callable's few results of one size
