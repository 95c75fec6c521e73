"""The only compute-sanitizer caller: argv builder and the thin run around it (its XML is decoded by
:mod:`kprof.tools.sanitizers.sanitizer_xml`).

Each tool runs in its own child process: compute-sanitizer wrapping ``python -m
kprof.child.runner``, with ``--xml --save`` (the parser reads the XML, never the text),
``--error-exitcode`` (the tool's default exit code is 0 even with errors), and a timeout. The
runner's own result file says whether the target really ran: a target that fails to start leaves the
same empty XML as a clean run, so "clean" is only claimed when the runner reached the end of its
launch.

Defaults chosen to beat running the tools by hand:
- memcheck: ``--padding 256`` so a write that overflows into the next allocation lands in padding
  and is caught; ``--leak-check full``; leaks of kprof's own buffers (left when a faulting kernel
  killed the runner) are not reported as the kernel's.
- racecheck: ``--racecheck-report all``: hazard records give the threads and block, the analysis
  record gives both source lines and the count.
- initcheck: the runner does not poison outputs, so a read of memory nothing wrote stays visible.
- all but racecheck: ``--show-backtrace device`` (the kernel line comes from ``-lineinfo``; host
stacks
  only bloat the XML, but a finding inside a CUDA header, ``__syncwarp`` in
  ``sm_30_intrinsics.hpp``, needs the device frames to reach the user's call); racecheck ``no``
  (with device frames, on an H200 at 2370a0e, its "Race condition" records stopped joining its
  hazards and a WAR race read as RAW); ``--check-exit-code no`` (kprof reads the runner's status
  itself).
"""

from __future__ import annotations

import functools
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from kprof import inputs, proc
from kprof.errors import KprofError, UsageError
from kprof.findings import Allocation, Finding
from kprof.launch import launch
from kprof.launch.job import Job, RunMode
from kprof.tools.programs import coverage, exitcode, ranks
from kprof.tools.sanitizers import kernelpolicy
from kprof.tools.sanitizers.checker import Needs, Program, Settings, SuiteChild
from kprof.tools.sanitizers.sanitizer_xml import (
    MAX_RECORDS,
    parse_records,
    parse_xml,
    read_records,
    tool_of,
    unread_note,
)
from kprof.tools.sanitizers.toolrun import ERROR_EXITCODE, ToolResult, classify, classify_program

# compute-sanitizer's own: the checkers are kprof.tools.sanitizers.checkers
TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
PRINT_LIMIT = 10000
# a racy program prints thousands of records: the text alone took 14 s of 17 on an H200
PROGRAM_PRINT_LIMIT = 1000
PADDING = 256
DEFAULT_TIMEOUT = 300.0
# a saved report: racecheck's largest seen on an H200 was a few MB
MAX_REPORT_BYTES = 256 * 1024 * 1024


INJECTION = "libsanitizer-collection.so"


def injection_args(exe: Path) -> list[str]:
    """``--injection-path`` where the tool's libraries are not beside it. A toolkit (and CUDA 13's
    wheel) keeps them in the tool's folder; pip's CUDA 12 wheel has ``bin/compute-sanitizer`` and
    ``lib/libsanitizer-collection.so``, where the tool alone says "Unable to find injection library"
    (seen on an H200 with nvidia-cuda-sanitizer-api-cu12 12.9.79)."""
    if (exe.parent / INJECTION).is_file():
        return []
    beside = exe.parent.parent / "lib"
    return ["--injection-path", str(beside)] if (beside / INJECTION).is_file() else []


_VERSION = re.compile(r"Version ([0-9]{4})\.([0-9]{1,3})\.([0-9]{1,3})")


@functools.lru_cache(maxsize=8)
def version(exe: str | Path) -> str:
    """The tool's version as ``--version`` prints it ("Version 2025.3.1.0 (build ...)":
    ``2025.3.1``); '' when it does not say (kprof's policies then assume the oldest behaviour they
    know)."""
    try:
        done = proc.run([str(exe), "--version"], timeout=30)
    except (OSError, KprofError):
        return ""
    return parse_version(done.stdout)


