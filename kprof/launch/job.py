"""The typed handoff from the parent to the child runner: a :class:`Job` is what the child must do.

The parent builds a job once, from the resolved spec (:class:`~kprof.spec.Resolved`, every size,
shape, launch dimension and scalar already a number) and the build result (the cubin). The child
(``python -m kprof.child.runner JOB.json RESULT.json``) reads nothing else: it never loads the spec,
never applies ``--param`` and never builds. A job is one :class:`Target` (what to load, allocate
and launch, and how to check it) and one mode:

- :class:`RunMode`: launch (optionally several times), verify, optionally time one launch; what
  ``kprof run``, compute-sanitizer and ncu wrap;
- :class:`ValuesMode`: kprof's values detector (repeated runs under two poison patterns);
- :class:`TimingMode`: ``kprof bench``'s timing loop, of the kernel or of a library routine on the
  kernel's buffers.

Jobs travel as JSON with a version the child checks, so a parent and a child from different kprof
versions fail with one clear line instead of a ``KeyError`` deep in the child.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from kprof.errors import JobError
from kprof.spec import (
    BufferArg,
    Fill,
    Resolved,
    ResolvedBuffer,
    ResolvedStep,
    ResolvedTensorMap,
    ScalarArg,
    TensorMapArg,
)
from kprof.stats import StopRule

JOB_VERSION = 9
TIMING_MODES = ("cold", "warm", "hot")
TIMERS = ("auto", "cupti", "events")


@dataclass(frozen=True)
class Target:
    """A built kernel at concrete sizes: what the child loads, allocates, launches and checks."""

    name: str  # the report's name and the NVTX range (a sanitizer case's twin is NAME_fixed)
    entry: str  # the spec's main kernel: its registers are reported, values findings name it
    source: str  # the .cu file (values findings point at it)
    cubin: str
    sizes: dict[str, int]
    buffers: tuple[ResolvedBuffer, ...]
    scalars: tuple[tuple[ScalarArg, int | float], ...]
    steps: tuple[ResolvedStep, ...]  # every launch in order; entry "cublas_sgemm" is a library step
    reference: tuple[tuple[str, str], ...]  # (output buffer, expression)
    # the tolerance at these sizes (kprof.child.verify.compare); None: the dtype's default
    rtol: float | None
    seed: int = 0
    device: int = 0
    # numeric defines a reference may name
    constants: dict[str, int | float] = field(default_factory=dict)
    atol: float | None = None
    metric: str = "elementwise"  # or "normwise"
    # a Python operation (pyref stored form) in place of the cubin's kernels
    python: str | None = None
    # OUTPUT -> what rtol multiplies in place of |ref| (tolerance.scale)
    scale: tuple[tuple[str, str], ...] = ()
    # the same kernels with kprof's warp delays (kprof.build.shake): the values detector's extra
    # runs (version 8)
    shaken_cubin: str | None = None
    # TMA's tensor maps among the kernel's arguments, encoded in the child once their buffers are
    # allocated (version 9)
    tensormaps: tuple[ResolvedTensorMap, ...] = ()

    @property
    def total_bytes(self) -> int:
        return sum(b.nbytes for b in self.buffers)

    def size_text(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.sizes.items())


@dataclass(frozen=True)
class RunMode:
    """Upload, launch ``repeat`` times inside the NVTX range, synchronise, verify, time one launch.

    ``poison`` False leaves out and scratch buffers as ``cuMemAlloc`` gave them, so initcheck can
    see a read of memory nothing wrote (poison would count as initialised)."""

    verify: bool = True
    time: bool = False
    repeat: int = 1
    poison: bool = True
    # each check also gives the smallest passing atol per rtol (scripts/tolerances.py)
    frontier: bool = False
    # each check also carries a digest of the output's bytes: kprof mutants compares a mutant's
    # results with the original's by it, not by the verdict's numbers, which a float64 reference
    # summed on another number of threads moves in its last bits (version 7)
    digest: bool = False


@dataclass(frozen=True)
class ValuesMode:
    """The values detector: ``repeats`` runs (at least 3) under poison patterns A, B, A, ...; the
    scrubber fills shared memory before each run (None: not available, said in the report)."""

    repeats: int = 5
    scrub_cubin: str | None = None
    # runs of the target's warp-delay build (Target.shaken_cubin), each against the first
    shaken_runs: int = 3


# L2 flushed before each launch, warm, a replayed CUDA graph
TimingModeName = Literal["cold", "warm", "hot"]


@dataclass(frozen=True)
class TimingMode:
    """``kprof bench``'s loop: verify once, warm up, then sample until the stop rule says enough."""

    mode: TimingModeName
    rule: StopRule
    spin_cubin: str  # kprof_spin: holds the stream until the timed launch is queued
    flush_cubin: str  # kprof_flush: evicts L2 before a cold launch
    timer: str = "auto"  # auto, cupti or events
    warmup: float = 0.2  # seconds
    batch: int | None = None  # hot mode: launches per graph (None: about 2 ms worth)
    # time this library routine (cublas_sgemm, memcpy_dtod) on the target's buffers instead
    library: str | None = None
    # or this Python baseline (pyref's stored form) on the target's buffers
    python: str | None = None
    cupti_hw_trace: bool = False
    # the integrity checks (kprof.child.integrity); kprof peak's own kernels go without
    integrity: bool = True
    # kprof_fingerprint: the checks' fingerprints and doubled inputs, on the GPU
    integrity_cubin: str | None = None

    def __post_init__(self) -> None:
        if self.library is not None and self.python is not None:
            raise ValueError("a timing job times a library routine or a Python baseline, not both")


