"""Write the markdown summary of a scripts/gpu-check.sh run from its logs folder.

    python3 scripts/gpu_summary.py LOGS > summary.md
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path


def main(logs: Path) -> int:
    env = (logs / "env.txt").read_text().splitlines()
    steps = (logs / "steps.txt").read_text().splitlines() if (logs / "steps.txt").exists() else []
    what = os.environ.get("GPU_CHECK_WHAT", "tests")
    print("# GPU check")
    print()
    # env.txt: the date, one line per GPU (nvidia-smi), the commit, the Python version
    gpus = "; ".join(env[1:-2]) if len(env) > 3 else "?"
    print(f"- date: {env[0] if env else '?'}")
    print(f"- GPU, driver, memory, max SM clock: {gpus}")
    print(f"- commit: {env[-2] if len(env) > 3 else '?'}; {env[-1] if len(env) > 3 else ''}")
    if (logs / "toolchain.txt").exists():
        print(f"- toolchain: {'; '.join((logs / 'toolchain.txt').read_text().splitlines())}")
    print(f"- command: `KPROF_COMMIT=... OUT=$OUT bash scripts/gpu-check.sh {what}`")
    for name in ("pytest", "verify", "recheck"):
        log = logs / f"{name}.txt"
        if log.exists():
            totals = [ln for ln in log.read_text().splitlines() if re.search(r"\d+ (passed|failed)", ln)]
            print(f"- {name}: {totals[-1].strip('= ') if totals else '?'}")
    print()
    print("## Steps (exit code, wall time, command)")
    print()
    for line in steps:
        print(f"- `{line}`")
    _runs(logs)
    for name in ("sanitize-tiled_matmul", "cases"):
        path = logs / f"{name}.txt"
        if path.exists():
            print(f"\n## `kprof {name.replace('-', ' ')}`\n\n```")
            print(path.read_text().rstrip())
            print("```")
    return 0


def _runs(logs: Path) -> None:
    runs = sorted((logs / "run").glob("*.json")) if (logs / "run").exists() else []
    if not runs:
        return
    print("\n## Every kernel at its default size (`kprof run NAME --json`)\n")
    print("One launch after one warm-up, timed with CUDA events: an orientation number, not a benchmark.\n")
    print("| kernel | sizes | verdict | max rel. error | time (ms) | regs |")
    print("|---|---|---|---|---|---|")
    for path in runs:
        try:
            data = json.loads(path.read_text())
        except ValueError:
            print(f"| {path.stem} | | ERROR (see logs) | | | |")
            continue
        sizes = " ".join(f"{k}={v}" for k, v in data["sizes"].items())
        errs = [c["rel_err"] for c in data["checks"] if c["rel_err"] is not None]
        worst = f"{max(errs):.2e}" if errs else "-"
        print(f"| {data['kernel']} | {sizes} | {'PASS' if data['ok'] else 'FAIL'} | {worst} | "
              f"{data['time_ms']:.4f} | {data['usage']['registers']} |")


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