def parse_version(text: str) -> str:
    """``2025.3.1`` from what ``--version`` prints ("Version 2025.3.1.0 (build ...)"), '' without
    one. Pure."""
    found = _VERSION.search(text)
    return ".".join(found.groups()) if found else ""


def build_argv(exe: str | Path, tool: str, xml_path: str | Path, *, padding: int = PADDING,
               print_limit: int = PRINT_LIMIT, program: bool = False, skip_libraries: bool = False,
               device_frames: bool = False, tool_version: str = "") -> list[str]:
    """compute-sanitizer's argv for ``tool``, up to (not including) the target program.

    ``program``: the target is the user's program, not kprof's runner. Host backtraces are kept (the
    launch site comes from them), every child process is followed, and memcheck's leak check is off:
    a correct PyTorch program reports the tensors still alive at exit as leaks (measured on an H200:
    8 KB for two tensors, 138 MB after a few torch ops), which says nothing about its kernels. In a
    program, ``skip_libraries`` leaves library kernels out
    (:mod:`kprof.tools.sanitizers.kernelpolicy`). initcheck keeps only the host frames unless
    ``device_frames``: device frames cost 51 s of a 72 s run on one half GEMM's output read by
    PyTorch's copy kernel (host frames alone: 4.6 s; none: 4.6 s; an H200, compute-sanitizer
    2025.3.1, examples/gemm_initcheck.py), and they only move a read inside a CUDA header to the
    user's call (:func:`run_program` asks for them again when a finding needs that).
    ``tool_version`` (:func:`version`) picks the library kernels a tool may skip
    (:func:`kprof.tools.sanitizers.kernelpolicy.exclude_args`)."""
    if tool not in TOOLS:
        raise UsageError(f"'{tool}' is not a compute-sanitizer tool ({', '.join(TOOLS)})")
    argv = [
        str(exe), "--tool", tool,
        "--xml", "--save", str(xml_path),
        "--error-exitcode", str(ERROR_EXITCODE),
        "--print-limit", str(print_limit),
        "--check-exit-code", "no",
    ]  # fmt: skip
    argv += injection_args(Path(str(exe)))
    if program:
        argv += ["--target-processes", "all",
                 *(kernelpolicy.exclude_args(tool, tool_version) if skip_libraries else [])]
        if tool == "initcheck" and not device_frames:
            argv += ["--show-backtrace", "host"]
    # racecheck keeps none: with device frames its analysis records no longer joined its hazards (an
    # H200, 2370a0e)
    else:
        argv += ["--show-backtrace", "no" if tool == "racecheck" else "device"]
    if tool == "memcheck":
        argv += ["--padding", str(padding)] + ([] if program else ["--leak-check", "full"])
    elif tool == "racecheck":
        argv += ["--racecheck-report", "all"]
    return argv


# ------------------------------------------------------------------------------------ parsing




def run_tool(job: Job, tool: str, *, timeout: float = DEFAULT_TIMEOUT,
             padding: int = PADDING) -> ToolResult:
    """Run one compute-sanitizer tool over the runner with ``job``; never raises for the target's
    sake."""
    exe = proc.find_tool("compute-sanitizer")
    job = replace(job, mode=RunMode(verify=False, time=False, poison=tool != "initcheck"))
    with tempfile.TemporaryDirectory(prefix="kprof-sanitize-") as tmp:
        xml_path = Path(tmp) / f"{tool}.xml"
        done, data = launch.run(job, timeout=timeout,
                                wrapper=build_argv(exe, tool, xml_path, padding=padding))
        xml_text = xml_path.read_text(errors="replace") if xml_path.is_file() else ""
    allocations = list(data.allocations)
    findings, notes = parse_xml(xml_text, tool, allocations) if xml_text.strip() else ([], [])
    return replace(classify(tool, done, data, findings, notes, timeout,
                            have_xml=bool(xml_text.strip())),
                   checked=spec_coverage(job, data), version=version(exe))


