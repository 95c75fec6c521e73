"""Write the markdown summary of a scripts/gpu-check.sh run from its logs folder."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path


def _json_from(text: str):
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    return json.loads(text[start:]) if start >= 0 else None


def main(logs: Path) -> int:
    env = (logs / "env.txt").read_text().splitlines()
    steps = (logs / "steps.txt").read_text().splitlines() if (logs / "steps.txt").exists() else []
    print("# GPU check")
    print()
    print(f"- date: {env[0] if env else '?'}")
    print(f"- GPU, driver, memory, max SM clock: {env[1] if len(env) > 1 else '?'}")
    print(f"- commit: {env[2] if len(env) > 2 else '?'}; {env[3] if len(env) > 3 else ''}")
    what = os.environ.get("GPU_CHECK_WHAT", "all")
    print(f"- command: `KPROF_COMMIT=... OUT=$OUT bash scripts/gpu-check.sh {what}` on the lent H200 "
          "(device tool, nvtx and cupti-python wheels carried in .whl/)")
    pytest_log = logs / "pytest.txt"
    if pytest_log.exists():
        lines = [ln for ln in pytest_log.read_text().splitlines() if re.search(r"\d+ (passed|failed)", ln)]
        print(f"- pytest (`python3 -m pytest -v -ra --require-gpu -n 8 tests`): {lines[-1].strip('= ') if lines else '?'}")
    print()
    print("## Steps (exit code, wall time, command)")
    print()
    for line in steps:
        print(f"- `{line}`")
    runs = sorted((logs / "run").glob("*.json")) if (logs / "run").exists() else []
    if runs:
        print()
        print("## Ladder kernels at their default sizes (`kprof run NAME --json`)")
        print()
        print("One launch after one warm-up, timed with CUDA events: an orientation number, not a benchmark.")
        print()
        print("| kernel | sizes | verdict | max rel. error | time (ms) | GFLOP/s | GB/s | regs |")
        print("|---|---|---|---|---|---|---|---|")
        for path in runs:
            try:
                data = _json_from(path.read_text())
            except ValueError:
                data = None
            if not data:
                print(f"| {path.stem} | | ERROR (see logs) | | | | | |")
                continue
            sizes = " ".join(f"{k}={v}" for k, v in data["sizes"].items())
            errs = [c["rel_err"] for c in data["checks"] if c["rel_err"] is not None]
            ms = data["time_ms"]
            gflops = f"{data['flops'] / ms / 1e6:.1f}" if data.get("flops") and ms else ""
            gbs = f"{data['bytes'] / ms / 1e6:.1f}" if data.get("bytes") and ms else ""
            print(f"| {data['kernel']} | {sizes} | {'PASS' if data['ok'] else 'FAIL'} | "
                  f"{max(errs):.2e} | {ms:.4f} | {gflops} | {gbs} | {data['usage']['registers']} |")
    for name, title in (("sanitize-tiled_matmul", "kprof sanitize tiled_matmul (all tools)"),
                        ("sanitize-tiled_matmul_no_bounds", "kprof sanitize tiled_matmul_no_bounds --tool memcheck"),
                        ("sanitize-neighbour_overflow-padding0", "kprof sanitize neighbour_overflow --tool memcheck --memcheck-padding 0"),
                        ("sanitize-neighbour_overflow", "kprof sanitize neighbour_overflow --tool memcheck"),
                        ("sanitize-bad_shfl_mask", "kprof sanitize bad_shfl_mask (all tools)"),
                        ("cases", "kprof cases"),
                        ("profile-ladder", "kprof profile naive_matmul tiled_matmul regblock_matmul --size M=2048 N=2048 K=2048 --plot roofline.png"),
                        ("plain-ncu-naive_matmul", "plain ncu, naive_matmul 2048 (scripts/plain_ncu.py)"),
                        ("plain-ncu-tiled_matmul", "plain ncu, tiled_matmul 2048 (scripts/plain_ncu.py)"),
                        ("plain-ncu-regblock_matmul", "plain ncu, regblock_matmul 2048 (scripts/plain_ncu.py)"),
                        ("profile-perf-cases", "kprof profile of the seeded performance bugs and their twins"),
                        ("occupancy-regblock_matmul", "kprof occupancy regblock_matmul")):
        path = logs / f"{name}.txt"
        if path.exists():
            print()
            print(f"## `{title}`")
            print()
            print("```")
            print("\n".join(ln for ln in path.read_text().rstrip().splitlines() if not ln.startswith("  ") or name != "cases"))
            print("```")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
