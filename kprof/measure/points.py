"""What ``kprof bench`` measured of one point: the kernel's timing, its rates, and each baseline
timed beside it.

:class:`PointResult` holds the point's own fields and its parts: :class:`Rates` (its work over its
median time, and those rates as fractions of the measured ceilings and theoretical peaks) and
:class:`TimerUsed` (which timer
measured it, and the CUDA events' reading of the same samples). :class:`BaselineResult` is one
baseline, timed in the same run; the first is the point's baseline (:attr:`PointResult.first`).

The JSON (``kprof bench --json``'s points, the history) stays flat, as it always was: the parts'
fields and the first baseline's beside the point's own, the other baselines in ``more_baselines``;
``from_dict`` reads it back.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, asdict, dataclass, field, fields
from typing import Any, Literal

from kprof import stats
from kprof.launch.childresult import call_kernels_of
from kprof.launch.job import TimingModeName
from kprof.spec import baseline as baseline_mod


@dataclass(frozen=True)
class BaselineResult:
    """One baseline timed beside a point's kernel, in the same run. Its fields are named as a
    point's JSON names its first baseline's (``baseline``, ``of_baseline``, ...)."""

    baseline: str  # what the JSON keeps (kprof.spec.baseline.Baseline.stored)
    baseline_name: str  # the name it was asked by (torch.compile; FILE.py:FUNCTION), for reports
    # Baseline.kind, kept beside it (None: told by ``baseline``)
    baseline_kind: baseline_mod.Kind | None = None
    _: KW_ONLY
    baseline_summary: stats.Summary | None = None
    baseline_flops_per_s: float | None = None
    # the kernel's own work formula over the baseline's time
    baseline_bytes_per_s: float | None = None
    # baseline_bytes_per_s of the measured ceiling for the kernel's mix
    baseline_of_ceiling: float | None = None
    # baseline time / kernel time: 1.0 means as fast as the baseline
    of_baseline: float | None = None
    baseline_kernels: int | None = None  # kernels one call of the baseline launched (CUPTI)
    # one timed call's kernels, (name, seconds) (CUPTI)
    baseline_call_kernels: tuple[tuple[str, float], ...] = ()
    # a Python baseline's prepare() (torch.compile), seconds
    baseline_prepare_s: float | None = None
    baseline_framework: str | None = None  # the framework a Python baseline's inputs came as
    math_mode: str | None = None  # a cuBLAS baseline's math mode
    # its benchmark-integrity flags (kprof.child.integrity)
    baseline_integrity: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["baseline_summary"] = self.baseline_summary.to_dict() if self.baseline_summary else None
        out["baseline_integrity"] = list(self.baseline_integrity)
        out["baseline_call_kernels"] = [list(k) for k in self.baseline_call_kernels]
        return out

    def __post_init__(self) -> None:
        # not given, or written before kprof kept it
        if self.baseline_kind not in baseline_mod.KINDS:
            object.__setattr__(self, "baseline_kind", baseline_mod.kind_of(self.baseline or ""))

    @property
    def label(self) -> str:
        """How reports name it: the name it was asked by, else the routine, the spec,
        FILE.py:FUNCTION."""
        return baseline_mod.label_of(self.baseline, self.baseline_name)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BaselineResult:
        known = {f.name for f in fields(cls)}
        got = {k: v for k, v in data.items() if k in known}
        got["baseline_summary"] = stats.summary_of(got.get("baseline_summary"))
        if "baseline_integrity" in got:
            got["baseline_integrity"] = tuple(got["baseline_integrity"] or ())
        if "baseline_call_kernels" in got:
            got["baseline_call_kernels"] = call_kernels_of(got["baseline_call_kernels"])
        return cls(**got)


BASELINE_FIELDS = tuple(f.name for f in fields(BaselineResult))


PointStatus = Literal["ok", "failed-verification", "error"]


@dataclass(frozen=True, kw_only=True)
class Rates:
    """The point's work (the spec's formulas) over its median time, and those rates against the
    GPU's ceilings."""

    flops: int | None = None
    bytes: int | None = None
    flops_per_s: float | None = None
    bytes_per_s: float | None = None
    of_fma_peak: float | None = None  # of the measured FP32 FMA ceiling (kprof peak)
    # read, write, copy or add: which measured bandwidth ceiling applies (kprof.measure.ceilings)
    mix: str | None = None
    of_ceiling: float | None = None  # bytes/s of the measured ceiling for its mix
    of_dram_peak: float | None = None  # bytes/s of the theoretical DRAM bandwidth
    of_fp32_peak: float | None = None  # FLOP/s of the theoretical FP32 rate


