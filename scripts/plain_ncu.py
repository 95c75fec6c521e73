"""Run plain ncu (no kprof parsing) on a kernel through kprof's runner, for comparison.

    python3 scripts/plain_ncu.py NAME [K=V ...]

Prints ncu's own table for a handful of metrics, so a reader can check kprof profile's numbers
against what ncu itself says for the same kernel and size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kprof import build, catalog, launch, proc  # noqa: E402
from kprof import spec as spec_mod

METRICS = ("gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,"
           "sm__warps_active.avg.pct_of_peak_sustained_active,sm__maximum_warps_per_active_cycle_pct,"
           "lts__t_sector_hit_rate.pct,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,"
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum")


def main(argv: list[str]) -> int:
    spec = catalog.load(argv[0])
    sizes = spec_mod.parse_size_overrides(argv[1:])
    resolved = spec.resolve(sizes)
    job = launch.make_job(spec, build.build(spec), resolved.sizes)
    with tempfile.TemporaryDirectory() as tmp:
        jp, rp = Path(tmp) / "job.json", Path(tmp) / "result.json"
        jp.write_text(json.dumps(dict(job, verify=False, time=False)))
        extra = os.environ.get("PLAIN_NCU_ARGS", "").split()  # e.g. "--cache-control none"
        cmd = [str(proc.find_tool("ncu")), "--nvtx", "--nvtx-include", f"kprof@{spec.name}/", "--clock-control",
               "none", *extra, "--metrics", METRICS] + launch.runner_argv(jp, rp)
        print("$", " ".join(cmd), flush=True)
        return subprocess.run(cmd, env=launch.child_env()).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