def spec_coverage(job: Job, data: Any) -> coverage.Coverage | None:
    """What a spec's run under a tool covered: its job's launches once the child reached them (None
    for a Python operation, whose launches are the framework's)."""
    if job.target.python is not None:
        return None
    kernels = {s.entry for s in job.target.steps if s.entry != "cublas_sgemm"}
    # "launch" on: the tool saw it
    launched = data.phase not in ("start", "init", "device", "loaded", "allocated")
    return coverage.of_spec(len(job.target.steps) if launched else 0, len(kernels))


def run_batch(jobs: list[Job], tool: str, *, timeout: float = DEFAULT_TIMEOUT,
              padding: int = PADDING) -> list[ToolResult] | None:
    """One tool over several jobs in one child (kprof.launch.launch.run_batch), for jobs expected to
    be clean (kprof cases' twins): one start of the tool and of CUDA instead of one per job. A
    report with no record, every job finished, is every job clean. Anything else (a record, a job
    that did not finish, the tool's error) is None: the records of one process cannot be told apart
    by job, so the caller runs each job alone (:func:`run_many`)."""
    exe = proc.find_tool("compute-sanitizer")
    mode = RunMode(verify=False, time=False, poison=tool != "initcheck")
    with tempfile.TemporaryDirectory(prefix="kprof-sanitize-") as tmp:
        xml_path = Path(tmp) / f"{tool}.xml"
        done, datas = launch.run_batch([replace(j, mode=mode) for j in jobs], timeout=timeout,
                                       wrapper=build_argv(exe, tool, xml_path, padding=padding))
        xml_text = xml_path.read_text(errors="replace") if xml_path.is_file() else ""
    if done.timed_out or done.returncode != 0 or not xml_text.strip():
        return None
    findings, notes = parse_xml(xml_text, tool, [])
    seconds = [d.job_seconds for d in datas if d.finished]
    if findings or len(seconds) != len(datas):
        return None
    # the tool's start, shared
    start = max(0.0, done.seconds - sum(s or 0.0 for s in seconds)) / len(datas)
    results = [replace(classify(tool, replace(done, seconds=(s or 0.0) + start), d, [], notes,
                                timeout, have_xml=True),
                       checked=spec_coverage(j, d), version=version(exe)) for s, d, j in zip(seconds, datas, jobs)]
    return results if all(r.status == "clean" for r in results) else None


def run_program(cmd: list[str], tool: str, *, timeout: float = DEFAULT_TIMEOUT,
                padding: int = PADDING,
                env: dict[str, str] | None = None, cwd: str | Path | None = None,
                skip_libraries: bool = False) -> ToolResult:
    """Run the user's program under one tool, in its own process group; never raises for its sake.
    What it launched is counted in another run (:mod:`kprof.tools.programs.launchcount`): CUPTI
    cannot run beside compute-sanitizer."""

    exe = proc.find_tool("compute-sanitizer")
    launcher = ranks.launcher_of(cmd)
    if launcher is not None:
        ranked = run_ranks(cmd, tool, exe, timeout=timeout, padding=padding, env=env, cwd=cwd,
                           skip_libraries=skip_libraries)
        if ranked is not None:
            return ranked
    device_frames, tool_version = False, version(exe)
    while True:
        with tempfile.TemporaryDirectory(prefix="kprof-sanitize-") as tmp:
            xml_path, status_path = Path(tmp) / f"{tool}.xml", Path(tmp) / "status.json"
            argv = build_argv(exe, tool, xml_path, padding=padding, program=True,
                              print_limit=PROGRAM_PRINT_LIMIT,
                              skip_libraries=skip_libraries, device_frames=device_frames,
                              tool_version=tool_version)
            argv += exitcode.wrap(cmd, status_path)
            done = proc.run(argv, timeout=timeout, env=env, cwd=cwd)
            xml_text = xml_path.read_text(errors="replace") if xml_path.is_file() else ""
            status = exitcode.read_status(status_path)
        findings, notes = _program_findings(xml_text, tool, done.stdout)
        if device_frames or done.timed_out or not needs_device_frames(tool, findings):
            # a run that timed out is not run again: the timeout is the user's bound on the whole
            break
        # once more with device frames: the user's call of the header's function
        device_frames = True
    if device_frames:
        notes.append(f"{tool} ran again with device frames: a finding inside a CUDA header needed "
                     "them for the user's line")
    if launcher is not None:
        notes.append(f"no process of the {launcher} job was a Python rank kprof could put under "
                     f"{tool} on its own: the launcher ran under it, every process "
                     "checked, ranks not told apart")
    found = classify_program(tool, done, status, findings, notes, timeout,
                             have_xml=bool(xml_text.strip()))
    return replace(found, version=tool_version)


