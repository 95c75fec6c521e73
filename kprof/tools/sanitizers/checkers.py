"""The one registry of checkers (:class:`kprof.tools.sanitizers.checker.Checker`), and what every
command does with it.

``kprof sanitize``'s ``--tool`` choices and ``all``, the pytest plugin's default tools, ``kprof
cases`` (which checker a case expects, which run alone), ``kprof mutants`` (the checks after the
verdict), and the reports (which findings are effects of another) all come from :data:`REGISTRY`, in
its order. A new checker is its own module and one line here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

from kprof.errors import UsageError
from kprof.tools.sanitizers.checker import Checker, Program, Settings
from kprof.tools.sanitizers.compute_sanitizer import SanitizerTool
from kprof.tools.sanitizers.nan import NanDetector
from kprof.tools.sanitizers.values import ValuesDetector

if TYPE_CHECKING:
    from kprof.launch.job import Job
    from kprof.tools.sanitizers.toolrun import ToolResult

REGISTRY: tuple[Checker, ...] = (
    SanitizerTool("memcheck", "out-of-bounds and misaligned accesses, leaks, bad frees",
                  stops=True),
    SanitizerTool("racecheck", "shared-memory data races (hazards between threads of a block)",
                  user_kernels=True),
    SanitizerTool("initcheck", "reads of global memory nothing wrote"),
    SanitizerTool("synccheck", "barriers and warp syncs used wrongly", user_kernels=True),
    ValuesDetector(),
    NanDetector(),
)

ALL = "all"


def names() -> tuple[str, ...]:
    """Every checker's name, in the registry's order."""
    return tuple(c.name for c in REGISTRY)


def spec_names() -> tuple[str, ...]:
    """The checkers that check a spec's job (a spec's ``all``, the seeded-bug corpus, kprof
    mutants), in order."""
    return tuple(c.name for c in REGISTRY if c.needs.for_specs)


def describe() -> list[dict[str, object]]:
    """Each checker's name, what it finds and what it needs (``kprof sanitize --list-tools``), in
    order."""
    return [{"name": c.name, "summary": c.summary, "needs": asdict(c.needs)} for c in REGISTRY]


def get(name: str) -> Checker:
    """The checker called ``name``, or a one-line UsageError naming the choices."""
    for checker in REGISTRY:
        if checker.name == name:
            return checker
    raise UsageError(f"unknown tool '{name}': use one of {', '.join(names())} or {ALL}")


def sanitizers() -> tuple[str, ...]:
    """The checkers that run under compute-sanitizer (the ones that write XML reports)."""
    return tuple(c.name for c in REGISTRY if c.needs.sanitizer)


def for_tests() -> tuple[str, ...]:
    """The checkers that can check a pytest suite's tests (the plugin's default, in order)."""
    return tuple(c.name for c in REGISTRY if not c.needs.not_for_tests)


def alone() -> tuple[str, ...]:
    """The checkers whose runs need the GPU to themselves."""
    return tuple(c.name for c in REGISTRY if c.needs.alone)


def needs_sanitizer(chosen: Iterable[str]) -> bool:
    """Whether any of ``chosen`` runs under compute-sanitizer (so the tool must be found first)."""
    return any(get(n).needs.sanitizer for n in chosen)


def choose(tools: str | Sequence[str], *, program: bool = False, tests: bool = False) -> list[str]:
    """The checkers a command runs: ``all`` (every one for a spec; for a program, those in its
    ``all``; for tests, those that can check tests) or names, each checked, in one line."""
    chosen = [tools] if isinstance(tools, str) else list(tools)
    if not chosen:
        raise UsageError(f"name at least one tool: {', '.join(for_tests() if tests else names())} "
                         f"or {ALL}")
    if chosen == [ALL]:
        if tests:
            return list(for_tests())
        return [c.name for c in REGISTRY if c.needs.in_all_programs] if program else list(spec_names())
    for name in chosen:
        needs = get(name).needs
        if tests and needs.not_for_tests:
            raise UsageError(f"{needs.not_for_tests}; for tests use {', '.join(for_tests())}")
        if not program and not tests and not needs.for_specs:
            raise UsageError(f"--tool {name} checks programs only (kprof sanitize --tool {name} -- "
                             f"python train.py); for a spec use {', '.join(spec_names())} or {ALL}")
    return chosen


def order(first: Sequence[str]) -> tuple[str, ...]:
    """Every checker, ``first`` in that order, then the rest in the registry's (kprof mutants: the
    checks most likely to kill a mutant that passed the verdict come first)."""
    for name in first:
        get(name)
    return (*first, *(n for n in spec_names() if n not in first))


def run_all(job: Job, chosen: Sequence[str], settings: Settings,
            progress: Callable[[str], None] | None = None) -> list[ToolResult]:
    """Each checker over one job, each in its own child; one's crash or timeout never stops the
    others."""
    out = []
    for name in chosen:
        if progress:
            progress(name)
        out.append(get(name).check_job(job, settings))
    return out


def run_many(jobs: list[Job], name: str, settings: Settings) -> list[ToolResult]:
    """One checker over several jobs, each result its job's own, as :func:`run_all` gives them one
    by one."""
    return get(name).check_jobs(jobs, settings) if jobs else []


def run_program(name: str, program: Program, settings: Settings) -> ToolResult:
    """One checker over the user's program."""
    return get(name).check_program(program, settings)


