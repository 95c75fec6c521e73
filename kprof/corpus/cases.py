"""The seeded-bug corpus: every case in ``sanitizer_cases/`` is a kernel with one bug marked
``// BUG``, a spec whose ``expect:`` says which detector must find it, of which kind, at which
line, and a fixed twin (``twin:``) that must come out clean.

``expect`` fields: ``tool`` (a compute-sanitizer tool or ``values``), ``kind`` (the findings
vocabulary), ``line`` (default: the line marked ``// BUG``), ``buffer`` (the buffer the finding
must name, optional), ``caught: false`` with ``why`` where no detector honestly can, and ``since``
(the oldest compute-sanitizer that checks for the bug, "2026.4"): under an older one the case is
counted apart, as one that version cannot see, not as a miss (its twin must still be clean).

The buggy kernel runs under its case's tool; the twin under every checker of the registry
(:mod:`kprof.tools.sanitizers.checkers`: the four sanitizers and ``values``), and must be clean
under all of them: a detector that cries wolf on correct code is as useless as one that misses the
bug.

``kprof cases`` runs the cases side by side, but the runs of a checker that needs the GPU to
itself (``values``) one at a time once the rest are done
(:func:`kprof.tools.sanitizers.checkers.alone`): the detector scrubs every SM's shared memory before
each run, and another process's kernels in between overwrite the pattern. Measured on an H200 with
twelve cases at once: ``uninit_shared_read`` came out a race, not an uninitialized read.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import Any, Literal

from kprof import parallel
from kprof import spec as spec_mod
from kprof.errors import SpecError
from kprof.findings import KINDS, Finding
from kprof.launch.job import Job
from kprof.tools.sanitizers import checkers, kernelpolicy
from kprof.tools.sanitizers.checker import Settings
from kprof.tools.sanitizers.toolrun import ToolResult

_BUG = re.compile(r"//\s*BUG\b")
_SINCE = re.compile(r"\d{4}\.\d+")


@dataclass(frozen=True)
class Expect:
    tool: str
    kind: str
    line: int
    buffer: str | None
    caught: bool
    _: KW_ONLY  # the rest by name
    why: str
    # the oldest compute-sanitizer version that checks for this bug ("2026.4"); '' for any
    since: str = ""


@dataclass(frozen=True)
class Case:
    name: str
    spec: spec_mod.KernelSpec
    expect: Expect

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "description": self.spec.description,
            "source": str(self.spec.source),
            "twin": str(self.spec.twin), "tool": self.expect.tool, "kind": self.expect.kind,
            "line": self.expect.line, "buffer": self.expect.buffer, "caught": self.expect.caught,
            "why": self.expect.why, "since": self.expect.since,
        }  # fmt: skip


def load_case(spec: spec_mod.KernelSpec) -> Case:
    where = str(spec.path)
    raw = spec.expect
    if raw is None and spec.is_twin:
        case = spec.name.removesuffix("_fixed")
        raise SpecError(where, "twin",
                        f"{spec.name} is the fixed twin of case {case}: "
                        f"kprof cases {case} runs both")
    if raw is None:
        raise SpecError(where, "expect",
                        f"{spec.name} is not a sanitizer case (kprof cases --list names them)")
    if not isinstance(raw, dict):
        raise SpecError(where, "expect",
                        "a sanitizer case needs expect: {tool, kind} (and line, buffer)")
    if spec.twin is None:
        raise SpecError(where, "twin", "a sanitizer case needs its fixed twin: twin: NAME_fixed.cu")
    extra = set(raw) - {"tool", "kind", "line", "buffer", "caught", "why", "since"}
    if extra:
        raise SpecError(where, f"expect.{sorted(extra)[0]}",
                        "unknown field (known: tool, kind, line, buffer, caught, why, since)")
    tool, kind = raw.get("tool"), raw.get("kind")
    if tool not in checkers.spec_names():
        raise SpecError(where, "expect.tool",
                        f"{tool!r} must be one of {', '.join(checkers.spec_names())}")
    if kind not in KINDS:
        raise SpecError(where, "expect.kind",
                        f"{kind!r} is not a finding kind ({', '.join(KINDS)})")
    marked = [i + 1 for i, text in enumerate(spec.source.read_text().splitlines())
              if _BUG.search(text)]
    if len(marked) != 1:
        raise SpecError(where, "source",
                        f"{spec.source.name} must mark exactly one line with // "
                        f"BUG (found {len(marked)})")
    line = raw.get("line", marked[0])
    if isinstance(line, bool) or not isinstance(line, int) or line < 1:
        raise SpecError(where, "expect.line", f"{line!r} must be a line number")
    caught = raw.get("caught", True)
    why = raw.get("why", "")
    if not isinstance(caught, bool) or (not caught and not why):
        raise SpecError(where, "expect.caught",
                        "caught: false needs why: (what no detector can see, and why)")
    buffer = raw.get("buffer")
    if buffer is not None and buffer not in {b.name for b in spec.buffers}:
        raise SpecError(where, "expect.buffer", f"{buffer!r} is not a buffer of this kernel")
    since = raw.get("since", "")
    if not isinstance(since, str) or (since and not _SINCE.fullmatch(since)):
        raise SpecError(where, "expect.since",
                        f"{since!r} must be a compute-sanitizer version in quotes, e.g. \"2026.4\"")
    if since and tool not in checkers.sanitizers():
        raise SpecError(where, "expect.since",
                        f"{tool} is kprof's own detector; since: names a compute-sanitizer version")
    return Case(spec.name, spec,
                Expect(tool, kind, line, buffer, caught, why=str(why), since=since))


def load_all(specs: list[spec_mod.KernelSpec]) -> list[Case]:
    """The cases of these specs (the catalog's ``case`` group, found by the command layer)."""
    return [load_case(spec) for spec in specs]


def matches(case: Case, finding: Finding) -> bool:
    """Does this finding report the seeded bug: right tool, kind, kernel, line (and buffer)?"""
    e = case.expect
    if finding.tool != e.tool or finding.kind != e.kind:
        return False
    if finding.kernel is not None and finding.kernel != case.spec.entry:
        return False
    # every finding that has a line must have the bug's
    if finding.lines() and e.line not in finding.lines():
        return False
    if e.buffer and finding.buffer != e.buffer:
        return False
    return True


@dataclass(frozen=True)
class CaseResult:
    case: Case
    bug: ToolResult
    twins: tuple[ToolResult, ...]  # the twin under every tool

    @property
    def caught(self) -> bool:
        return any(matches(self.case, f) for f in self.bug.findings)

    @property
    def unseen(self) -> bool:
        """The bug needs a newer compute-sanitizer than the one that ran (``expect.since``) and was
        not found."""
        since = self.case.expect.since
        if not since or self.caught:
            return False
        year, release = (int(p) for p in since.split("."))
        return kernelpolicy.older(self.bug.version, (year, release))

    @property
    def twin_clean(self) -> bool:
        return bool(self.twins) and all(t.status == "clean" for t in self.twins)

    @property
    def twin_not_clean(self) -> list[str]:
        """The tools under which the twin was not clean, with what they said."""
        return [f"{t.tool}: {t.status}" for t in self.twins if t.status != "clean"]

    @property
    def ok(self) -> bool:
        if not self.case.expect.caught or self.unseen:
            return self.twin_clean
        return self.caught and self.twin_clean

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.case.to_dict(), "found": self.caught, "twin_clean": self.twin_clean,
            "ok": self.ok, "unseen": self.unseen, "version": self.bug.version,
            "bug_status": self.bug.status, "twin_status": {t.tool: t.status for t in self.twins},
            "bug_findings": [f.to_dict() for f in self.bug.findings],
            "twin_findings": [f.to_dict() for t in self.twins for f in t.findings],
            "seconds": round(self.bug.seconds + sum(t.seconds for t in self.twins), 2),
            "messages": [m for m in (self.bug.message, *(t.message for t in self.twins)) if m],
        }  # fmt: skip


