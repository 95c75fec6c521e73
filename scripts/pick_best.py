"""The fastest point of kprof bench sweeps: prints 'KERNEL --param P=V ...' for the next command.

    python3 scripts/pick_best.py SWEEP.json [SWEEP.json ...]

Used by scripts/gpu-check.sh to bench the tuned matmul (the best of the tuning sweeps) against
cuBLAS across sizes in the same run.
"""

from __future__ import annotations

import json
import sys


def main(paths: list[str]) -> int:
    best = None
    for path in paths:
        try:
            points = json.load(open(path))["points"]
        except (OSError, ValueError, KeyError):
            continue
        for p in points:
            if p.get("status") == "ok" and p.get("summary"):
                key = p["summary"]["median"]
                if best is None or key < best[0]:
                    best = (key, p["kernel"], p["params"])
    if best is None:
        print("no sweep point measured", file=sys.stderr)
        return 1
    _, kernel, params = best
    print(" ".join([kernel] + [f"--param {k}={v}" for k, v in params.items()]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
