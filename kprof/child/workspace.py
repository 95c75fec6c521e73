"""The child's one object for a target: load, allocate, upload, launch, download and verify.

:class:`Workspace` owns everything the runner's modes share. It makes one plain allocation per
buffer and records its name, base address and size (a sanitizer report names buffers from that
record), fills the inputs from the job's seed, poisons the outputs, launches every step of the
target on a stream, and compares the outputs with the float64 reference. It runs only in the child
(:mod:`kprof.child.runner`); the modes (run, values, timing) are small functions over it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kprof.child import hostdata, verify
from kprof.errors import CudaError, UsageError, UserCodeError
from kprof.launch.childresult import RESULT_VERSION
from kprof.launch.job import Target
from kprof.spec import CUBLAS_SGEMM, ResolvedBuffer, ResolvedStep, pyref, reference

if TYPE_CHECKING:
    import numpy as np

    from kprof.child.device import Device
    from kprof.launch.childresult import DeviceInfo

Arrays = dict[str, "np.ndarray[Any, Any]"]
Phase = Callable[..., None]  # the runner's result.phase(name, **fields)


class Result:
    """The result file, rewritten atomically at every phase."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = {"version": RESULT_VERSION, "status": "started",
                                     "phase": "start"}

    def phase(self, name: str, **fields: object) -> None:
        self.data["phase"] = name
        self.data.update(fields)
        self.write()

    def finish(self, status: str, **fields: object) -> None:
        self.data["status"] = status
        self.phase("done", **fields)

    def write(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1, default=str))
        tmp.replace(self.path)