Runs = dict[tuple[str, str], ToolResult]  # ("bug" or "twin", tool) -> what the tool said


def run_tools(case: Case, bug: Job, twin: Job, tools: tuple[str, ...] | list[str],
              settings: Settings) -> Runs:
    """Those of a case's runs whose tool is in ``tools``: its tool over the buggy kernel, each tool
    over its twin (jobs built by the command layer)."""
    runs: Runs = {}
    if case.expect.tool in tools:
        runs["bug", case.expect.tool] = checkers.run_all(bug, [case.expect.tool], settings)[0]
    on_twin = [t for t in checkers.spec_names() if t in tools]
    for tool, result in zip(on_twin, checkers.run_all(twin, on_twin, settings)):
        runs["twin", tool] = result
    return runs


def assemble(case: Case, runs: Runs) -> CaseResult:
    """The case's result from all its runs."""
    return CaseResult(case, runs["bug", case.expect.tool],
                      tuple(runs["twin", t] for t in checkers.spec_names()))


def run_case(case: Case, bug: Job, twin: Job, *, scrub_cubin: str | None,
             timeout: float = 300.0) -> CaseResult:
    """Every run of one case, one after the other."""
    return assemble(case,
                    run_tools(case, bug, twin, checkers.spec_names(),
                              Settings(timeout, scrub_cubin=scrub_cubin)))


@dataclass(frozen=True)
class Task:
    """Runs of one tool in one child: one buggy kernel (``bug``), or every case's twin (``twins``),
    or, for a checker that needs the GPU to itself, its every bug and every twin (``alone``)."""

    what: Literal["bug", "twins", "alone"]
    tool: str
    cases: tuple[Case, ...]

    def label(self) -> str:
        if self.what == "bug":
            return f"{self.cases[0].name} {self.tool}"
        n = len(self.cases)
        return f"twins {self.tool} ({n})" if self.what == "twins" else f"{self.tool} alone ({n})"


