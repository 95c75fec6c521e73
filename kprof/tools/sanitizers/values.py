"""``values``: kprof's own detector, for what the sanitizers cannot see.

The runner launches the kernel several times on the same inputs. Before each run every output is
poisoned and every SM's shared memory is scrubbed, with pattern A (NaN) or pattern B (a
finite value): A, B, A, A, ... Then, per output buffer:

- elements holding A's poison after an A run and B's after a B run were never written
  (``unwritten-output``);
- elements that differ between the A and B runs depend on memory nothing wrote: an output read
  before it was written, or shared memory read before any thread stored it (``uninitialized-read``;
  initcheck on this toolkit sees only global memory);
- elements that differ between runs with the same pattern are nondeterministic: a race, also in
  global memory, which racecheck never sees (``race``);
- the first A run disagreeing with the float64 reference is a ``wrong-result``;
- then the same kernels built with a pause of a pseudo-random length per warp at the start of each
  kernel and after each ``__syncthreads()`` (:mod:`kprof.build.shake`) run three times under pattern
  A: an element that differs from the first A run depends on the order the warps run in (a missing
  barrier whose warps keep step on an idle GPU, which no sanitizer reports), a ``race``.

Differences within the spec's tolerance (the same as kprof run's verdict) are not counted:
float atomics legitimately reorder additions. This detector names the buffer and the first
differing indices, not a source line.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from kprof import proc
from kprof.findings import Finding
from kprof.launch import launch
from kprof.launch.job import Job, ValuesMode
from kprof.tools.programs import coverage
from kprof.tools.sanitizers.checker import Needs, Program, Settings, SuiteChild
from kprof.tools.sanitizers.toolrun import ToolResult, classify


def run(job: Job, *, scrub_cubin: str | None, scrub_note: str = "", repeats: int = 5,
        timeout: float = 300.0) -> ToolResult:
    """Run the detector in a child (parent side). Without the scrubber's cubin, uninitialised
    shared-memory reads are seen less often, and the report says so."""
    job = replace(job, mode=ValuesMode(repeats=repeats, scrub_cubin=scrub_cubin))
    done, data = launch.run(job, timeout=timeout)
    findings = list(data.findings)
    notes = _notes(job, scrub_cubin, scrub_note)
    result = classify("values", done, data, findings, notes, timeout, have_xml=True)
    if result.status == "clean" and data.status != "ok":
        return ToolResult("values", "target-error", [], done.seconds,
                          "the values runs did not finish: "
                          f"{data.error.message if data.error else 'no result'}",
                          notes=result.notes, log=done.tail(40))
    return result


def run_batch(jobs: list[Job], *, scrub_cubin: str | None, scrub_note: str = "", repeats: int = 5,
              timeout: float = 300.0) -> list[ToolResult | None]:
    """The detector over several jobs in one child, one after the other (the runs still have the GPU
    to themselves: one process, one job at a time). Each job that finished has its own result, as
    :func:`run` gives it; None for one the child never finished, to run again alone."""
    done, datas = launch.run_batch([replace(j,
                                            mode=ValuesMode(repeats=repeats,
                                                            scrub_cubin=scrub_cubin))
                                    for j in jobs], timeout=timeout)
    out: list[ToolResult | None] = []
    for job, data in zip(jobs, datas):
        if not data.finished or data.job_seconds is None:
            out.append(None)
            continue
        own = replace(done, returncode=0, seconds=data.job_seconds, timed_out=False)
        out.append(classify("values", own, data, list(data.findings),
                            _notes(job, scrub_cubin, scrub_note), timeout, have_xml=True))
    return out


def _notes(job: Job, scrub_cubin: str | None, scrub_note: str) -> list[str]:
    """What the detector could not do on ``job``: scrub shared memory, or run the warp-delay
    build."""
    notes = [] if scrub_cubin else ["shared-memory scrubber unavailable "
                                    f"({scrub_note or 'not built'}); uninitialised shared reads "
                                    "may go unseen"]
    if not job.target.shaken_cubin and not job.target.python:
        notes.append("no warp-delay build: a missing barrier whose warps keep step may go unseen")
    return notes


RUNS = 2  # runs of a program whose launches are compared (then two more to capture what differed)
# the second run of each pair: every launch starts on a crowded GPU
CROWD = {"KPROF_LAUNCH_CROWD": "1"}


def run_program(cmd: list[str], *, timeout: float, env: dict[str, str],
                cwd: str | Path | None = None, pools_off: bool | None = None) -> ToolResult:
    """The values detector for any program: the program run :data:`RUNS` times with kprof's launch
    recorder loaded (:mod:`kprof.hooks.launch_recorder`), each launch's device allocations hashed
    after the kernel, the second run with each kernel started on a crowded GPU (every SM but one
    busy with the recorder's own spinning kernel for a moment: the blocks run in another order,
    fewer at a time). A race in global memory, whose lost updates on an idle GPU often come out the
    same every run, comes out otherwise there. The first launch whose outputs differ between the
    runs is a ``race`` finding with its kernel and launch site, unless two more runs (idle, crowded)
    that copy that allocation show a float sum added up in another order (every difference within
    :data:`kprof.tools.programs.launchlog.ROUNDING`),
    which is said in a note: nondeterministic on purpose. Races in global memory, which no sanitizer
    sees, are found this way."""
    import tempfile

    from kprof import inputs
    from kprof.tools.programs import launchlog

    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kprof-values-") as tmp:
        runs = []
        for k in range(RUNS):
            got = _run_logged(cmd, Path(tmp), f"run-{k}", CROWD if k % 2 else {}, timeout=timeout,
                              env=env, cwd=cwd)
            if isinstance(got, ToolResult):
                return got
            runs.append(got)

        def seconds() -> float:
            return time.monotonic() - start

        if not runs[0].launches:
            why = ("kprof's launch recorder could not read the program's launches: "
                   f"{runs[0].errors[0]}" if runs[0].errors
                   else "kprof's launch recorder saw no kernel launched through the driver API "
                        "(cuLaunchKernel): launches through the runtime API (PyTorch's own "
                        "kernels, C++ programs) are not seen")
            return ToolResult("values", "not-checked", [], seconds(), why)
        checked = coverage.of_launches(runs[0].launches, cut=runs[0].cut, pools_off=pools_off)
        compared = f"{len(runs[0].launches):,} launches compared over {RUNS} runs, one on a crowded GPU" + (
            f" (the first {runs[0].cut:,})" if runs[0].cut is not None else "") + (
            f"; {len(runs[0].errors)}+ could not be read: {runs[0].errors[0]}" if runs[0].errors
            else "")
        where = launchlog.compare(runs[0], runs[1])
        if where is None:
            return ToolResult("values", "clean", [], seconds(), "", notes=[compared],
                              checked=checked)
        detail = where.detail
        if where.what == "output" and where.arg is not None:
            copies = []
            for k in range(2):  # the same two runs again, that allocation's bytes kept
                capture = {"KPROF_LAUNCH_CAPTURE": f"{where.seq}:{where.arg}",
                           "KPROF_LAUNCH_CAPTURE_DIR": tmp}
                got = _run_logged(cmd, Path(tmp), f"capture-{k}",
                                  {**capture, **(CROWD if k % 2 else {})},
                                  timeout=timeout, env=env, cwd=cwd)
                path = got.captures.get((where.seq, where.arg)) if not isinstance(got, ToolResult) else None
                # only the copies asked for, here
                if path and Path(path).resolve().parent == Path(tmp).resolve():
                    copies.append(inputs.read_bytes(path, "a launch's copy", limit=1 << 31))
                    Path(path).unlink()
            if len(copies) == 2:
                diff = launchlog.difference(copies[0], copies[1])
                if diff.rounding:
                    return ToolResult("values", "clean", [], seconds(), "", notes=[compared, (
                        f"launch {where.seq} of {where.kernel} "
                        f"({where.site or 'launch site unknown'}) writes results that differ "
                        f"between runs by at most {diff.max_rel:.2g} relative ({diff.differing:,} "
                        f"of {diff.words:,} words): a float sum added up in another order each run "
                        "(atomics), nondeterministic on purpose; not reported as a race")], checked=checked)
                detail += "; in two more runs " + diff.text()
        finding = Finding("values", "race", where.kernel, None, None, thread=None, block=None,
                          count=1,
                          message="results differ between two runs of the same program (one of "
                                  "them on a crowded GPU)",
                          detail=detail, launch=where.site)
        return ToolResult("values", "findings", [finding], seconds(), "", notes=[compared],
                          checked=checked)


def _run_logged(cmd: list[str], folder: Path, name: str, extra: dict[str, str], *, timeout: float,
                env: dict[str, str], cwd: str | Path | None) -> Any:
    """One run of the program with the recorder: its log
    (:class:`kprof.tools.programs.launchlog.Run`), or the ToolResult that says why there is none (it
    failed, hung, or the recorder could not start)."""

    from kprof import proc
    from kprof.tools.programs import exitcode, launchlog

    log, status_path = folder / f"{name}.jsonl", folder / f"{name}.status.json"
    done = proc.run(exitcode.wrap(cmd, status_path), timeout=timeout, cwd=cwd,
                    env={**env, **extra, "KPROF_LAUNCH_LOG": str(log)})
    if done.timed_out:
        return ToolResult("values", "timeout", [], done.seconds,
                          f"the program did not finish within {timeout:g} s (values: it runs "
                          f"{RUNS} times or more)",
                          notes=[], log=done.tail(40))
    status = exitcode.read_status(status_path)
    code = None if status is None else status.returncode
    if code != 0:
        how = "did not start" if status is None else status.error or f"exited with code {code}"
        return ToolResult("values", "target-error", [], done.seconds,
                          f"the program {how} (values: each launch's outputs compared over {RUNS} "
                          "runs)", notes=[],
                          log=done.tail(40))
    run = launchlog.read_file(str(log))
    if not run.ok:
        return ToolResult("values", "not-checked", [], done.seconds, run.why, notes=[],
                          log=done.tail(40))
    return run


class ValuesDetector:
    """The values detector as a checker (:class:`kprof.tools.sanitizers.checker.Checker`): no
    sanitizer, the GPU to itself (it compares runs), findings that a memory error beside it may
    explain."""

    name = "values"
    summary = "kprof's own: unwritten outputs, uninitialised shared reads and races in any memory, by comparing runs"
    needs = Needs(sanitizer=False, alone=True, shaken=True, effects=True, in_all_programs=False,
                  not_for_tests="the values detector runs kprof's own launches of a spec, or a "
                                "whole program again and again (kprof sanitize --tool values -- "
                                "python -m pytest FILE)")

    def check_job(self, job: Job, settings: Settings) -> ToolResult:
        found = run(job, scrub_cubin=settings.scrub_cubin, scrub_note=settings.scrub_note,
                    timeout=settings.timeout)
        if not found.ok or job.target.python is not None:
            return found
        kernels = {s.entry for s in job.target.steps if s.entry != "cublas_sgemm"}
        return replace(found, checked=coverage.of_spec(len(job.target.steps), len(kernels)))

    def check_jobs(self, jobs: list[Job], settings: Settings) -> list[ToolResult]:
        """In one child, one job after the other (:func:`run_batch`); alone each job it did not
        finish."""
        got = run_batch(jobs, scrub_cubin=settings.scrub_cubin, scrub_note=settings.scrub_note,
                        timeout=settings.timeout)
        return [r if r is not None else self.check_job(j, settings) for j, r in zip(jobs, got)]

    def check_program(self, program: Program, settings: Settings) -> ToolResult:
        return run_program(list(program.cmd), timeout=settings.timeout, env=program.env,
                           cwd=program.cwd, pools_off=program.pools_off)

    def check_suite_child(self, argv: list[str], child: SuiteChild) -> tuple[proc.Completed, str]:
        from kprof.errors import UsageError

        raise UsageError(f"--kprof-sanitize=values: {self.needs.not_for_tests}")
