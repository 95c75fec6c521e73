"""Text of what kprof sanitize, kprof cases and kprof mutants return. Pure functions."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from kprof.corpus import mutants
from kprof.demangle import short
from kprof.findings import label
from kprof.results.render import cut, dims, file_name, table, terminal_width, wrap

if TYPE_CHECKING:
    from kprof.corpus.cases import CaseResult
    from kprof.corpus.mutation import MutantsReport
    from kprof.tools.sanitizers.toolrun import ToolResult


def sanitize_report(results: list[ToolResult], notes: list[str] | None = None) -> str:
    """One line per tool, the findings table, then each finding with its detail and launch site."""
    lines = []
    for r in results:
        state = {"clean": "clean", "findings": f"{len(r.findings)} finding(s)",
                 "not-checked": "NOT CHECKED"}.get(r.status, r.status.upper())
        lines.append(f"{r.tool:<10} {state:<14} {r.seconds:6.1f} s  {r.message}".rstrip())
        if r.checked is not None:
            lines.append(f"{'':<10} checked: {r.checked.text()}")
        for note in r.notes[:3]:
            lines.append(f"{'':<10} note: {note}")
        if r.status in ("timeout", "target-error", "tool-error") and r.log:
            lines += [f"{'':<10} | {ln}" for ln in r.log.splitlines()[-8:]]
    versions = sorted({r.version for r in results if r.version})
    if versions:
        lines.append(f"checked by compute-sanitizer {', '.join(versions)}")
    lines += [f"set for the program: {n}" for n in notes or []]
    found = [f for r in results for f in r.findings]
    if not found:
        if all(r.ok for r in results):
            lines.append("no findings")
        elif all(r.ok or r.status == "not-checked" for r in results):
            lines.append("no findings, but not everything was checked")
        else:
            lines.append("no findings, but not every tool finished")
        return "\n".join(lines)
    consequences = [f for f in found if f.extra.explained_by]
    found = [f for f in found if not f.extra.explained_by]
    launched = any(f.launch for f in found)
    lines.append("")
    lines.append(table(
        ["TOOL", "KIND", "WHERE", "THREAD", "BLOCK", "BUFFER", "RECORDS", "LAUNCHES"]
        + (["LAUNCHED AT"] if launched else []),
        [(f.tool, f.kind, f.location(), dims(f.thread), dims(f.block), f.buffer or "-", f.count,
          f.launches or "-")
         + ((file_name(f.launch),) if launched else ()) for f in found],
        "llllllrr" + ("l" if launched else ""),
    ))  # fmt: skip
    lines.append("")
    for f in found:
        where = f" in {short(f.kernel)}" if f.kernel else ""
        rank = f"rank {f.rank}: " if f.rank is not None else ""
        lines.append(f"- {rank}{f.tool} {f.kind} at {f.location()}{where}: {f.message}")
        if f.detail:
            lines.append(f"    {f.detail}")
        if f.extra.source:
            lines.append(f"    {f.extra.source}")
        if f.extra.library:
            lines.append(f"    inside {f.extra.library}'s own kernel: the library's code, not "
                         "yours (check what your code hands it)")
        if f.launch:
            lines.append(f"    launched at {f.launch}")
        for c in consequences:
            if c.extra.explained_by == label(f):
                lines.append(f"    consequence ({c.tool}): {c.kind}: {c.message}")
    return "\n".join(lines)


def cases_list(rows: list[dict[str, Any]], width: int | None = None) -> str:
    """The corpus, a case a row; why each known miss is missed below the table, wrapped to
    ``width``."""
    width = width or terminal_width()
    text = table(
        ["CASE", "TOOL", "KIND", "LINE", "BUFFER", "CAUGHT"],
        [(r["name"], r["tool"], r["kind"], r["line"], r["buffer"] or "-",
          ("no" if not r["caught"] else f"{r['since']}+" if r["since"] else "yes")) for r in rows], width=width,
    )  # fmt: skip
    if any(r["since"] for r in rows):
        text += "\n" + "\n".join(wrap("a version and +: caught by that compute-sanitizer version "
                                      "and newer; an older one cannot see the bug (kprof cases "
                                      "counts it apart)", width, 0))
    missed = [r for r in rows if not r["caught"]]
    if missed:
        text += "\n\nknown misses, and why:"
        for r in missed:
            text += "\n" + "\n".join(wrap(f"  {r['name']}: {r['why']}", width, 4))
    return text


def cases_matrix(results: list[CaseResult]) -> str:
    from kprof.corpus.cases import tally

    rows = []
    for r in results:
        e = r.case.expect
        found = ("yes" if r.caught else "known miss" if not e.caught
                 else f"needs {e.since} ({r.bug.version or 'unknown'} ran)" if r.unseen
                 else f"NO ({r.bug.status})")
        twin = "yes" if r.twin_clean else "NO (" + ", ".join(r.twin_not_clean) + ")"
        rows.append((r.case.name, e.tool, e.kind, e.line, found, twin,
                     f"{r.bug.seconds + sum(t.seconds for t in r.twins):.1f}"))
    return table(["CASE", "TOOL", "EXPECTED KIND", "LINE", "FOUND", "TWIN CLEAN (ALL TOOLS)", "SECONDS"], rows,
                 "llllllr") + "\n" + tally(results)


def mutants_report(report: MutantsReport) -> str:
    """``kprof mutants``: one row per mutant (what killed it, or how it was found equivalent), the
    score, and each survivor's diff."""
    def verdict(r: Any) -> str:
        shown = r.verdict.upper() if r.verdict == "survived" else r.verdict
        return f"{shown} ({r.by})" if r.by else shown

    rows = [(r.mutant.id, r.mutant.operator, r.mutant.line, verdict(r), cut(r.why, 90))
            for r in report.results]
    out = [f"{report.spec}: {len(report.results)} mutants of {report.source}"
           + (" (built, not run: --dry-run)" if report.dry_run
              else f", each run at {', '.join(report.sizes)}"
              + (f"; where the verdict passed one, under {', '.join(report.tools)} at the sanitize "
                 "size" if report.tools
                 else "")), "",
           table(["ID", "OPERATOR", "LINE", "VERDICT", "WHY"], rows, "llrll"), ""]
    killed, counted, share = report.score
    if report.dry_run:
        built = sum(r.verdict == "built" for r in report.results)
        out.append(f"{built} built, {sum(r.verdict == 'equivalent' for r in report.results)} "
                   f"equivalent, {sum(r.verdict == 'not-built' for r in report.results)} did not "
                   "build")
    else:
        by_verdict = sum(r.verdict == "killed" and r.by == "verdict" for r in report.results)
        by = Counter(r.by for r in report.results if r.verdict in ("equivalent", "survived"))
        same_code, by_launch, at_boundary = by[mutants.BY_MACHINE_CODE], by[mutants.BY_LAUNCH], by[mutants.BY_BOUNDARY]
        same_results, not_met, noted = by[mutants.BY_SAME_RESULTS], by[mutants.BY_NOT_MET], by[mutants.BY_NOTE]
        strict_killed, strict_counted, strict = report.strict_score
        out.append(f"score: {killed} of {counted} non-equivalent mutants killed"
                   + (f" ({share:.0%})" if share is not None else "")
                   + f": {by_verdict} by the verdict, {killed - by_verdict} by a tool; {same_code} "
                     "equivalent (the "
                   f"same machine code), {by_launch} by the spec's launch (a bound it never "
                   f"meets), {at_boundary} equivalent by their results at a "
                   "boundary the checked sizes meet"
                   + (f", {noted} by the source's note" if noted else "")
                   + (f" ({strict_killed} of {strict_counted}, {strict:.0%}, counting those as "
                      "survivors)"
                      if (at_boundary or noted) and strict is not None else "")
                   + f"; of the survivors, {not_met} move a bound no checked size meets, "
                     f"{same_results} gave the original's results to the last bit")
    for r in report.results:
        if r.verdict == "survived":
            why = {mutants.BY_SAME_RESULTS: "the original's results to the last bit: its line may "
                                            "not run at these sizes, or it is equivalent",
                   mutants.BY_NOT_MET: r.why}.get(
                r.by,
                "the verdict passed a wrong kernel (the tolerance, the reference or the "
                "sizes are too weak here)")
            out += ["", f"survived {r.mutant.id}: {why}", r.mutant.diff()]
    return "\n".join(out)


def checkers_table(rows: list[dict[str, Any]]) -> str:
    """``kprof sanitize --list-tools``: each checker, what it finds, and how it runs."""
    def how(needs: dict[str, object]) -> str:
        parts = ["compute-sanitizer" if needs["sanitizer"] else "kprof's own (no sanitizer)"]
        parts += ["the GPU to itself"] * bool(needs["alone"])
        parts += ["not for pytest tests"] * bool(needs["not_for_tests"])
        parts += ["programs only when named"] * (not needs["in_all_programs"])
        return ", ".join(parts)

    return table(["TOOL", "FINDS", "RUNS"],
                 [[r["name"], r["summary"], how(r["needs"])] for r in rows])
