"""What a measured rate is a fraction of, and whether it is plausible. Pure: no GPU.

Two kinds of ceiling, never mixed up:

- **theoretical peaks**, worked out from the device's own attributes: DRAM bandwidth
  ``2 x memory clock x bus width / 8`` (HBM and GDDR move data on both clock edges) and FP32 rate
  ``2 x SMs x FP32 lanes per SM x SM clock`` (an FMA is two operations);
- **measured ceilings**, the best rate kprof's own stream kernels reach on this GPU for each access
  mix: ``read`` (only loads), ``write`` (only stores), ``copy`` (one byte stored per byte loaded,
  and the device-to-device memcpy when that is faster), ``add`` (two bytes loaded per byte stored,
  as ``c = a + b``), the best of a few access widths and grid sizes. A kernel takes the mix whose
  share of written bytes is nearest its own: HBM reads and writes do not run at one rate, and a
  mix's ceiling is not the average of two others (on an H200: read 4.54 TB/s, write 4.71, copy
  4.30).

A kernel's bandwidth is reported against the measured ceiling for its own mix and against the
theoretical peak. A rate above the theoretical peak cannot come from DRAM; a cold-mode working set
that fits in L2 may be served from it; both are flagged as not plausible.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal

from kprof.build.occupancy import ARCHS
from kprof.units import si

# FP32 lanes per SM by architecture (CUDA C++ Programming Guide, "Arithmetic Instructions"): the GPU
# model's, and Thor's (sm_110), whose other limits kprof does not model.
FP32_LANES = {arch: lim.fp32_lanes for arch, lim in ARCHS.items()} | {"sm_110": 128}
# Dense 16-bit tensor-core math (FP16 or BF16 inputs, FP32 accumulation), FLOP per clock per SM: the
# fastest part of each architecture, so that a rate above it is not plausible on any (a GeForce part
# of sm_86, sm_89 or sm_120 accumulates in FP32 at half this). From NVIDIA's architecture
# whitepapers and data sheets: V100 125 TFLOP/s (80 SMs, 1530 MHz), T4 65 (40, 1590), A100 312 (108,
# 1410), A40 150 (84, 1740), L40S 362 (142, 2520), H100 SXM 989 (132, 1830 MHz: 4 tensor cores of
# 512 FMA a clock), B200 2,250 (148), RTX PRO 6000 Blackwell 504 (188, 2617). None: no tensor cores
# (sm_61), or a part kprof has no figure for.
TENSOR_FLOPS_PER_SM_CLOCK = {arch: lim.tensor_flops for arch, lim in ARCHS.items()
                             if lim.tensor_flops}
Mix = Literal["read", "write", "copy", "add"]
MIXES: tuple[Mix, ...] = ("read", "write", "copy", "add")
# of each mix's bytes, the written ones
WRITE_SHARE = {"read": 0.0, "add": 1 / 3, "copy": 0.5, "write": 1.0}
# a direction with less than 1% of the bytes (a reduction's result) does not change the mix
MINOR_SHARE = 0.01


def tensor_rate(arch: str | None, sms: float | None, sm_hz: float | None) -> float | None:
    """The dense 16-bit tensor rate: SMs x the architecture's FLOP per clock per SM x the SM clock
    (None for an architecture kprof has no figure for, or a missing count or clock)."""
    per_clock = TENSOR_FLOPS_PER_SM_CLOCK.get(arch or "")
    return per_clock * sms * sm_hz if per_clock and sms and sm_hz else None


def theoretical(device: dict[str, Any]) -> dict[str, Any]:
    """The theoretical DRAM bandwidth and FP32 rate from a device's attributes
    (kprof.child.device.DeviceInfo as a dict), with what they came from; a value the attributes
    cannot give is None, with why."""
    mem_khz, bus, clock_khz = (int(device.get(k) or 0)
                               for k in ("memory_clock_khz", "bus_width_bits", "clock_khz"))
    sms, arch = int(device.get("sm_count") or 0), str(device.get("arch") or "")
    lanes, tensor = FP32_LANES.get(arch), TENSOR_FLOPS_PER_SM_CLOCK.get(arch)
    out: dict[str, Any] = {
        "dram_bytes_per_s": 2 * mem_khz * 1e3 * bus / 8 if mem_khz and bus else None,
        "fp32_flops_per_s": 2 * sms * lanes * clock_khz * 1e3 if sms and lanes and clock_khz
        else None, "tensor_flops_per_s": tensor_rate(arch, sms, clock_khz * 1e3),
        "attributes": {"CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE (kHz)": mem_khz or None,
                       "CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH (bits)": bus or None,
                       "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT": sms or None,
                       "CU_DEVICE_ATTRIBUTE_CLOCK_RATE (kHz)": clock_khz or None,
                       f"FP32 lanes per SM ({arch or '?'})": lanes,
                       f"dense 16-bit tensor FLOP per clock per SM ({arch or '?'}, the fastest "
                       "part)": tensor},
        "formulas": {"dram": "2 x memory clock x bus width / 8",
                     "fp32": "2 x SMs x FP32 lanes per SM x SM clock",
                     "tensor": "SMs x dense 16-bit tensor FLOP per clock per SM x SM clock"},
        "notes": [],
    }  # fmt: skip
    if out["dram_bytes_per_s"] is None:
        out["notes"].append("the driver gives no memory clock or bus width: no theoretical DRAM "
                            "bandwidth")
    if out["fp32_flops_per_s"] is None:
        out["notes"].append(f"no FP32 lane count known for {arch or 'this GPU'}, or no SM clock: "
                            "no theoretical FP32 rate"
                            if not lanes
                            else "the driver gives no SM clock: no theoretical FP32 rate")
    return out


def mix_of(buffers: Iterable[tuple[str, int]]) -> str:
    """The measured mix nearest a kernel's share of written bytes, from (role, bytes) of its
    buffers: inputs are read, outputs written, in-out buffers both; scratch is left out. A direction
    with under 1% of the bytes does not count (a reduction is ``read``)."""
    buffers = list(buffers)
    read = sum(n for role, n in buffers if role in ("in", "inout"))
    write = sum(n for role, n in buffers if role in ("out", "inout"))
    total = read + write
    if total == 0 or write <= MINOR_SHARE * total:
        return "read"
    if read <= MINOR_SHARE * total:
        return "write"
    share = write / total
    # a tie: the first
    return min(("copy", "add", "read", "write"), key=lambda m: abs(WRITE_SHARE[m] - share))


def measured_mix(peak: Ceilings | None, mix: str) -> str:
    """``mix``, or ``copy`` where the peak file has no ceiling for it (one from an older kprof,
    which measured only copy, or only read, write and copy): the ceiling a result is then reported
    against."""
    return peak.measured_mix(mix) if peak else "copy"


def ceiling(peak: Ceilings | None, mix: str) -> float | None:
    """The measured ceiling (bytes/s) for a mix (:func:`measured_mix` says which one a peak file
    has); the copy rate of a peak file from before the mixes."""
    return peak.ceiling(mix) if peak else None


def implausible(*, bytes_per_s: float | None, flops_per_s: float | None, peak: Ceilings | None,
                mode: str, working_set: int, l2_bytes: int | None, math: str = "fp32") -> list[str]:
    """Why a result cannot be what it claims, one sentence each (empty: nothing found). ``math``:
    what the spec says its FLOPs run on (``work.math``): FP32 FMA, or dense 16-bit tensor-core math,
    judged against that peak. The L2 note is for bandwidth kernels only: a kernel whose arithmetic
    intensity is past the ridge point is judged by its FLOP/s, which L2 does not inflate."""
    notes: list[str] = []
    th = peak.theoretical if peak else Theoretical(None, None)
    dram = th.dram_bytes_per_s
    compute = th.tensor_flops_per_s if math == "tensor" else th.fp32_flops_per_s
    what = "dense 16-bit tensor rate (the fastest part of this architecture)" if math == "tensor" else "FP32 rate"
    if bytes_per_s and dram and bytes_per_s > dram:
        notes.append(f"not plausible: {si(bytes_per_s, 'B/s')} is above the theoretical DRAM "
                     f"bandwidth {si(dram, 'B/s')}; the work formula counts bytes the kernel does "
                     "not move from DRAM, or they came from L2")
    if flops_per_s and compute and flops_per_s > compute:
        notes.append(f"not plausible: {si(flops_per_s, 'FLOP/s')} is above the theoretical {what} "
                     f"{si(compute, 'FLOP/s')}; the work formula counts "
                     "operations the kernel does not do"
                     + (" on tensor cores" if math == "tensor"
                        else " in FP32 (on tensor cores: work.math: tensor)"))
    ridge = compute / dram if compute and dram else None
    compute_bound = bool(flops_per_s and bytes_per_s and ridge
                         and flops_per_s / bytes_per_s >= ridge)
    if mode == "cold" and l2_bytes and 0 < working_set <= l2_bytes and not compute_bound:
        notes.append(f"not plausible as a DRAM rate: the working set ({working_set / 2**20:.1f} "
                     f"MiB) fits in the {l2_bytes / 2**20:.0f} MiB L2, so data read more than once "
                     "in a launch can come from L2 even in cold mode; use a larger size for a "
                     "bandwidth figure")
    return notes


# ------------------------------------------------------------------------------------ the record

CEILINGS_VERSION = 2  # 2: versioned; 1 (no "version"): the files of kprof before, read the same way


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _tried_label(kind: str, row: dict[str, Any]) -> str:
    """What one of kprof peak's tries was (a peak file of an older kprof names no op or size)."""
    blocks = row.get("blocks") if isinstance(row.get("blocks"), int) else 0
    return _text(row.get("by")) or f"kprof_{kind}, {row.get('width')}-byte accesses, {blocks:,} blocks"


