"""``kprof profile``'s diagnosis of one spec: one timed run, the facts, the rules, the tries.

The entry point :func:`diagnose_prepared` takes what the profile stage produced (the kernel reports,
with or without counters) and returns a :class:`~kprof.diagnosis.model.Diagnosis`; nothing here prints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kprof.diagnosis import diagnose, gather, tries
from kprof.diagnosis.model import Diagnosis, Try
from kprof.errors import KprofError
from kprof.launch.childresult import ChildResult
from kprof.launch.prepared import Prepared
from kprof.measure.ceilings import Ceilings
from kprof.measure.kernelprofile import KernelProfile


def inputs_of(facts: Any) -> dict[str, object]:
    """What a diagnosis read from the GPU, kept so it can be replayed without one (tests, reports)."""
    return {"profile": facts.profile.to_dict(), "counters": facts.counters, "seconds": facts.seconds,
            "sm_count": facts.sm_count, "sm_hz": facts.sm_hz, "ceiling_bytes_per_s": facts.ceiling_bytes_per_s,
            "peak_flops": facts.peak_flops, "kernel_seconds": list(facts.kernel_seconds)}


def _timed(prepared: Prepared, timeout: float) -> ChildResult | None:
    from kprof.launch import launch
    from kprof.launch.job import RunMode

    try:
        return launch.run_kernel(prepared.job(RunMode(time=True)), timeout=timeout)
    except KprofError:
        return None  # the diagnosis goes on with the profile's own durations


def diagnose_prepared(prepared: Prepared, profiles: list[KernelProfile], *, peak: Ceilings | None = None,
                      seconds: float | None = None, try_params: dict[str, list[str]] | None = None,
                      auto_try: bool = True, timeout: float = 300.0, ptx: str | None = None, ptx_note: str = "",
                      bench: Callable[[str, dict[str, int], str], tries.SweepReport] | None = None,
                      bench_specs: Callable[[list[Any], dict[str, int]], tries.SweepReport] | None = None,
                      kernel_seconds: tuple[float, ...] = ()) -> Diagnosis:
    """The diagnosis of one built spec from its profiles (one a kernel launched). ``seconds``: its time
    measured elsewhere (kprof bench, same run as a twin); else one event-timed run here; ``kernel_seconds``:
    each launch's own GPU time in that bench's timed call (CUPTI).
    ``try_params``: define -> values to try (``--try``); ``auto_try``: kprof picks tries for the first
    cause where a define of the launch allows. ``ptx``: the kernel's PTX (its lines); ``bench(name, sizes,
    sweep)``: a ``kprof bench`` run of one spec over ``--param`` words (the tries), from the command layer."""
    from kprof.measure import profiling

    if not profiles:
        raise ValueError("no profile to diagnose")
    main = max(profiles, key=lambda p: p.duration_s or 0.0)
    main = profiling.against_ceilings(main, peak)
    counters = main.source == "ncu"
    timed = _timed(prepared, timeout)
    facts = gather.facts_for(prepared, main, counters=counters, ptx=ptx, ptx_note=ptx_note, timed=timed, peak=peak,
                             seconds=seconds, kernel_seconds=kernel_seconds)
    d = replace(diagnose(facts), inputs=inputs_of(facts))
    measured: list[Try] = []
    spec = prepared.resolved.spec
    sizes = dict(prepared.resolved.sizes)
    asked = dict(try_params or {})
    if auto_try and d.causes and not asked:
        occ = facts.occupancy()
        slots = facts.sm_count * occ.blocks_per_sm if facts.sm_count and occ else None
        asked = {k: [str(v) for v in vals] for k, vals in tries.auto_values(d.causes[0], spec, slots).items()}
    defines = dict(spec.defines)
    for define, values in asked.items():
        original = str(defines.get(define, ""))
        if not original:
            d.notes.append(f"--try {define}: the spec has no define {define} (its defines: "
                           f"{', '.join(defines) or 'none'})")
            continue
        if bench is None:
            d.notes.append(f"try {define}: no bench to time it with")
            continue
        try:
            report = bench(spec.name, sizes, tries.sweep_of(define, original, values))
            measured += tries.measured(report, define, original, values)
        except KprofError as exc:
            d.notes.append(f"try {define}: {str(exc).splitlines()[0]}")
    if auto_try and d.causes and not asked and bench_specs is not None:  # no define does it: what needs none
        found = tries.variants(d.causes[0], spec, registers=facts.registers)
        if found:
            try:
                report = bench_specs([spec, *(v for _, v in found)], sizes)
                measured += tries.measured_variants(report, spec.name, [(p, v.name) for p, v in found])
            except KprofError as exc:
                d.notes.append(f"try {', '.join(next(iter(p)) for p, _ in found)}: {str(exc).splitlines()[0]}")
    if measured and d.causes:
        d.causes[0] = tries.confirm(d.causes[0], measured)
    return replace(d, tries=list(measured)) if measured else d
