"""Mutation testing's run (``kprof mutants NAME``): each mutant of a spec's kernel built, judged by
the spec's verdict at every size it checks, then by the checkers; what the mutants and their scores
are is
:mod:`kprof.corpus.mutants` (pure).

Building and job-making come from the command layer as a :class:`~kprof.launch.prepared.Preparer`
(only it looks kernels up and builds them): this stage orchestrates the runs with what it is handed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kprof import parallel
from kprof.corpus import mutants
from kprof.errors import KprofError, TargetError, UsageError
from kprof.launch import launch
from kprof.launch.job import RunMode
from kprof.launch.prepared import Preparer
from kprof.spec import KernelSpec
from kprof.tools.sanitizers import checkers
from kprof.tools.sanitizers.checker import Settings

if TYPE_CHECKING:
    from kprof.spec import Fill

# A size kprof mutants runs at: (preset, sizes, the check's fills)
_Size = tuple[str, dict[str, int], tuple[tuple[str, "Fill"], ...]]


@dataclass(frozen=True)
class MutantsReport:
    """``kprof mutants NAME``: each mutant of the spec's kernel and what the spec's verdict made of
    it (:mod:`kprof.corpus.mutants`); ``dry_run``: built and decided equivalent or not, none run."""

    spec: str
    source: str
    results: list[mutants.MutantResult]
    dry_run: bool
    sizes: list[str]  # the sizes each mutant ran at (the sanitize size and every checked size)
    # the tools a mutant the verdict passed went under (those clean on the original)
    tools: tuple[str, ...] = ()

    @property
    def score(self) -> tuple[int, int, float | None]:
        return mutants.score(self.results)

    @property
    def strict_score(self) -> tuple[int, int, float | None]:
        """The score with the mutants equivalent by their results counted as survivors."""
        return mutants.score(self.results, strict=True)

    def to_json(self) -> dict[str, object]:
        killed, counted, share = self.score
        by_verdict = sum(r.verdict == "killed" and r.by == "verdict" for r in self.results)
        # version 3: equivalent by its results at a boundary the checked sizes meet (by), and the
        # strict score
        return {"version": 3, "spec": self.spec, "source": self.source, "dry_run": self.dry_run,
                "sizes": self.sizes,
                "tools": list(self.tools), "killed": killed, "killed_by_verdict": by_verdict,
                "counted": counted,
                "score": share, "score_strict": self.strict_score[2],
                "mutants": [r.to_dict() for r in self.results]}


def run(spec: KernelSpec, text: str, preparer: Preparer, *, dry_run: bool = False,
        timeout: float | None = None, limit: int | None = None, jobs: int | None = None,
        progress: Callable[[int], Any] | None = None) -> MutantsReport:
    """Mutants of ``spec``'s kernel (whose source is ``text``): each built (one with the original's
    machine code is equivalent); unless ``dry_run``, each other one run through the spec's verdict
    at its sanitize size and at every size it checks, in one child, then (where the verdict passed
    it) under the checkers: killed or survived (:func:`_judge_mutant`). Mutants are built and run
    ``jobs`` at a time (default: what the GPU's memory and the CPUs allow). A mutant's child may run
    ``timeout`` seconds, by default four times the original's run and at least 20 s: a mutant that
    loops for ever is killed by the clock, not waited on for minutes. ``progress``, given the number
    of mutants, returns what is stepped as each ends and closed at the end."""
    made = mutants.generate(text, limit or mutants.MAX_MUTANTS)
    sizes: list[_Size] = [("sanitize", {}, ()),
                          *[("default", dict(c.sizes), c.fills) for c in spec.checks]]
    labels = ["sanitize"] + [c.label for c in spec.checks]
    original_cubin = preparer.cubin(spec).read_bytes()
    orig = _Original([], (), None, 0.0, ()) if dry_run else _original_run(spec, sizes, labels, preparer, timeout)
    width = parallel.jobs_for(len(made), jobs, parallel.RUNNER_GPU_BYTES)
    steps = progress(len(made)) if progress is not None else None

    def one(m: mutants.Mutant) -> mutants.MutantResult:
        t0 = time.monotonic()
        out = _one(m, spec, preparer, original_cubin, sizes, labels, orig=orig, dry_run=dry_run)
        if steps is not None:
            how = "(the source's note)" if out.by == mutants.BY_NOTE else f"{time.monotonic() - t0:.1f} s"
            steps.step(f"{m.id} {m.operator} line {m.line}: {out.verdict} {how}")
        return out

    try:
        results = parallel.map_jobs(one, made, width)
    finally:
        if steps is not None:
            steps.close()
    return MutantsReport(spec.name, str(spec.source), results, dry_run, labels, orig.tools)


def _one(m: mutants.Mutant, spec: KernelSpec, preparer: Preparer, original_cubin: bytes,
         sizes: list[_Size],
         labels: list[str], *, orig: _Original, dry_run: bool) -> mutants.MutantResult:
    """One mutant: equivalent by its note, not built, equivalent by its machine code or its launch,
    or judged. Each mutant's source lives under the build cache, named by its text: a second build
    of it is a cache hit."""
    if (note := mutants.note_of(m)) is not None:
        return mutants.MutantResult(m, "equivalent", f"line {m.line} says so: {note}",
                                    mutants.BY_NOTE)
    other = preparer.variant(spec, f"{spec.name}__{m.id.lower()}", m.source)
    try:
        cubin = preparer.cubin(other)
    except KprofError as exc:
        return mutants.MutantResult(m, "not-built", str(exc).splitlines()[0][:300])
    if mutants.equivalent(original_cubin, cubin.read_bytes()):
        return mutants.MutantResult(m, "equivalent", "the same machine code as the original "
                                    "(every .text section of the cubin, byte for byte)",
                                    mutants.BY_MACHINE_CODE)
    if (unreachable := mutants.unreachable_by_launch(m, spec)) is not None:
        return mutants.MutantResult(m, "equivalent", unreachable, mutants.BY_LAUNCH)
    if dry_run:
        return mutants.MutantResult(m, "built", "built; not run (--dry-run)")
    return _judge_mutant(m, other, sizes, labels, preparer, orig)


@dataclass(frozen=True)
class _Original:
    """What kprof mutants learns from the spec's own kernel, once, for every mutant."""

    # its results at every size (kprof.corpus.mutants.fingerprint)
    fingerprints: list[tuple[object, ...]]
    # the tools clean on it at the sanitize size: only these may kill a mutant
    tools: tuple[str, ...]
    scrub: str | None  # the values detector's scrubber
    per_mutant: float  # a mutant's time limit: four times this run, at least 20 s
    # checked sizes past sanitize where memcheck is clean on it
    memcheck_at: tuple[tuple[str, _Size], ...]


def _original_run(spec: KernelSpec, sizes: list[_Size], labels: list[str], preparer: Preparer,
                  timeout: float | None) -> _Original:
    """The spec's own kernel at every size (it must pass, or no mutant's verdict means anything),
    the checkers clean on it at its sanitize size, and memcheck at every small checked size: a bound
    that reads one element too far changes no result (the element is multiplied by a padded zero, or
    never stored), and only memcheck, at a size that meets the bound, sees the read."""
    t0 = time.monotonic()
    jobs = [preparer.job(spec, s, preset=p, fills=f, mode=RunMode(digest=True))
            for p, s, f in sizes]
    ok = launch.run_kernels(jobs,
                            timeout=timeout if timeout is not None else launch.DEFAULT_TIMEOUT)
    if not all(r.ok for r in ok):
        raise UsageError(f"kprof mutants {spec.name}: the spec's own kernel fails its verdict; fix "
                         f"it first (kprof run {spec.name})")
    per_mutant = timeout if timeout is not None else max(20.0, 4 * (time.monotonic() - t0))
    scrub = preparer.scrubber()[0]
    tools = _tools_clean_on(spec, preparer, per_mutant, scrub)
    small = [(label, size) for size, label, j in zip(sizes, labels, jobs)
             if size[0] != "sanitize" and j.target.total_bytes <= mutants.MEMCHECK_BYTES]
    clean = [] if "memcheck" not in tools else _memcheck_findings(spec, small, preparer, per_mutant)
    return _Original([mutants.fingerprint(r.checks) for r in ok], tools, scrub, per_mutant,
                     tuple(size for size, found in zip(small, clean) if not found))


def _memcheck_findings(spec: KernelSpec, sizes: list[tuple[str, _Size]], preparer: Preparer,
                       timeout: float) -> list[Any]:
    """memcheck's findings on ``spec`` at each of ``sizes``, side by side (empty: clean; a run that
    did not finish counts as a finding)."""

    def one(size: tuple[str, _Size]) -> object:
        _, at, fills = size[1]
        job = preparer.job(spec, at, preset="default", fills=fills, mode=RunMode(verify=False))
        (found,) = checkers.run_all(job, ["memcheck"], Settings(timeout))
        return found.findings or ([] if found.status == "clean" else [found.status])

    return parallel.map_jobs(one, sizes, max(1, len(sizes)))


def _settings(tool: str, timeout: float, scrub: str | None) -> Settings:
    return Settings(timeout, scrub_cubin=scrub if checkers.get(tool).needs.shaken else None)


def _tools_clean_on(spec: KernelSpec, preparer: Preparer, timeout: float,
                    scrub: str | None) -> tuple[str, ...]:
    """The checkers of :func:`kprof.corpus.mutants.tools` under which the spec's own kernel is clean
    at its sanitize size, side by side: only a checker that passes the original may kill a
    mutant."""
    job = preparer.job(spec, None, preset="sanitize", mode=RunMode(verify=False), shaken=True)

    def one(tool: str) -> Any:
        return checkers.run_all(job, [tool], _settings(tool, timeout, scrub))[0]

    tools = mutants.tools()
    found = parallel.map_jobs(one, list(tools), len(tools))
    return tuple(t for t, r in zip(tools, found) if r.status == "clean")


def _judge_mutant(m: mutants.Mutant, other: KernelSpec, sizes: list[_Size], labels: list[str],
                  preparer: Preparer, orig: _Original) -> mutants.MutantResult:
    """One built mutant through the spec's verdict at every size, in one child: killed at the first
    failing verdict, or by a run that faults or hangs (a wrong kernel too). A mutant every verdict
    passed then goes under the checkers at the sanitize size (those of
    :func:`kprof.corpus.mutants.tools`
    clean on the original), which it meets on any kernel too, and memcheck at the small checked
    sizes clean on the original: killed by the first that finds something. One they all pass
    survived; where it gave the original's results to the last bit at every size, it says so: its
    line may not run there, or it is equivalent (:func:`_same_results` decides some)."""
    timeout = orig.per_mutant
    jobs = [preparer.job(other, s, preset=p, fills=f, mode=RunMode(digest=True))
            for p, s, f in sizes]
    # The small sizes first, in one child: most mutants die there, and a 4096^3 matmul's float64
    # reference (seconds of host time each) is then computed only for those that pass them.
    small = [i for i, j in enumerate(jobs) if j.target.total_bytes <= mutants.SMALL_BYTES] or list(range(len(jobs)))
    runs: dict[int, Any] = {}
    try:
        for part in (small, [i for i in range(len(jobs)) if i not in small]):
            if part:
                runs.update(zip(part, launch.run_kernels([jobs[i] for i in part], timeout=timeout)))
                if not all(runs[i].ok for i in part):
                    break
    except TargetError as exc:
        return mutants.MutantResult(m, "killed",
                                    f"its run failed: {str(exc).splitlines()[0][:300]}", "verdict")
    verdict, why = mutants.judge([(labels[i], runs[i].ok,
                                   "; ".join(c.message for c in runs[i].checks if not c.ok))
                                  for i in sorted(runs)])
    if verdict == "killed":
        return mutants.MutantResult(m, verdict, why, "verdict")
    killed, clean = _under_tools(m, other, preparer, orig)
    if killed is not None:
        return killed
    if orig.tools and len(clean) == len(orig.tools) and mutants.same_results(
            orig.fingerprints, [mutants.fingerprint(runs[i].checks) for i in sorted(runs)]):
        return _same_results(m, other, sizes, preparer, timeout, clean)
    return mutants.MutantResult(m, "survived",
                                why + "; clean under " + (", ".join(clean) or "no tool"), "")


def _under_tools(m: mutants.Mutant, other: KernelSpec, preparer: Preparer,
                 orig: _Original) -> tuple[mutants.MutantResult | None, list[str]]:
    """A mutant the verdict passed under the checkers: (its result, killed by the first that finds
    something, or None; the checkers clean on it)."""
    shaken = any(checkers.get(t).needs.shaken for t in orig.tools)
    job = preparer.job(other, None, preset="sanitize", mode=RunMode(verify=False), shaken=shaken)
    clean: list[str] = []
    for tool in orig.tools:
        (found,) = checkers.run_all(job, [tool], _settings(tool, orig.per_mutant, orig.scrub))
        if found.findings:
            f = found.findings[0]
            return mutants.MutantResult(m, "killed",
                                        f"the verdict passed it; {tool}: {f.kind} at line {f.line} "
                                        f"({len(found.findings)} "
                                        f"finding{'s' * (len(found.findings) > 1)})", tool), clean
        if found.status == "timeout":
            return mutants.MutantResult(m, "killed", f"the verdict passed it; under {tool} it did "
                                                     "not finish", tool), clean
        if found.status == "clean":
            clean.append(tool)
    for label, (_, size, fills) in orig.memcheck_at:
        job = preparer.job(other, size, preset="default", fills=fills, mode=RunMode(verify=False))
        (found,) = checkers.run_all(job, ["memcheck"], Settings(orig.per_mutant))
        if found.findings:
            f = found.findings[0]
            return mutants.MutantResult(m, "killed",
                                        "the verdict and the tools at the sanitize size passed "
                                        f"it; memcheck at {label}: {f.kind} at line {f.line}", "memcheck"), clean
    return None, clean


def _same_results(m: mutants.Mutant, other: KernelSpec, sizes: list[_Size], preparer: Preparer,
                  timeout: float, clean: list[str]) -> mutants.MutantResult:
    """A mutant with the original's results to the last bit at every size, clean under every
    checker. Where it moves a bound (:data:`kprof.corpus.mutants.BOUNDARY_OPERATORS`), a probe
    decides what that means: the original with a trap where the two part
    (:func:`kprof.corpus.mutants.boundary_probe`), run at the same sizes. Stopped: the checked sizes
    meet the boundary, the mutant ran otherwise there and computed the same, to the last bit:
    equivalent by its results there. Never stopped: no checked size tests the bound, a survivor that
    says which. Anything else stays "same results", undecided."""
    undecided = mutants.MutantResult(m, "survived",
                                     "the original's results to the last bit at every size and "
                                     f"clean under {', '.join(clean)}: the line may not run at "
                                     "these sizes (add a size or defines that reach it), or the "
                                     "mutant is equivalent (read its diff)",
                                     mutants.BY_SAME_RESULTS)
    probe = mutants.boundary_probe(m)
    if probe is None:
        return undecided
    text, met = probe
    spec = preparer.variant(other, f"{other.name}_probe", text)
    try:
        preparer.cubin(spec)
        jobs = [preparer.job(spec, s, preset=p, fills=f, mode=RunMode()) for p, s, f in sizes]
    except KprofError:
        # a probe that does not build (a comparison in a constant expression) decides nothing
        return undecided
    try:
        runs = launch.run_kernels(jobs, timeout=timeout)
    except TargetError as exc:
        return mutants.MutantResult(m, "equivalent",
                                    f"its boundary ({met}) is met at the checked sizes (the probe "
                                    f"that stops there stopped: {str(exc).splitlines()[0][:120]}), "
                                    "and there it gave the original's results to the last bit, "
                                    f"clean under {', '.join(clean)}",
                                    mutants.BY_BOUNDARY)
    if all(r.ok for r in runs):
        return mutants.MutantResult(m, "survived",
                                    f"no checked size meets its boundary ({met}): the bound is not "
                                    "tested; add a size where it is met (or the launch never meets "
                                    "it)", mutants.BY_NOT_MET)
    return undecided
