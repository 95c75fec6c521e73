"""What ``kprof profile`` measured of one kernel, as a record of typed parts.

:class:`KernelProfile` says which kernel, at which sizes, from which source (ncu's counters or a
timed launch without them) and its work; what was measured sits in parts: :class:`Occupancy` (the
launch and how full the SMs were), :class:`Memory` (DRAM against its ceilings, the caches, global
access patterns), :class:`Shared` (shared memory's pipe and bank conflicts), :class:`Compute` (FLOPs
and each pipe's use), :class:`Stalls` (why warps waited) and :class:`Roofline` (where the kernel
sits under the roofs). A part's field is None where nothing measured it (a profile without
counters).

The JSON (``kprof profile --json``'s kernels, a stored profile) stays flat, as it always was: every
part's fields beside the profile's own, by the names below; :meth:`KernelProfile.from_dict` reads it
back into parts.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, asdict, dataclass, field, fields, replace
from typing import Any, Literal

from kprof.tools.nsight.sourcepage import SourceLines

PROFILE_VERSION = 1

Bound = Literal["memory", "compute"]


@dataclass(frozen=True)
class Roofline:
    peak_flops: float | None  # FP32 FLOP/s (FMA = 2)
    peak_bytes: float | None  # DRAM bytes/s
    intensity: float | None  # FLOP per DRAM byte
    ridge: float | None  # intensity where the two roofs meet
    bound: Bound | None
    attainable: float | None  # FLOP/s the roofline allows at this intensity
    _: KW_ONLY  # the rest by name
    fraction: float | None  # achieved / attainable

    @classmethod
    def of(cls, flops: float | None, seconds: float | None, dram_bytes: float | None,
           peak_flops: float | None, peak_bytes: float | None) -> Roofline:
        if not (flops and seconds and dram_bytes and peak_flops and peak_bytes):
            return cls(peak_flops, peak_bytes,
                       (flops / dram_bytes) if flops and dram_bytes else None,
                       (peak_flops / peak_bytes) if peak_flops and peak_bytes else None, None, None,
                       fraction=None)
        intensity = flops / dram_bytes
        ridge = peak_flops / peak_bytes
        attainable = min(peak_flops, intensity * peak_bytes)
        return cls(peak_flops, peak_bytes, intensity, ridge,
                   "memory" if intensity < ridge else "compute",
                   attainable, fraction=(flops / seconds) / attainable)


@dataclass(frozen=True, kw_only=True)
class Occupancy:
    """The launch and how full it kept the SMs."""

    achieved_occupancy: float | None = None  # 0..1
    theoretical_occupancy: float | None = None
    # registers, shared memory, warps, blocks, or "nothing (the maximum)"
    occupancy_limiter: str | None = None
    occupancy_advice: str | None = None
    registers: int | None = None
    block_size: int | None = None
    grid_size: int | None = None
    waves: float | None = None
    sm_active: float | None = None  # SM active cycles over elapsed cycles (idle SMs lower it)


@dataclass(frozen=True, kw_only=True)
class Memory:
    """DRAM traffic against its ceilings, the caches, and how global memory was accessed."""

    dram_read: float | None = None  # bytes
    dram_write: float | None = None
    dram_bytes_per_s: float | None = None
    dram_fraction: float | None = None  # of the DRAM peak (Roofline.peak_bytes)
    # read, write, copy or add, from the DRAM bytes read and written (kprof.measure.ceilings)
    mix: str | None = None
    ceiling_bytes_per_s: float | None = None  # kprof peak's measured ceiling for that mix
    of_ceiling: float | None = None
    l1_hit: float | None = None  # 0..1
    l2_hit: float | None = None
    l1_throughput: float | None = None  # L1/TEX (and shared memory) throughput, of its peak
    l2_throughput: float | None = None
    l1_bytes: float | None = None
    local_bytes: float | None = None  # spill traffic (local memory loads and stores)
    global_load_sectors_per_request: float | None = None
    global_store_sectors_per_request: float | None = None
    global_accesses: float | None = None  # global load and store instructions executed (warp level)
    atomics: float | None = None  # global atomic and reduction instructions executed (warp level)


@dataclass(frozen=True, kw_only=True)
class Shared:
    """Shared memory: its pipe's use and its bank conflicts."""

    shared_bank_conflicts: float | None = None
    shared_requests: float | None = None
    conflicts_per_request: float | None = None
    shared_bytes_per_s: float | None = None  # shared-memory wavefronts (128 B each) per second
    shared_fraction: float | None = None  # shared-memory pipe use, of its peak


