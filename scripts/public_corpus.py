"""Score kprof's diagnosis on a public optimisation ladder nobody here wrote (perf_public/llmc.yaml:
llm.c's dev/cuda kernels, each version against the next one).

    python3 scripts/public_corpus.py check CHECKOUT                 # the checkout is the
    expectations' commit python3 scripts/public_corpus.py specs CHECKOUT OUT             # a spec
    for each step's version and the next python3 scripts/public_corpus.py score OUT [--json FILE]
    [STEP ...]   # on a GPU: bench, profile, judge

The public code stays where it is (an ignored folder: .corpus/llm.c, from `git archive COMMIT
dev/cuda`); the specs point at its files unchanged (kprof builds a tutorial's file as it is: host
code, its own headers). What is ours: the expectations (perf_public/llmc.yaml), the references
(perf_public/llmc_ref.py) and this script.

`score` runs, for each step, one `kprof bench` of the version and the next (the measured gain, same
run), Nsight Compute's full set on the version (its rules too), and kprof's diagnosis with the
bench's time; then judges as `kprof cases --perf` does: the first cause (the expected one, or the
cause the same rewrite also removes), its line (any line the next version rewrites for that cause; a
launch cause: the spec's launch line), the estimate within 1.5x of the measured gain, and Nsight
Compute's largest estimated speedup beside it. Each step is judged as it finishes (a Ctrl-C keeps
those judged).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
EXPECT = ROOT / "perf_public" / "llmc.yaml"
REFS = ROOT / "perf_public" / "llmc_ref.py"
SPEC_KEYS = ("sizes", "args", "reference", "tolerance", "work")


def load(path: Path = EXPECT) -> dict:
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("steps"), dict):
        raise SystemExit(f"{path}: expected a mapping with steps")
    return data


def check(checkout: Path, data: dict) -> str | None:
    """Why ``checkout`` is not the expectations' code (the line numbers are its files' at the
    commit), or None: each file's sha256 against the one the expectations recorded (a clone at the
    commit or its ``git archive`` alike)."""
    import hashlib

    folder = checkout / data["folder"]
    for name, digest in sorted(data["files"].items()):
        path = folder / name
        if not path.is_file():
            return f"{folder} lacks {name} (get {data['repository']} at {data['commit'][:12]})"
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            return f"{path} is not the file of {data['commit'][:12]} the expectations' lines are for"
    return None


def _launch_of(version: dict, spec_args: list[dict]) -> dict:
    """The spec fields of one version: its entry and launch, or its steps (a version with args of
    its own)."""
    if "steps" in version:
        return {"steps": version["steps"]}
    if "args" in version:
        return {"steps": [{"entry": version["entry"], "args": version["args"],
                           "launch": version["launch"]}]}
    return {"entry": version["entry"], "launch": version["launch"]}


def specs(checkout: Path, out: Path, data: dict) -> list[Path]:
    """Two specs a step, NAME.yaml (the version) and NAME_next.yaml, pointing at the checkout's
    files."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(REFS, out / REFS.name)
    folder = (checkout / data["folder"]).resolve()
    written = []
    for name, step in data["steps"].items():
        for suffix, version in (("", step["bug"]), ("_next", step["next"])):
            spec = {"description": f"llm.c {step['file']} ({name}{suffix}): "
                                   f"{' '.join(step['why'].split())}",
                    "source": str(folder / step["file"]),
                    **{k: step[k] for k in SPEC_KEYS if k in step},
                    **_launch_of(version, step["args"])}
            # the version before takes none of the next one's own buffers
            if not suffix and step.get("only_next"):
                gone = set(step["only_next"])
                spec["args"] = [a for a in spec["args"] if a["name"] not in gone]
                spec["reference"] = {k: v for k, v in spec["reference"].items() if k not in gone}
            path = out / f"{name}{suffix}.yaml"
            path.write_text(yaml.safe_dump(spec, sort_keys=False, width=120))
            written.append(path)
    return written


@dataclass
class Judged:
    step: str
    expected: str
    expected_lines: list[int]
    first: str | None = None
    line: str | None = None
    cause_right: bool = False
    line_right: bool = False
    estimate: float | None = None
    measured: float | None = None  # the version's time over the next version's, one bench run
    estimate_right: bool | None = None
    causes: list[str] = field(default_factory=list)
    ncu_rule: str | None = None
    ncu_cause: str | None = None
    ncu_speedup: float | None = None
    mode: str = ""
    error: str = ""
    diagnosis: dict = field(default_factory=dict)


def judge(step: str, expect: dict, diagnosis, measured: float | None, *, file: str, spec_name: str,
          launch_line: int) -> Judged:
    """Pure: one step's diagnosis against what the expectations say."""
    from kprof.corpus import perfcases

    cause = expect["cause"]
    also = expect.get("also") or {}
    right = {cause: expect.get("lines", []), **also}
    first = diagnosis.first()
    r = Judged(step, cause, list(expect.get("lines", [])), mode=diagnosis.mode,
               causes=[c.rule for c in diagnosis.causes])
    if first is None:
        return r
    r.first = first.rule
    r.line = first.line.show() if first.line and first.line.file else None
    r.cause_right = first.rule in right and cause != "none"
    lines = right.get(first.rule, [])
    named = [x for x in (first.line, *first.also) if x is not None and x.file]
    if lines == "launch":
        r.line_right = any(Path(x.file).name == spec_name and x.line == launch_line for x in named)
    else:
        r.line_right = any(Path(x.file).name == file and x.line in lines for x in named)
    r.estimate = first.gain.estimate
    r.measured = measured
    if r.estimate is not None and measured:
        # as kprof cases --perf
        r.estimate_right = 1 / perfcases.WITHIN <= r.estimate / measured <= perfcases.WITHIN
    return r


