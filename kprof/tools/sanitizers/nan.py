"""``nan``: the first operation of a program whose inputs were finite and whose output holds a NaN
or an Inf.

The program runs once with kprof's watcher loaded (:mod:`kprof.hooks.nan_watch`, by kprof's
sitecustomize): every PyTorch operation (forward and backward), every Triton launch and every kprof
kernel's launch is followed by a count of the non-finite elements it wrote; the first that wrote
some, from finite inputs, is the finding, at the user's line that called it, with its rank, output,
count and first element. Where the first non-finite value kprof saw came in with an operation's
inputs, it was made where kprof could not watch, and the finding says so. CuPy's kernels, a
``torch.compile`` graph's kernels and launches from C++ are not watched; the result says which of
them the program used. A checker of programs only: a spec's outputs are already checked for NaN by
``kprof run``'s verdict.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kprof import inputs, proc
from kprof.errors import KprofError, UsageError
from kprof.findings import Finding
from kprof.launch.job import Job
from kprof.tools.programs import exitcode
from kprof.tools.sanitizers.checker import Needs, Program, Settings, SuiteChild
from kprof.tools.sanitizers.toolrun import ToolResult

# The watcher's log (kprof.hooks.nan_watch), read back here: one JSON object a line, written by the
# program's processes (one a rank); a line that is not one is skipped.
MAX_LOG_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class FirstNonFinite:
    """The first operation that wrote a non-finite value, as the watcher saw it."""

    framework: str  # torch, triton, kprof
    op: str  # aten.log.default, a Triton kernel's name, a kprof kernel's
    site: str  # the user's line that called it (path:line), "" where none was found
    output: str  # which output: out, out1, self (in place), a Triton argument's name
    bad: int  # its non-finite elements
    total: int
    first_index: tuple[int, ...]
    first_value: str  # nan, inf, -inf
    # False: the inputs held non-finite values already (made where kprof did not watch)
    inputs_finite: bool
    nonfinite_inputs: tuple[str, ...] = ()
    dtype: str = ""
    shape: tuple[int, ...] = ()
    rank: int | None = None
    # the autograd node running it (SqrtBackward0): the op is part of a backward pass
    backward_of: str = ""
    definition: str = ""  # a Triton or kprof kernel's source line
    stack: tuple[str, ...] = ()
    seen: int = 0  # operations and launches watched before it
    test: str = ""  # the pytest test that ran it (python -m pytest under the watcher)


@dataclass(frozen=True)
class NanLog:
    """Every process's log lines, summed."""

    watching: tuple[str, ...] = ()  # torch, triton
    unwatched: tuple[str, ...] = ()  # what the watcher says it cannot see
    first: FirstNonFinite | None = None
    ops: int = 0
    launches: int = 0
    errors: tuple[str, ...] = ()
    cupy: bool = False  # CuPy was imported: its kernels were not watched
    processes: int = 0
    ended: int = 0  # processes that wrote their summary at exit
    notes: list[str] = field(default_factory=list)


def parse(text: str) -> NanLog:
    """The log's lines, in order; the first hit of the earliest-written line wins."""
    watching: list[str] = []
    unwatched: list[str] = []
    errors: list[str] = []
    first = None
    ops = launches = processes = ended = 0
    cupy = False
    for raw in text.splitlines():
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        event = rec.get("event")
        if event == "start":
            processes += 1
        elif event == "watching" and str(rec.get("what")) not in watching:
            watching.append(str(rec.get("what")))
        elif event == "unwatched" and str(rec.get("what")) not in unwatched:
            unwatched.append(str(rec.get("what")))
        elif event == "error":
            errors.append(f"{rec.get('where', '?')}: {rec.get('error', '')}")
        elif event == "summary":
            ended += 1
            ops += int(rec.get("ops") or 0)
            launches += int(rec.get("launches") or 0)
            cupy = cupy or bool(rec.get("cupy"))
        elif event == "first" and first is None:
            first = _first(rec)
    return NanLog(watching=tuple(watching), unwatched=tuple(unwatched), first=first, ops=ops,
                  launches=launches,
                  errors=tuple(errors), cupy=cupy, processes=processes, ended=ended)


def _first(rec: dict[str, Any]) -> FirstNonFinite:
    def ints(key: str) -> tuple[int, ...]:
        value = rec.get(key) or []
        return tuple(int(x) for x in value if isinstance(x, int)) if isinstance(value, list) else ()

    rank = rec.get("rank")
    return FirstNonFinite(
        framework=str(rec.get("framework", "")), op=str(rec.get("op", "")),
        site=str(rec.get("site", "")),
        output=str(rec.get("output", "")), bad=int(rec.get("bad") or 0),
        total=int(rec.get("total") or 0),
        first_index=ints("first_index"), first_value=str(rec.get("first_value", "")),
        inputs_finite=bool(rec.get("inputs_finite", True)),
        nonfinite_inputs=tuple(str(x) for x in rec.get("nonfinite_inputs") or ()),
        dtype=str(rec.get("dtype", "")),
        shape=ints("shape"), rank=rank if isinstance(rank, int) else None,
        backward_of=str(rec.get("backward_of", "")),
        definition=str(rec.get("definition", "")),
        stack=tuple(str(x) for x in rec.get("stack") or ()),
        seen=int(rec.get("seen_ops") or 0) + int(rec.get("seen_launches") or 0),
        test=str(rec.get("test", "")).removesuffix(" (call)").removesuffix(" (setup)").removesuffix(" (teardown)"))


def read_file(path: Path) -> NanLog:
    """The log at ``path`` (a missing one: nothing watched)."""
    if not path.is_file():
        return NanLog()
    data = inputs.read_bytes(path, "the nan watcher's log", limit=MAX_LOG_BYTES)
    return parse(data.decode("utf-8", errors="replace"))


