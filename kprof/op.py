"""A verified kprof kernel called on a framework's arrays: ``kprof.load("rmsnorm_onepass")(x, w)``.

:func:`kprof.load` (in :mod:`kprof.commands.api`) builds the spec's cubin for the GPU present, from
kprof's build cache, and returns an :class:`Op`. Calling it:

1. takes the spec's inputs (``in`` and ``inout`` buffers, in the spec's order, or by name) as GPU
   arrays: PyTorch tensors, CuPy arrays, or anything with ``__cuda_array_interface__`` (or only
   DLPack, through PyTorch or CuPy without a copy);
2. works the sizes out from their shapes (a dimension written as a bare size name binds it),
   then checks every array's dtype, shape, contiguity and device against the spec: a mismatch is
   one :class:`~kprof.errors.UsageError` naming the argument;
3. allocates the outputs and scratch buffers with the inputs' framework (or writes into ``out=``);
4. launches every step of the spec, with its grid, block, dynamic shared memory and scalars worked
   out at those sizes, on the framework's current stream (or ``stream=``): no copy, no
   synchronisation. The launch plan is cached per input shape, so a repeated call only reads the
   pointers and launches.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kprof.child import hostdata
from kprof.child.device import ArgPack
from kprof.child.framework import ArrayInfo, Framework, adapter_for
from kprof.errors import UsageError
from kprof.spec import CUBLAS_SGEMM, KernelSpec, Resolved, TensorMapArg

Launch = Callable[[Any, Sequence[int], Sequence[int], int, ArgPack, Any], None]


@dataclass(frozen=True)
class _Plan:
    """A spec at one set of sizes: what to allocate and how to launch each step (arguments packed
    once; each call writes only the pointers)."""

    resolved: Resolved
    steps: tuple[tuple[str, tuple[int, int, int], tuple[int, int, int], int, ArgPack], ...]
    # (name, shape, dtype, zeroed): outputs come first
    allocs: tuple[tuple[str, tuple[int, ...], str, bool], ...]
    like: str  # the argument whose framework allocates the rest and whose stream is used


@dataclass(frozen=True)
class _Fast:
    """A plan bound to positional arrays (inputs, then ``out``, then what the call allocates, by
    index): a repeated call's launches with no name looked up."""

    steps: tuple[tuple[Any, tuple[int, int, int], tuple[int, int, int], int, ArgPack, tuple[tuple[Any, int], ...]], ...]
    # (shape, dtype, zeroed) of each array the call makes
    allocs: tuple[tuple[tuple[int, ...], str, bool], ...]
    like: int  # the array whose framework allocates and whose stream is used
    returned: tuple[int, ...]
    given: int  # how many of the arrays are positional inputs (an out= array follows them)