def needs_device_frames(tool: str, findings: list[Finding]) -> bool:
    """Whether a run without device frames (initcheck in a program: :func:`build_argv`) left a
    finding of the user's kernel at a line inside a CUDA header, which only device frames move to
    the user's call. Pure."""
    from kprof.tools.programs.hostframes import is_cuda_header

    return tool == "initcheck" and any(is_cuda_header(f.file) and not f.extra.library
                                       for f in findings)


def _program_findings(xml_text: str, tool: str, tool_text: str) -> tuple[list[Finding], list[str]]:
    """A program's report: its findings, those inside a library's kernel marked the library's."""
    if not xml_text.strip():
        return [], []
    findings, notes = parse_xml(xml_text, tool, tool_text=tool_text)
    findings, set_aside = kernelpolicy.libraries_own(findings)
    return findings, notes + set_aside


def run_ranks(cmd: list[str], tool: str, exe: Path, *, timeout: float, padding: int,
              env: dict[str, str] | None,
              cwd: str | Path | None, skip_libraries: bool) -> ToolResult | None:
    """A multi-process job (:mod:`kprof.tools.programs.ranks`): the launcher with no tool, each
    Python rank under the tool on its own, each finding with its rank. None: no process of the job
    had a rank kprof could wrap (the caller then runs the launcher under the tool, ranks not told
    apart)."""
    from kprof.tools.programs import allocators

    with tempfile.TemporaryDirectory(prefix="kprof-ranks-") as tmp:
        folder, status_path = Path(tmp), Path(tmp) / "status.json"
        argv = ranks.rank_argv(build_argv(exe, tool, folder / "x.xml", padding=padding,
                                          program=True,
                                          print_limit=PROGRAM_PRINT_LIMIT,
                                          skip_libraries=skip_libraries,
                                          tool_version=version(exe)), folder, tool)
        run_env = {**allocators.with_hooks(dict(env) if env is not None else proc.child_env()),
                   **ranks.wrap_env(argv, folder)}
        done = proc.run(exitcode.wrap(cmd, status_path), timeout=timeout, env=run_env, cwd=cwd)
        status = exitcode.read_status(status_path)
        reports = ranks.read(folder, tool)
    if not reports:
        return None
    findings: list[Finding] = []
    notes = ranks.silent(reports, tool, done.timed_out)
    for r in reports:
        found, said = _program_findings(r.xml, tool, r.text)
        findings += ranks.with_rank(found, r.rank)
        notes += [f"rank {r.rank}: {n}" for n in said]
    notes.insert(0, f"{len(reports)} rank(s), each under {tool} on its own")
    ranked = classify_program(tool, done, status, findings, notes, timeout,
                              have_xml=any(r.xml.strip() for r in reports))
    return replace(ranked, version=version(exe))


def installed_version() -> str:
    """The version of the compute-sanitizer kprof runs (:func:`version`); '' when there is none to
    ask."""
    try:
        return version(proc.find_tool("compute-sanitizer"))
    except KprofError:
        return ""


