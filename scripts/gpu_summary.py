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
            totals = [ln for ln in log.read_text().splitlines()
                      if re.search(r"\d+ (passed|failed)", ln)]
            print(f"- {name}: {totals[-1].strip('= ') if totals else '?'}")
    busy = utilization(logs)
    if busy:
        print(f"- during the suite: {busy}")
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


def utilization(logs: Path) -> str:
    """The CPUs' and the GPU's mean busy share over the suite's pytest step, from the samplers'
    logs (vmstat: 100 - idle - wait; nvidia-smi: utilization.gpu), and the share of seconds each
    was above 90%: which of the two bounds the suite's wall time."""
    parts = []
    cpu = [100 - int(f[14]) - int(f[15])
           for f in (ln.split() for ln in _lines(logs / "suite-cpu.txt"))
           # the first line is since boot
           if len(f) >= 17 and f[14].isdigit() and f[15].isdigit()][1:]
    if cpu:
        parts.append(f"CPUs {sum(cpu) / len(cpu):.0f}% busy on average, above 90% in "
                     f"{sum(c > 90 for c in cpu) / len(cpu):.0%} of {len(cpu)} s")
    gpu = [int(m.group(1))
           for m in (re.search(r", (\d+) %", ln) for ln in _lines(logs / "suite-gpu.txt")) if m]
    if gpu:
        parts.append(f"GPU {sum(gpu) / len(gpu):.0f}% busy on average, above 90% in "
                     f"{sum(g > 90 for g in gpu) / len(gpu):.0%} of {len(gpu)} s")
    return "; ".join(parts)


def _lines(path: Path) -> list[str]:
    return path.read_text(errors="replace").splitlines() if path.exists() else []


def _runs(logs: Path) -> None:
    runs = sorted((logs / "run").glob("*.json")) if (logs / "run").exists() else []
    if not runs:
        return
    print("\n## Every kernel at its default size (`kprof run NAME --json`)\n")
    print("One launch after one warm-up, timed with CUDA events: an orientation number, not a "
          "benchmark.\n")
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
