"""What the benchmark-integrity checks cost, from ``kprof bench --json`` files: per point, the
checks' seconds in the child (``integrity_seconds``) over the kernel's child from start to end as
the parent saw it (``wall_seconds``), and the flags raised. One Markdown table:

    python3 scripts/integrity_cost.py BENCH.json [BENCH.json ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def rows(data: dict) -> list[str]:
    out = []
    for p in data.get("points", []):
        label = " ".join(f"{k}={v}"
                         for k, v in {**p.get("sizes", {}), **p.get("params", {})}.items())
        cost, wall = p.get("integrity_seconds"), p.get("wall_seconds")
        share = f"{cost / wall:.1%}" if cost is not None and wall else "n/a"
        flags = [*p.get("integrity", []),
                 *(f"baseline: {f}" for f in p.get("baseline_integrity", []) or [])]
        out.append(f"| {p['kernel']} {label} | {p.get('status')} | "
                   f"{cost if cost is not None else 'n/a'} | {wall if wall is not None else 'n/a'} "
                   f"| {share} | {'; '.join(flags) or 'none'} |")
    return out


def main(argv: list[str]) -> int:
    if not argv:
        print("python3 scripts/integrity_cost.py BENCH.json [BENCH.json ...]", file=sys.stderr)
        return 2
    print("| point | status | checks, s | child wall, s | share | flags "
          "|\n|---|---|---|---|---|---|")
    for path in argv:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError):
            continue
        print("\n".join(rows(data)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
