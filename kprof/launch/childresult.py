"""What the child answers for one job: the mirror of :mod:`kprof.launch.job`, read in one place.

The runner (:mod:`kprof.child.runner`, :class:`kprof.child.workspace.Result`) writes one JSON object
per job, rewritten at every phase, so a child that dies leaves the last phase it reached. The parent
reads it here, once, into a :class:`ChildResult`: its version checked, every field typed, an error
in the child as a :class:`ChildError`, a timing as :class:`Timing`, a Python callable the child ran
as
:class:`Operation`. Nothing above this module reads the record with ``.get``. Pure.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from kprof.errors import ErrorKind, ResultError
from kprof.findings import Allocation, Finding, allocation_of
from kprof.inputs import scalar_fields

ChildStatus = Literal["ok", "failed", "error", "started", ""]
_STATUSES: tuple[ChildStatus, ...] = ("ok", "failed", "error", "started")

RESULT_VERSION = 1
MAX_RESULT_BYTES = 256 * 1024 * 1024  # a values run's findings, a long timing's samples


@dataclass(frozen=True)
class ChildError:
    """An exception in the child: its class name, its message, and what came with it."""

    kind: ErrorKind  # what it is (usage, user-code, no-gpu, cuda, internal: kprof.errors.ErrorKind)
    message: str
    call: str | None = None  # a CudaError's driver call
    result: str | None = None  # and its CUresult name
    log: str = ""  # the user's own traceback, for an error in their reference
    traceback: str = ""  # an error that is not kprof's own: the child's traceback
    exit_code: int | None = None  # a kprof error's exit code (None: not kprof's own)
    type: str = ""  # the exception's class name, for the message only


@dataclass(frozen=True, kw_only=True)
class OutputCheck:
    """The verdict on one output: made in the child (:func:`kprof.child.verify.compare`, and its
    digest where the job asked for one), written by :meth:`to_dict`, read back once here, typed;
    ``kprof run --json`` writes it as it came."""

    name: str
    ok: bool
    message: str
    rel_err: float | None = None  # normwise relative error; None when it cannot be computed
    max_abs_err: float | None = None
    nonfinite: int = 0  # NaN or Inf elements in the output
    poisoned: int = 0  # elements still holding the poison (never written)
    # index of the worst element, or of the first non-finite one
    first_bad: tuple[int, ...] | None = None
    got: float | None = None
    expected: float | None = None
    rtol: float = 0.0
    atol: float = 0.0
    metric: str = "elementwise"  # or normwise, or exact (integer outputs)
    failing: int = 0  # elements outside the tolerance
    worst: tuple[dict[str, object], ...] = ()  # the worst elements: index, got, expected
    needed_atol: float | None = None
    needed_rtol: float | None = None
    note: str = ""
    frontier: tuple[tuple[float, ...], ...] = ()  # (rtol, the smallest atol that passes at it)
    digest: str | None = None  # the output's bytes, hashed (kprof mutants)

    def to_dict(self) -> dict[str, object]:
        """As the child writes it: the digest only where the job asked for one."""
        out = asdict(self)
        if self.digest is None:
            del out["digest"]
        return out


def _check(raw: object) -> OutputCheck | None:
    if not isinstance(raw, dict):
        return None
    first_bad, frontier = raw.get("first_bad"), raw.get("frontier")
    return OutputCheck(
        name=_str(raw.get("name")), ok=raw.get("ok") is True, message=_str(raw.get("message")),
        rel_err=_float(raw.get("rel_err")), max_abs_err=_float(raw.get("max_abs_err")),
        nonfinite=_int(raw.get("nonfinite")) or 0, poisoned=_int(raw.get("poisoned")) or 0,
        first_bad=tuple(int(i) for i in first_bad) if isinstance(first_bad, list) else None,
        got=_float(raw.get("got")), expected=_float(raw.get("expected")),
        rtol=_float(raw.get("rtol")) or 0.0,
        atol=_float(raw.get("atol")) or 0.0, metric=_str(raw.get("metric")) or "elementwise",
        failing=_int(raw.get("failing")) or 0, worst=_dicts(raw.get("worst")),
        needed_atol=_float(raw.get("needed_atol")), needed_rtol=_float(raw.get("needed_rtol")),
        note=_str(raw.get("note")),
        frontier=tuple(tuple(float(x) for x in pair) for pair in frontier if isinstance(pair, list))
        if isinstance(frontier, list) else (), digest=_opt_str(raw.get("digest")))


def checks_of(value: object) -> tuple[OutputCheck, ...]:
    """The child's ``checks`` list, typed (an entry that is not a check's record is dropped)."""
    return tuple(c for c in (_check(v) for v in value) if c is not None) if isinstance(value, list) else ()


@dataclass(frozen=True)
class Timing:
    """A timing mode's samples (seconds per call) and how they were taken."""

    samples: tuple[float, ...]
    stop: str  # why sampling stopped: noise, time, ...
    timer: str = "events"  # cupti or events
    event_samples: tuple[float, ...] = ()  # the CUDA events' own samples, beside CUPTI's
    batch: int | None = None
    host_seconds: float | None = None
    kernels_per_call: int | None = None  # what one call launched (CUPTI)
    timer_note: str | None = None  # why the timer is not the one asked for
    cupti_hw_trace: bool | None = None
    # the benchmark-integrity flags (kprof.child.integrity), "kind: what was seen"
    integrity: tuple[str, ...] = ()
    integrity_checked: tuple[str, ...] = ()  # the checks that ran (none: they were off)
    integrity_seconds: float | None = None  # what they cost, in the child
    # one timed call's kernels, (name, seconds) each (CUPTI)
    call_kernels: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Operation:
    """A Python callable the child ran: a baseline, or a spec's Python operation."""

    framework: str | None  # the framework its inputs came as (torch, cupy)
    callable: str | None  # its label (FILE.py:FUNCTION, package.module:FUNCTION)
    prepare_s: float | None  # its prepare() (torch.compile), seconds


