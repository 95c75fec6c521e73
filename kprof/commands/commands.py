"""One function per CLI command: typed options in, one pass down the pipeline, text or JSON out.

spec -> build -> launch -> (sanitize | profile | bench) -> results -> render; each command reads
top to bottom. The options arrive parsed and checked once (:mod:`kprof.commands.cli`: positive
timeouts, ``--size`` and ``--param`` as :class:`~kprof.spec.sweep.Sweep`). Lookups and builds go
through
:mod:`kprof.commands.pipeline`; policy lives in the stage modules; printing is in
:mod:`kprof.results.render`.
These functions decide what to run and which exit code it earns.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from kprof.commands.options import (
    BenchOptions,
    BuildOptions,
    CasesOptions,
    CompareOptions,
    DoctorOptions,
    HistoryOptions,
    ListOptions,
    MutantsOptions,
    NewOptions,
    OccupancyOptions,
    PeakOptions,
    ProfileOptions,
    RunOptions,
    SanitizeOptions,
)
from kprof.errors import (
    EXIT_BUILD,
    EXIT_CUDA,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_NOT_CHECKED,
    EXIT_OK,
    EXIT_TERMINATED,
    NcuError,
    UsageError,
)
from kprof.results import render, render_bench, render_build, render_profile, render_sanitize

if TYPE_CHECKING:
    from kprof.commands.pipeline import BenchPoint
    from kprof.diagnosis.model import Diagnosis
    from kprof.diagnosis.program import Ranked
    from kprof.findings import Allocation
    from kprof.measure.kernelprofile import KernelProfile
    from kprof.results.reports import BenchReport, SanitizeReport
    from kprof.tools.programs.launchsites import Sites
    from kprof.tools.sanitizers.toolrun import ToolResult


def _emit_json(data: object) -> None:
    """The whole document or none of it: made first, then written with Ctrl-C and SIGTERM held (an
    interrupt mid-write left half a JSON document on stdout)."""
    from kprof import proc

    text = json.dumps(data, indent=2, default=str) + "\n"
    with proc.deferred_interrupts():
        sys.stdout.write(text)
        sys.stdout.flush()


def cmd_list(opts: ListOptions) -> int:
    from kprof.commands import offline

    rows = offline.list_kernels(arch=opts.arch)
    if opts.json:
        _emit_json([r.to_dict() for r in rows])
    else:
        print(render_build.list_table(rows))
    return EXIT_OK


def cmd_new(opts: NewOptions) -> int:
    from kprof.commands import offline

    cu, spec = offline.new_kernel(opts.name, opts.dir, like=opts.like)
    if opts.json:
        _emit_json({"source": str(cu), "spec": str(spec)})
    else:
        print(f"wrote {cu} and {spec}\nnext: kprof run {spec}   (then kprof sanitize, bench, "
              "profile)")
    return EXIT_OK


def cmd_build(opts: BuildOptions) -> int:
    from kprof.commands import offline

    shown: list[render.Progress] = []  # made at the first build, when the number of builds is known

    def progress(name: str, how: str, seconds: float, total: int) -> None:
        if not shown:
            shown.append(render.Progress(total, sys.stderr, enabled=total > 1 and not opts.json))
        shown[0].finished(name, how, seconds)

    report = offline.build_kernels(opts.names, all=opts.all, params=opts.param, arch=opts.arch,
                                   force=opts.force, progress=progress)
    for p in shown:
        p.close()
    if opts.json:
        _emit_json(report.to_json())
    else:
        print(render_build.build_table(report.built, opts.param.names))
        for _, why in report.skipped:
            print(f"skipped: {why}")
        for name, failure in report.failed:
            print(failure.log.rstrip(), file=sys.stderr)
            print(f"kprof: error: {name}: {failure}", file=sys.stderr)
    return EXIT_BUILD if report.failed else EXIT_OK


def cmd_run(opts: RunOptions) -> int:
    from kprof.commands import api

    report = api.run(opts.name, sizes=opts.size.single_sizes("run"),
                     preset="sanitize" if opts.sanitize_sizes else "default",
                     seed=opts.seed, arch=opts.arch, timeout=opts.timeout)
    if opts.json:
        _emit_json(report.to_json())
    else:
        print(render_build.run_report(report.result, report.resolved, report.built))
    return EXIT_OK if report.ok else EXIT_FAILED


def cmd_sanitize(opts: SanitizeOptions) -> int:
    from kprof.commands import api

    if opts.list_tools:
        rows = api.checkers()
        if opts.json:
            _emit_json(rows)
        else:
            print(render_sanitize.checkers_table(rows))
        return 0
    if opts.from_xml:
        report = api.SanitizeReport(opts.from_xml, _from_xml(opts))
    elif opts.program:
        if opts.name:
            raise UsageError(f"give a kernel ({opts.name}) or a program after --, not both")
        if not opts.json:
            print(f"{_command_line(opts.program, 'sanitize')}  tools: {opts.tool}", flush=True)
        report = api.sanitize(opts.program, opts.tool, timeout=opts.timeout,
                              padding=opts.memcheck_padding, keep_pools=opts.keep_pools,
                              progress=None if opts.json else _progress, jobs=opts.jobs,
                              all_kernels=opts.all_kernels)
    else:
        if not opts.name:
            raise UsageError("name a kernel or spec to sanitize, give a program after --, or "
                             "--from-xml FILE")
        report = api.sanitize(opts.name, opts.tool,
                              sizes=opts.size.single_sizes("sanitize") or None, arch=opts.arch,
                              timeout=opts.timeout, padding=opts.memcheck_padding,
                              progress=None if opts.json else _progress)
    if opts.json:
        _emit_json(report.to_json())
    else:
        print(render_sanitize.sanitize_report(report.results, report.notes))
    if opts.sarif:  # after the report: a failed write (a full disk) loses none of it
        _write_json(Path(opts.sarif), report.to_sarif())
    return _sanitize_exit(report)


def _sanitize_exit(report: SanitizeReport) -> int:
    """1 findings, 0 clean, 8 a run that checked nothing (a program that launched no kernel), else 6."""
    if report.findings:
        return EXIT_FAILED
    if report.clean:
        return EXIT_OK
    unchecked = {r.status for r in report.results} <= {"clean", "not-checked"}
    return EXIT_NOT_CHECKED if unchecked else EXIT_CUDA


def _progress_line(text: str) -> None:
    print(f"  {text}", file=sys.stderr, flush=True)


def _progress(tool: str, result: ToolResult | None = None) -> None:
    if result is None:
        print(f"  running {tool} ...", file=sys.stderr, flush=True)
    else:
        state = f"{len(result.findings)} finding(s)" if result.findings else result.status
        print(f"  {tool}: {state} in {result.seconds:.1f} s", file=sys.stderr, flush=True)


# a runner's result file: its allocations and checks, kilobytes in practice
MAX_RESULT_BYTES = 64 * 1024 * 1024


def _from_xml(opts: SanitizeOptions) -> list[ToolResult]:
    from kprof import inputs
    from kprof.tools.sanitizers import compute_sanitizer as sanitize

    if opts.name:
        raise UsageError("--from-xml reads a saved report: give the file, not a kernel name")
    if opts.program:
        raise UsageError("--from-xml reads a saved report and runs nothing: give the report or a "
                         "program after --, not both")
    from kprof.tools.sanitizers import checkers

    if opts.tool != "all" and opts.tool not in checkers.sanitizers():
        raise UsageError(f"--from-xml: --tool {opts.tool} did not write it; the tools that write "
                         f"XML are {', '.join(checkers.sanitizers())} (or leave --tool out: kprof "
                         "works it out from the records)")
    allocations = _read_allocations(opts.allocations) if opts.allocations else []
    assert opts.from_xml is not None  # cmd_sanitize comes here only with it
    # --sarif over it: refused with the other outputs (cli)
    source = inputs.user_path(opts.from_xml, "--from-xml")
    return [sanitize.from_xml(source, None if opts.tool == "all" else opts.tool, allocations)]


def _read_allocations(path: str) -> list[Allocation]:
    from kprof import inputs
    from kprof.findings import allocation_of

    data = inputs.read_json(inputs.user_path(path, "--allocations"), "--allocations",
                            limit=MAX_RESULT_BYTES)
    allocations = data.get("allocations") if isinstance(data, dict) else None
    if not isinstance(allocations, list):
        raise UsageError(f"--allocations {path}: no 'allocations' list in it (use the runner's "
                         "result.json)")
    out = []
    for i, a in enumerate(allocations):
        found = allocation_of(a)
        if found is None:
            raise UsageError(f"--allocations {path}: allocations[{i}] needs name, dtype, base and "
                             "nbytes, and a shape that is a list of sizes if it has one (use the "
                             "runner's result.json)")
        out.append(found)
    return out


def _write_json(path: Path, data: object) -> None:
    from kprof import outputs

    outputs.replace_file(path, json.dumps(data, indent=2, default=str) + "\n")


def cmd_mutants(opts: MutantsOptions) -> int:
    """``kprof mutants NAME``: the score of the spec's verdict; 0 when no mutant survived, 1
    otherwise (a mutant that does not build is the generator's, not the spec's: listed, not
    counted)."""
    from kprof import parallel
    from kprof.commands import corpora

    report = corpora.run_mutants(opts.name, dry_run=opts.dry_run, arch=opts.arch,
                                 timeout=opts.timeout, limit=opts.limit,
                             jobs=opts.jobs, progress=parallel.Progress)  # on stderr, --json or not
    _emit_json(report.to_json()) if opts.json else print(render_sanitize.mutants_report(report))
    return EXIT_FAILED if any(r.verdict == "survived" for r in report.results) else EXIT_OK


def cmd_cases(opts: CasesOptions) -> int:
    from kprof import parallel
    from kprof.commands import corpora
    from kprof.corpus import cases
    from kprof.spec import catalog

    if opts.perf or opts.save_report:  # --save-report without --perf: one line there
        return _perf_cases(opts)
    if opts.bench:
        return _bench_cases(opts)
    if opts.list:
        corpus = cases.load_all([catalog.load(n) for n in opts.names] if opts.names
                                else catalog.group("case"))
        rows = [c.to_dict() for c in corpus]
        _emit_json(rows) if opts.json else print(render_sanitize.cases_list(rows))
        return EXIT_OK
    beyond = [] if opts.names else corpora.cases_beyond(opts.arch)
    results = corpora.run_cases(opts.names or None, jobs=opts.jobs, arch=opts.arch,
                                timeout=opts.timeout, beyond=beyond,
                                progress=None if opts.json else parallel.Progress)
    for name, why in beyond:
        print(f"  {name}: not run on this GPU: {why}", file=sys.stderr, flush=True)
    if not opts.json:
        for result in results:
            said = ("MISS" if not result.ok else f"needs {result.case.expect.since}"
                    if result.unseen else "ok")
            print(f"  {result.case.name} ({result.case.expect.tool}): {said}",
                  file=sys.stderr, flush=True)
    if opts.json:
        _emit_json([r.to_dict() for r in results])
    else:
        print(render_sanitize.cases_matrix(results))
    return EXIT_OK if all(r.ok for r in results) else EXIT_FAILED


def _bench_cases(opts: CasesOptions) -> int:
    """``kprof cases --bench``: the cheat corpus, listed or run whole."""
    from kprof.commands import corpora
    from kprof.spec import catalog

    if opts.names:
        raise UsageError("kprof cases --bench runs the whole cheat corpus: name no case")
    if opts.list:
        from kprof.corpus import benchcases

        rows = [{"name": c.name, "exploit": c.exploit, "catch": list(c.catch)}
                for c in benchcases.load(catalog.BENCH_CASES_DIR).cheats]
        _emit_json(rows) if opts.json else print(render_bench.bench_cases_list(rows))
        return EXIT_OK
    report = corpora.run_bench_cases(arch=opts.arch, timeout=opts.timeout)
    if opts.json:
        _emit_json(report.to_json())
    else:
        print(render_bench.bench_cases_report(report))
    return EXIT_OK if report.ok else EXIT_FAILED


def _perf_cases(opts: CasesOptions) -> int:
    from kprof.commands import corpora, streams
    from kprof.corpus import perfcases
    from kprof.spec import catalog

    if not opts.perf:
        raise UsageError("--save-report goes with --perf (the seeded bugs run no Nsight Compute)")
    if opts.bench:
        raise UsageError("give --perf or --bench, not both")
    report_dir = _report_dir(opts.save_report)  # checked before anything runs
    corpus = perfcases.load_all([catalog.load(n) for n in opts.names] if opts.names
                                else catalog.group("perf"))
    if opts.list:
        rows = [{"name": c.name, **{k: v for k, v in asdict(c.expect).items() if v is not None}}
                for c in corpus]
        _emit_json(rows) if opts.json else print("\n".join(
            f"{c.name}: {c.expect.cause} at {c.expect.line}" + (f" (none where {c.expect.unless})"
                                                                if c.expect.unless else "")
            for c in corpus))
        return EXIT_OK
    stopped: list[bool] = []
    results = corpora.run_perf_cases(corpus, arch=opts.arch, timeout=opts.timeout,
                                     report_dir=report_dir,
                                     progress=None if opts.json else lambda r: print(
                                         f"  {r.case}: {'ok' if r.ok else 'MISS'}", file=sys.stderr,
                                         flush=True),
                                     interrupted=lambda: stopped.append(True))
    tally = perfcases.tally(results)
    if opts.json:
        _emit_json({"tally": tally, "cases": [r.to_dict() for r in results],
                    "interrupted": bool(stopped)})
    else:
        print(render_profile.perf_cases_table(results, tally))
    if stopped:
        print(f"interrupted: {len(results)} of {len(corpus)} cases judged and shown",
              file=sys.stderr)
        return EXIT_TERMINATED if streams.TERMINATED else EXIT_INTERRUPTED
    return EXIT_OK if all(r.ok for r in results) else EXIT_FAILED


def cmd_profile(opts: ProfileOptions) -> int:
    from kprof.commands import profiles

    extra = tuple(m.strip() for m in opts.metrics.split(",") if m.strip())
    if opts.program:
        if opts.baseline:
            raise UsageError("--baseline profiles a spec's baselines beside it: name the spec "
                             "(kprof profile rmsnorm_onepass --baseline torch.compile); with -- "
                             "CMD, pick kernels by --kernel or --range")
        return _profile_program(opts, extra)
    if not opts.names:
        raise UsageError("name the kernels to profile, or give a program after --, e.g. kprof "
                         "profile -- python train.py")
    if opts.kernel or opts.nvtx_range or opts.launch_skip or opts.launch_count != 10:
        raise UsageError("--kernel, --range, --launch-skip and --launch-count pick a program's "
                         "launches (kprof profile --kernel REGEX -- python train.py); "
                         f"{opts.names[0]} is profiled whole")
    run = profiles.profile_specs(opts.names, sizes=opts.size.single_sizes("profile"),
                                 params=opts.param.single("profile"),
                                 baseline=opts.baseline, set_name=opts.set_name, metrics=extra,
                                 report_dir=_report_dir(opts.save_report),
                                 tries=[w for group in opts.tries for w in group],
                                 auto_try=not opts.no_try, arch=opts.arch, timeout=opts.timeout,
                                 progress=None if opts.json
                                 else lambda line: print(line, file=sys.stderr, flush=True))
    # printed before any file is written
    _profile_output(run.profiles, run.errors, opts.json, run.diagnoses)
    if opts.plot and run.profiles:
        from kprof.results import plot

        plot.roofline(run.profiles, Path(opts.plot))
    if opts.sarif:
        from kprof.diagnosis.model import to_sarif
        from kprof.version import __version__

        _write_json(Path(opts.sarif), to_sarif(run.diagnoses, __version__, root=str(Path.cwd())))
    return EXIT_CUDA if run.errors else EXIT_OK


def _command_line(program: list[str], verb: str) -> str:
    """The user's command as a shell would take it back, one line at most 200 characters, after it
    is checked (a missing program is its one error line, with no header before it)."""
    import shlex

    from kprof import inputs

    inputs.program_argv(program, verb, None)
    line = inputs.one_line(shlex.join(program))
    return line if len(line) <= 200 else line[:197] + "..."


def _profile_program(opts: ProfileOptions, extra: tuple[str, ...]) -> int:
    from kprof.commands import profiles

    assert opts.program is not None  # cmd_profile comes here only with -- CMD
    if opts.names:
        raise UsageError(f"give kernels ({' '.join(opts.names)}) or a program after --, not both")
    report_dir = _report_dir(opts.save_report)  # checked before anything runs
    if not opts.json:
        print(f"profiling {_command_line(opts.program, 'profile')} ...", file=sys.stderr,
              flush=True)
    try:
        found = profiles.profile_program(opts.program, kernel=opts.kernel, range=opts.nvtx_range,
                                         launch_skip=opts.launch_skip,
                                         launch_count=opts.launch_count,
                                         set_name=opts.set_name, metrics=extra, arch=opts.arch,
                                         report_dir=report_dir, timeout=opts.timeout)
    except NcuError as exc:
        _profile_output([], [(" ".join(opts.program), exc)], opts.json)
        return EXIT_CUDA
    if opts.json:
        _profile_output(found.profiles, [], True, ranking=found.ranking, sites=found.sites)
    else:
        _profile_output(found.profiles, [], False)
        print()
        print(render_profile.program_ranking(found.ranking, sites=found.sites))
    # after the results are printed: a failed write loses none of them
    if opts.plot and found.profiles:
        from kprof.results import plot

        plot.roofline(found.profiles, Path(opts.plot))
    return EXIT_OK


def _report_dir(path: str | None) -> Path | None:
    from kprof import outputs

    return outputs.output_dir(path, "--save-report", create=False) if path else None


def _profile_output(profiles: list[KernelProfile], errors: list[tuple[str, NcuError]],
                    as_json: bool,
                    diagnoses: list[Diagnosis] | None = None, ranking: list[Ranked] | None = None,
                    sites: Sites | None = None) -> None:
    from kprof.commands import pipeline
    from kprof.measure import kernelprofile, profiling

    peak = pipeline.cached_peak()  # the ceilings kprof peak measured on this GPU, if it has
    profiles = [profiling.against_ceilings(p, peak) for p in profiles]

    if as_json:
        from kprof.results import history

        _emit_json({"version": kernelprofile.PROFILE_VERSION, "provenance": history.provenance(),
                    "kernels": [p.to_dict() for p in profiles],
                    "diagnoses": [d.to_dict() for d in diagnoses or []],
                    **({"ranking": [r.to_dict() for r in ranking]} if ranking is not None else {}),
                    **({"sites": sites.to_dict()} if sites is not None else {}),
                    "errors": [{"kernel": n, "error": str(e), "reason": e.reason}
                               for n, e in errors]})
        return
    if profiles:
        print(render_profile.profile_report(profiles))
    if diagnoses:
        from kprof.diagnosis.model import render as render_diagnosis

        for d in diagnoses:
            print()
            print(render_diagnosis(d))
    for _name, failure in errors:
        if failure.log:
            print(failure.log.rstrip(), file=sys.stderr)
        print(f"kprof: error: {failure}", file=sys.stderr)


def cmd_occupancy(opts: OccupancyOptions) -> int:
    from kprof.commands import offline

    r = offline.occupancy_of(opts.name, sizes=opts.size.single_sizes("occupancy"),
                             blocks=opts.block, dynamic_smem=opts.dynamic_smem, arch=opts.arch)
    if opts.json:
        _emit_json(r.to_json())
    else:
        print(render_build.occupancy_report(r.kernel, r.arch, r.usage, r.dynamic_smem, r.launch,
                                            r.sweep, advice=r.advice))
    return EXIT_OK


def cmd_bench(opts: BenchOptions) -> int:
    from kprof.commands import api

    def say(i: int, n: int, point: BenchPoint) -> None:
        label = " ".join(f"{k}={v}" for k, v in {**point.sizes, **point.params}.items())
        print(f"[{i}/{n}] {point.spec.name} {label}".rstrip(), file=sys.stderr, flush=True)

    report = api.run_bench(opts.names, sizes=opts.size, params=opts.param, baseline=opts.baseline,
                           mode=opts.mode or "cold",
                           timer=opts.timer, rel_stdev=opts.rel_stdev, min_time=opts.min_time,
                           max_time=opts.max_time,
                           arch=opts.arch, timeout=opts.timeout, history=not opts.no_history,
                           progress=None if opts.json else say,
                           peak_progress=None if opts.json else _progress_line)
    _bench_output(report, opts)
    return _bench_exit(report, opts.strict)


def _bench_output(report: BenchReport, opts: BenchOptions) -> None:
    """What a bench run says: its cut or loss on stderr, the JSON or the table, then the plot."""
    results = report.points
    if report.interrupted:
        print(f"interrupted: {len(results)} of {report.planned} points measured and kept (run "
              f"{report.run})",
              file=sys.stderr)
    if report.lost is not None:
        print(f"kprof: error: {report.lost}; {max(len(results) - 1, 0)} of {report.planned} points "
              f"are kept in the history store (run {report.run})", file=sys.stderr)
    if opts.json:
        _emit_json(report.to_json())
    elif results:
        print(render_bench.bench_table(results, report.peak,
                                       report.run if report.recorded else None))
    if opts.plot and results:  # after the results are printed: a failed write loses none of them
        from kprof.results import plot

        plot.bench(results, Path(opts.plot))


def _bench_exit(report: BenchReport, strict: bool) -> int:
    results = report.points
    if report.interrupted:
        return EXIT_INTERRUPTED
    if report.lost is not None:
        return report.lost.exit_code
    if any(r.status == "error" for r in results):
        return EXIT_CUDA
    flagged = [r for r in results if r.integrity or any(b.baseline_integrity for b in r.baselines)]
    if strict and flagged:
        print(f"kprof: --strict: {len(flagged)} of {len(results)} points raised a "
              "benchmark-integrity flag (the 'integrity:' warnings above)", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_FAILED if any(r.status != "ok" for r in results) else EXIT_OK


def cmd_peak(opts: PeakOptions) -> int:
    from kprof.commands import api

    peak = api.run_peak(refresh=opts.refresh, progress=_progress_line, thorough=opts.thorough)
    _emit_json(peak.to_dict()) if opts.json else print(render_bench.peak_report(peak))
    return EXIT_OK


def cmd_history(opts: HistoryOptions) -> int:
    from kprof.commands import offline
    from kprof.results import history

    rows = offline.bench_history(opts.name, limit=opts.limit)
    if opts.json:
        _emit_json([r.to_dict() for r in rows])
    else:
        print(render_bench.history_table(rows, str(history.path())))
    return EXIT_OK


def cmd_compare(opts: CompareOptions) -> int:
    from kprof.commands import offline

    c = offline.compare_runs(opts.before, opts.after)
    _emit_json(c.to_json()) if opts.json else print(render_bench.compare_table(c.before, c.after, c.rows))
    return EXIT_OK


def cmd_doctor(opts: DoctorOptions) -> int:
    from kprof.commands import offline

    checks = offline.doctor()
    ready = offline.readiness(checks, opts.for_commands)
    _emit_json([asdict(c) for c in checks]) if opts.json else print(render_build.doctor_table(checks, ready))
    return next((r.exit_code for r in ready if not r.ready), EXIT_OK)
