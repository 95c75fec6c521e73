"""The spec's schema: the frozen dataclasses a spec is (:class:`KernelSpec` and its parts), the
vocabulary of dtypes, roles, fills and presets, and ``KernelSpec.resolve()``, which gives a
:class:`Resolved` (every size, shape, launch dimension and scalar a concrete number) that the build,
launch, sanitize, profile and bench stages take as it is. Loading a YAML file into it is
:mod:`kprof.spec.loader`. Size arithmetic goes through :mod:`kprof.spec.sizeexpr`; nothing calls
``eval``.
"""

from __future__ import annotations

import re
from dataclasses import KW_ONLY, dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from kprof.errors import SizeExprError, SpecError, UsageError
from kprof.spec import sizeexpr

#: dtype name -> (bytes per element, kind: f(loat) / i(nt) / u(nsigned))
DTYPES: dict[str, tuple[int, str]] = {
    "float16": (2, "f"),
    "bfloat16": (2, "f"),
    "float32": (4, "f"),
    "float64": (8, "f"),
    "int8": (1, "i"),
    "uint8": (1, "u"),
    "int32": (4, "i"),
    "uint32": (4, "u"),
    "int64": (8, "i"),
    "uint64": (8, "u"),
}
# a spec's work.math: what its FLOPs run on (FP32 FMA, dense 16-bit tensor cores)
MATHS = ("fp32", "tensor")
ROLES = ("in", "out", "inout", "scratch")
FILLS = {  # name -> (min args, max args)
    "uniform": (0, 2),
    "normal": (0, 2),
    "randint": (2, 2),
    "zeros": (0, 0),
    "ones": (0, 0),
    "const": (1, 1),
    "arange": (0, 0),
    # peaked(height, share[, spread]): normal(0, spread), a share of the elements at height (a
    # dominant logit)
    "peaked": (2, 3),
}
PRESETS = ("default", "sanitize")
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")  # \Z: "$" would pass a name ending in a newline
CUBLAS_SGEMM = "cublas_sgemm"  # a library step of a spec, and a baseline
BASELINES = (CUBLAS_SGEMM,)  # library routines; a baseline may also name another kernel spec


@dataclass(frozen=True)
class Fill:
    kind: str = "uniform"
    params: tuple[float, ...] = ()

    def __str__(self) -> str:
        return f"{self.kind}({', '.join(f'{p:g}' for p in self.params)})" if self.params else self.kind


@dataclass(frozen=True)
class Check:
    """One size set a spec verifies its kernel at (``checks:``), and the inputs filled otherwise
    there (``fill: {x: "peaked(14.5, 0.001)"}``): an input that meets a case the spec's own fill
    never does."""

    sizes: tuple[tuple[str, int], ...]
    fills: tuple[tuple[str, Fill], ...] = ()

    @property
    def label(self) -> str:
        """``R127-C4099``, and the fills: ``R127-C4099 x=peaked(14.5, 0.001)``."""
        return " ".join(["-".join(f"{k}{v}" for k, v in self.sizes),
                         *(f"{k}={f}" for k, f in self.fills)])


@dataclass(frozen=True)
class SizeDef:
    name: str
    default: int
    sanitize: int


@dataclass(frozen=True)
class BufferArg:
    name: str
    dtype: str
    shape: tuple[str, ...]
    role: str
    fill: Fill
    _: KW_ONLY
    # the kernel consumes it (a counter used as a write index): written again before each launch
    reset: bool = False
    # order: any: checked as a multiset (its first elements, as many as the reference has)
    unordered: bool = False
    # memory: constant: the kernel's __constant__ array of this name, filled; not a parameter
    constant: bool = False


@dataclass(frozen=True)
class ScalarArg:
    name: str
    dtype: str
    value: str  # a size expression, or a number literal for float scalars


# TMA (cuTensorMapEncodeTiled): the element types a tensor map describes, and its swizzle spans in
# bytes
TENSORMAP_DTYPES = ("uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32",
                    "float64")
SWIZZLES = (0, 32, 64, 128)
TENSORMAP_MAX_RANK = 5
TENSORMAP_MAX_BOX = 256


