"""``kprof profile`` over built specs: each profiled (Nsight Compute, or without counters),
diagnosed (one timed run, the facts, the rules) and its first cause tried, spec after spec.

:func:`profile_specs` is the loop the command hands its built specs to and gets a
:class:`SpecProfiles` back;
:func:`diagnosis_of` is one spec's diagnosis from the kernel reports (with or without counters), a
:class:`~kprof.diagnosis.model.Diagnosis`. The tries are timed by ``kprof bench`` runs the command
layer hands down as a :class:`TryBench` (a stage below it builds nothing). Nothing here prints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kprof.diagnosis import diagnose, gather, tries
from kprof.diagnosis.model import Diagnosis, Try
from kprof.errors import KprofError, NcuError
from kprof.launch.childresult import ChildResult
from kprof.launch.prepared import Prepared
from kprof.measure.ceilings import Ceilings
from kprof.measure.kernelprofile import KernelProfile

if TYPE_CHECKING:
    from kprof.diagnosis.facts import Facts
    from kprof.spec import KernelSpec


@dataclass(frozen=True)
class TryBench:
    """How a try is timed: ``kprof bench`` runs with no history, made by the command layer.
    ``sweep(name, sizes, words)``: one spec over ``--param`` words; ``specs(specs, sizes)``: several
    specs in one run (the tries that need no define)."""

    sweep: Callable[[str, dict[str, int], str], tries.SweepReport]
    specs: Callable[[list[KernelSpec], dict[str, int]], tries.SweepReport]


@dataclass(frozen=True, kw_only=True)
class ProfileSettings:
    """What ``kprof profile`` asks of Nsight Compute for every spec: the set, extra metrics, where
    reports are kept; ``params``: the ``--param`` defines, named in each report's label."""

    params: dict[str, str] = field(default_factory=dict)
    set_name: str = "quick"
    metrics: tuple[str, ...] = ()
    report_dir: Path | None = None
    timeout: float = 600.0