def site_of(site: str) -> tuple[str | None, int | None]:
    """``path:line`` -> (path, line)."""
    path, _, line = site.rpartition(":")
    return (path, int(line)) if path and line.isdigit() else (site or None, None)


NAME = "nan"
FOR_SPECS = ("the nan checker watches a program's operations (kprof sanitize --tool nan -- python "
             "train.py); a spec's outputs are checked for NaN and Inf by kprof run's verdict")


def finding(first: FirstNonFinite) -> Finding:
    """The first non-finite output as a finding: at the user's line, the operation as its kernel."""
    file, line = site_of(first.site)
    where = f"[{', '.join(map(str, first.first_index))}]" if first.first_index else ""
    shape = "x".join(map(str, first.shape)) if first.shape else "?"
    what = f"{first.op}" + (f" (in the backward of {first.backward_of})" if first.backward_of
                            else "")
    if first.inputs_finite:
        message = f"{what} turned finite inputs into {first.bad:,} non-finite elements"
    else:
        message = (f"{what}'s inputs ({', '.join(first.nonfinite_inputs)}) already held NaN or "
                   "Inf: made before, where kprof did not watch (the program's data, CuPy, a "
                   "compiled graph, C++)")
    detail = (f"output {first.output} ({first.dtype} {shape}): {first.bad:,} of {first.total:,} "
              f"elements non-finite, the first {first.output}{where} = {first.first_value}; after "
              f"{first.seen:,} operations watched")
    if first.definition:
        detail += f"; the kernel is defined at {first.definition}"
    if first.test:
        detail += f"; in the test {first.test}"
    return Finding(NAME, "non-finite" if first.inputs_finite else "non-finite-input", first.op,
                   file, line, thread=None,
                   block=None, count=first.bad, message=message, detail=detail,
                   launch=first.site or None,
                   indices=(first.first_index,) if first.first_index else (), rank=first.rank)


def notes_of(log: NanLog) -> list[str]:
    """What was watched, and what was not."""
    notes = [f"watched {log.ops:,} PyTorch operations and {log.launches:,} kernel launches "
             f"({', '.join(log.watching) or 'nothing'}) in {log.processes} process(es)"]
    unwatched = list(log.unwatched) + (["CuPy's kernels (CuPy gives no launch hook)"] if log.cupy
                                       else [])
    if unwatched:
        notes.append("not watched: " + "; ".join(unwatched))
    if log.processes and log.ended < log.processes:
        notes.append(f"{log.processes - log.ended} process(es) ended without the watcher's summary "
                     "(killed, or os._exit)")
    notes += [f"the watcher's own error: {e}" for e in log.errors[:3]]
    return notes


def run_program(cmd: list[str], *, timeout: float, env: dict[str, str],
                cwd: str | Path | None = None) -> ToolResult:
    """The program once, watched; its first non-finite output as the finding."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kprof-nan-") as tmp:
        log_path, status_path = Path(tmp) / "nan.jsonl", Path(tmp) / "status.json"
        done = proc.run(exitcode.wrap(cmd, status_path), timeout=timeout, cwd=cwd,
                        env={**env, "KPROF_NAN_LOG": str(log_path)})
        status = exitcode.read_status(status_path)
        try:
            log = read_file(log_path)
        except KprofError as exc:
            return ToolResult(NAME, "not-checked", [], done.seconds,
                              f"the watcher's log could not be read: {exc}")
    seconds = time.monotonic() - start
    if done.timed_out:
        return ToolResult(NAME, "timeout", [], seconds,
                          f"the program did not finish within {timeout:g} s", log=done.tail(40))
    notes = notes_of(log)
    if log.first is not None:  # found, even where the program then failed on it
        return ToolResult(NAME, "findings", [finding(log.first)], seconds, "", notes=notes,
                          log=done.tail(40))
    if status is None or status.returncode != 0:
        how = "did not start" if status is None else status.how()
        return ToolResult(NAME, "target-error", [], seconds,
                          f"the program {how} (nan: watched once)", notes=notes, log=done.tail(40))
    if not log.watching:
        return ToolResult(NAME, "not-checked", [], seconds,
                          "kprof's nan watcher saw no PyTorch and no Triton in the program (it "
                          "watches their operations and kprof's own kernels; CuPy and C++ launches "
                          "are not seen)", notes=notes)
    return ToolResult(NAME, "clean", [], seconds, "", notes=notes)


class NanDetector:
    """The first non-finite output as a checker (:class:`kprof.tools.sanitizers.checker.Checker`):
    no sanitizer, programs only, named to run (not among a program's ``all``: it is a question of
    values, not of memory)."""

    name = NAME
    summary = "kprof's own: the first operation whose finite inputs gave a NaN or an Inf, at the line that called it"
    needs = Needs(sanitizer=False, in_all_programs=False, for_specs=False,
                  not_for_tests="the nan checker watches a whole program once (kprof sanitize "
                                "--tool nan -- python -m pytest FILE)")

    def check_job(self, job: Job, settings: Settings) -> ToolResult:
        raise UsageError(FOR_SPECS)

    def check_jobs(self, jobs: list[Job], settings: Settings) -> list[ToolResult]:
        raise UsageError(FOR_SPECS)

    def check_program(self, program: Program, settings: Settings) -> ToolResult:
        return run_program(list(program.cmd), timeout=settings.timeout, env=program.env,
                           cwd=program.cwd)

    def check_suite_child(self, argv: list[str], child: SuiteChild) -> tuple[proc.Completed, str]:
        raise UsageError(f"--kprof-sanitize=nan: {self.needs.not_for_tests}")