def run_wrapped(cmd: list[str], tool: str, *, timeout: float | None, env: dict[str, str],
                cwd: str | Path | None,
                watch: Callable[[], bool] | None = None, padding: int = PADDING,
                skip_libraries: bool = False,
                print_limit: int = PROGRAM_PRINT_LIMIT) -> tuple[proc.Completed, str]:
    """Run ``cmd`` (kprof's own child of a user's program: a pytest batch) under one tool with a
    program's defaults; the finished process and the XML text (empty when none was written). The
    caller reads the records: its child says what ran."""
    exe = proc.find_tool("compute-sanitizer")
    with tempfile.TemporaryDirectory(prefix="kprof-sanitize-") as tmp:
        xml_path = Path(tmp) / f"{tool}.xml"
        argv = build_argv(exe, tool, xml_path, padding=padding, program=True,
                          print_limit=print_limit,
                          skip_libraries=skip_libraries, tool_version=version(exe))
        done = proc.run(argv + cmd, timeout=timeout, env=env, cwd=cwd, watch=watch)
        xml_text = inputs.read_text(xml_path, "the tool's report", limit=MAX_REPORT_BYTES, errors="replace") if (
            xml_path.is_file()) else ""
    return done, xml_text


def from_xml(path: Path, tool: str | None,
             allocations: Sequence[Allocation] | None = None) -> ToolResult:
    """Report a saved XML file (from another machine) the same way, without a GPU. ``tool`` None:
    worked out from the records; a ``tool`` that contradicts them is refused. A text report saved
    beside it (``FILE.txt`` for ``FILE.xml``) adds the allocations an access missed."""
    text = inputs.read_text(path, "--from-xml", limit=MAX_REPORT_BYTES, errors="replace")
    recs = read_records(text, MAX_RECORDS)  # parsed once, for the tool and the findings
    found = tool_of(recs)
    if tool is None:
        if found is None:
            raise UsageError(f"--from-xml {path}: its records do not say which tool wrote it (a "
                             f"clean report has none): give --tool ({', '.join(TOOLS)})")
        tool = found
    elif found is not None and found != tool:
        raise UsageError(f"--from-xml {path}: --tool {tool}, but its records were written by "
                         f"{found}")
    side = path.with_suffix(".txt")
    tool_text = inputs.read_text(side, "the text report", limit=MAX_REPORT_BYTES, errors="replace") if (
        inputs.regular_file_error(side) is None) else ""
    findings, notes = parse_records(recs, tool, allocations, tool_text=tool_text)
    notes += unread_note(text, len(recs))
    return ToolResult(tool, "findings" if findings else "clean", findings, 0.0,
                      f"read from {path} ({tool})", notes=notes)


class SanitizerTool:
    """One compute-sanitizer tool as a checker (:class:`kprof.tools.sanitizers.checker.Checker`)."""

    def __init__(self, name: str, summary: str, *, stops: bool = False,
                 user_kernels: bool = False) -> None:
        if name not in TOOLS:
            raise ValueError(f"{name!r} is not a compute-sanitizer tool ({', '.join(TOOLS)})")
        self.name, self.summary = name, summary
        self.needs = Needs(sanitizer=True, stops=stops, user_kernels=user_kernels)

    def __repr__(self) -> str:
        return f"SanitizerTool({self.name!r})"

    def check_job(self, job: Job, settings: Settings) -> ToolResult:
        return run_tool(job, self.name, timeout=settings.timeout, padding=settings.padding)

    def check_jobs(self, jobs: list[Job], settings: Settings) -> list[ToolResult]:
        """All in one child first (:func:`run_batch`), then alone each job that child could not
        clear."""
        cleared = (run_batch(jobs, self.name, timeout=settings.timeout, padding=settings.padding)
                   if len(jobs) > 1 else None)
        return list(cleared) if cleared is not None else [self.check_job(j, settings) for j in jobs]

    def check_program(self, program: Program, settings: Settings) -> ToolResult:
        return run_program(list(program.cmd), self.name, timeout=settings.timeout,
                           padding=settings.padding, env=program.env, cwd=program.cwd,
                           skip_libraries=self.needs.skips_libraries(settings.all_kernels))

    def check_suite_child(self, argv: list[str], child: SuiteChild) -> tuple[proc.Completed, str]:
        return run_wrapped(argv, self.name, timeout=None, env=child.env, cwd=child.cwd,
                           watch=child.watch,
                           padding=child.padding,
                           skip_libraries=self.needs.skips_libraries(child.all_kernels),
                           print_limit=child.print_limit)