@dataclass(frozen=True, kw_only=True)
class TimerUsed:
    """Which timer measured the point, and the CUDA events' reading of the same samples."""

    name: str | None = None  # cupti (kernel timestamps) or events (CUDA events around the launch)
    note: str | None = None  # why CUPTI was not used, when it was asked for by auto
    # CUPTI's hardware-trace timestamps were on (KPROF_CUPTI_HW_TRACE=1)
    cupti_hw_trace: bool | None = None
    event_summary: stats.Summary | None = None  # the CUDA events' reading of the same samples


# A part's field, as the flat JSON names it
_TIMER_JSON = {"name": "timer", "note": "timer_note", "cupti_hw_trace": "cupti_hw_trace",
               "event_summary": "event_summary"}
_RATES = tuple(f.name for f in fields(Rates))


@dataclass(frozen=True)
class PointResult:
    """One point of ``kprof bench``: the kernel's timing and, in the same run, each baseline's
    (``baselines``; the first is the point's baseline). Its JSON is flat, as it always was: the
    first baseline's fields beside the kernel's, the others in ``more_baselines``."""

    kernel: str
    sizes: dict[str, int]
    params: dict[str, str]
    mode: TimingModeName
    status: PointStatus
    _: KW_ONLY
    summary: stats.Summary | None = None
    stop: str | None = None
    stable: bool | None = None
    batch: int | None = None
    rates: Rates = field(default_factory=Rates)
    plausible: bool = True  # False: the notes in warnings say why the rate cannot be what it claims
    baselines: tuple[BaselineResult, ...] = ()
    timer: TimerUsed = field(default_factory=TimerUsed)
    telemetry_before: dict[str, Any] | None = None
    telemetry_after: dict[str, Any] | None = None
    warnings: tuple[str, ...] = ()
    message: str = ""
    # benchmark-integrity flags, "kind: what was seen" (kprof.child.integrity)
    integrity: tuple[str, ...] = ()
    integrity_checked: tuple[str, ...] = ()  # the checks that ran
    integrity_seconds: float | None = None  # their cost in the child, beside the point's wall time
    # the kernel's child from start to end, as the parent saw it (the checks' denominator)
    wall_seconds: float | None = None
    # the kernel's own timed call of median length: (name, seconds) each (CUPTI)
    call_kernels: tuple[tuple[str, float], ...] = ()

    @property
    def first(self) -> BaselineResult | None:
        """The point's baseline (the first timed beside it), or None."""
        return self.baselines[0] if self.baselines else None

    @property
    def others(self) -> tuple[BaselineResult, ...]:
        """The baselines after the first (their JSON is ``more_baselines``)."""
        return self.baselines[1:]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)
                               if f.name not in ("_", "baselines", "rates", "timer")}
        out.update(asdict(self.rates))
        out.update({_TIMER_JSON[k]: getattr(self.timer, k) for k in _TIMER_JSON})
        out["summary"] = self.summary.to_dict() if self.summary else None
        out["event_summary"] = self.timer.event_summary.to_dict() if self.timer.event_summary else None
        out["warnings"] = list(self.warnings)
        out["integrity"], out["integrity_checked"] = list(self.integrity), list(self.integrity_checked)
        out["call_kernels"] = [list(k) for k in self.call_kernels]
        out.update(self.first.to_dict() if self.first else dict.fromkeys(BASELINE_FIELDS))
        out["more_baselines"] = [b.to_dict() for b in self.others]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PointResult:
        """A point from a results JSON, also one written by an older kprof (fields it no longer has
        are dropped; its copy-peak fraction becomes the copy-mix ceiling's)."""
        known = {f.name for f in fields(cls)} - {"_", "baselines", "rates", "timer"}
        out: dict[str, Any] = {k: v for k, v in data.items() if k in known}
        rates = {k: data[k] for k in _RATES if k in data}
        if "of_copy_peak" in data and "of_ceiling" not in data:
            rates.update(of_ceiling=data["of_copy_peak"], mix="copy")
        timer = {k: data[j] for k, j in _TIMER_JSON.items() if j in data}
        timer["event_summary"] = stats.summary_of(data.get("event_summary"))
        out["summary"] = stats.summary_of(data.get("summary"))
        out["warnings"] = tuple(data.get("warnings") or ())
        out["integrity"] = tuple(data.get("integrity") or ())
        out["integrity_checked"] = tuple(data.get("integrity_checked") or ())
        out["call_kernels"] = call_kernels_of(data.get("call_kernels"))
        first = [BaselineResult.from_dict(data)] if data.get("baseline") else []
        more = [BaselineResult.from_dict(m) for m in data.get("more_baselines") or ()
                if isinstance(m, dict) and m.get("baseline")]
        return cls(**out, rates=Rates(**rates), timer=TimerUsed(**timer),
                   baselines=tuple(first + more))
