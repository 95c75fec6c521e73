"""The performance corpus's diagnoses replayed without a GPU, from what a GPU run recorded: each
case's diagnosis inputs (tests/data/diagnosis/h100-sourcepages.json: the profile as kprof read it,
the timed seconds, the SM count and clock, the ceilings) and its Source page as Nsight Compute
printed it (tests/data/ncu/pages/), re-read by today's parser and judged by today's rules.

    python3 scripts/replay_pages.py [--json FILE] [CASE ...]

It prints each case's first cause and line against what the corpus expects. The pages are an H100's
(ncu
2025.3.1); the PTX is built here (nvcc or NVRTC for sm_90).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import sys
from dataclasses import asdict, replace
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "tests" / "data" / "diagnosis" / "h100-sourcepages.json"
PAGES = ROOT / "tests" / "data" / "ncu" / "pages"


def page_of(case: str):
    """The case's Source page as today's parser reads it, or None where none was recorded."""
    from kprof.tools.nsight import sourcepage

    path = PAGES / f"{case}.source-cuda-sass.csv.gz"
    if not path.is_file():
        return None
    pages = sourcepage.parse(gzip.decompress(path.read_bytes()).decode())
    return pages[0] if len(pages) == 1 else None


def replay(recorded: dict, *, page=None):
    """(the case, its diagnosis now) from one recorded case: its profile with ``page`` (default: the
    recorded page re-read), the PTX built here, and the recorded seconds, device and ceilings."""
    from kprof.build import build
    from kprof.commands import pipeline
    from kprof.diagnosis import diagnose, gather
    from kprof.measure.kernelprofile import KernelProfile
    from kprof.spec import catalog

    inputs = recorded["inputs"]
    profile = KernelProfile.from_dict(inputs["profile"])
    profile = replace(profile, lines=page if page is not None else page_of(recorded["case"]))
    prepared = pipeline.prepare(catalog.load(recorded["case"]), None, arch="sm_90")
    device = {"sm_count": inputs["sm_count"], "clock_khz": (inputs["sm_hz"] or 0) / 1e3}
    facts = gather.facts_for(prepared, profile, counters=inputs["counters"],
                             ptx=build.ptx(prepared.resolved.spec, "sm_90"),
                             timed=SimpleNamespace(device=device, time_ms=None), peak=None,
                             seconds=inputs["seconds"],
                             kernel_seconds=tuple(inputs.get("kernel_seconds") or ()))
    facts = replace(facts, ceiling_bytes_per_s=inputs["ceiling_bytes_per_s"],
                    peak_flops=inputs["peak_flops"],
                    notes=[n for n in facts.notes if "no kprof peak ceilings" not in n])
    return prepared, diagnose(facts)


@functools.cache
def _corpus() -> dict:
    """The performance corpus by name, loaded once."""
    from kprof.corpus import perfcases
    from kprof.spec import catalog

    return {c.name: c for c in perfcases.load_all(catalog.group("perf"))}


def judged(recorded: dict):
    """The corpus's verdict on the replayed diagnosis (kprof.corpus.perfcases.judge)."""
    from kprof.corpus import perfcases
    from kprof.diagnosis import gather
    from kprof.diagnosis.facts import fp64_ratio_of, kernel_line

    case = _corpus()[recorded["case"]]
    _, d = replay(recorded)
    source = case.spec.source.read_text().splitlines() if case.spec.source else []
    return perfcases.judge(case, d, recorded.get("measured"),
                           control=perfcases.control_here(case, fp64_ratio_of("sm_90")),
                           launch_line=gather.launch_line(case.spec),
                           entry_line=kernel_line(source, case.spec.entry)), d


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    data = json.loads(RECORDED.read_text())
    rows = []
    for rec in data["cases"]:
        if args.cases and rec["case"] not in args.cases:
            continue
        r, _ = judged(rec)
        rows.append({**asdict(r), "gpu_run_first": rec["first"], "run": rec["run"]})
        print(f"{r.case:26s} {'ok ' if r.cause_right and r.line_right else 'MISS'} first {r.first} "
              f"at {r.line} (expected {r.expected} at {r.expected_line}; the GPU run: "
              f"{rec['first']}) estimate {r.estimate}")
    n = len(rows)
    print(f"cause right {sum(x['cause_right'] for x in rows)}/{n}, line right "
          f"{sum(x['cause_right'] and x['line_right'] for x in rows)}/{n}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