class Op:
    """A spec's kernels as one callable operation on GPU arrays (see the module's docstring)."""

    def __init__(self, spec: KernelSpec, cubin: Path, *, sizes: dict[str, int] | None = None,
                 functions: Callable[[bytes, str, int], Any] | None = None,
                 launch: Launch | None = None) -> None:
        if spec.python:
            raise UsageError(f"{spec.name} is a Python operation already: call its function "
                             "directly")
        if any(st.entry == CUBLAS_SGEMM for st in spec.steps):
            raise UsageError(f"{spec.name}: a cuBLAS step (cublas_sgemm) cannot run through "
                             "kprof.load; call the framework's matmul for that part")
        if maps := [a.name for a in spec.args if isinstance(a, TensorMapArg)]:
            raise UsageError(f"{spec.name}: a tensor map argument ({maps[0]}) cannot run through "
                             f"kprof.load yet; kprof run, bench, sanitize and profile take it")
        self.spec = spec
        self.cubin = Path(cubin)
        self.fixed_sizes = dict(sizes or {})
        self.inputs = [b for b in spec.buffers if b.role in ("in", "inout")]
        self.outputs = [b for b in spec.buffers if b.role == "out"] or [b for b in spec.buffers if b.role == "inout"]
        # an in-out buffer the spec fills with zeros (an accumulator) is allocated zeroed when not
        # given
        self.zeroed = {b.name for b in spec.buffers if b.role == "inout" and b.fill.kind == "zeros"}
        self._image: bytes | None = None
        self._functions: dict[tuple[str, int], Any] = {}
        self._plans: dict[tuple[Any, ...], _Plan] = {}
        # _call_key -> a checked call's launches (never None)
        self._fast: dict[tuple[Any, ...] | None, _Fast] = {}
        self._adapters: dict[type, Framework] = {}
        self._input_names = [b.name for b in self.inputs]
        self._out_names = [b.name for b in spec.buffers if b.role == "out"]
        self._returned = [b.name for b in self.outputs]
        self._lock = threading.Lock()
        if functions is None or launch is None:
            from kprof.child import device

            functions, launch = functions or device.foreign_function, launch or device.launch_packed
        self._load, self._launch = functions, launch

    def __repr__(self) -> str:
        names = ", ".join(b.name for b in self.inputs)
        return f"<kprof op {self.spec.name}({names}) -> {', '.join(b.name for b in self.outputs)}>"

    # -- the call ------------------------------------------------------------------------------
    def __call__(self, *args: object, out: object = None, stream: object = None,
                 sizes: dict[str, int] | None = None, **named: object) -> object:
        # A repeated call (positional arrays of one framework, with the types and keys of a call
        # that passed every check) reads only what the checks read, compares it, and launches.
        result: object = None
        if not named and sizes is None and args:
            frame = self._adapters.get(type(args[0]))
            if frame is not None:
                arrays = args if out is None else (*args, out)
                fast = self._fast.get(_call_key(frame, arrays))
                if fast is not None:
                    result = self._run(fast, frame, arrays, stream)
        if result is None:
            result = self._call(args, out, stream, sizes, named)
        # kprof sanitize --tool nan: the launch's outputs counted
        watch = sys.modules.get("_kprof_nan_watch")
        if watch is not None:
            outs = result if isinstance(result, tuple) else (result,)
            watch.launched(self.spec.name, str(self.spec.source or ""),
                           list(zip(self._returned, outs)),
                           [*zip(self._input_names, args), *named.items()])
        return result

    def _call(self, args: tuple[Any, ...], out: object, stream: object,
              sizes: dict[str, int] | None, named: dict[str, object]) -> object:
        """Every argument read and, at a new shape, dtype or layout, checked against the spec."""
        given = dict(zip(self._input_names, args)) if not named and len(args) == len(self._input_names) \
            else self._bind(args, named)
        if out is not None:
            self._bind_out(given, out)
        infos = {}
        adapters = self._adapters
        for name, obj in given.items():
            infos[name] = (adapters.get(type(obj)) or self._adapter(obj, name)).info(obj)
        plan, device = self._plan(infos,
                                  self.fixed_sizes if sizes is None
                                  else {**self.fixed_sizes, **sizes})
        like = given[plan.like]
        frame = adapters[type(like)]
        pointers = {name: info.ptr for name, info in infos.items()}
        for name, ptr in pointers.items():
            if ptr & ALIGN_MASK:
                raise _misaligned(self.spec.name,
                                  name if name in self._input_names else f"out {name}")
        # outputs, zeroed accumulators and scratch not given
        for name, shape, dtype, zero in plan.allocs:
            if name not in given:
                made = given[name] = frame.alloc(shape, dtype, like, zero=zero)
                pointers[name] = frame.pointer(made)
        handle = _stream_handle(stream) if stream is not None else frame.stream(like)
        with self._lock:  # the packed arguments are shared by every call of this plan
            for entry, grid, block, smem, pack in plan.steps:
                func = self._function(entry, device, smem)
                pack.fill(pointers)
                self._launch(func, grid, block, smem, pack, handle)
        if not named and sizes is None:
            self._remember(args, out, frame, plan, device)
        if len(self._returned) == 1:
            return given[self._returned[0]]
        return tuple(given[name] for name in self._returned)

    def _remember(self, args: tuple[Any, ...], out: object, frame: Framework, plan: _Plan,
                  device: int) -> None:
        """After a call that passed the checks: the fast path for calls whose arrays have the same
        types and keys (positional inputs, and ``out=`` one array of the same framework, or
        none)."""
        arrays = args if out is None else (*args, out)
        if not args or (out is not None and len(self._out_names) != 1) \
                or any(self._adapters.get(type(a)) is not frame for a in arrays):
            return
        key = _call_key(frame, arrays)
        if key is None:  # no key for these arrays: every such call takes the checked path
            return
        names = [*self._input_names[:len(args)], *([self._out_names[0]] if out is not None else [])]
        allocs = tuple((shape, dtype, zero) for name, shape, dtype, zero in plan.allocs
                       if name not in names)
        names += [name for name, *_ in plan.allocs if name not in names]
        where = {name: i for i, name in enumerate(names)}
        steps = tuple((self._function(entry, device, smem), grid, block, smem, pack,
                       tuple((value, where[name]) for value, name in pack.slots))
                      for entry, grid, block, smem, pack in plan.steps)
        self._fast[key] = _Fast(steps, allocs, names.index(plan.like),
                                tuple(where[n] for n in self._returned), len(args))

    def _run(self, fast: _Fast, frame: Framework, arrays: tuple[Any, ...],
             stream: object) -> object:
        """A remembered call: the pointers read, the outputs allocated, every step launched."""
        pointer = frame.pointer
        pointers = list(map(pointer, arrays))
        seen = 0
        for ptr in pointers:
            seen |= ptr
        if seen & ALIGN_MASK:  # the checked path names the array
            return self._call(arrays[:fast.given],
                              arrays[fast.given] if len(arrays) > fast.given else None, stream,
                              None, {})
        if fast.allocs:
            like = arrays[fast.like]
            made = [frame.alloc(shape, dtype, like, zero=zero)
                    for shape, dtype, zero in fast.allocs]
            pointers += map(pointer, made)
            arrays = (*arrays, *made)
        handle = _stream_handle(stream) if stream is not None else frame.stream(arrays[fast.like])
        with self._lock:
            for func, grid, block, smem, pack, slots in fast.steps:
                for value, i in slots:
                    value.value = pointers[i]
                self._launch(func, grid, block, smem, pack, handle)
        returned = fast.returned
        return arrays[returned[0]] if len(returned) == 1 else tuple(arrays[i] for i in returned)

    def _adapter(self, obj: object, name: str) -> Framework:
        """The framework that reads ``obj``, remembered per type (a call reads several arrays)."""
        kind = type(obj)
        frame = self._adapters.get(kind)
        if frame is None:
            frame = adapter_for(obj, f"{self.spec.name}: argument {name}")
            self._adapters[kind] = frame
        return frame

    def _bind(self, args: tuple[Any, ...], named: dict[str, object]) -> dict[str, object]:
        names = self._input_names
        if len(args) > len(names):
            raise UsageError(f"{self.spec.name} takes {len(names)} input(s) ({', '.join(names)}), "
                             f"got {len(args)}")
        given = dict(zip(names, args))
        for key, value in named.items():
            if key not in {b.name for b in self.spec.buffers}:
                raise UsageError(f"{self.spec.name}: no argument named {key!r} (inputs: "
                                 f"{', '.join(names)})")
            if key in given:
                raise UsageError(f"{self.spec.name}: {key} given twice")
            given[key] = value
        missing = [n for n in names if n not in given and n not in self.zeroed]
        if missing:
            raise UsageError(f"{self.spec.name}: missing input {missing[0]} (inputs: "
                             f"{', '.join(names)})")
        return given

    def _bind_out(self, given: dict[str, object], out: object) -> None:
        """``out=``: one array, a sequence, or a dict by name, joined to the arguments (its checks
        run with theirs, naming it ``out NAME``)."""
        wanted = self._out_names
        if len(wanted) == 1 and not isinstance(out, (dict, list, tuple)):
            given[wanted[0]] = out
            return
        if isinstance(out, dict):
            chosen = dict(out)
        elif isinstance(out, (list, tuple)):
            chosen = dict(zip(wanted, out))
        else:
            chosen = {wanted[0]: out} if len(wanted) == 1 else {}
        if not wanted or set(chosen) != set(wanted):
            raise UsageError(f"{self.spec.name}: out= must give every output "
                             f"({', '.join(wanted) or 'it has none'})")
        given.update(chosen)

    # -- PyTorch ---------------------------------------------------------------------------------
    def torch_op(self, name: str | None = None) -> object:
        """This op registered with ``torch.library`` as ``kprof::NAME`` (or ``name``): usable inside
        ``torch.compile`` graphs (its fake implementation gives the outputs' shapes from the spec)
        and named in the torch profiler. Inputs are tensors in the spec's order; outputs are new
        tensors."""
        import inspect

        import torch

        outs = [b for b in self.spec.buffers if b.role == "out"]
        if not outs:
            raise UsageError(f"{self.spec.name}: only a spec with out buffers can be a torch op "
                             "(this one writes in place)")
        tensor = inspect.Parameter.POSITIONAL_OR_KEYWORD
        params = [inspect.Parameter(b.name, tensor, annotation=torch.Tensor) for b in self.inputs]
        returns: object = torch.Tensor if len(outs) == 1 else tuple.__class_getitem__((torch.Tensor,) * len(outs))

        def impl(*args: Any) -> Any:
            return self(*args)

        def fake(*args: Any) -> Any:
            infos = {b.name: ArrayInfo(0, tuple(int(d) for d in a.shape),
                                       str(a.dtype).removeprefix("torch."), True, 0,
                                       "torch") for b, a in zip(self.inputs, args)}
            plan = self._make_plan(infos, self.fixed_sizes)
            made = tuple(torch.empty(b.shape, dtype=getattr(torch, b.arg.dtype),
                                     device=args[0].device)
                         for b in plan.resolved.buffers if b.arg.role == "out")
            return made[0] if len(made) == 1 else made

        for fn in (impl, fake):
            fn.__signature__ = inspect.Signature(params, return_annotation=returns)  # type: ignore[attr-defined]
        custom = torch.library.custom_op(name or f"kprof::{self.spec.name}", mutates_args=(), device_types="cuda")(impl)
        custom.register_fake(fake)
        return custom

    # -- planning ------------------------------------------------------------------------------
    def _plan(self, infos: dict[str, ArrayInfo], fixed: dict[str, int]) -> tuple[_Plan, int]:
        """The plan for these arrays (cached per names, shapes, dtypes and contiguity) and their
        GPU."""
        key = (tuple([(n, i.shape, i.dtype, i.contiguous) for n, i in infos.items()]),
               tuple(fixed.items()) if fixed else ())
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._make_plan(infos, fixed)
        device = None
        for name, info in infos.items():
            d = info.device
            if d is None or d == device:
                continue
            if d == -1:
                raise UsageError(f"{self.spec.name}: argument {name} is not on a GPU; move it "
                                 "there first (.cuda())")
            if device is not None:
                found = sorted({i.device for i in infos.values() if i.device is not None})
                raise UsageError(f"{self.spec.name}: the arguments are on different GPUs ({found})")
            device = d
        return plan, device or 0

    def _make_plan(self, infos: dict[str, ArrayInfo], fixed: dict[str, int]) -> _Plan:
        outs = set(self._out_names)
        # inputs say the sizes
        sizes = infer_sizes(self.spec, {n: i.shape for n, i in infos.items() if n not in outs})
        sizes.update(fixed)
        resolved = self.spec.resolve(sizes)
        for buf in resolved.buffers:
            if buf.arg.name in infos:
                label = f"out {buf.arg.name}" if buf.arg.name in outs else buf.arg.name
                _check_array(self.spec.name, label, infos[buf.arg.name], buf.arg.dtype, buf.shape)
        scalars = {a.name: (a.dtype, hostdata.pack_scalar(a.dtype, v)) for a, v in resolved.scalars}
        buffers = {b.arg.name for b in resolved.buffers}
        steps = tuple((st.entry, st.grid, st.block, st.shared_mem,
                       ArgPack([("buf", name) if name in buffers else scalars[name]
                                for name in st.args]))
                      for st in resolved.steps)
        allocs = [(b.arg.name, tuple(b.shape), b.arg.dtype, False) for b in resolved.buffers
                  if b.arg.role == "out"]
        allocs += [(b.arg.name, tuple(b.shape), b.arg.dtype, True) for b in resolved.buffers
                   if b.arg.name in self.zeroed]
        allocs += [(b.arg.name, tuple(b.shape), b.arg.dtype, False) for b in resolved.buffers
                   if b.arg.role == "scratch"]
        like = next((b.name for b in self.inputs if b.name in infos), next(iter(infos)))
        return _Plan(resolved, steps, tuple(allocs), like)

    def _function(self, entry: str, device: int, smem: int) -> object:
        func = self._functions.get((entry, device))
        if func is None:
            if self._image is None:
                self._image = self.cubin.read_bytes()
            func = self._functions[(entry, device)] = self._load(self._image, entry, device)
            if smem > 48 * 1024:
                from kprof.child import device as dev

                dev.allow_dynamic_shared(func, smem)
        return func


