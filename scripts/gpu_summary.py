"""Write the markdown summary of a scripts/gpu-check.sh run from its logs folder."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def main(logs: Path) -> int:
    env = (logs / "env.txt").read_text().splitlines()
    steps = (logs / "steps.txt").read_text().splitlines()
    pytest_text = (logs / "pytest.txt").read_text()
    tail = [ln for ln in pytest_text.splitlines() if re.search(r"(passed|failed|error)", ln)][-1:]
    print("# GPU check")
    print()
    print(f"- date: {env[0] if env else '?'}")
    print(f"- GPU, driver, memory, max SM clock: {env[1] if len(env) > 1 else '?'}")
    print(f"- commit: {env[2] if len(env) > 2 else '?'}; {env[3] if len(env) > 3 else ''}")
    print("- command: `OUT=... bash scripts/gpu-check.sh` (device tool, nvtx wheel carried in .whl/)")
    print(f"- pytest (`python3 -m pytest -v --require-gpu tests`): {tail[0].strip('= ') if tail else '?'}")
    print()
    print("## Steps")
    print()
    for line in steps:
        print(f"- `{line}`")
    print()
    print("## Ladder kernels at their default sizes (`kprof run NAME --json`)")
    print()
    print("One launch after one warm-up, timed with CUDA events: an orientation number, not a benchmark.")
    print()
    print("| kernel | sizes | verdict | max rel. error | time (ms) | GFLOP/s | GB/s | regs |")
    print("|---|---|---|---|---|---|---|---|")
    for path in sorted((logs / "run").glob("*.json")):
        text = path.read_text()
        try:
            data = json.loads(text[text.index("{"):])
        except ValueError:
            last = text.strip().splitlines()[-1] if text.strip() else "no output"
            print(f"| {path.stem} | | ERROR: {last} | | | | | |")
            continue
        sizes = " ".join(f"{k}={v}" for k, v in data["sizes"].items())
        errs = [c["rel_err"] for c in data["checks"] if c["rel_err"] is not None]
        err = f"{max(errs):.2e}" if errs else "n/a"
        ms = data["time_ms"]
        gflops = f"{data['flops'] / ms / 1e6:.1f}" if data.get("flops") and ms else ""
        gbs = f"{data['bytes'] / ms / 1e6:.1f}" if data.get("bytes") and ms else ""
        verdict = "PASS" if data["ok"] else "FAIL"
        print(f"| {data['kernel']} | {sizes} | {verdict} | {err} | {ms:.4f} | {gflops} | {gbs} | {data['usage']['registers']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