def plan(corpus: list[Case], width: int = 1) -> tuple[list[Task], list[Task]]:
    """The corpus's runs in few children: (the sanitizers' tasks, which share the GPU ``width`` at a
    time, the twins' first since they are the longest; one task of each checker that needs the GPU
    to itself, run alone: the values detector's). Each tool's twins are split into as many children
    as give the GPU's ``width`` slots work of about the same length (on an H200, ea69f0c: a tool
    over all 23 twins in one child took longer than the 18 buggy kernels beside it)."""
    shared = [t for t in checkers.spec_names() if t not in checkers.alone()]
    parts = max(1, min(len(corpus), -(-width // len(shared))))
    size = -(-len(corpus) // parts) if corpus else 1
    chunks = [tuple(corpus[i:i + size]) for i in range(0, len(corpus), size)]
    twins = [Task("twins", tool, chunk) for chunk in chunks for tool in shared]
    bugs = [Task("bug", c.expect.tool, (c,)) for c in corpus
            if c.expect.tool not in checkers.alone()]
    return twins + bugs, [Task("alone", tool, tuple(corpus)) for tool in checkers.alone()]


def run_task(task: Task, jobs: dict[str, tuple[Job, Job]], *, scrub_cubin: str | None,
             timeout: float = 300.0) -> dict[tuple[str, str, str], ToolResult]:
    """One task's runs (:func:`kprof.tools.sanitizers.checkers.run_many`: in one child, each job
    alone only where that child could not clear it), keyed (case name, "bug" or "twin", tool)."""
    wanted: list[tuple[str, str, Job]] = []  # (case, "bug" or "twin", job)
    for case in task.cases:
        bug, twin = jobs[case.name]
        if task.what in ("bug", "alone") and case.expect.tool == task.tool:
            wanted.append((case.name, "bug", bug))
        if task.what in ("twins", "alone"):
            wanted.append((case.name, "twin", twin))
    results = checkers.run_many([j for _, _, j in wanted], task.tool,
                                Settings(timeout, scrub_cubin=scrub_cubin))
    return {(name, role, task.tool): r for (name, role, _), r in zip(wanted, results)}


def run_corpus(corpus: list[Case], pairs: dict[str, tuple[Job, Job]], *, scrub_cubin: str | None,
               jobs: int | None,
               timeout: float = 300.0,
               progress: Callable[[int], Any] | None = None) -> list[CaseResult]:
    """Every run of the corpus (the jobs of each case and twin in ``pairs``, built by the command
    layer) in few children (:func:`plan`): the sanitizers' tasks side by side, ``jobs`` at a time
    (None: what the GPU's memory and the CPUs allow), then the tasks of the checkers that need the
    GPU to themselves, alone. Each task is a child process, so threads only wait. ``progress``,
    given the number of children, returns what is stepped as each ends and closed at the end."""
    width = parallel.jobs_for(len(corpus) * len(checkers.spec_names()), jobs,
                              parallel.RUNNER_GPU_BYTES)
    shared, alone = plan(corpus, width)
    steps = progress(len(shared) + len(alone)) if progress is not None else None

    def runs(task: Task) -> dict[tuple[str, str, str], ToolResult]:
        t0 = time.monotonic()
        out = run_task(task, pairs, scrub_cubin=scrub_cubin, timeout=timeout)
        if steps is not None:
            steps.step(f"{task.label()} {time.monotonic() - t0:.1f} s")
        return out

    by_case: dict[str, Runs] = {case.name: {} for case in corpus}
    try:
        for part in [*parallel.map_jobs(runs, shared, width), *map(runs, alone)]:
            for (name, role, tool), result in part.items():
                by_case[name][role, tool] = result
    finally:
        if steps is not None:
            steps.close()
    return [assemble(case, by_case[case.name]) for case in corpus]


def tally(results: list[CaseResult]) -> str:
    """"21 caught, 1 known miss, 22 twins clean under all 5 tools" (and what went wrong, if
    anything); with "2 need compute-sanitizer 2026.4 (this is 2025.3.1)" where the tool that ran is
    older than a case's ``since``."""
    caught = sum(r.caught for r in results if r.case.expect.caught)
    missed = [r.case.name for r in results if r.case.expect.caught and not r.caught
              and not r.unseen]
    known = sum(not r.case.expect.caught for r in results)
    clean = sum(r.twin_clean for r in results)
    text = (f"{caught} caught, {known} known miss{'es' if known != 1 else ''}, {clean} of "
            f"{len(results)} twins clean under all {len(checkers.spec_names())} tools")
    unseen = [r for r in results if r.unseen]
    if unseen:
        needs = sorted({r.case.expect.since for r in unseen})
        ran = sorted({r.bug.version or "unknown" for r in unseen})
        text += (f"; {len(unseen)} need compute-sanitizer {' or '.join(needs)} (this is "
                 f"{', '.join(ran)}): {', '.join(r.case.name for r in unseen)}")
    if missed:
        text += f"; MISSED: {', '.join(missed)}"
    return text