def score(out: Path, data: dict, only: list[str], progress=print) -> list[Judged]:
    import kprof
    from kprof.commands import pipeline, profiles
    from kprof.diagnosis import gather, ncurules, stage
    from kprof.spec import catalog
    from kprof.tools.nsight import ncu

    results = []
    try:
        for name, step in data["steps"].items():
            if only and name not in only:
                continue
            bug, nxt = out / f"{name}.yaml", out / f"{name}_next.yaml"
            try:
                report = kprof.run_bench([str(bug), str(nxt)], baseline="none", max_time=1.0,
                                         min_time=0.2, history=False)
                times = {p.kernel: p.summary.median if p.status == "ok" and p.summary else None
                         for p in report.points}
                bad = [f"{p.kernel}: {p.status} {getattr(p, 'message', '') or ''}".strip()
                       for p in report.points if p.status != "ok"]
                t_bug, t_next = times.get(name), times.get(f"{name}_next")
                own = next((tuple(s for _, s in p.call_kernels) for p in report.points if p.kernel == name), ())
                spec = catalog.load(str(bug))
                prepared = pipeline.prepare(spec, None)
                reports = out / "reports"
                reports.mkdir(exist_ok=True)
                got = stage.profile_one(prepared,
                                        stage.ProfileSettings(set_name="full", report_dir=reports))
                rules = ncu.rules_of(reports / f"{name}.ncu-rep")
                d = stage.diagnose_one(prepared, got, seconds=t_bug, kernel_seconds=own,
                                       bench=profiles.try_bench(None, 300.0),
                                       peak=pipeline.cached_peak())
                r = judge(name, step["expect"], d, t_bug / t_next if t_bug and t_next else None,
                          file=step["file"],
                          spec_name=bug.name, launch_line=gather.launch_line(spec))
                r.error = "; ".join(bad)
                r.diagnosis = d.to_dict()
                if rules:
                    v = ncurules.verdict(rules)
                    r.ncu_rule, r.ncu_cause, r.ncu_speedup = v.rule, v.cause, v.speedup
            except kprof.KprofError as exc:
                r = Judged(name, step["expect"]["cause"], list(step["expect"].get("lines", [])),
                           error=str(exc).splitlines()[0])
            results.append(r)
            progress(f"  {name}: {'ok' if r.cause_right and r.line_right else 'MISS'} (first "
                     f"{r.first}, line {r.line}, estimate {r.estimate}, measured "
                     f"{r.measured}){' ' + r.error if r.error else ''}")
    except KeyboardInterrupt:
        progress(f"interrupted: {len(results)} steps judged")
    return results


def tally(results: list[Judged]) -> dict[str, object]:
    with_est = [r for r in results if r.estimate_right is not None]
    return {"steps": len(results), "cause_right": sum(r.cause_right for r in results),
            "cause_and_line_right": sum(r.cause_right and r.line_right for r in results),
            "estimates": len(with_est),
            "estimates_within": sum(bool(r.estimate_right) for r in with_est),
            "ncu_right": sum(1 for r in results if r.ncu_cause is not None
                             and r.ncu_cause == r.expected),
            "nothing_named": sum(1 for r in results if r.first is None and not r.error),
            "errors": sum(1 for r in results if r.error)}


def table(results: list[Judged]) -> str:
    rows = [f"{'STEP':<22} {'EXPECTED':<14} {'FIRST':<16} {'LINE':<28} {'EST':>7} {'MEASURED':>8}  "
            "NCU"]
    for r in results:
        est = f"{r.estimate:.2f}" if r.estimate else "-"
        got = f"{r.measured:.2f}" if r.measured else "-"
        mark = "ok" if r.cause_right and r.line_right else "MISS"
        rows.append(f"{r.step:<22} {r.expected:<14} {r.first!s:<16} {r.line!s:<28} {est:>7} "
                    f"{got:>8}  {r.ncu_rule or '-'}  {mark}{'  ' + r.error[:80] if r.error else ''}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    c = sub.add_parser("check")
    c.add_argument("checkout", type=Path)
    s = sub.add_parser("specs")
    s.add_argument("checkout", type=Path)
    s.add_argument("out", type=Path)
    r = sub.add_parser("score")
    r.add_argument("out", type=Path)
    r.add_argument("steps", nargs="*")
    r.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    data = load()
    if args.what in ("check", "specs"):
        if why := check(args.checkout, data):
            print(f"public_corpus: {why}", file=sys.stderr)
            return 2
        if args.what == "specs":
            print("\n".join(str(x) for x in specs(args.checkout, args.out, data)))
        return 0
    results = score(args.out, data, args.steps,
                    progress=lambda m: print(m, file=sys.stderr, flush=True))
    print(table(results))
    print(json.dumps(tally(results)))
    if args.json:
        import kprof

        args.json.write_text(json.dumps({"kprof": kprof.__version__, "commit": data["commit"],
                                         "tally": tally(results),
                                         "steps": [asdict(x) for x in results]}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
