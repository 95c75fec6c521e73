"""The corpora from Python: ``kprof.run_cases()`` (the seeded bugs, ``kprof cases``),
``kprof.run_bench_cases()`` (the cheat corpus), ``kprof.run_perf_cases()`` (the performance corpus)
and ``kprof.run_mutants()`` (a spec's mutation score). The command layer's part: the specs looked up
and built, handed to the corpus stage (:mod:`kprof.corpus`), which runs and judges them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kprof.commands import api
from kprof.commands.apitypes import checked
from kprof.errors import UsageError
from kprof.results.reports import BenchCasesReport

if TYPE_CHECKING:
    from kprof.corpus.cases import CaseResult
    from kprof.corpus.mutation import MutantsReport
    from kprof.corpus.perfcases import PerfCase, PerfResult
    from kprof.diagnosis.model import Diagnosis
    from kprof.tools.nsight.ncu import RuleResult


@checked
def run_cases(names: Sequence[str] | None = None, *, jobs: int | None = None,
              arch: str | None = None,
          timeout: float = 300.0, progress: Callable[[int], Any] | None = None,
          beyond: list[tuple[str, str]] | None = None) -> list[CaseResult]:
    """The seeded-bug corpus (``kprof cases``): each case's bug under the tool it is for and its
    fixed twin under every tool, the sanitizers side by side (``jobs``), then the values detector
    alone on the GPU. A :class:`~kprof.corpus.cases.CaseResult` per case, in order. ``progress``,
    given the number of children, returns what is stepped as each ends and closed at the end
    (``kprof.parallel.Progress``: the CLI's ``[3/27] twins memcheck (11) 16.0 s`` lines)."""
    from kprof import parallel
    from kprof.commands import pipeline
    from kprof.corpus import cases as cases_mod
    from kprof.spec import catalog
    from kprof.tools.sanitizers import checkers

    corpus = cases_mod.load_all([catalog.load(n) for n in names] if names
                                else catalog.group("case"))
    api.require_gpu("compute-sanitizer" if checkers.needs_sanitizer(c.expect.tool for c in corpus)
                    else None)
    # the whole corpus: the cases this GPU cannot run are left out (``beyond``: cases_beyond's)
    if not names:
        skipped = {name for name, _ in (cases_beyond(arch) if beyond is None else beyond)}
        corpus = [c for c in corpus if c.name not in skipped]
    built = parallel.map_jobs(lambda case: pipeline.case_jobs(case, arch), corpus,
                              parallel.build_jobs(len(corpus)))
    # built side by side: a cold cache took 15 s one by one
    pairs = {case.name: pair for case, pair in zip(corpus, built)}
    return cases_mod.run_corpus(corpus, pairs, scrub_cubin=pipeline.scrubber(arch)[0], jobs=jobs,
                                timeout=timeout, progress=progress)


def cases_beyond(arch: str | None) -> list[tuple[str, str]]:
    """The corpus's cases that need a newer GPU than ``arch`` (this GPU's by default), with why: the
    whole-corpus ``kprof cases`` leaves them out and says so; named, one is refused (exit 2)."""
    from kprof.build.toolchain import check_arch, detect_arch
    from kprof.spec import catalog

    arch = check_arch(arch or detect_arch())
    return [(spec.name, why) for spec in catalog.group("case")
            if (why := spec.unsupported_on(arch))]


@checked
def run_perf_cases(corpus: Sequence[PerfCase] | None = None, *, arch: str | None = None,
                   timeout: float = 300.0,
                   report_dir: Path | None = None,
                   progress: Callable[[PerfResult], None] | None = None,
                   interrupted: Callable[[], None] | None = None) -> list[PerfResult]:
    """``kprof cases --perf``: each case of the performance corpus benched beside its twin (one
    run), profiled (Nsight Compute's full set: its rules too) and diagnosed; a
    :class:`kprof.corpus.perfcases.PerfResult`
    each, in order (:func:`kprof.corpus.perfcases.run_case`). A Ctrl-C ends the run with the cases
    judged so far (``interrupted()`` is called then). ``report_dir``: each case's ``.ncu-rep`` kept
    there."""
    import tempfile

    from kprof.commands import pipeline, profiles
    from kprof.corpus import perfcases
    from kprof.diagnosis import stage
    from kprof.spec import catalog
    from kprof.tools.nsight import ncu

    api.require_gpu(None)
    tries = profiles.try_bench(arch, timeout)

    def bench(names: list[str]) -> object:
        report = api.run_bench(names, baseline="none", max_time=0.5, min_time=0.2, arch=arch,
                               timeout=timeout, history=False)
        # the bench kept its points; the corpus stops too, not only this bench
        if report.interrupted:
            raise KeyboardInterrupt
        return report

    def diagnosed(case: PerfCase, seconds: float | None,
                  own: tuple[float, ...]) -> tuple[Diagnosis, list[RuleResult], str]:
        prepared = pipeline.prepare(case.spec, None, arch=arch)
        with tempfile.TemporaryDirectory(prefix="kprof-perf-") as tmp:
            where = report_dir or Path(tmp)
            got = stage.profile_one(prepared,
                                    stage.ProfileSettings(set_name="full", report_dir=where,
                                                          timeout=timeout))
            rules = ncu.rules_of(where / f"{case.spec.name}.ncu-rep")
        d = stage.diagnose_one(prepared, got, seconds=seconds, kernel_seconds=own, bench=tries,
                               peak=pipeline.cached_peak(), timeout=timeout)
        return d, rules, prepared.built.arch

    cases = list(corpus) if corpus is not None else perfcases.load_all(catalog.group("perf"))
    return perfcases.run_all(cases, bench=bench, diagnosed=diagnosed, progress=progress,
                             interrupted=interrupted)


@checked
def run_bench_cases(*, arch: str | None = None, timeout: float = 300.0,
                    max_time: float = 2.0) -> BenchCasesReport:
    """The cheat corpus (``bench_cases/``): the honest operation timed with every cheat as its
    baseline in one ``kprof bench`` run (not recorded in the history), each cheat caught or missed
    by its flags."""
    from kprof.corpus import benchcases
    from kprof.spec import catalog

    corpus = benchcases.load(catalog.BENCH_CASES_DIR)
    report = api.run_bench([str(corpus.spec)], baseline=",".join(c.name for c in corpus.cheats),
                           timer="auto",
                       max_time=max_time, arch=arch, timeout=timeout, history=False)
    # stopped (Ctrl-C, SIGTERM) before the one point was measured: kprof says so, exit 130
    if not report.points:
        raise KeyboardInterrupt
    (point,) = report.points
    honest, results = benchcases.judge(corpus, point)
    return BenchCasesReport(honest, results, point)


@checked
def run_mutants(name: str, *, dry_run: bool = False, arch: str | None = None,
                timeout: float | None = None, limit: int | None = None, jobs: int | None = None,
                progress: Callable[[int], Any] | None = None) -> MutantsReport:
    """Mutants of a spec's kernel, each judged by the spec's verdict and then the checkers: a
    :class:`kprof.corpus.mutation.MutantsReport` (:func:`kprof.corpus.mutation.run` says how)."""
    from kprof import inputs
    from kprof.build import cusource
    from kprof.commands import pipeline
    from kprof.corpus import mutation
    from kprof.spec import catalog

    spec = catalog.load(name)
    if spec.python:
        raise UsageError(f"kprof mutants {name}: a Python operation has no kernel source to mutate")
    text = inputs.read_text(spec.source, "the kernel's source", limit=cusource.MAX_SOURCE_BYTES)
    if not dry_run:
        api.require_gpu(None)
    return mutation.run(spec, text, pipeline.Preparer(arch), dry_run=dry_run, timeout=timeout,
                        limit=limit, jobs=jobs, progress=progress)