@dataclass(frozen=True)
class MixCeiling:
    """The best rate measured for one access mix, and what set it (a stream kernel, PyTorch's op,
    the memcpy)."""

    bytes_per_s: float
    by: str


@dataclass(frozen=True)
class Theoretical:
    """The peaks worked out from the device's attributes (:func:`theoretical`)."""

    dram_bytes_per_s: float | None
    fp32_flops_per_s: float | None
    tensor_flops_per_s: float | None = None
    formulas: tuple[tuple[str, str], ...] = ()  # (peak, formula)
    attributes: tuple[tuple[str, str], ...] = ()  # (attribute, value)
    notes: tuple[str, ...] = ()

    def formula(self, name: str) -> str:
        return dict(self.formulas).get(name, "")

    @classmethod
    def from_dict(cls, th: object) -> Theoretical:
        """As :func:`theoretical` writes it (a peak file's ``theoretical``); what is missing or
        mistyped reads as None."""
        if not isinstance(th, dict):
            return cls(None, None)
        formulas, attributes = th.get("formulas"), th.get("attributes")
        return cls(_num(th.get("dram_bytes_per_s")), _num(th.get("fp32_flops_per_s")),
                   _num(th.get("tensor_flops_per_s")),
                   tuple((str(k), str(v)) for k, v in formulas.items())
                   if isinstance(formulas, dict) else (),
                   tuple((str(k), str(v)) for k, v in attributes.items() if v is not None)
                   if isinstance(attributes, dict) else (),
                   tuple(str(n) for n in th.get("notes") or ()))

    @classmethod
    def of_device(cls, device: dict[str, Any]) -> Theoretical:
        """The peaks of a device's attributes (:func:`theoretical`), typed."""
        return cls.from_dict(theoretical(device))