def target_of(resolved: Resolved, cubin: str | Path, *, seed: int = 0, device: int = 0,
              shaken_cubin: str | Path | None = None,
              symbols: Mapping[str, str] | None = None) -> Target:
    """The target for a resolved spec (parameters and twin already applied) and its built cubin (and
    its warp-delay build, for the values detector); ``symbols``: each entry's symbol in the cubin
    (the build's: a C++ kernel's mangled name), which the child loads."""
    spec = resolved.spec
    sym = dict(symbols or {})
    steps = tuple(replace(st, entry=sym.get(st.entry, st.entry)) for st in resolved.steps)
    return Target(name=spec.name, entry=sym.get(spec.entry, spec.entry), source=str(spec.source),
                  cubin=str(cubin),
                  sizes=dict(resolved.sizes), buffers=resolved.buffers, scalars=resolved.scalars,
                  steps=steps, reference=spec.reference, rtol=resolved.rtol, seed=seed,
                  device=device, constants=spec.numeric_defines(), atol=resolved.atol,
                  metric=resolved.metric, python=spec.python, scale=spec.tolerance.scale,
                  shaken_cubin=str(shaken_cubin) if shaken_cubin else None,
                  tensormaps=resolved.tensormaps)


Mode = RunMode | ValuesMode | TimingMode
_MODES: dict[str, type[RunMode] | type[ValuesMode] | type[TimingMode]] = {
    "run": RunMode, "values": ValuesMode, "timing": TimingMode,
}  # fmt: skip


@dataclass(frozen=True)
class Job:
    target: Target
    mode: Mode

    @property
    def kind(self) -> str:
        return next(k for k, cls in _MODES.items() if isinstance(self.mode, cls))

    def to_json(self) -> str:
        return json.dumps({"version": JOB_VERSION, "kind": self.kind,
                           "target": _target_dict(self.target),
                           "mode": asdict(self.mode)}, default=str)