@dataclass(frozen=True)
class TensorMapArg:
    """A ``CUtensorMap`` passed by value (``const __grid_constant__ CUtensorMap``): TMA's view of
    the buffer argument ``buffer``, in boxes of ``box`` elements (size expressions, outermost first,
    as the buffer's shape), ``swizzle`` bytes (0: none). Encoded in the child, once the buffer is
    allocated."""

    name: str
    buffer: str
    box: tuple[str, ...]
    swizzle: int = 0


@dataclass(frozen=True)
class ResolvedTensorMap:
    """A tensor map at concrete sizes: its buffer's element type and shape, and its box (outermost
    first)."""

    arg: TensorMapArg
    dtype: str
    shape: tuple[int, ...]
    box: tuple[int, ...]

    @property
    def strides(self) -> tuple[int, ...]:
        """The byte stride of every dimension but the innermost, innermost first (what the driver
        takes)."""
        out, step = [], DTYPES[self.dtype][0]
        for d in reversed(self.shape[1:]):
            step *= d
            out.append(step)
        return tuple(out)

    @property
    def driver_strides(self) -> tuple[int, ...]:
        """The strides as cuTensorMapEncodeTiled is given them: :attr:`strides`, and at rank 1
        (none) one it does not read, the buffer's bytes: the driver refuses an empty list
        (CUDA_ERROR_INVALID_VALUE on an H200, driver 580.159.04;
        scripts/probes/tensormap_rank1.py)."""
        return self.strides or (self.shape[0] * DTYPES[self.dtype][0],)


Arg = BufferArg | ScalarArg | TensorMapArg


@dataclass(frozen=True)
class Launch:
    grid: tuple[str, str, str]
    block: tuple[str, str, str]
    shared_mem: str = "0"


@dataclass(frozen=True)
class Step:
    """One launch of a multi-kernel spec: a kernel of the source with some of the spec's arguments,
    or (``entry == "cublas_sgemm"``) cuBLAS SGEMM with ``args`` naming A, B, C, M, N, K."""

    entry: str
    args: tuple[str, ...]
    launch: Launch | None


@dataclass(frozen=True)
class ResolvedStep:
    entry: str
    args: tuple[str, ...]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int


@dataclass(frozen=True)
class Tolerance:
    """The spec's ``tolerance:``. ``rtol`` and ``atol`` are numbers or size expressions
    (``"2e-7 * sqrt(K)"``), worked out at each size; None takes the output dtype's default
    (:data:`kprof.child.verify.DEFAULT_TOLERANCE`). The metric is ``elementwise`` (every element
    within ``atol + rtol * |ref|``) or ``normwise`` (``max|out - ref| <= rtol * max|ref|``, atol
    unused)."""

    rtol: str | None = None
    atol: str | None = None
    metric: str = "elementwise"
    # OUTPUT -> an expression of the inputs (reference vocabulary) that rtol multiplies in place of
    # |ref|: "abs(A) @ abs(B)" for a matmul, the size of the terms a sum adds, which rounding errors
    # scale with
    scale: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Work:
    """``work: {flops: EXPR, bytes: EXPR, math: fp32 | tensor}``: the work one run does, as
    expressions of the sizes (kprof's rates are these over the measured time), and what its FLOPs
    run on."""

    flops: str | None = None
    bytes: str | None = None
    math: str = "fp32"  # fp32 (FMA) or tensor (dense 16-bit tensor cores): MATHS


@dataclass(frozen=True)
class Requirement:
    """``requires: {arch: sm_80, why: cp.async}``: the oldest architecture a kernel needs, and the
    feature that needs it. kprof names it on an older target instead of failing to build."""

    arch: str
    why: str


ARCH_NAME = re.compile(r"^sm_([0-9]{2,3})[af]?\Z")


def arch_number(arch: str) -> int:
    """sm_86 -> 86, sm_100a -> 100 (0 for a name that is not sm_XY)."""
    m = ARCH_NAME.match(arch)
    return int(m.group(1)) if m else 0