@dataclass(frozen=True)
class TensorCeiling:
    """One of kprof peak's tensor-core kernels: its rate, or why it was not measured."""

    name: str
    flops_per_s: float | None
    by: str
    not_measured: str = ""


@dataclass(frozen=True)
class Ceilings:
    """kprof peak's measurement of one GPU and driver, as the rest of kprof reads it (``kprof peak
    --json`` and
    the cache file are :meth:`to_dict`). Read from any version; written as
    :data:`CEILINGS_VERSION`."""

    mixes: dict[str, MixCeiling]  # access mix -> its measured ceiling
    fma_flops_per_s: float | None
    theoretical: Theoretical
    copy_bytes_per_s: float | None = None  # a file from before the mixes: its one ceiling
    memcpy_bytes_per_s: float | None = None
    tensor: tuple[TensorCeiling, ...] = ()
    _: KW_ONLY  # the rest by name
    tensor_flops_per_s: float | None = None  # the best of them
    l2_bytes: int | None = None
    gpu: str = ""
    driver: str = ""
    measured: str = ""  # when
    seconds: float | None = None  # how long kprof peak took
    not_measured: tuple[str, ...] = ()  # a try that failed: what it was and why
    ops_note: str = ""
    cached: str | None = None  # the cache file it was read from; None: measured now
    version: int = CEILINGS_VERSION
    # the measurement as written
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def quick(self) -> bool:
        """Measured quickly for a first bench (each mix at one size, no PyTorch op); ``kprof peak``
        measures all."""
        return self.raw.get("quick") is True

    def ceiling(self, mix: str) -> float | None:
        """The measured ceiling (bytes/s) for ``mix`` (:meth:`measured_mix` says which one there
        is); the one copy rate of a file from before the mixes."""
        found = self.mixes.get(mix)
        return found.bytes_per_s if found else self.copy_bytes_per_s

    def measured_mix(self, mix: str) -> str:
        """``mix``, or ``copy`` where there is no ceiling for it (a file of an older kprof)."""
        return mix if mix in self.mixes else "copy"

    def to_dict(self) -> dict[str, object]:
        return dict(self.raw, version=self.version, cached=self.cached)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Ceilings:
        """A measurement as kprof peak wrote it (any version). A field of the wrong type reads as
        missing."""
        raw = {k: v for k, v in data.items() if k != "cached"}
        mixes = {str(k): MixCeiling(rate, _text(v.get("by")) or f"kprof_{k}")
                 for k, v in (data.get("ceilings") or {}).items()
                 if isinstance(v, dict) and (rate := _num(v.get("bytes_per_s")))}
        theory = Theoretical.from_dict(data.get("theoretical"))
        tensor = tuple(TensorCeiling(str(name), _num(r.get("flops_per_s")), _text(r.get("by")),
                                     _text(r.get("not_measured")))
                       for name, r in (data.get("tensor") or {}).items() if isinstance(r, dict))
        tried = data.get("tried") if isinstance(data.get("tried"), dict) else {}
        assert isinstance(tried, dict)
        failed = tuple(f"{_tried_label(kind, r)}: {r['error']}"
                       for kind, rows in tried.items() for r in rows
                       if isinstance(r, dict) and r.get("error"))
        memcpy = data.get("memcpy") if isinstance(data.get("memcpy"), dict) else {}
        assert isinstance(memcpy, dict)
        l2 = data.get("l2_bytes")
        return cls(mixes, _num(data.get("fma_flops_per_s")), theory,
                   _num(data.get("copy_bytes_per_s")),
                   _num(memcpy.get("bytes_per_s")), tensor,
                   tensor_flops_per_s=_num(data.get("tensor_flops_per_s")),
                   l2_bytes=l2 if isinstance(l2, int) and l2 > 0 else None,
                   gpu=_text(data.get("gpu")), driver=_text(data.get("driver")),
                   measured=_text(data.get("measured")), seconds=_num(data.get("seconds")),
                   not_measured=failed, ops_note=_text(data.get("ops_note")),
                   cached=data.get("cached") if isinstance(data.get("cached"), str) else None,
                   version=data["version"] if isinstance(data.get("version"), int) else 1, raw=raw)
