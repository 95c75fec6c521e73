"""``kprof profile`` from Python: :func:`profile_specs`, the whole command over specs (several
specs, ``--size``, ``--param``, baselines, the diagnosis and its tries) as one API call, checked and
built here and handed to the diagnosis stage (:func:`kprof.diagnosis.stage.profile_specs`);
:func:`diagnose`, one
spec's diagnosis; :func:`profile`, the profiles alone of a spec or a program with the command's
options;
:func:`profile_program`, ``kprof profile -- CMD`` with its ranking. The command is parsing and
printing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kprof import inputs, outputs, proc
from kprof.commands.apitypes import checked
from kprof.errors import UsageError

if TYPE_CHECKING:
    from kprof.diagnosis.model import Diagnosis
    from kprof.diagnosis.program import ProgramProfile
    from kprof.diagnosis.stage import SpecProfiles, TryBench
    from kprof.measure.kernelprofile import KernelProfile
    from kprof.results.reports import BenchReport
    from kprof.spec import KernelSpec


@checked
def profile_specs(names: Sequence[str], *, sizes: dict[str, int] | None = None,
                  params: dict[str, str] | None = None,
                  baseline: str | None = None, set_name: str = "quick", metrics: Sequence[str] = (),
                  report_dir: str | Path | None = None, tries: Sequence[str] = (),
                  auto_try: bool = True,
                  diagnose: bool = True, arch: str | None = None, timeout: float = 600.0,
                  progress: Callable[[str], None] | None = None) -> SpecProfiles:
    """Nsight Compute over each spec of ``names`` (names from ``kprof list`` or spec files) at
    ``sizes`` (with one spec every size must be one of its own; with several each takes those it
    has) and ``params`` (its defines), each ``baseline`` beside it (a spec's named baseline or a
    Python one, profiled as a Python operation), then the diagnosis of each kernel the user wrote,
    with the tries (``tries``: ``["PER=1,2"]``; ``auto_try``: the changes kprof can try without an
    edit; ``diagnose=False``: the profiles alone, as :func:`kprof.profile` gives them). Every input
    is checked, then the GPU, then ncu, before anything is built. ``progress`` hears a line as each
    spec starts (and the one line a GPU ncu cannot profile gets)."""
    from kprof.build import toolchain
    from kprof.commands import api, pipeline
    from kprof.diagnosis import stage
    from kprof.diagnosis import tries as tries_mod
    from kprof.spec import catalog
    from kprof.tools.nsight import ncu

    specs = [catalog.load(str(n)) for n in names]  # every name checked before anything runs
    asked = tries_mod.parse(list(tries))  # one line for a bad --try, before the GPU runs
    given = dict(sizes or {})
    resolved = [pipeline.resolve(spec,
                                 given if len(specs) == 1
                                 else {k: v for k, v in given.items() if k in spec.size_names},
                                 params=dict(params or {}))
                for spec in specs]
    if baseline:
        resolved = [x for r in resolved for x in (r, *pipeline.profiled_baselines(r, baseline))]
    folder = outputs.output_dir(report_dir, "--save-report", create=False) if report_dir is not None else None
    if folder is not None:
        for r in resolved:
            _report_writable(folder / f"{r.spec.name}.ncu-rep")
    api.require_gpu(None)
    no_ncu = ncu.unsupported(arch or toolchain.detect_arch())
    if no_ncu is None:
        api.require_gpu("ncu")
    elif progress:
        progress(f"kprof: {no_ncu}: kprof profile reports event timing, the driver's occupancy, "
                 "registers and spills instead")
    settings = stage.ProfileSettings(params=dict(params or {}), set_name=set_name,
                                     metrics=tuple(metrics), report_dir=folder, timeout=timeout)
    return stage.profile_specs([pipeline.built(r, arch) for r in resolved], settings,
                               diagnose=diagnose,
                               try_params=asked, auto_try=auto_try, bench=try_bench(arch, timeout),
                               peak=pipeline.cached_peak(), progress=progress)


@checked
def diagnose(name: str | Path, *, sizes: dict[str, int] | None = None,
             params: dict[str, str] | None = None,
             arch: str | None = None, try_params: dict[str, list[str]] | None = None,
             auto_try: bool = True, timeout: float = 600.0) -> Diagnosis:
    """``kprof profile NAME``'s diagnosis from Python: profile (with counters where ncu may read
    them, else without) and diagnose one spec, at ``sizes`` and with ``params`` (its defines)."""
    from kprof.commands import pipeline
    from kprof.diagnosis import stage
    from kprof.spec import catalog

    prepared = pipeline.prepare(catalog.load(str(name)), sizes, params=dict(params or {}),
                                arch=arch)
    got = stage.profile_one(prepared,
                            stage.ProfileSettings(params=dict(params or {}), timeout=timeout))
    return stage.diagnose_one(prepared, got, try_params=try_params, auto_try=auto_try,
                              bench=try_bench(arch, timeout),
                              peak=pipeline.cached_peak(), timeout=timeout)


def try_bench(arch: str | None, timeout: float) -> TryBench:
    """The diagnosis's tries timed as ``kprof bench`` runs (no history, a second at most each); a Ctrl-C in a try
    stops the diagnosis, not only the try."""
    from kprof.diagnosis.stage import TryBench

    def run(names: list[str] | list[KernelSpec], sizes: dict[str, int], params: list[str]) -> BenchReport:
        from kprof.commands import api

        report = api.run_bench(names, sizes=[f"{k}={v}" for k, v in sizes.items()], params=params,
                               baseline="none", max_time=1.0, min_time=0.2, arch=arch, timeout=timeout,
                               history=False)
        if report.interrupted:
            raise KeyboardInterrupt
        return report

    return TryBench(lambda name, sizes, words: run([name], sizes, [words]),
                    lambda specs, sizes: run(specs, sizes, []))


@checked
def profile(target: str | Path | Sequence[str], *, kernel: str | None = None,
            range: str | None = None,
            launch_skip: int = 0, launch_count: int = 10, set_name: str = "quick",
            metrics: Sequence[str] = (),
            sizes: dict[str, int] | None = None, params: dict[str, str] | None = None,
            baseline: str | None = None,
            report_dir: str | Path | None = None, arch: str | None = None,
            timeout: float = 600.0) -> list[KernelProfile]:
    """Nsight Compute over ``target``: a list of
    :class:`~kprof.measure.kernelprofile.KernelProfile`, one per kernel
    launch profiled. A spec (``kprof profile NAME``'s options): at ``sizes``, with ``params`` (its
    defines), each ``baseline`` profiled beside it; :func:`profile_specs` adds the diagnosis. A
    program (``kprof profile -- CMD``): kernels are picked by name (``kernel``, a regular
    expression) and/or NVTX range (``range``: the program's own, torch's, or a ``kprof.range``), at
    most ``launch_count`` of them after skipping ``launch_skip``. ``report_dir``: ncu's ``.ncu-rep``
    files kept there for its GUI (``--save-report``)."""
    from kprof.measure import profiling as prof

    if isinstance(target, (str, Path)):
        if kernel or range or launch_skip or launch_count != 10:
            raise UsageError("kernel, range, launch_skip and launch_count pick a program's "
                             "launches; a spec profiles its own kernels: give the program as a "
                             "list (['python', 'train.py'])")
        run = profile_specs([str(target)], sizes=sizes, params=params, baseline=baseline,
                            set_name=set_name,
                            metrics=metrics, report_dir=report_dir, arch=arch, timeout=timeout,
                            diagnose=False)
        if run.errors:
            raise run.errors[0][1]
        return run.profiles
    if params or baseline:
        raise UsageError("params and baseline apply to a spec (kprof.profile('rmsnorm_onepass', "
                         "params=...)); a program is profiled as it runs")
    from kprof.commands.api import require_gpu

    cmd = inputs.program_argv([str(a) for a in target], "profile", None)
    if launch_count < 1 or launch_skip < 0:
        raise UsageError("--launch-count must be 1 or more and --launch-skip 0 or more")
    folder = outputs.output_dir(report_dir, "--save-report", create=False) if report_dir is not None else None
    if folder is not None:
        _report_writable(folder / f"{prof.program_report_name(cmd)}.ncu-rep")
    require_gpu("ncu")
    from kprof.build.toolchain import detect_arch

    return prof.profile_program(cmd, arch or detect_arch(), kernel=kernel, nvtx_range=range,
                                launch_skip=launch_skip,
                                launch_count=launch_count, set_name=set_name,
                                metrics=tuple(metrics), timeout=timeout, report_dir=folder)


@checked
def profile_program(cmd: Sequence[str], *, kernel: str | None = None, range: str | None = None,
                    launch_skip: int = 0,
                    launch_count: int = 10, set_name: str = "quick", metrics: Sequence[str] = (),
                    arch: str | None = None,
                    report_dir: str | Path | None = None, timeout: float = 600.0) -> ProgramProfile:
    """``kprof profile -- CMD`` from Python: :func:`profile` over the program, then one more run of
    it without ncu for the user's line that launched each kernel (stopped once it has launched what
    ncu looked at), and the kernels ranked (:class:`kprof.diagnosis.program.ProgramProfile`)."""
    from kprof.diagnosis import program
    from kprof.tools.programs import launchsites

    profiles = profile(cmd, kernel=kernel, range=range, launch_skip=launch_skip,
                       launch_count=launch_count,
                       set_name=set_name, metrics=metrics, arch=arch, report_dir=report_dir,
                       timeout=timeout)
    argv = inputs.program_argv([str(a) for a in cmd], "profile", None)
    sites = launchsites.run(argv, timeout=timeout, env=proc.child_env(),
                            stop_after=launch_skip + launch_count,
                            kernels=program.profiled_names(profiles))
    return program.ProgramProfile(profiles, program.rank(profiles, sites), sites)


def _report_writable(path: Path) -> None:
    """A report's name that kprof may not write (a folder, a socket there): one line before anything
    runs."""
    try:
        outputs.output_kind(path)
    except UsageError as exc:
        raise UsageError(f"--save-report: {exc}") from None