@dataclass(frozen=True)
class KernelSpec:
    name: str
    path: Path  # the spec file
    source: Path
    entry: str
    description: str
    sizes: tuple[SizeDef, ...]
    args: tuple[Arg, ...]
    launch: Launch
    reference: tuple[tuple[str, str], ...]  # (output buffer, expression)
    work: Work
    defines: tuple[tuple[str, str], ...] = ()
    nvcc_flags: tuple[str, ...] = ()
    checks: tuple[Check, ...] = ()
    expect: object = None  # sanitizer cases: what must be found (validated by kprof.corpus.cases)
    notes: str = ""
    twin: Path | None = None  # sanitizer cases: the fixed source, same arguments and launch
    twin_defines: tuple[tuple[str, str], ...] = ()  # the twin's defines, where the fix is a define
    is_twin: bool = False
    # kprof bench: timed in the same run: cublas_sgemm, or another spec's name
    baseline: str | None = None
    # named baselines for --baseline NAME (torch, torch.compile)
    baselines: tuple[tuple[str, str], ...] = ()
    # a multi-kernel spec: its launches in order (empty: one launch of entry)
    steps: tuple[Step, ...] = ()
    tolerance: Tolerance = Tolerance()
    # a Python operation (pyref stored form): run on the spec's buffers, no cubin
    python: str | None = None
    requires: Requirement | None = None  # the oldest architecture it builds and runs on, and why

    def unsupported_on(self, arch: str) -> str | None:
        """Why this spec does not build for ``arch`` (older than its ``requires.arch``; for an
        architecture-specific one, ``sm_90a``, any other architecture), else None."""
        if self.requires is None:
            return None
        need = self.requires.arch
        if need.endswith("a"):  # sm_90a's features (wgmma) exist on sm_90 only, not on later GPUs
            if arch_number(arch) == arch_number(need):
                return None
            return (f"{self.name} needs {need} ({self.requires.why}), features of that architecture "
                    f"alone; {arch} is another")
        if arch_number(arch) >= arch_number(need):
            return None
        return f"{self.name} needs {need} or newer ({self.requires.why}); {arch} is older"

    def target_arch(self, arch: str) -> str:
        """What ``arch`` is built as: ``sm_90a`` where the spec needs that architecture's own
        features."""
        if self.requires is not None and self.requires.arch.endswith("a") and arch_number(arch) == arch_number(
                self.requires.arch):
            return self.requires.arch
        return arch

    @property
    def parameters(self) -> tuple[str, ...]:
        """The kernel's parameters, in order: the args but the ``__constant__`` arrays (``memory:
        constant``)."""
        return tuple(a.name for a in self.args if not (isinstance(a, BufferArg) and a.constant))

    @property
    def entries(self) -> tuple[str, ...]:
        """The kernels of the source this spec launches (what the build reports on)."""
        if self.python:
            return ()
        if not self.steps:
            return (self.entry,)
        return tuple(dict.fromkeys(st.entry for st in self.steps if st.entry != CUBLAS_SGEMM))

    def twin_spec(self) -> KernelSpec:
        """The fixed twin of a sanitizer case: same spec, the fixed source, nothing expected."""
        if self.twin is None:
            raise UsageError(f"{self.name} has no fixed twin")
        defines = dict(self.defines)
        defines.update(self.twin_defines)
        return replace(self, name=f"{self.name}_fixed", source=self.twin, twin=None, expect=None,
                       defines=tuple(defines.items()), twin_defines=(), is_twin=True)

    def with_fills(self, fills: tuple[tuple[str, Fill], ...]) -> KernelSpec:
        """This spec with some inputs filled otherwise (a check's ``fill:``; the loader checked the
        names)."""
        if not fills:
            return self
        new = dict(fills)
        return replace(self,
                       args=tuple(replace(a, fill=new[a.name]) if isinstance(a, BufferArg)
                                  and a.name in new else a for a in self.args))

    def with_defines(self, params: dict[str, str]) -> KernelSpec:
        """This spec with some defines replaced (``--param``): they change the build and the launch
        alike (``grid: [ceil(N / BLOCK)]``), so the parent applies them once, before both."""
        if not params:
            return self
        unknown = [k for k in params if k not in dict(self.defines)]
        if unknown:
            raise UsageError(f"{self.name}: unknown parameter '{unknown[0]}' (parameters are the "
                             f"spec's defines: {', '.join(dict(self.defines)) or 'none'})")
        return replace(self, defines=tuple({**dict(self.defines), **params}.items()))

    def numeric_defines(self) -> dict[str, int | float]:
        """The defines that are numbers (BINS: 256), as size arithmetic and references see them."""
        return {k: int(v) if v.denominator == 1 else float(v)
                for k, v in define_env(self.defines).items()}

    @property
    def buffers(self) -> tuple[BufferArg, ...]:
        return tuple(a for a in self.args if isinstance(a, BufferArg))

    @property
    def size_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.sizes)

    def preset(self, which: str = "default") -> dict[str, int]:
        if which not in PRESETS:
            raise UsageError(f"unknown size preset '{which}': use one of {', '.join(PRESETS)}")
        return {s.name: (s.default if which == "default" else s.sanitize) for s in self.sizes}

    def _scalar_at(self, i: int, arg: ScalarArg, env: dict[str, int | Fraction], ev: Any,
                   sizes: dict[str, int]) -> int | float:
        """A scalar argument's value at these sizes, checked to fit its type."""
        if DTYPES[arg.dtype][1] == "f":
            try:
                value: int | float = float(sizeexpr.evaluate(arg.value, env))
            except SizeExprError as exc:
                raise SpecError(str(self.path), f"args[{i}].value", str(exc)) from None
        else:
            value = ev(arg.value, f"args[{i}].value", minimum=-(1 << 63))
        _check_scalar(self.name, arg, value, sizes)
        return value

    def resolve(self, overrides: dict[str, int] | None = None, preset: str = "default") -> Resolved:
        """Every size, shape, launch dimension and scalar as a concrete number."""
        sizes = self.preset(preset)
        for key, given in (overrides or {}).items():
            if key not in sizes:
                known = ", ".join(self.size_names) or "none"
                raise UsageError(f"{self.name}: unknown size '{key}' (known: {known})")
            if isinstance(given, bool) or not isinstance(given, int) or given <= 0:
                raise UsageError(f"{self.name}: size {key}={given} must be a positive whole number")
            sizes[key] = given
        env: dict[str, int | Fraction] = {**define_env(self.defines), **sizes}
        where = str(self.path)

        def ev(expr: str, fld: str, minimum: int = 1) -> int:
            try:
                value = sizeexpr.evaluate_int(expr, env)
            except SizeExprError as exc:
                raise SpecError(where, fld, str(exc)) from None
            if value < minimum:
                sized = ", ".join(f"{k}={v}" for k, v in sizes.items())
                raise UsageError(
                    f"{self.name}: {fld} = {expr} = {value} at {sized}; it "
                    f"must be at least {minimum}"
                )
            return value

        buffers = []
        for i, arg in enumerate(self.args):
            if isinstance(arg, BufferArg):
                shape = tuple(
                    ev(d, f"args[{i}].shape[{j}]") for j, d in enumerate(arg.shape)
                )
                buffers.append(ResolvedBuffer(arg, shape))
        scalars = [(arg, self._scalar_at(i, arg, env, ev, sizes)) for i, arg in enumerate(self.args)
                   if isinstance(arg, ScalarArg)]
        tensormaps = tuple(_resolve_tensormap(self.name, i, arg, buffers, ev, sizes)
                           for i, arg in enumerate(self.args) if isinstance(arg, TensorMapArg))
        steps = []
        for k, st in enumerate(self.steps or (Step(self.entry, self.parameters, self.launch),)):
            where_launch = f"steps[{k}].launch" if self.steps else "launch"
            if st.launch is None:  # a library call: no launch dimensions of ours
                steps.append(ResolvedStep(st.entry, st.args, (1, 1, 1), (1, 1, 1), 0))
                continue
            # A step of several whose grid is 0 launches nothing: a define can leave a step out
            # (``grid: [ceil(N / 256) * (1 - FUSED)]``), so a spec and its twin share their steps.
            grid = tuple(ev(g, f"{where_launch}.grid[{j}]", minimum=0 if self.steps else 1)
                         for j, g in enumerate(st.launch.grid))
            if 0 in grid:
                continue
            block = tuple(ev(b, f"{where_launch}.block[{j}]") for j, b in enumerate(st.launch.block))
            step = ResolvedStep(st.entry, st.args, grid, block,  # type: ignore[arg-type]
                                ev(st.launch.shared_mem, f"{where_launch}.shared_mem", minimum=0))
            _check_launch(self.name, where_launch, step, sizes)
            steps.append(step)
        # the loader requires one kernel step
        first = next((st for st in steps if st.entry != CUBLAS_SGEMM), None)
        if first is None:
            raise UsageError(f"{self.name}: every step's grid is 0 at {_sized(sizes)}: nothing "
                             "would launch")
        grid, block, smem = first.grid, first.block, first.shared_mem
        flops = ev(self.work.flops, "work.flops", minimum=0) if self.work.flops else None
        nbytes = ev(self.work.bytes, "work.bytes", minimum=0) if self.work.bytes else None
        tol = self.tolerance
        rtol, atol = (_tolerance_at(self.name, where, fld, expr, env, sizes)
                      for fld, expr in (("rtol", tol.rtol), ("atol", tol.atol)))
        return Resolved(spec=self, sizes=dict(sizes), buffers=tuple(buffers),
                        scalars=tuple(scalars),
                        tensormaps=tensormaps, grid=grid, block=block, shared_mem=smem, flops=flops,
                        bytes=nbytes, steps=tuple(steps), rtol=rtol, atol=atol, metric=tol.metric)


