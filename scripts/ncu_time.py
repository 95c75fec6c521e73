"""Nsight Compute's own duration of a kernel, over many launches, for checking kprof bench.

    python3 scripts/ncu_time.py NAME [K=V ...] [--repeat N] [--cache-control all|none]

Runs kprof's runner under plain ncu (``--clock-control none``, one metric: gpu__time_duration.sum),
with the kernel launched N times in one process, and prints one JSON line: every launch's
duration, and the median of all launches but the first (the first pays for a cold instruction
cache and first-touch page mappings). ncu flushes the caches before each launch unless
``--cache-control none``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kprof import build, catalog, launch, ncu, proc  # noqa: E402
from kprof import spec as spec_mod


def main(argv: list[str]) -> int:
    repeat, cache = 1, "all"
    rest = []
    it = iter(argv)
    for a in it:
        if a == "--repeat":
            repeat = int(next(it))
        elif a == "--cache-control":
            cache = next(it)
        else:
            rest.append(a)
    spec = catalog.load(rest[0])
    resolved = spec.resolve(spec_mod.parse_size_overrides(rest[1:]))
    job = launch.make_job(spec, build.build(spec), resolved.sizes)
    with tempfile.TemporaryDirectory() as tmp:
        jp, rp = Path(tmp) / "job.json", Path(tmp) / "result.json"
        jp.write_text(json.dumps(dict(job, verify=False, time=False, repeat=repeat)))
        cmd = [str(proc.find_tool("ncu")), "--nvtx", "--nvtx-include", f"kprof@{spec.name}/", "--clock-control",
               "none", "--cache-control", cache, "--csv", "--page", "raw", "--metrics", "gpu__time_duration.sum",
               ] + launch.runner_argv(jp, rp)
        done = subprocess.run(cmd, env=launch.child_env(), capture_output=True, text=True)
    rows = ncu.parse_csv(done.stdout)
    us = []
    for row in rows:
        v = row.get("gpu__time_duration.sum")
        if v is not None and isinstance(v.value, float):
            us.append(v.value * {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}.get(v.unit, 1.0))
    out = {"kernel": spec.name, "sizes": resolved.sizes, "cache_control": cache, "launches": len(us), "us": us,
           "median_us_after_first": statistics.median(us[1:]) if len(us) > 1 else (us[0] if us else None),
           "returncode": done.returncode}
    if not us:
        out["stderr_tail"] = (done.stdout + done.stderr)[-2000:]
    print(json.dumps(out))
    return 0 if us else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
