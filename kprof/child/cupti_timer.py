"""Kernel durations from CUPTI's activity API (the ``cupti-python`` package), for ``kprof bench``.

CUDA events time a stretch of a stream: they add the event's own cost (about a microsecond) and,
for a replayed graph, measure throughput, where back-to-back kernels overlap their launch and drain.
CUPTI's kernel activity records carry the GPU's own start and end timestamps of each kernel,
the same quantity as Nsight Systems' kernel rows and close to Nsight Compute's gpu__time_duration.
This module is the only user of ``cupti``; it is imported only inside the runner's child, never
under compute-sanitizer or ncu (both hold the profiling interface themselves).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# kprof's helper kernels (blocking spin, L2 flush, shared-memory scrub): never part of a sample.
# (kprof peak's own stream and FMA kernels are timed like any kernel.)
HELPERS = ("kprof_spin", "kprof_flush", "kprof_scrub", "kprof_fingerprint", "kprof_double")


@dataclass(frozen=True)
class KernelRecord:
    name: str
    start: int  # ns, GPU timestamps
    end: int
    # CUPTI's stream id (benchmark integrity: work on another stream than the timed one)
    stream: int = 0

    @property
    def ns(self) -> int:
        return self.end - self.start

    @property
    def complete(self) -> bool:
        """False for a kernel still running when the records were taken: a forced flush
        (``activity_flush_all(1)``) hands such a record over with zero timestamps."""
        return 0 < self.start <= self.end


def unavailable() -> str | None:
    """Why CUPTI timing cannot be used here, or None when it can."""
    try:
        from cupti import cupti  # noqa: F401
    except ImportError as exc:
        return f"cupti-python is not installed ({exc}); pip install 'kprof[cuda13]'"
    except Exception as exc:  # noqa: BLE001 - libcupti missing or the wrong version
        return f"CUPTI could not be loaded: {exc}"
    return None


class KernelClock:
    """Collects kernel activity records from the moment it is made until ``close()``."""

    def __init__(self, hw_trace: bool = False) -> None:
        from cupti import cupti

        self._cupti = cupti
        self._records: list[KernelRecord] = []
        self.hw_trace = False
        if hw_trace:  # timestamps from the GPU's hardware event system, where the GPU has one
            try:
                cupti.activity_enable_hw_trace(1)
                self.hw_trace = True
            except Exception:  # noqa: BLE001 - not supported here: software timestamps, as by default
                self.hw_trace = False

        def requested() -> tuple[int, int]:
            return 8 * 1024 * 1024, 0

        def completed(activities: Any) -> None:
            for act in activities:
                if act.kind == cupti.ActivityKind.CONCURRENT_KERNEL:
                    self._records.append(KernelRecord(str(act.name), int(act.start), int(act.end),
                                                      int(getattr(act, "stream_id", 0) or 0)))

        cupti.activity_register_callbacks(requested, completed)
        cupti.activity_enable(cupti.ActivityKind.CONCURRENT_KERNEL)

    def take(self) -> list[KernelRecord]:
        """Every kernel record completed so far (the caller has synchronised), oldest first."""
        self._cupti.activity_flush_all(1)
        out, self._records = self._records, []
        out.sort(key=lambda r: r.start)
        return out

    def close(self) -> None:
        try:
            self._cupti.activity_disable(self._cupti.ActivityKind.CONCURRENT_KERNEL)
            self._cupti.activity_flush_all(1)
        except Exception:  # noqa: BLE001 - closing never hides the measurement already taken
            pass


def timed_records(records: list[KernelRecord]) -> list[KernelRecord]:
    """The records of the timed work: kprof's helper kernels left out."""
    return [r for r in records if not r.name.startswith(HELPERS)]


def _finished(records: list[KernelRecord]) -> list[KernelRecord]:
    """The timed work's records of kernels that had finished when the records were taken."""
    return [r for r in timed_records(records) if r.complete]


def span_seconds(records: list[KernelRecord]) -> float | None:
    """From the first start to the last end of the timed kernels (a baseline may launch several).
    A kernel still running when the records were taken has no timestamps yet and no place in a span
    (one counted with its zero start made a call of 1.8e9 s); benchmark integrity flags it."""
    work = _finished(records)
    if not work:
        return None
    return (max(r.end for r in work) - min(r.start for r in work)) / 1e9


def busy_seconds_per_launch(records: list[KernelRecord], launches: int) -> float | None:
    """Kernel time per launch in a replayed graph: the sum of the timed kernels' own durations
    divided by the number of launches (a launch may be several kernels, as cuBLAS's can be)."""
    work = _finished(records)
    if not work or launches <= 0:
        return None
    return sum(r.ns for r in work) / launches / 1e9
