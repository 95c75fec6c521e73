"""The mutation score of every spec from the JSON of ``kprof mutants NAME --json`` (one file per spec,
``mutants-NAME.json``, as ``scripts/gpu-check.sh mutants`` writes them), as one Markdown table:

    python3 scripts/mutant_scores.py FOLDER [FOLDER ...]

A later folder's file for a spec replaces an earlier one's. A mutant the verdict and every tool passed
with the original's results to the last bit counts as a survivor (``same results``: its line may not
run at the checked sizes, or it is equivalent), unless it moved a bound whose probe showed the checked
sizes meet it (``equivalent``, ``by: results at its boundary``, from kprof mutants' JSON version 3): those
are a column of their own, left out of the score and counted as survivors in the strict score beside it.
The JSON of kprof before the same-results rule (version 2 with ``by: results`` under ``equivalent``) is
read as a same-results survivor.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def tally(data: dict) -> dict:
    """Counts of one spec's mutants: equivalent (machine code), killed by the verdict, by a tool,
    survived with other results, survived with the same results, not built; and the score."""
    out = {"spec": data["spec"], "mutants": len(data["mutants"]), "equivalent": 0, "boundary": 0, "verdict": 0,
           "tool": 0, "survived": 0, "same": 0, "not-built": 0, "survivors": []}
    for m in data["mutants"]:
        verdict, by = m["verdict"], m.get("by", "")
        if verdict == "equivalent" and by == "results at its boundary":
            out["boundary"] += 1
        elif (verdict == "equivalent" and by == "results") or (verdict == "survived" and by == "same results"):
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
            "equivalent (results at a met boundary)",
            "killed by the verdict", "killed by a tool", "survived", "of them, the original's results", "score",
            "strict score", "survivors"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        killed = r["verdict"] + r["tool"]
        counted = killed + r["survived"] + r["same"]
        score = "n/a" if r["score"] is None else f"{killed} of {counted} ({r['score']:.0%})"
        strict = "n/a" if r["strict"] is None else f"{killed} of {counted + r['boundary']} ({r['strict']:.0%})"
        lines.append(f"| {r['spec']} | {r['mutants']} | {r['equivalent']} | {r['boundary']} | {r['verdict']} | {r['tool']} | "
                     f"{r['survived'] + r['same']} | {r['same']} | {score} | {strict} | {'; '.join(r['survivors']) or 'none'} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    latest: dict[str, dict] = {}
    for folder in argv:
        for path in sorted(Path(folder).glob("mutants-*.json")):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue  # a run stopped at its deadline leaves an empty file
            latest[data["spec"]] = tally(data)
    print(table([latest[k] for k in sorted(latest)]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
