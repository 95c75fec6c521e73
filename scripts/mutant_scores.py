"""The mutation score of every spec from the JSON of ``kprof mutants NAME --json`` (one file per
spec, ``mutants-NAME.json``, as ``scripts/gpu-check.sh mutants`` writes them), as one Markdown
table:

    python3 scripts/mutant_scores.py [--decide-launch] FOLDER [FOLDER ...]

A later folder's file for a spec replaces an earlier one's. A mutant the verdict and every tool
passed with the original's results to the last bit counts as a survivor (``same results``: its line
may not run at the checked sizes, or it is equivalent), unless it moved a bound whose probe showed
the checked sizes meet it (``equivalent``, ``by: results at its boundary``, from kprof mutants' JSON
version 3): those are a column of their own, left out of the score and counted as survivors in the
strict score beside it. The JSON of kprof before the same-results rule (version 2 with ``by:
results`` under ``equivalent``) is read as a same-results survivor.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def launch_decided(data: dict) -> dict[str, str]:
    """The survivors of ``data`` that today's kprof decides without a run: from the spec's launch
    (kprof.corpus.mutants.unreachable_by_launch, "launch: ...") or by the source's note on their
    line (kprof.corpus.mutants.note_of, "note: ..."): id -> why. A mutant counts only where today's
    source gives the same id on the same line with the same operator, the line otherwise as it
    was."""
    from kprof.corpus import mutants
    from kprof.spec import catalog

    spec = catalog.load(data["spec"])
    now = {m.id: m for m in mutants.generate(spec.source.read_text(), mutants.MAX_MUTANTS)}
    out = {}
    for m in data["mutants"]:
        same = now.get(m["id"])
        if m["verdict"] != "survived" or same is None or (same.line, same.operator) != (m["line"], m["operator"]):
            continue
        if why := mutants.unreachable_by_launch(same, spec):
            out[m["id"]] = "launch: " + why
        elif (note := mutants.note_of(same)) and mutants.NOTE.sub("", same.before).rstrip() in m.get("diff", ""):
            out[m["id"]] = "note: " + note
    return out


def tally(data: dict, decide: bool = False) -> dict:
    """Counts of one spec's mutants: equivalent (machine code), killed by the verdict, by a tool,
    survived with other results, survived with the same results, not built; and the score.
    ``decide``: survivors today's kprof decides from the launch count as equivalent (listed under
    ``decided``)."""
    decided = launch_decided(data) if decide else {}
    out = {"spec": data["spec"], "mutants": len(data["mutants"]), "equivalent": 0, "boundary": 0,
           "verdict": 0, "tool": 0, "survived": 0, "same": 0, "not-built": 0, "survivors": [],
           "decided": [f"{i} line {next(m['line'] for m in data['mutants'] if m['id'] == i)}"
                       for i in decided]}
    for m in data["mutants"]:
        verdict, by = m["verdict"], m.get("by", "")
        if m["id"] in decided:
            verdict, by = "equivalent", "the launch" if decided[m["id"]].startswith("launch") else "the source's note"
        if verdict == "equivalent" and by in ("results at its boundary", "the source's note"):
            out["boundary"] += 1
        elif (verdict == "equivalent" and by == "results") or (verdict == "survived"
                                                               and by == "same results"):
            out["same"] += 1
            out["survivors"].append(f"{m['id']} line {m['line']} ({m['operator']}), same results")
        elif verdict == "equivalent":
            out["equivalent"] += 1
        elif verdict == "killed":
            out["verdict" if by in ("", "verdict") else "tool"] += 1
        elif verdict == "survived":
            out["survived"] += 1
            out["survivors"].append(f"{m['id']} line {m['line']} ({m['operator']})"
                                    + (", boundary not met" if by == "boundary not met" else ""))
        else:
            out["not-built"] += 1
    killed = out["verdict"] + out["tool"]
    counted = killed + out["survived"] + out["same"]
    out["score"] = killed / counted if counted else None
    out["strict"] = killed / (counted + out["boundary"]) if counted + out["boundary"] else None
    return out


def table(rows: list[dict]) -> str:
    head = ["spec", "mutants", "equivalent (machine code, or a bound the launch never meets)",
            "equivalent (results at a met boundary, or the source's note)",
            "killed by the verdict", "killed by a tool", "survived",
            "of them, the original's results", "score", "strict score", "survivors"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        killed = r["verdict"] + r["tool"]
        counted = killed + r["survived"] + r["same"]
        score = "n/a" if r["score"] is None else f"{killed} of {counted} ({r['score']:.0%})"
        strict = "n/a" if r["strict"] is None else f"{killed} of {counted + r['boundary']} ({r['strict']:.0%})"
        lines.append(f"| {r['spec']} | {r['mutants']} | {r['equivalent']} | {r['boundary']} | "
                     f"{r['verdict']} | {r['tool']} | {r['survived'] + r['same']} | {r['same']} | "
                     f"{score} | {strict} | {'; '.join(r['survivors']) or 'none'} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    decide = "--decide-launch" in argv
    argv = [a for a in argv if a != "--decide-launch"]
    latest: dict[str, dict] = {}
    for folder in argv:
        for path in sorted(Path(folder).glob("mutants-*.json")):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue  # a run stopped at its deadline leaves an empty file
            latest[data["spec"]] = tally(data, decide)
    print(table([latest[k] for k in sorted(latest)]))
    if decided := [f"{k} {', '.join(r['decided'])}" for k, r in sorted(latest.items())
                   if r["decided"]]:
        print("\nSurvivors of these runs that kprof now decides without a run (from the spec's "
              "launch, or by the note on their line, which the strict score counts as survivors): "
              + "; ".join(decided) + ".")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
