"""One tool run's outcome (:class:`ToolResult`) and how a finished child is classified: pure.

Shared by the compute-sanitizer tools (:mod:`kprof.sanitize`) and kprof's own values detector
(:mod:`kprof.tools.sanitizers.values`), so neither imports the other. :func:`classify` decides what
a run means from the child's exit, its result file and the findings: clean, findings, a timeout, a
target that failed with nothing found, or a tool that failed; it is tested on recorded outputs.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Literal

from kprof import proc
from kprof.findings import Finding
from kprof.launch.childresult import ChildResult
from kprof.tools.programs.coverage import Coverage
from kprof.tools.programs.exitcode import Status

ERROR_EXITCODE = 99  # compute-sanitizer's --error-exitcode: its default is 0 even with errors
# What compute-sanitizer prints when the program ended before any CUDA call it could instrument (a
# program with no kernel; a tool that cannot attach, as the CUDA 12 wheel's on a CUDA 13.0 driver).
NOTHING_INSTRUMENTED = "Target application terminated before first instrumented API call"


# How a tool's run ended: what it found (clean, findings), or why it could not say (the rest)
ToolStatus = Literal["clean", "findings", "timeout", "target-error", "tool-error", "not-checked"]


@dataclass(frozen=True)
class ToolResult:
    tool: str
    status: ToolStatus
    findings: list[Finding]
    seconds: float
    message: str = ""
    _: KW_ONLY  # the rest by name
    notes: list[str] = field(default_factory=list)
    log: str = ""
    # what the run covered: launches, kernels with line information, pools
    checked: Coverage | None = None
    version: str = ""  # the compute-sanitizer that checked it (2025.3.1), where kprof asked it

    @property
    def ok(self) -> bool:
        return self.status in ("clean", "findings")

    def summary(self) -> dict[str, object]:
        """What JSON says of the run: the last lines the target and the tool printed travel with any
        run that was not clean (the text report shows them too), so a failed program is explained
        there."""
        return {"tool": self.tool, "status": self.status, "findings": len(self.findings),
                "seconds": round(self.seconds, 3), "message": self.message, "notes": self.notes,
                "checked": self.checked.to_dict() if self.checked else None,
                "version": self.version, "log": "" if self.status == "clean" else self.log}


def classify(tool: str, done: proc.Completed, data: ChildResult, findings: list[Finding],
             notes: list[str], timeout: float, *, have_xml: bool) -> ToolResult:
    """Decide what one tool run means. Pure: tested with recorded outputs."""
    log = done.tail(40)
    phase, status = data.phase, data.status
    if done.timed_out:
        msg = (f"the target did not finish within {timeout:g} s under {tool} (phase: {phase}); "
               "sanitizers slow kernels down 20x to 100,000x: use smaller --size values or a "
               "longer --timeout")
        return ToolResult(tool, "findings" if findings else "timeout", findings, done.seconds, msg,
                          notes=notes, log=log)
    ran = phase not in ("start", "init", "device") or findings
    if not ran:
        why = (data.error and data.error.message) or "no result from the runner"
        msg = f"the target did not run under {tool}: {why}"
        return ToolResult(tool, "tool-error", findings, done.seconds, msg, notes=notes, log=log)
    if not have_xml and done.returncode not in (0, ERROR_EXITCODE):
        how = done.signal_name or f"exit code {done.returncode}"
        return ToolResult(tool, "tool-error", findings, done.seconds,
                          f"compute-sanitizer {tool} ended with {how} and wrote no report",
                          notes=notes, log=log)
    if findings:
        return ToolResult(tool, "findings", findings, done.seconds, "", notes=notes, log=log)
    if status == "error":
        return ToolResult(tool, "target-error", [], done.seconds,
                          f"the target failed under {tool} with nothing reported: "
                          f"{data.error.message if data.error else '?'}",
                          notes=notes, log=log)
    if done.returncode == ERROR_EXITCODE:
        return ToolResult(tool, "tool-error", [], done.seconds,
                          f"compute-sanitizer {tool} reported errors that kprof could not parse; "
                          "see the log", notes=notes,
                          log=log)
    return ToolResult(tool, "clean", [], done.seconds, "", notes=notes, log=log)


def classify_program(tool: str, done: proc.Completed, status: Status | None,
                     findings: list[Finding],
                     notes: list[str], timeout: float, *, have_xml: bool) -> ToolResult:
    """What one tool run over the user's program means. ``status`` is the exit-code shim's record
    (None when the program never started). Pure: tested with recorded outputs."""
    log = done.tail(40)
    if done.timed_out:
        msg = (f"the program did not finish within {timeout:g} s under {tool}; the whole process "
               "group was stopped (sanitizers slow kernels down 20x to 100,000x: use a smaller "
               "problem or a longer --timeout)")
        return ToolResult(tool, "findings" if findings else "timeout", findings, done.seconds, msg,
                          notes=notes, log=log)
    if findings:
        return ToolResult(tool, "findings", findings, done.seconds, "", notes=notes, log=log)
    unseen = NOTHING_INSTRUMENTED in done.stdout or NOTHING_INSTRUMENTED in done.stderr
    code = None if status is None else status.returncode
    # the program's own failure comes first: it is what the user must fix
    if status is not None and code != 0:
        how = status.how()
        before = " before any CUDA call" if unseen else ""
        return ToolResult(tool, "target-error", [], done.seconds,
                          f"the program {how}{before} under {tool} with nothing found; its last "
                          "lines are below",
                          notes=notes, log=log)
    if unseen:
        return ToolResult(tool, "not-checked", [], done.seconds,
                          f"{tool} saw no CUDA call of the program, so it checked nothing (the "
                          "program launched no kernel, or the tool could not attach to it)",
                          notes=notes, log=log)
    if status is None:
        how = done.signal_name or f"exit code {done.returncode}"
        return ToolResult(tool, "tool-error", [], done.seconds,
                          f"compute-sanitizer {tool} ended with {how} before the program ran",
                          notes=notes, log=log)
    if done.returncode == ERROR_EXITCODE or (not have_xml and done.returncode != 0):
        return ToolResult(tool, "tool-error", [], done.seconds,
                          f"compute-sanitizer {tool} reported errors that kprof could not parse; "
                          "see the log", notes=notes,
                          log=log)
    return ToolResult(tool, "clean", [], done.seconds, "", notes=notes, log=log)


def with_coverage(result: ToolResult, checked: Coverage | None) -> ToolResult:
    """A tool's run of a program with what the program launched beside it
    (:mod:`kprof.tools.programs.coverage`): a run that would be clean while the program launched no
    kernel is NOT CHECKED, never clean. Pure."""
    if checked is None:
        return result
    if result.status == "clean" and checked.saw_nothing:
        return replace(result, status="not-checked", checked=checked,
                       message=f"the program launched no kernel, so {result.tool} checked nothing "
                               "(kprof's launch count, in a run of the program beside the tool's)")
    return replace(result, checked=checked)