class Workspace:
    """A loaded target on one device: functions, buffers, inputs, and its launches in order."""

    def __init__(self, target: Target, phase: Phase, *, guard: bool = False) -> None:
        from kprof.child.device import Device

        self.target = target
        self.dev: Device = Device(target.device)
        self.info: DeviceInfo = self.dev.info()
        phase("device", device=self.info.__dict__)
        self._closers: list[Callable[[], None]] = []  # library handles, closed before the context
        self._blas: object = None
        # cuBLAS's math mode, when a step or the timed routine is cuBLAS
        self.math_mode: str | None = None
        self._check_memory()
        # a Python operation: its framework and prepare time
        self.python_data: dict[str, object] = {}
        self._module: object = None  # the cubin's module (its __constant__ arrays)
        self.functions = self._load(phase)
        self.pointers: dict[str, int] = {}
        self.inputs: Arrays = {}  # host arrays of the inputs (see input())
        # inputs of one constant value: the 32-bit word cuMemsetD32 repeats
        self._words: dict[str, int] = {}
        self._scales: Arrays | None = None  # tolerance.scale's arrays for the current inputs
        # name: before, its bytes, after, its bytes, byte
        self._guards: dict[str, tuple[int, int, int, int, int]] = {}
        self._allocate(phase, guard)
        # a Python operation's call, per stream
        self._python_calls: dict[int, Callable[[], None]] = {}
        self.steps = self._plan_steps()

    # -- setup -------------------------------------------------------------------------------
    def _check_memory(self) -> None:
        free, _ = self.dev.mem_info()
        need = self.target.total_bytes
        if need > free:
            raise UsageError(f"{self.target.name} at {self.target.size_text()} needs "
                             f"{need / 2**30:.2f} GiB of device memory but {free / 2**30:.2f} GiB "
                             "is free: use smaller --size values")

    def _load(self, phase: Phase) -> dict[str, object]:
        if self.target.python:  # a Python operation: no module of kprof's own
            phase("loaded", registers=None)
            return {}
        funcs = self._functions(self.target.cubin)
        steps = self.target.steps
        extra: dict[str, object] = {}
        if len(steps) > 1:
            extra["steps"] = [{"entry": st.entry, "grid": st.grid, "block": st.block}
                              for st in steps]
        first = next(st for st in steps if st.entry == self.target.entry)
        threads = first.block[0] * first.block[1] * first.block[2]
        try:  # the driver's own occupancy answer: what kprof profile reports where ncu cannot run
            extra["driver_blocks_per_sm"] = self.dev.occupancy(funcs[first.entry], threads,
                                                               first.shared_mem)
        except CudaError:
            extra["driver_blocks_per_sm"] = None
        phase("loaded", registers=self.dev.function_attribute(funcs[self.target.entry], "NUM_REGS"),
              **extra)
        return funcs

    def _functions(self, cubin: str) -> dict[str, object]:
        """Each kernel the steps launch, from ``cubin``, with the dynamic shared memory it asks
        for."""
        module = self._module = self.dev.load_module(Path(cubin).read_bytes())
        funcs: dict[str, object] = {}
        for st in self.target.steps:
            if st.entry == CUBLAS_SGEMM or st.entry in funcs:
                continue
            func = funcs[st.entry] = self.dev.function(module, st.entry)
            static = self.dev.function_attribute(func, "SHARED_SIZE_BYTES")
            if st.shared_mem + static > self.info.max_shared_per_block_optin:
                raise UsageError(f"{self.target.name}: {st.entry} asks for {st.shared_mem:,} B of "
                                 f"dynamic shared memory (+ {static:,} B static) but "
                                 f"{self.info.name} allows "
                                 f"{self.info.max_shared_per_block_optin:,} B per block")
            if st.shared_mem + static > 48 * 1024:
                # opt in past the default 48 KiB
                self.dev.set_max_dynamic_shared(func, st.shared_mem)
        return funcs

    def use_cubin(self, cubin: str) -> None:
        """Launch the same steps, on the same buffers, with the kernels of another build of the
        source (the values detector's warp-delay build)."""
        self.functions = self._functions(cubin)
        constants = [b for b in self.target.buffers if b.arg.constant]
        # the other build's own __constant__ arrays, filled as the first build's were
        for buf in constants:
            self.pointers[buf.arg.name] = self._constant(buf)
        self._write(constants)
        self.steps = self._plan_steps()

    def _allocate(self, phase: Phase, guard: bool) -> None:
        """One plain allocation per buffer. With ``guard`` (a verified run, never under a sanitizer,
        which must see the buffer's own bounds), the buffer sits between two guard zones of
        GUARD_BYTES or more, which :meth:`verify` checks: a write past either end fails the verdict
        by itself."""
        import numpy as np

        rng = np.random.default_rng(self.target.seed)
        allocations = []
        for buf in self.target.buffers:
            # the module's own __constant__ array: no allocation, no guard zones
            if buf.arg.constant:
                ptr = self.pointers[buf.arg.name] = self._constant(buf)
            elif guard:
                after = GUARD_BYTES + (-buf.nbytes) % GUARD_BYTES
                base = self.dev.alloc(GUARD_BYTES + buf.nbytes + after)
                ptr = self.pointers[buf.arg.name] = base + GUARD_BYTES
                # each buffer its own: a copy from one guard to another shows
                byte = GUARD_BYTE - len(self._guards) % 8
                self._guards[buf.arg.name] = (base, GUARD_BYTES, ptr + buf.nbytes, after, byte)
            else:
                ptr = self.pointers[buf.arg.name] = self.dev.alloc(buf.nbytes)
            allocations.append({"name": buf.arg.name, "base": ptr, "nbytes": buf.nbytes,
                                "dtype": buf.arg.dtype,
                                "shape": list(buf.shape), "role": buf.arg.role})
            if buf.arg.role not in ("in", "inout"):
                continue
            word = hostdata.word_of(value) if (value := hostdata.fill_value(buf)) is not None else None
            # set on the device; on the host only if the reference reads it
            if word is not None and buf.nbytes % 4 == 0:
                self._words[buf.arg.name] = word
            else:
                self.inputs[buf.arg.name] = hostdata.make_input(buf, rng)
        phase("allocated", allocations=allocations)

    def _constant(self, buf: ResolvedBuffer) -> int:
        """The address of the kernel's ``__constant__`` array named like ``buf`` (``memory:
        constant``), its size checked."""
        try:
            if self._module is None:
                raise CudaError("cuModuleGetGlobal", "CUDA_ERROR_NOT_FOUND", "no module")
            ptr, size = self.dev.module_global(self._module, buf.arg.name)
        except CudaError:
            raise UsageError(f"{self.target.name}: {buf.arg.name} has memory: constant, but the "
                             f"kernel's file has no __constant__ array named {buf.arg.name} "
                             "(extern \"C\" or at file scope)") from None
        if size != buf.nbytes:
            raise UsageError(f"{self.target.name}: the __constant__ array {buf.arg.name} holds "
                             f"{size:,} bytes, the spec's shape {buf.nbytes:,}: make them agree")
        return ptr

    def input(self, name: str) -> object:
        """An input's host array (one of a constant fill is made on the first ask)."""
        if name not in self.inputs:
            buf = next(b for b in self.target.buffers if b.arg.name == name)
            self.inputs[name] = hostdata.make_input(buf, None)
        return self.inputs[name]

    def _plan_steps(self) -> list[Callable[[Any], None]]:
        """One callable(stream) per launch, in order; arguments packed once."""
        out: list[Callable[[Any], None]] = []
        if self.target.python:
            return [self._python_step()]
        for st in self.target.steps:
            if st.entry == CUBLAS_SGEMM:
                out.append(self._sgemm_step(st.args))
                continue
            out.append(self._kernel_step(self.functions[st.entry], st,
                                         [self._packed(name) for name in st.args]))
        return out

    def _python_step(self) -> Callable[[Any], None]:
        """The operation on this workspace's buffers, its results in the output buffers (the call
        made on each stream is prepared once: by ``ready``, or on first use)."""
        from kprof.child import framework

        def step(stream: object) -> None:
            self.ready(stream)
            self._python_calls[framework.pointer_of(stream)]()

        return step

    def ready(self, stream: object = 0) -> bool:
        """A Python operation prepared for ``stream`` now (its ``prepare``: a compile, an
        autotuner's trial launches), outside the NVTX range that a profiler selects launches by.
        True when a ``prepare`` ran: it ran the operation on the buffers, which must then be
        uploaded again. A kernel spec has nothing to prepare."""
        from kprof.child import framework

        key = framework.pointer_of(stream)
        if not self.target.python or key in self._python_calls:
            return False
        data: dict[str, object] = {}
        self._python_calls[key] = framework.routine(self, self.target.python, stream, data, what="operation")[1]
        self.python_data.update(data)
        return framework.prepared(data)

    def _kernel_step(self, func: object, st: ResolvedStep,
                     args: list[tuple[str, Any]]) -> Callable[[Any], None]:
        def step(stream: object) -> None:
            self.dev.launch(func, st.grid, st.block, st.shared_mem, args, stream=stream)

        return step

    def _packed(self, name: str) -> tuple[str, Any]:
        if name in self.pointers:
            return ("ptr", self.pointers[name])
        if (tm := next((m for m in self.target.tensormaps if m.arg.name == name), None)) is not None:
            return ("tensormap", self.dev.tensor_map(self.pointers[tm.arg.buffer], tm))
        arg, value = next((a, v) for a, v in self.target.scalars if a.name == name)
        return (arg.dtype, hostdata.pack_scalar(arg.dtype, value))

    def scalar(self, name: str) -> int | float:
        return next(v for a, v in self.target.scalars if a.name == name)

    def cublas(self) -> Any:
        """cuBLAS in plain FP32 (TF32 off even if the user's environment allows it), closed with the
        workspace."""
        from kprof.child.cublas import MATH_MODE, Cublas

        if self._blas is None:
            os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
            self._blas = Cublas()
            self._closers.append(self._blas.close)
            self.math_mode = MATH_MODE
        return self._blas

    def _sgemm_step(self, names: tuple[str, ...]) -> Callable[[Any], None]:
        blas = self.cublas()
        a, b, c = (self.pointers[n] for n in names[:3])
        m, n, k = (int(self.scalar(x)) for x in names[3:])

        def step(stream: object) -> None:
            blas.set_stream(stream)
            blas.sgemm_row_major(a, b, c, m, n, k)

        return step

    # -- data --------------------------------------------------------------------------------
    def upload(self, *, alternate: bool = False, poison: bool = True) -> None:
        """Inputs as generated; out and scratch buffers poisoned (pattern A, or B with
        ``alternate``). A constant (an input of one value, the poison) is set on the device, not
        copied from a host array: kprof peak's 1 GiB buffers cost no host memory and no copy."""
        self._write([b for b in self.target.buffers if poison or b.arg.role in ("in", "inout")],
                    alternate)
        for before, n_before, after, n_after, byte in self._guards.values():
            self.dev.upload(before, _guard_bytes(n_before, byte))
            self.dev.upload(after, _guard_bytes(n_after, byte))

    def restore(self, names: Sequence[str]) -> None:
        """The named inputs (role in or inout) written again as generated (benchmark integrity)."""
        self._write([b for b in self.target.buffers if b.arg.name in names])

    def poison_outputs(self) -> None:
        """Only the out buffers poisoned again (pattern A): what a call after the timed ones must
        overwrite itself (benchmark integrity)."""
        self._write([b for b in self.target.buffers if b.arg.role == "out"])

    def _write(self, buffers: Sequence[ResolvedBuffer], alternate: bool = False) -> None:
        """Each buffer as :meth:`upload` writes it: an input its generated values, any other its
        poison; one 32-bit word repeated is set on the device."""
        memset = False
        for buf in buffers:
            ptr, name = self.pointers[buf.arg.name], buf.arg.name
            if buf.arg.role in ("in", "inout"):
                word = self._words.get(name)
            else:
                word = hostdata.word_of(hostdata.poison_value(buf, alternate)) if buf.nbytes % 4 == 0 else None
            if word is not None:
                self.dev.memset32(ptr, word, buf.nbytes // 4)
                memset = True
            else:
                self.dev.upload(ptr, self.input(name) if buf.arg.role in ("in", "inout") else
                                hostdata.poison(buf, alternate))
        # cuMemsetD32 may return before it is done, and kprof's streams do not wait for it
        if memset:
            self.dev.synchronize()

    def guard_damage(self) -> dict[str, str]:
        """Per buffer whose guard zones changed, where: ``4 bytes past its end (c[1000003])``. Empty
        when nothing was written outside a buffer, or with no guards."""
        import numpy as np

        out: dict[str, str] = {}
        for buf in self.target.buffers:
            if (name := buf.arg.name) not in self._guards:
                continue
            before, n_before, after, n_after, byte = self._guards[name]
            size = max(1, np.dtype(hostdata.numpy_dtype(buf.arg.dtype)).itemsize)
            count = buf.nbytes // size
            said = []
            got = np.empty(n_before, dtype=np.uint8)
            self.dev.download(before, got)
            if (changed := np.flatnonzero(got != byte)).size:
                said.append(f"{changed.size} bytes before its start "
                            f"({name}[-{(n_before - int(changed[-1]) - 1) // size + 1}])")
            got = np.empty(n_after, dtype=np.uint8)
            self.dev.download(after, got)
            if (changed := np.flatnonzero(got != byte)).size:
                said.append(f"{changed.size} bytes past its end "
                            f"({name}[{count + int(changed[0]) // size}])")
            if said:
                out[name] = " and ".join(said)
        return out

    def outputs(self) -> tuple[ResolvedBuffer, ...]:
        return tuple(b for b in self.target.buffers if b.arg.role in ("out", "inout"))

    def download(self) -> Arrays:
        import numpy as np

        out: Arrays = {}
        for buf in self.outputs():
            got = np.empty(buf.shape, dtype=hostdata.numpy_dtype(buf.arg.dtype))
            self.dev.download(self.pointers[buf.arg.name], got)
            out[buf.arg.name] = got
        return out

    def expected(self) -> Arrays:
        """The reference of every output, in float64 (int64 for integer inputs). An expression
        widens only the inputs it names; a Python reference (the user's code) gets every input."""
        refs = dict(self.target.reference)
        expressions = {k: e for k, e in refs.items() if not pyref.is_stored(e)}
        used = set().union(*(reference.names(e) for e in expressions.values())) if expressions else set()
        if len(expressions) < len(refs):
            used |= {b.arg.name for b in self.target.buffers if b.arg.role in ("in", "inout")}
        env = self._reference_env(used)
        out: Arrays = {}
        for name, expr in refs.items():
            if not pyref.is_stored(expr):
                out[name] = reference.evaluate(expr, env)
                continue
            got = pyref.call(pyref.Ref.from_stored(expr), env)
            out.update(self._python_outputs(name, expr, got))
        return out

    def _reference_env(self, used: set[str]) -> dict[str, object]:
        # numeric defines (BINS), then sizes and scalars
        env: dict[str, object] = dict(self.target.constants)
        env.update(self.target.sizes)
        env.update({a.name: v for a, v in self.target.scalars})
        dtypes = {b.arg.name: b.arg.dtype for b in self.target.buffers}
        for b in self.target.buffers:
            if (k := b.arg.name) in used and b.arg.role in ("in", "inout"):
                env[k] = hostdata.widened(dtypes[k], self.input(k))
        return env

    def _python_outputs(self, name: str, stored: str, got: Any) -> Arrays:
        """A Python reference's answer: one array for its output, or a dict of every output."""
        label = pyref.Ref.from_stored(stored).label()
        outputs = [b.arg.name for b in self.outputs()]
        if name != "*":
            return {name: got}
        if len(outputs) == 1 and not isinstance(got, dict):
            return {outputs[0]: got}
        if not isinstance(got, dict) or set(got) != set(outputs):
            have = sorted(got) if isinstance(got, dict) else type(got).__name__
            raise UserCodeError(f"your reference {label} must return a dict with the outputs "
                                      f"{', '.join(outputs)}; it returned {have}")
        return dict(got)

    def scales(self) -> Arrays:
        """``tolerance.scale``: per output, what rtol multiplies in place of |ref| (float64, like
        the reference)."""
        exprs = dict(self.target.scale)
        if not exprs:
            return {}
        # computed once for these inputs (a matmul's is a float64 matmul of its own)
        if self._scales is None:
            env = self._reference_env(set().union(*(reference.names(e) for e in exprs.values())))
            self._scales = {name: reference.evaluate(expr, env) for name, expr in exprs.items()}
        return self._scales

    def generated(self) -> tuple[ResolvedBuffer, ...]:
        """The inputs (role in or inout) of generated values, not of one constant."""
        return tuple(b for b in self.target.buffers if b.arg.role in ("in", "inout")
                     and b.arg.name not in self._words)

    def reload(self, names: Sequence[str]) -> None:
        """The named generated inputs read back from the device into their host arrays (after the
        device changed them: benchmark integrity's doubled values), so the reference sees what the
        call saw."""
        import numpy as np

        for buf in self.generated():
            if buf.arg.name in names:
                got = np.empty(buf.shape, dtype=hostdata.numpy_dtype(buf.arg.dtype))
                self.dev.download(self.pointers[buf.arg.name], got)
                self.inputs[buf.arg.name] = got
        self._scales = None

    def verify(self, got: Arrays, frontier: bool = False, expected: Arrays | None = None,
               digest: bool = False) -> list[dict[str, Any]]:
        """One check per output against the reference (the verdict is
        :func:`kprof.child.verify.compare`);
        ``expected``: the reference already computed for these inputs; ``digest``: each check also
        carries a BLAKE2b digest of the output's bytes as the kernel wrote them."""
        expected = self.expected() if expected is None else expected
        scales = self.scales()
        exprs = dict(self.target.scale)
        checks = []
        for buf in self.outputs():
            sentinel = hostdata.poison_value(buf) if buf.arg.role == "out" else None
            t = self.target
            rule = verify.Criterion(rtol=t.rtol, atol=t.atol, metric=t.metric, dtype=buf.arg.dtype,
                                    scale_text=exprs.get(buf.arg.name))
            out, ref = hostdata.decode(buf.arg.dtype, got[buf.arg.name]), expected[buf.arg.name]
            if buf.arg.unordered:
                check = verify.compare_unordered(buf.arg.name, out, ref, rule)
            else:
                check = verify.compare(buf.arg.name, out, ref, rule, poison_value=sentinel,
                                       frontier=frontier, scale=scales.get(buf.arg.name))
            if digest:
                check = replace(check, digest=hostdata.digest(got[buf.arg.name]))
            checks.append(check.to_dict())
        return checks + [verify.out_of_bounds(name, damage).to_dict()
                         for name, damage in self.guard_damage().items()]

    # -- launches ----------------------------------------------------------------------------
    def launch(self, stream: object = 0) -> None:
        for step in self.steps:
            step(stream)

    def close(self) -> None:
        """Library handles first (cuBLAS frees its workspace only when destroyed; memcheck's leak
        check counts what is still allocated when the context goes), then the context."""
        for close in self._closers:
            close()
        self._closers.clear()
        self.dev.close()


# each side of a buffer in a verified run; a multiple of 256 keeps the buffer 256-byte aligned
GUARD_BYTES = 256
# The first buffer's guard byte; the next ones count down (0xFE, ...): NaN or a float of magnitude
# 1e37 or more in every float type, a negative number in every signed integer, so a read of a guard
# spoils a result too, and a copy of one guard into another is a change.
GUARD_BYTE = 0xFF


def _guard_bytes(n: int, byte: int) -> np.ndarray[Any, np.dtype[np.uint8]]:
    import numpy as np

    return np.full(n, byte, dtype=np.uint8)


def nvtx_module() -> Any:
    """The nvtx package, or None (reported as ``nvtx: false``; ncu's NVTX filter then matches
    nothing)."""
    try:
        import nvtx

        return nvtx
    except ImportError:
        return None
