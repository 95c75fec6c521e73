"""Benchmark integrity: what a timed call must not get away with, decided from what the child saw.

A number is only as honest as the call it times. A timed callable (a Python operation, a framework
baseline, a user's kernel) can replay a cached result keyed on its input's address, launch its work
on a stream the timer does not wait for, launch nothing on some calls, change its input so the next
call is trivial, or leave in its output what an earlier call wrote. Each check below reads what the
timing loop recorded anyway (CUPTI's kernel records of every call, the CUDA events' and the host
clock's readings) or what two more verified calls after the loop give, and returns flags: ``kind:
what was seen``. Pure: tested on recorded CUPTI records and fake timers
(tests/child/test_integrity.py); the child (:mod:`kprof.child.timing`) gathers the data.

What no check here can see is said in docs/bench.md: a cheat that does the work, on the timed
stream, inside the window, and is merely faster than it should be at these inputs is not a cheat the
GPU can tell apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kprof.child.cupti_timer import KernelRecord, timed_records

# The CUDA events around a call enclose its kernels: an event reading this much shorter than CUPTI's
# span of the call's kernels means some ran outside the window (measured noise between the two on an
# H200: under 2 us and 3%).
WINDOW_SLACK = 0.8
WINDOW_SLACK_S = 5e-6


def per_call(records: Sequence[KernelRecord]) -> tuple[list[KernelRecord], int | None]:
    """(the timed work's records, the stream of kprof's spin kernel) for one call's records."""
    spin = next((r.stream for r in records if r.name.startswith("kprof_spin")), None)
    return timed_records(list(records)), spin


def kernel_flags(calls: Sequence[Sequence[KernelRecord]]) -> list[str]:
    """Flags from the kernel records of each timed call (one launch behind kprof's spin kernel
    each): a call that launched no kernel while others did (a replayed result), calls that launched
    different numbers of kernels (work done once for several calls, or deferred into the next),
    kernels on a stream other than the one kprof times (work the window does not hold), a kernel
    still running when the call's records were taken (work deferred past the window)."""
    if not calls:
        return []
    counts, other, running = [], 0, 0
    for records in calls:
        work, spin = per_call(records)
        counts.append(len(work))
        if spin is not None and {r.stream for r in work} - {spin}:
            other += 1
        if not all(r.complete for r in work):
            running += 1
    flags = []
    if max(counts) > 0 and min(counts) == 0:
        flags.append(f"no-kernel: {counts.count(0)} of {len(counts)} timed calls launched no "
                     f"kernel while the others launched {max(counts)} (a result "
                     "replayed, not computed?)")
    elif len(set(counts)) > 1:
        flags.append(f"varying-kernels: the timed calls launched {min(counts)} to {max(counts)} "
                     "kernels each (work done once for several calls, or "
                     "deferred into the next one?)")
    if max(counts) == 0:
        flags.append("no-kernel: no timed call launched a kernel that CUPTI saw")
    if other:
        flags.append(f"other-stream: {other} of {len(calls)} timed calls launched kernels on a "
                     "stream other than the one kprof times (the window does not wait for them)")
    if running:
        flags.append(f"outside-window: in {running} of {len(calls)} timed calls a kernel was still "
                     "running after the call's window had closed and been read (work deferred past "
                     "the timed window)")
    return flags


# Kernels that only move or convert data, by a part of their name (mangled or not): in a timed call
# that also computes, they are work beyond the operation, a result widened (``.float()``), an input
# made contiguous, an output zeroed, which the kernel beside it does not do. (label, what it is)
# each.
EXTRA_KERNELS = (
    ("direct_copy_kernel", "at::native::direct_copy_kernel_cuda",
     "a copy or dtype conversion: .float(), .to(), "
       ".contiguous(), copy_"),
    ("FillFunctor", "at::native::FillFunctor", "a fill: torch.zeros, fill_, zero_"),
    ("cupy_copy", "cupy_copy", "a copy or dtype conversion: astype, copy"),
)
# A call's extra kernels under this share of its kernel time are not flagged: the noise of CUPTI's
# timestamps on a kernel of a few microseconds (a one-element fill) beside milliseconds of work.
EXTRA_MIN_SHARE = 0.005


def extra_kind(name: str) -> tuple[str, str] | None:
    """(label, what it is) of a kernel that only copies, converts or fills, by its name; None
    otherwise."""
    for part, label, what in EXTRA_KERNELS:
        if part in name:
            return label, what
    return None