@dataclass(frozen=True)
class ChildResult:
    """One job's answer. ``status`` is ``ok``, ``failed`` (a verdict failed), ``error`` (see
    ``error``), ``started`` (the child stopped before the end: ``phase`` says where), or empty when
    the child wrote nothing."""

    status: ChildStatus = ""
    phase: str = "start"
    error: ChildError | None = None
    kernel: str | None = None
    sizes: dict[str, int] = field(default_factory=dict)
    launch: dict[str, object] = field(default_factory=dict)
    device: DeviceInfo | None = None
    registers: int | None = None
    driver_blocks_per_sm: int | None = None
    allocations: tuple[Allocation, ...] = ()
    checks: tuple[OutputCheck, ...] = ()
    nvtx: bool = False
    time_ms: float | None = None
    math_mode: str | None = None
    job_seconds: float | None = None  # a batch job's own time (kprof.launch.launch.run_batch)
    findings: tuple[Finding, ...] = ()  # the values detector's
    scrubbed: bool | None = None  # the values detector's shared-memory scrubber ran
    timing: Timing | None = None
    baseline: Operation | None = None
    operation: Operation | None = None
    # the record as written (kprof run --json)
    raw: dict[str, object] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        """Every output passed its verdict (``kprof run``'s answer)."""
        return self.status == "ok"

    @property
    def wrote(self) -> bool:
        """The child wrote a result at all."""
        return bool(self.status)

    @property
    def finished(self) -> bool:
        """A batch job that ran to its end and passed: done, and timed by the child."""
        return self.status == "ok" and self.job_seconds is not None

    @property
    def judged(self) -> bool:
        """A batch job that reached its verdict, passed or failed."""
        return self.status in ("ok", "failed") and self.job_seconds is not None

    def failed_checks(self) -> list[str]:
        return [c.message for c in self.checks if not c.ok]


NOTHING = ChildResult()


def read(path: Path) -> ChildResult:
    """The result file the child left; :data:`NOTHING` where it left none, or one cut off
    mid-write."""
    try:
        if path.stat().st_size > MAX_RESULT_BYTES:
            raise ResultError(f"the child's result {path} is over {MAX_RESULT_BYTES:,} bytes")
        data = json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError):
        return NOTHING
    return from_data(data)


@dataclass(frozen=True)
class DeviceInfo:
    """The GPU a child ran on, as its driver gave it (kprof.child.device), rebuilt typed in the
    parent; a field the child's record lacks is its zero (an older record, or a stand-in's)."""

    ordinal: int = 0
    name: str = ""
    arch: str = ""
    sm_count: int = 0
    total_memory: int = 0
    driver_version: int = 0  # e.g. 13000
    max_shared_per_block_optin: int = 0
    max_threads_per_sm: int = 0
    l2_bytes: int = 0
    # what kprof peak's theoretical ceilings are worked out from (0: the driver does not say)
    memory_clock_khz: int = 0  # CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE (peak memory clock)
    bus_width_bits: int = 0  # CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH
    clock_khz: int = 0  # CU_DEVICE_ATTRIBUTE_CLOCK_RATE (peak SM clock)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def device_of(value: object) -> DeviceInfo | None:
    """The child's ``device`` record, typed; None where it has none (it stopped before it had a
    device). A field of the wrong type is left at its zero."""
    if isinstance(value, DeviceInfo):
        return value
    if not isinstance(value, dict) or not value:
        return None
    return DeviceInfo(**scalar_fields(DeviceInfo, value))  # type: ignore[arg-type]


def _status(value: object) -> ChildStatus:
    """The child's status as it wrote it; "" (it wrote nothing kprof knows) for anything else."""
    return next((s for s in _STATUSES if s == value), "")


