"""``kprof profile NAME...`` from Python: :func:`profile_specs`, the whole command (several specs, ``--size``,
``--param``, baselines, the diagnosis and its tries) as one API call; the command is parsing and printing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kprof.commands.apitypes import checked
from kprof.errors import NcuError

if TYPE_CHECKING:
    from kprof.diagnosis.model import Diagnosis
    from kprof.measure.profiling import KernelProfile


@dataclass(frozen=True)
class SpecProfiles:
    """What ``kprof profile NAME...`` measured: every kernel's profile, each spec's diagnosis, and the specs ncu
    could not profile (the others still ran), each with its error."""

    profiles: list[KernelProfile] = field(default_factory=list)
    diagnoses: list[Diagnosis] = field(default_factory=list)
    errors: list[tuple[str, NcuError]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


@checked
def profile_specs(names: Sequence[str], *, sizes: dict[str, int] | None = None, params: dict[str, str] | None = None,
                  baseline: str | None = None, set_name: str = "quick", metrics: Sequence[str] = (),
                  report_dir: str | Path | None = None, tries: Sequence[str] = (), auto_try: bool = True,
                  arch: str | None = None, timeout: float = 600.0,
                  progress: Callable[[str], None] | None = None) -> SpecProfiles:
    """Nsight Compute over each spec of ``names`` (names from ``kprof list`` or spec files) at ``sizes`` (with one
    spec every size must be one of its own; with several each takes those it has) and ``params`` (its defines),
    each ``baseline`` beside it (a spec's named baseline or a Python one, profiled as a Python operation), then the
    diagnosis of each kernel the user wrote, with the tries (``tries``: ``["PER=1,2"]``; ``auto_try``: the changes
    kprof can try without an edit). Every input is checked, then the GPU, then ncu, before anything is built.
    ``progress`` hears a line as each spec starts (and the one line a GPU ncu cannot profile gets)."""
    from kprof.build import toolchain
    from kprof.commands import api, pipeline
    from kprof.diagnosis import tries as tries_mod
    from kprof.spec import catalog
    from kprof.tools.nsight import ncu

    specs = [catalog.load(str(n)) for n in names]  # every name checked before anything runs
    asked = tries_mod.parse(list(tries))  # one line for a bad --try, before the GPU runs
    given = dict(sizes or {})
    resolved = [pipeline.resolve(spec, given if len(specs) == 1 else {k: v for k, v in given.items() if k in spec.size_names},
                                 params=dict(params or {}))
                for spec in specs]
    if baseline:
        resolved = [x for r in resolved for x in (r, *pipeline.profiled_baselines(r, baseline))]
    api.require_gpu(None)
    no_ncu = ncu.unsupported(arch or toolchain.detect_arch())
    if no_ncu is None:
        api.require_gpu("ncu")
    elif progress:
        progress(f"kprof: {no_ncu}: kprof profile reports event timing, the driver's occupancy, registers and spills "
                 "instead")
    folder = Path(report_dir) if report_dir is not None else None
    out = SpecProfiles()
    for r in resolved:
        prepared = pipeline.built(r, arch)
        if progress:
            progress(f"profiling {r.spec.name} {r.size_text()} ...")
        try:
            got = api.profile_prepared(prepared, params=dict(params or {}), set_name=set_name, metrics=tuple(metrics),
                                       report_dir=folder, timeout=timeout)
        except NcuError as exc:
            out.errors.append((prepared.resolved.spec.name, exc))
            continue
        out.profiles.extend(got)
        if got and not r.spec.python:  # a Python operation's kernels are not the user's to change
            out.diagnoses.append(api.diagnose_prepared(prepared, got, try_params=asked, auto_try=auto_try, timeout=timeout))
    return out