# the run beside the sanitizers' that counts what a program launches
# (kprof.tools.programs.launchcount)
COUNT = "launch count"


def check_program(chosen: Sequence[str], program: Program, settings: Settings, *, jobs: int = 1,
                  progress: Callable[..., None] | None = None) -> list[ToolResult]:
    """Each of ``chosen`` over the user's program, ``jobs`` at once
    (:func:`kprof.tools.sanitizers.copies.schedule` decides: one after another unless the user says
    the copies are independent), each in its own process group with its own temporary folder and
    rendezvous (:func:`kprof.tools.sanitizers.copies.own`); ``progress(name)`` as each starts,
    ``progress(name, result)`` as it ends. Beside the sanitizers, one more run counts what the
    program launches (CUPTI cannot run under compute-sanitizer), which each sanitizer's result then
    says it covered. A copy that died of the GPU's memory while others ran beside it runs again
    alone."""
    from kprof import parallel
    from kprof.tools.programs import launchcount
    from kprof.tools.sanitizers import copies

    def one(name: str) -> Any:
        with copies.own(program) as mine:
            if name == COUNT:
                return launchcount.count(list(mine.cmd), timeout=settings.timeout, env=mine.env,
                                         cwd=mine.cwd, pools_off=mine.pools_off)
            if progress:
                progress(name)
            result = run_program(name, mine, settings)
            if progress:
                progress(name, result)
            return result

    sanitized = needs_sanitizer(chosen)
    runs = [*chosen, *([COUNT] if sanitized else [])]
    done = parallel.map_jobs(one, runs, jobs)
    if jobs > 1:  # a copy the others may have starved of the GPU's memory: again, alone
        done = [one(name) if name != COUNT and copies.died_of_memory(r) else r
                for name, r in zip(runs, done)]
    checked = done[-1] if sanitized else None
    from kprof.tools.sanitizers import kernelpolicy

    return [kernelpolicy.settle(r, checked, skips(r.tool, settings.all_kernels))
            if get(r.tool).needs.sanitizer else r for r in done[:len(chosen)]]


def skips(name: str, all_kernels: bool) -> bool:
    """Whether checker ``name`` leaves library kernels out of a program's run
    (kprof.tools.sanitizers.kernelpolicy)."""
    return get(name).needs.skips_libraries(all_kernels)


_CAUSES = ("out-of-bounds-write", "out-of-bounds-read", "invalid-access", "misaligned-write",
           "uninitialized-read")


def explain(results: list[ToolResult]) -> list[ToolResult]:
    """One bug, one headline: a finding of a checker that reports effects (a race, a
    poison-following or wrong result on C) on a buffer that a memory error of the same run touched
    (an out-of-bounds write to C) is marked as its consequence (``extra.explained_by``), so the
    report leads with the cause."""
    from kprof.findings import label

    def effects(r: ToolResult) -> bool:
        return r.tool in names() and get(r.tool).needs.effects

    causes = {f.buffer: f for r in results if not effects(r) for f in r.findings if f.buffer
              and f.kind in _CAUSES}
    if not causes:
        return results
    out = []
    for r in results:
        if not effects(r):
            out.append(r)
            continue
        marked = [replace(f, extra=replace(f.extra, explained_by=label(causes[f.buffer])))
                  if f.buffer in causes else f for f in r.findings]
        out.append(replace(r, findings=marked))
    return out
