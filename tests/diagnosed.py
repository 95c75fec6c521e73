"""A diagnosis on a fake device, for the diagnosis's and the performance corpus's tests: a spec
built and profiled as the fallback writes it, with counters and a Source page where a test gives
them."""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from kprof.commands import pipeline
from kprof.diagnosis import diagnose, gather, ptxscan
from kprof.measure import profiling as prof
from kprof.spec import catalog

H200 = {"sm_count": 132, "clock_khz": 1980000, "memory_clock_khz": 3201000, "bus_width_bits": 6144}


RTX4090 = {"sm_count": 128, "clock_khz": 2520000, "memory_clock_khz": 10501000,
           "bus_width_bits": 384}


def prepared_of(name: str, arch: str = "sm_90"):
    return pipeline.prepare(catalog.load(name), None, arch=arch)


def profile_of(prepared, seconds: float | None, **counters):
    """A profile as the fallback writes it; with ``counters``, as if ncu had measured those fields
    (``page``: its Source page, ``{line: {counter: value}}`` on the spec's source)."""
    r, b = prepared.resolved, prepared.built
    u = b.usage_of(r.spec.entry)
    p = prof.fallback(r.spec.name, r.sizes, seconds, u.registers, r.threads_per_block,
                      u.shared_static, dynamic_smem=r.shared_mem,
                      arch=b.arch, spec_flops=r.flops, spec_bytes=r.bytes, reason="fake device")
    page = counters.pop("page", None)
    if not counters:
        return p
    shares = counters.pop("stall_shares", None)
    p = replace(p, source="ncu").with_metrics(**counters)
    if page is not None:
        p = replace(p, lines=page_of(str(r.spec.source), page))
    return replace(p, stalls=prof.Stalls(shares=shares)) if shares is not None else p


def page_of(file: str, counts: dict[int, dict[str, object]]):
    """A Source page of the kernel's file: each line's counters (``stalls`` a dict, ``sass`` a tuple
    of opcodes)."""
    from kprof.tools.nsight.sourcepage import COUNTER_COLUMNS, LineCounters, SourceLines

    reasons = sorted({r for c in counts.values() for r in c.get("stalls", {})})
    return SourceLines("k",
                       tuple(LineCounters(file=file, line=n, **c)
                             for n, c in sorted(counts.items())),
                       tuple(COUNTER_COLUMNS) + tuple(f"stall:{r}" for r in reasons))


def diagnosed(name: str, seconds: float | None, *, device=H200, arch: str = "sm_90", **counters):
    prepared = prepared_of(name, arch)
    p = profile_of(prepared, seconds, **counters)
    timed = SimpleNamespace(device=device, time_ms=None)
    from kprof.build import build

    return diagnose(gather.facts_for(prepared, p, counters=bool(counters),
                                     ptx=build.ptx(prepared.resolved.spec, arch),
                                     timed=timed, seconds=seconds))


def named(d) -> list[str]:
    """The causes a rule named (the fallback that only says where the limiter works left out)."""
    return [c.rule for c in d.causes if c.rule != "limiter-lines"]


def entry_of(name: str) -> ptxscan.Entry:
    from kprof.build import build

    entries = ptxscan.scan(build.ptx(catalog.load(name), "sm_90"))
    return entries[catalog.load(name).entry]