def _tolerance_at(name: str, where: str, fld: str, expr: str | None, env: dict[str, int | Fraction],
                  sizes: dict[str, int]) -> float | None:
    """tolerance.rtol or tolerance.atol at these sizes: rtol in [0, 1), atol 0 or more."""
    if expr is None:
        return None
    try:
        value = float(sizeexpr.evaluate(expr, env))
    except SizeExprError as exc:
        raise SpecError(where, f"tolerance.{fld}", str(exc)) from None
    top = 1.0 if fld == "rtol" else float("inf")
    if not 0 <= value < top:
        raise UsageError(f"{name}: tolerance.{fld} = {expr} = {value:g} at {_sized(sizes)}; it "
                         "must be "
                         + ("between 0 and 1" if fld == "rtol" else "0 or more"))
    return value


# CUDA's limits on every architecture kprof builds for (sm_80 and later): what cuLaunchKernel takes.
GRID_LIMITS = (2**31 - 1, 65535, 65535)
BLOCK_LIMITS = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024
_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.39e38, "float32": 3.4028234663852886e38,
              "float64": 1.7976931348623157e308}


def _sized(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "its sizes"


def _check_scalar(name: str, arg: ScalarArg, value: int | float, sizes: dict[str, int]) -> None:
    """A scalar fits its type before it is packed: 2**31 is not an int32 (it would wrap to
    -2**31)."""
    nbytes, kind = DTYPES[arg.dtype]
    if kind == "f":
        top = _FLOAT_MAX[arg.dtype]
        if value != value or abs(value) > top:
            raise UsageError(f"{name}: scalar {arg.name} = {arg.value} = {value:g} at "
                             f"{_sized(sizes)} does not fit {arg.dtype} (finite, at "
                             f"most {top:g} in magnitude)")
        return
    lo, hi = (-(1 << (8 * nbytes - 1)), (1 << (8 * nbytes - 1)) - 1) if kind == "i" else (0, (1 << (8 * nbytes)) - 1)
    if not lo <= value <= hi:
        raise UsageError(f"{name}: scalar {arg.name} = {arg.value} = {value} at {_sized(sizes)} "
                         f"does not fit {arg.dtype} ({lo} to {hi}); use a "
                         "wider type or smaller sizes")


def _resolve_tensormap(name: str, i: int, arg: TensorMapArg, buffers: list[ResolvedBuffer], ev: Any,
                       sizes: dict[str, int]) -> ResolvedTensorMap:
    """A tensor map at these sizes, held to what cuTensorMapEncodeTiled takes: refused here, with
    the rule it breaks, rather than by the driver in the child."""
    # the loader checked the name and the rank
    buf = next(b for b in buffers if b.arg.name == arg.buffer)
    tm = ResolvedTensorMap(arg, buf.arg.dtype, buf.shape,
                           tuple(ev(b, f"args[{i}].box[{j}]") for j, b in enumerate(arg.box)))
    size, at = DTYPES[tm.dtype][0], _sized(sizes)
    for j, (box, dim) in enumerate(zip(tm.box, tm.shape)):
        if box > TENSORMAP_MAX_BOX:
            raise UsageError(f"{name}: tensor map {arg.name}: box[{j}] = {box}; TMA takes at most "
                             f"{TENSORMAP_MAX_BOX}")
        if dim > 1 << 32:
            raise UsageError(f"{name}: tensor map {arg.name}: {arg.buffer}'s dimension {j} is "
                             f"{dim:,} at {at}; TMA takes at most 2^32")
    inner = tm.box[-1] * size
    if inner % 16:
        raise UsageError(f"{name}: tensor map {arg.name}: its box's rows are {inner} bytes "
                         f"({tm.box[-1]} x {tm.dtype}); TMA needs a multiple of 16")
    if arg.swizzle and inner > arg.swizzle:
        raise UsageError(f"{name}: tensor map {arg.name}: its box's rows are {inner} bytes, more "
                         f"than its {arg.swizzle}-byte swizzle; make box[{len(tm.box) - 1}] at "
                         f"most {arg.swizzle // size}")
    for j, stride in enumerate(tm.strides):
        if stride % 16 or stride >= 1 << 40:
            dim = len(tm.shape) - 2 - j  # the dimension this stride steps, outermost first
            raise UsageError(f"{name}: tensor map {arg.name}: one step of {arg.buffer}'s dimension "
                             f"{dim} is {stride:,} bytes at {at}; TMA needs a multiple of 16 "
                             "(below 2^40): pad the rows, or use sizes that give one")
    return tm


def _check_launch(name: str, where: str, step: ResolvedStep, sizes: dict[str, int]) -> None:
    for axis, (g, top) in enumerate(zip(step.grid, GRID_LIMITS)):
        if g > top:
            raise UsageError(f"{name}: {where}.grid[{axis}] = {g} at {_sized(sizes)}; CUDA allows "
                             f"at most {top:,}")
    for axis, (b, top) in enumerate(zip(step.block, BLOCK_LIMITS)):
        if b > top:
            raise UsageError(f"{name}: {where}.block[{axis}] = {b}; CUDA allows at most {top}")
    threads = step.block[0] * step.block[1] * step.block[2]
    if threads > MAX_THREADS_PER_BLOCK:
        raise UsageError(f"{name}: {where}.block has {threads} threads; CUDA allows at most "
                         f"{MAX_THREADS_PER_BLOCK}")


@dataclass(frozen=True)
class ResolvedBuffer:
    arg: BufferArg
    shape: tuple[int, ...]

    @property
    def count(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.count * DTYPES[self.arg.dtype][0]

    def describe(self) -> str:
        dims = " x ".join(str(d) for d in self.shape)
        return f"{self.arg.name} is {dims} {self.arg.dtype}, {self.nbytes:,} bytes"


@dataclass(frozen=True)
class Resolved:
    spec: KernelSpec
    sizes: dict[str, int]
    buffers: tuple[ResolvedBuffer, ...]
    scalars: tuple[tuple[ScalarArg, int | float], ...]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int
    flops: int | None
    bytes: int | None
    steps: tuple[ResolvedStep, ...] = ()  # every launch, in order (one for a single-kernel spec)
    rtol: float | None = None  # the tolerance at these sizes; None: the output dtype's default
    tensormaps: tuple[ResolvedTensorMap, ...] = ()
    atol: float | None = None
    metric: str = "elementwise"

    @property
    def total_bytes(self) -> int:
        return sum(b.nbytes for b in self.buffers)

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def size_text(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.sizes.items())


def define_env(defines: tuple[tuple[str, str], ...]) -> dict[str, int | Fraction]:
    """Numeric defines can appear in size arithmetic (``grid: [ceil(N / TILE)]``)."""
    env: dict[str, int | Fraction] = {}
    for key, value in defines:
        try:
            env[key] = Fraction(value)
        except ValueError:
            pass
    return env