def infer_sizes(spec: KernelSpec, shapes: dict[str, tuple[int, ...]]) -> dict[str, int]:
    """Sizes bound by the arrays' shapes: a dimension written as a bare size name (``[R, C]``) binds
    it; two arrays that disagree on one size are an error naming both. Pure."""
    names = set(spec.size_names)
    sizes: dict[str, int] = {}
    source: dict[str, str] = {}
    for buf in spec.buffers:
        if buf.name not in shapes:
            continue
        shape = shapes[buf.name]
        if len(shape) != len(buf.shape):
            raise UsageError(f"{spec.name}: {buf.name} has {len(shape)} dimension(s) "
                             f"{list(shape)}; the spec gives {len(buf.shape)}: "
                             f"[{', '.join(buf.shape)}]")
        for axis, (expr, dim) in enumerate(zip(buf.shape, shape)):
            e = str(expr).strip()
            if e not in names:
                continue
            where = f"{buf.name}.shape[{axis}]"
            if e in sizes and sizes[e] != dim:
                raise UsageError(f"{spec.name}: {where} = {dim} but {source[e]} = {sizes[e]}, and "
                                 f"both are {e}")
            sizes[e], source[e] = int(dim), where
    return sizes


def _call_key(frame: Framework, arrays: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """What a repeated call is recognised by: each array's type and its framework's key (shape,
    dtype, contiguity, device); None for an array the framework cannot read (the checks then say
    why)."""
    try:
        return tuple(map(type, arrays)), tuple(map(frame.key, arrays))
    except Exception:  # noqa: BLE001 - any failure to read it sends the call down the checked path
        return None


# kprof's kernels may read and write 16 bytes at a time (float4, 8 bfloat16, cp.async)
ALIGN_MASK = 15


def _misaligned(op: str, name: str) -> UsageError:
    return UsageError(f"{op}: {name} starts at an address that is not a multiple of 16 bytes (a "
                      "view at an offset?); kprof's kernels may access 16 bytes at a time: pass a "
                      "copy (.clone() or .copy())")


def _check_array(op: str, name: str, info: ArrayInfo, dtype: str, shape: tuple[int, ...]) -> None:
    if info.dtype != dtype:
        raise UsageError(f"{op}: {name} is {info.dtype or 'of a type kprof has no name for'}; the "
                         f"spec wants {dtype}")
    if info.shape != tuple(shape):
        raise UsageError(f"{op}: {name} has shape {list(info.shape)}; at these sizes the spec "
                         f"wants {list(shape)}")
    if not info.contiguous:
        raise UsageError(f"{op}: {name} is not contiguous (row-major); pass .contiguous() or a copy")


def _stream_handle(stream: Any) -> int:
    """``stream=``: a raw handle, or a framework's stream object (PyTorch's ``cuda_stream``, CuPy's
    ``ptr``)."""
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    return int(stream)