@dataclass(frozen=True, kw_only=True)
class Compute:
    """FLOPs and each pipe's use, of its peak while the SM is active."""

    # the SASS counters' (an FMA is two), or the spec's for tensor-core math
    flops: float | None = None
    flops_per_s: float | None = None
    fma_pipe: float | None = None
    fp64_pipe: float | None = None
    tensor_pipe: float | None = None
    lsu_pipe: float | None = None  # load/store unit instructions issued, of its peak
    alu_pipe: float | None = None
    issue_active: float | None = None  # cycles an instruction was issued, of all active cycles
    # warpgroup MMA instructions executed (Hopper); None where ncu has no such counter
    wgmma: float | None = None
    thread_efficiency: float | None = None  # active threads per warp instruction / 32 (divergence)
    instructions: float | None = None  # warp instructions executed


@dataclass(frozen=True, kw_only=True)
class Stalls:
    """Why warps waited: the largest reasons (warps stalled per issued instruction, largest first),
    and each reason's share of all stalls."""

    top: tuple[tuple[str, float], ...] = ()
    shares: dict[str, float] = field(default_factory=dict)


# Where a part's field is named otherwise in the flat JSON
_JSON_NAMES = {("stalls", "top"): "stalls", ("stalls", "shares"): "stall_shares"}
PARTS: dict[str, type] = {"occupancy": Occupancy, "memory": Memory, "shared": Shared,
                          "compute": Compute, "stalls": Stalls}


# each part's field by its flat name (its JSON key) -> (part, field); the measured numbers (a perf
# case's ``expect.metric``) are all of them but the stalls'
FLAT = {_JSON_NAMES.get((part, f.name), f.name): (part, f.name) for part, cls in PARTS.items()
        for f in fields(cls)}
METRICS = {name: where for name, where in FLAT.items() if where[0] != "stalls"}


@dataclass(frozen=True)
class KernelProfile:
    kernel: str
    sizes: dict[str, int]
    source: str  # "ncu", "fallback (no counters)", or why there was no Nsight Compute
    duration_s: float | None
    _: KW_ONLY
    roofline: Roofline
    occupancy: Occupancy = field(default_factory=Occupancy)
    memory: Memory = field(default_factory=Memory)
    shared: Shared = field(default_factory=Shared)
    compute: Compute = field(default_factory=Compute)
    stalls: Stalls = field(default_factory=Stalls)
    # the spec's work.math: the compute peak and FLOP count are FP32's or the tensor cores'
    math: str = "fp32"
    spec_flops: int | None = None
    spec_bytes: int | None = None
    notes: list[str] = field(default_factory=list)
    # the rank of a multi-process job that launched it (kprof profile -- torchrun ...)
    rank: int | None = None
    # Nsight Compute's counters on each source line (None: no line measured)
    lines: SourceLines | None = None

    def metric(self, name: str) -> float | None:
        """One measured number by its flat name (``dram_fraction``, ``conflicts_per_request``:
        :data:`METRICS`)."""
        part, key = METRICS[name]
        value = getattr(getattr(self, part), key)
        return float(value) if isinstance(value, (int, float)) else None

    def with_metrics(self, **values: float | str | None) -> KernelProfile:
        """A copy with some measured numbers replaced, each by its flat name (:data:`METRICS`)."""
        unknown = sorted(set(values) - set(METRICS))
        if unknown:
            raise TypeError(f"not a measured profile number: {', '.join(unknown)}")
        changed: dict[str, dict[str, object]] = {}
        for name, value in values.items():
            part, key = METRICS[name]
            changed.setdefault(part, {})[key] = value
        return replace(self,
                       **{part: replace(getattr(self, part), **kv) for part, kv in changed.items()})

    def to_dict(self) -> dict[str, object]:
        """Flat, as kprof's profile JSON has always been: every part's fields beside the profile's
        own."""
        out: dict[str, object] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in PARTS:
                out.update({_JSON_NAMES.get((f.name, k), k): v for k, v in asdict(value).items()})
            # only where measured: a stored profile of before reads back to the same JSON
            elif f.name == "lines":
                if value is not None:
                    out["lines"] = value.to_dict()
            elif f.name != "_":
                out[f.name] = asdict(value) if f.name == "roofline" else value
        out["stalls"] = [list(s) for s in self.stalls.top]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KernelProfile:
        """A profile from its ``to_dict()`` (``kprof profile --json``'s kernels), for a replay."""
        own = {f.name for f in fields(cls)} - set(PARTS) - {"roofline", "lines"}
        parts = {name: part(**{k: data[_JSON_NAMES.get((name, k), k)]
                               for k in (f.name for f in fields(part))
                               if _JSON_NAMES.get((name, k), k) in data})
                 for name, part in PARTS.items() if name != "stalls"}
        stalls = Stalls(top=tuple((str(r), float(v)) for r, v in data.get("stalls") or ()),
                        shares=dict(data.get("stall_shares") or {}))
        lines = SourceLines.from_dict(data["lines"]) if isinstance(data.get("lines"), dict) else None
        return cls(**{k: v for k, v in data.items() if k in own},
                   roofline=Roofline(**data["roofline"]), stalls=stalls, lines=lines, **parts)