def from_json(text: str) -> Job:
    """The job in ``text``, or a :class:`JobError` that says what is wrong with it."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise JobError(f"the job file is not JSON ({exc})") from None
    version = data.get("version") if isinstance(data, dict) else None
    if version != JOB_VERSION:
        raise JobError(f"the job file has version {version!r} but this runner reads version "
                       f"{JOB_VERSION}: the parent and the child come from different kprof versions")
    try:
        mode_cls = _MODES[data["kind"]]
        raw_mode = dict(data["mode"])
        if mode_cls is TimingMode:
            raw_mode["rule"] = StopRule(**raw_mode["rule"])
        return Job(_target_from(data["target"]), mode_cls(**raw_mode))
    except (KeyError, TypeError, ValueError) as exc:
        raise JobError(f"the job file is malformed: {type(exc).__name__}: {exc}") from None


def _target_dict(t: Target) -> dict[str, object]:
    return {
        "name": t.name, "entry": t.entry, "source": t.source, "cubin": t.cubin, "sizes": t.sizes,
        "buffers": [{"name": b.arg.name, "dtype": b.arg.dtype, "shape": list(b.shape),
                     "exprs": list(b.arg.shape),
                     "role": b.arg.role, "fill": b.arg.fill.kind,
                     "fill_params": list(b.arg.fill.params),
                     "reset": b.arg.reset, "unordered": b.arg.unordered, "constant": b.arg.constant}
                    for b in t.buffers],
        "scalars": [{"name": a.name, "dtype": a.dtype, "expr": a.value, "value": v}
                    for a, v in t.scalars],
        "steps": [asdict(s) for s in t.steps],
        "reference": [list(r) for r in t.reference],
        "rtol": t.rtol, "atol": t.atol, "metric": t.metric, "python": t.python, "seed": t.seed,
        "device": t.device,
        "constants": t.constants, "scale": [list(x) for x in t.scale],
        "shaken_cubin": t.shaken_cubin,
        "tensormaps": [{"name": m.arg.name, "buffer": m.arg.buffer, "exprs": list(m.arg.box),
                        "swizzle": m.arg.swizzle,
                        "dtype": m.dtype, "shape": list(m.shape), "box": list(m.box)} for m in t.tensormaps],
    }  # fmt: skip


def _target_from(d: dict[str, Any]) -> Target:
    buffers = tuple(
        ResolvedBuffer(BufferArg(b["name"], b["dtype"], tuple(b["exprs"]), b["role"],
                                 Fill(b["fill"], tuple(float(p) for p in b["fill_params"])),
                                 reset=bool(b.get("reset")),
                                 unordered=bool(b.get("unordered")),
                                 constant=bool(b.get("constant"))),
                       tuple(int(n) for n in b["shape"]))
        for b in d["buffers"]
    )  # fmt: skip
    scalars = tuple((ScalarArg(s["name"], s["dtype"], s["expr"]), s["value"]) for s in d["scalars"])
    steps = tuple(
        ResolvedStep(s["entry"], tuple(s["args"]), _dim3(s["grid"]), _dim3(s["block"]),
                     int(s["shared_mem"]))
        for s in d["steps"]
    )  # fmt: skip
    return Target(
        name=d["name"], entry=d["entry"], source=d["source"], cubin=d["cubin"],
        sizes={str(k): int(v) for k, v in d["sizes"].items()}, buffers=buffers, scalars=scalars,
        steps=steps,
        reference=tuple((str(k), str(v)) for k, v in d["reference"]),
        rtol=_float_or_none(d["rtol"]),
        seed=int(d["seed"]), device=int(d["device"]), constants=dict(d["constants"]),
        atol=_float_or_none(d["atol"]), metric=str(d["metric"]), python=d.get("python"),
        scale=tuple((str(k), str(v)) for k, v in d.get("scale", ())),
        shaken_cubin=d.get("shaken_cubin"),
        tensormaps=tuple(ResolvedTensorMap(TensorMapArg(m["name"], m["buffer"], tuple(m["exprs"]),
                                                        int(m["swizzle"])),
                                           m["dtype"], tuple(int(n) for n in m["shape"]),
                                           tuple(int(n) for n in m["box"]))
                         for m in d.get("tensormaps", ())),
    )  # fmt: skip


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


def _dim3(values: list[int]) -> tuple[int, int, int]:
    x, y, z = (int(v) for v in values)
    return (x, y, z)