def from_data(data: object) -> ChildResult:
    """A result record, its version checked: one written by another kprof is an error that says
    so."""
    if not isinstance(data, dict):
        return NOTHING
    if data.get("version") != RESULT_VERSION:
        raise ResultError(f"the child wrote a result of version {data.get('version')!r}; this "
                          f"kprof reads version {RESULT_VERSION}: the child ran another kprof (its "
                          "Python finds kprof elsewhere: check PYTHONPATH and the environment the "
                          "child starts in)")
    return ChildResult(
        status=_status(data.get("status")), phase=_str(data.get("phase")) or "start",
        error=_error(data.get("error")),
        kernel=_opt_str(data.get("kernel")), sizes=_dict(data.get("sizes")),
        launch=_dict(data.get("launch")),
        device=device_of(data.get("device")), registers=_int(data.get("registers")),
        driver_blocks_per_sm=_int(data.get("driver_blocks_per_sm")),
        allocations=allocations_of(data.get("allocations")),
        checks=checks_of(data.get("checks")), nvtx=bool(data.get("nvtx")),
        time_ms=_float(data.get("time_ms")),
        math_mode=_opt_str(data.get("math_mode")), job_seconds=_float(data.get("job_seconds")),
        findings=tuple(Finding.from_dict(f) for f in _dicts(data.get("findings"))),
        scrubbed=data.get("scrubbed") if isinstance(data.get("scrubbed"), bool) else None,
        timing=_timing(data), baseline=_operation(data, "baseline"),
        operation=_operation(data, "operation"), raw=data)


def _timing(data: dict[str, object]) -> Timing | None:
    samples = data.get("samples")
    if not isinstance(samples, list):
        return None
    hw = data.get("cupti_hw_trace")
    integ = _dict(data.get("integrity"))
    return Timing(samples=_floats(samples), stop=_str(data.get("stop")),
                  timer=_str(data.get("timer")) or "events",
                  event_samples=_floats(data.get("event_samples")), batch=_int(data.get("batch")),
                  host_seconds=_float(data.get("host_seconds")),
                  kernels_per_call=_int(data.get("kernels_per_call")),
                  call_kernels=call_kernels_of(data.get("call_kernels")),
                  timer_note=_opt_str(data.get("timer_note")),
                  cupti_hw_trace=hw if isinstance(hw, bool) else None,
                  integrity=_strs(integ.get("flags")),
                  integrity_checked=_strs(integ.get("checked")),
                  integrity_seconds=_float(data.get("integrity_seconds")))


def call_kernels_of(value: object) -> tuple[tuple[str, float], ...]:
    """[[name, seconds], ...] as the child (or a bench JSON) wrote it; anything else read as
    none."""
    if not isinstance(value, list):
        return ()
    return tuple((str(v[0]), float(v[1])) for v in value
                 if isinstance(v, list) and len(v) == 2 and isinstance(v[1], (int, float)))


def _operation(data: dict[str, object], role: str) -> Operation | None:
    keys = (f"{role}_framework", f"{role}_callable", f"{role}_prepare_s")
    if not any(k in data for k in keys):
        return None
    return Operation(_opt_str(data.get(keys[0])), _opt_str(data.get(keys[1])),
                     _float(data.get(keys[2])))


# Results recorded before the child wrote its error's kind (tests/data): the kind its class had then
_KIND_OF_TYPE: dict[str, ErrorKind] = {"CudaError": "cuda", "NoGPUError": "no-gpu",
                                       "UsageError": "usage",
                                       "SpecError": "usage", "JobError": "usage",
                                       "UserCodeError": "user-code"}


def _error(raw: object) -> ChildError | None:
    if not isinstance(raw, dict):
        return None
    kind = raw.get("kind", _KIND_OF_TYPE.get(_str(raw.get("type")), "internal"))
    return ChildError(kind=kind if kind in get_args(ErrorKind) else "internal",
                      message=_str(raw.get("message")),
                      call=_opt_str(raw.get("call")), result=_opt_str(raw.get("result")),
                      log=_str(raw.get("log")),
                      traceback=_str(raw.get("traceback")), exit_code=_int(raw.get("exit_code")),
                      type=_str(raw.get("type")))


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _opt_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _floats(value: object) -> tuple[float, ...]:
    return tuple(float(v) for v in value if isinstance(v, (int, float))) if isinstance(value, list) else ()


def _strs(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _dict(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def allocations_of(value: object) -> tuple[Allocation, ...]:
    """The runner's ``allocations`` list, typed (a record that is not one is dropped)."""
    found = (allocation_of(v) for v in value) if isinstance(value, list) else ()
    return tuple(a for a in found if a is not None)


def _dicts(value: object) -> tuple[dict[str, object], ...]:
    return tuple(dict(v) for v in value if isinstance(v, dict)) if isinstance(value, list) else ()