def extra_work_flags(calls: Sequence[Sequence[KernelRecord]], who: str = "timed call") -> list[str]:
    """Kernels that only copy, convert or fill (:data:`EXTRA_KERNELS`) in timed calls that also
    launched other kernels: work beyond the operation inside the window (a baseline whose bfloat16
    result is widened to float32 adds 12% to cuDNN's attention on an H200). The share is of the
    call's kernel time (the sum of its kernels' own durations), the median over the calls that ran
    such kernels. A call of copies only is the operation itself (a copy), not flagged."""
    shares: list[float] = []
    seen: dict[str, str] = {}
    for records in calls:
        work = [r for r in per_call(records)[0] if r.complete]
        extra = [(r, kind) for r in work if (kind := extra_kind(r.name)) is not None]
        if not extra or len(extra) == len(work):
            continue
        total = sum(r.ns for r in work)
        shares.append(sum(r.ns for r, _ in extra) / total if total > 0 else 0.0)
        for _, (label, what) in extra:
            seen.setdefault(label, what)
    if not shares:
        return []
    share = sorted(shares)[len(shares) // 2]  # the median over the calls that ran such kernels
    if share < EXTRA_MIN_SHARE:
        return []
    names = "; ".join(f"{label} ({what})" for label, what in seen.items())
    return [f"extra-work: the {who} also ran {names}, {share:.0%} of its kernel time, in "
            f"{len(shares)} of {len(calls)} timed calls: work the operation does not need inside "
            "the timed window (a result widened, an input copied, an output filled); do it outside "
            "the call, or give the spec the dtype and layout the call writes"]


def dtype_flags(converted: Sequence[str], who: str = "timed call") -> list[str]:
    """Results the callable returned in another dtype than the spec's output (each ``NAME: got for
    want``): kprof converted them outside the window to verify them, so the timed call did a
    different job (a narrower result writes fewer bytes)."""
    if not converted:
        return []
    return [f"other-dtype: the {who} returned {', '.join(converted)}: kprof converted it outside "
            "the timed window to verify it, so the call does a different job than the kernel (give "
            "the spec the dtype the call writes, or make the call write the spec's)"]


def warmup_flags() -> list[str]:
    """The warm-up's calls launched no kernel that CUPTI saw: the loop is timed by events, and this
    says why."""
    return ["no-kernel: the warm-up calls launched no kernel that CUPTI saw (a result replayed, "
            "not computed?)"]


def window_flags(cupti_spans: Sequence[float], event_samples: Sequence[float]) -> list[str]:
    """The events around a call against CUPTI's span of its kernels, call by call: events that read
    much less than the kernels took mean kernels ran outside the window (on another stream, or after
    it)."""
    outside = sum(1 for c, e in zip(cupti_spans, event_samples)
                  if e < c * WINDOW_SLACK - WINDOW_SLACK_S)
    if not outside:
        return []
    return [f"outside-window: in {outside} of {min(len(cupti_spans), len(event_samples))} timed "
            "calls the kernels took longer than the CUDA events around the call (work outside the "
            "timed window)"]


def timer_flags(samples: Sequence[float], host_seconds: float | None, batch: int = 1) -> list[str]:
    """The timer against the host's clock: the calls' timed seconds cannot add up to more than the
    loop's wall time (a timer that is not the GPU's, or a timestamp moved)."""
    if host_seconds is None or not samples:
        return []
    total = sum(samples) * max(1, batch)
    if total <= host_seconds * 1.01 + 1e-4:
        return []
    return [f"timer: the timed calls add up to {total:.4g} s in a loop of {host_seconds:.4g} s by "
            "the host's clock (the timer is not measuring what ran)"]


def input_flags(changed: Sequence[str]) -> list[str]:
    """Inputs whose contents after the timed calls differ from what was uploaded."""
    if not changed:
        return []
    return [f"changed-input: the timed calls changed {', '.join(changed)} (a call that makes the "
            "next one easier, or an in-place update the spec does not declare: role inout)"]


def reverify_flags(stale: Sequence[str], ignores: Sequence[str]) -> list[str]:
    """The two verified calls after the timed ones: outputs poisoned first (``stale``: the failing
    checks' messages), and then inputs changed to new values (``ignores``)."""
    flags = []
    if stale:
        flags.append("stale-output: with its outputs poisoned before the call, a call after the "
                     f"timed ones failed its verdict ({stale[0]}): the result was written before "
                     "the call, not by it")
    if ignores:
        flags.append("ignores-input: with new input values (same buffers) a call after the timed "
                     f"ones failed its verdict ({ignores[0]}): the result does not follow the "
                     "input (a cached result?)")
    return flags


def kinds(flags: Sequence[str]) -> list[str]:
    """The kind of each flag (the word before the colon)."""
    return [f.split(":", 1)[0] for f in flags]


def summary(flags: Sequence[str], checks: dict[str, Any]) -> dict[str, Any]:
    """What the child reports: the flags and what was checked (names of the checks that ran)."""
    return {"flags": list(flags), "checked": sorted(k for k, v in checks.items() if v)}