@dataclass(frozen=True)
class SpecProfiles:
    """What ``kprof profile NAME...`` measured: every kernel's profile, each spec's diagnosis, and
    the specs ncu could not profile (the others still ran), each with its error."""

    profiles: list[KernelProfile] = field(default_factory=list)
    diagnoses: list[Diagnosis] = field(default_factory=list)
    errors: list[tuple[str, NcuError]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def profile_specs(built: Sequence[Prepared], settings: ProfileSettings, *, diagnose: bool = True,
                  try_params: dict[str, list[str]] | None = None, auto_try: bool = True,
                  bench: TryBench | None = None, peak: Ceilings | None = None,
                  progress: Callable[[str], None] | None = None) -> SpecProfiles:
    """Each built spec profiled (a spec ncu cannot profile is kept with its error, the others go
    on), then, with ``diagnose``, the diagnosis of each kernel the user wrote (a Python operation's
    kernels are not theirs to change) with its tries. ``progress`` hears a line as each spec
    starts."""
    profiles: list[KernelProfile] = []
    diagnoses: list[Diagnosis] = []
    errors: list[tuple[str, NcuError]] = []
    for prepared in built:
        r = prepared.resolved
        if progress:
            progress(f"profiling {r.spec.name} {r.size_text()} ...")
        try:
            got = profile_one(prepared, settings)
        except NcuError as exc:
            errors.append((r.spec.name, exc))
            continue
        profiles += got
        if diagnose and got and not r.spec.python:
            diagnoses.append(diagnose_one(prepared, got, try_params=try_params, auto_try=auto_try,
                                          bench=bench, peak=peak, timeout=settings.timeout))
    return SpecProfiles(profiles, diagnoses, errors)


def profile_one(prepared: Prepared, settings: ProfileSettings) -> list[KernelProfile]:
    """ncu over kprof's runner for one built spec: one report per kernel it launched. Where ncu may
    not read counters, the counter-less report from one timed launch; any other ncu failure
    raises."""
    from kprof.measure import profiling

    return profiling.profile_spec(prepared.resolved, prepared.built, prepared.job,
                                  params=settings.params,
                                  set_name=settings.set_name, metrics=settings.metrics,
                                  report_dir=settings.report_dir, timeout=settings.timeout)


def diagnose_one(prepared: Prepared, profiles: list[KernelProfile], *,
                 try_params: dict[str, list[str]] | None = None,
                 auto_try: bool = True, seconds: float | None = None,
                 kernel_seconds: tuple[float, ...] = (),
                 bench: TryBench | None = None, peak: Ceilings | None = None,
                 timeout: float = 300.0) -> Diagnosis:
    """Why the kernel performs as it does: :func:`diagnosis_of` with the kernel's PTX (its lines
    without counters) and ``peak``, the ceilings ``kprof peak`` measured on this GPU, where it has.
    ``seconds`` and ``kernel_seconds``: its time and each launch's own GPU time from a kprof bench
    run, where one was made."""
    ptx, note = prepared.ptx()
    return diagnosis_of(prepared, profiles, peak=peak, seconds=seconds, try_params=try_params,
                        auto_try=auto_try, timeout=timeout, ptx=ptx, ptx_note=note, bench=bench,
                        kernel_seconds=kernel_seconds)


def inputs_of(facts: Facts) -> dict[str, object]:
    """What a diagnosis read from the GPU, kept so it can be replayed without one (tests,
    reports)."""
    return {"profile": facts.profile.to_dict(), "counters": facts.counters,
            "seconds": facts.seconds,
            "sm_count": facts.sm_count, "sm_hz": facts.sm_hz,
            "ceiling_bytes_per_s": facts.ceiling_bytes_per_s,
            "peak_flops": facts.peak_flops, "kernel_seconds": list(facts.kernel_seconds)}


def _timed(prepared: Prepared, timeout: float) -> ChildResult | None:
    from kprof.launch import launch
    from kprof.launch.job import RunMode

    try:
        return launch.run_kernel(prepared.job(RunMode(time=True)), timeout=timeout)
    except KprofError:
        return None  # the diagnosis goes on with the profile's own durations


def diagnosis_of(prepared: Prepared, profiles: list[KernelProfile], *, peak: Ceilings | None = None,
                 seconds: float | None = None, try_params: dict[str, list[str]] | None = None,
                 auto_try: bool = True,
                 timeout: float = 300.0, ptx: str | None = None, ptx_note: str = "",
                 bench: TryBench | None = None,
                 kernel_seconds: tuple[float, ...] = ()) -> Diagnosis:
    """The diagnosis of one built spec from its profiles (one a kernel launched). ``seconds``: its
    time measured elsewhere (kprof bench, same run as a twin); else one event-timed run here;
    ``kernel_seconds``: each launch's own GPU time in that bench's timed call (CUPTI).
    ``try_params``: define -> values to try (``--try``); ``auto_try``: kprof picks tries for the
    first cause where a define of the launch allows. ``ptx``: the kernel's PTX (its lines);
    ``bench``: how the tries are timed, from the command layer (none: the tries are said, not
    timed)."""
    from kprof.measure import profiling

    if not profiles:
        raise ValueError("no profile to diagnose")
    main = max(profiles, key=lambda p: p.duration_s or 0.0)
    main = profiling.against_ceilings(main, peak)
    counters = main.source == "ncu"
    timed = _timed(prepared, timeout)
    facts = gather.facts_for(prepared, main, counters=counters, ptx=ptx, ptx_note=ptx_note,
                             timed=timed, peak=peak, seconds=seconds, kernel_seconds=kernel_seconds)
    d = replace(diagnose(facts), inputs=inputs_of(facts))
    measured: list[Try] = []
    notes: list[str] = []
    spec = prepared.resolved.spec
    sizes = dict(prepared.resolved.sizes)
    asked = dict(try_params or {})
    if auto_try and d.causes and not asked:
        occ = facts.occupancy()
        slots = facts.sm_count * occ.blocks_per_sm if facts.sm_count and occ else None
        asked = {k: [str(v) for v in vals]
                 for k, vals in tries.auto_values(d.causes[0], spec, slots).items()}
    defines = dict(spec.defines)
    for define, values in asked.items():
        original = str(defines.get(define, ""))
        if not original:
            notes.append(f"--try {define}: the spec has no define {define} (its defines: "
                         f"{', '.join(defines) or 'none'})")
            continue
        if bench is None:
            notes.append(f"try {define}: no bench to time it with")
            continue
        try:
            report = bench.sweep(spec.name, sizes, tries.sweep_of(define, original, values))
            measured += tries.measured(report, define, original, values)
        except KprofError as exc:
            notes.append(f"try {define}: {str(exc).splitlines()[0]}")
    # no define does it: what needs none
    if auto_try and d.causes and not asked and bench is not None:
        found = tries.variants(d.causes[0], spec, registers=facts.registers)
        if found:
            try:
                report = bench.specs([spec, *(v for _, v in found)], sizes)
                measured += tries.measured_variants(report, spec.name,
                                                    [(p, v.name) for p, v in found])
            except KprofError as exc:
                notes.append(f"try {', '.join(next(iter(p)) for p, _ in found)}: "
                             f"{str(exc).splitlines()[0]}")
    if not measured and not notes:
        return d
    causes = list(d.causes)
    if measured and causes:
        causes[0] = tries.confirm(causes[0], measured)
    return replace(d, causes=causes, notes=[*d.notes, *notes], tries=measured or d.tries)
