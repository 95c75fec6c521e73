"""What Nsight Compute's Python report reader (ncu_report) holds per instruction, for kprof's
per-line parser.

    python3 scripts/probes/ncu_source_counters.py REPORT.ncu-rep OUT.json

For each profiled kernel: every metric with per-instruction instances (its values by PC), each PC's
source file and line, and its SASS; the kernel-wide value of every other metric. It records what the
reader gives on the machine that has it, so the CSV pages kprof parses can be checked against it
without a GPU.
"""

from __future__ import annotations

import glob
import json
import sys


def _reader():
    for folder in sorted(glob.glob("/opt/nvidia/nsight-compute/*/extras/python")) + sorted(
            glob.glob("/usr/local/cuda*/nsight-compute*/extras/python")):
        sys.path.insert(0, folder)
    import ncu_report

    return ncu_report


def _value(m, k=None):
    for how in ("as_double", "as_uint64", "as_string"):
        try:
            return getattr(m, how)(k) if k is not None else getattr(m, how)()
        except Exception:
            continue
    return None


def dump(path: str) -> dict:
    ncu_report = _reader()
    ctx = ncu_report.load_report(path)
    out = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            act = rng.action_by_idx(a)
            one = {"name": act.name(), "scalar": {}, "instanced": {}, "source": {}, "sass": {},
                   "errors": []}
            pcs = set()
            for name in act.metric_names():
                try:
                    m = act.metric_by_name(name)
                    n = m.num_instances()
                    if n and m.has_correlation_ids():
                        ids = m.correlation_ids()
                        row = {}
                        for k in range(n):
                            pc = int(ids.as_uint64(k))
                            row[str(pc)] = _value(m, k)
                            pcs.add(pc)
                        one["instanced"][name] = row
                    else:
                        one["scalar"][name] = _value(m)
                except Exception as exc:
                    one["errors"].append(f"{name}: {type(exc).__name__}: {exc}")
            for pc in sorted(pcs):
                try:
                    info = act.source_info(pc)
                    one["source"][str(pc)] = [info.file_name(), info.line()] if info else None
                except Exception as exc:
                    one["errors"].append(f"source_info {pc}: {exc}")
                try:
                    one["sass"][str(pc)] = act.sass_by_pc(pc)
                except Exception as exc:
                    one["errors"].append(f"sass_by_pc {pc}: {exc}")
            out.append(one)
    return {"report": path, "actions": out}


if __name__ == "__main__":
    with open(sys.argv[2], "w") as f:
        json.dump(dump(sys.argv[1]), f, indent=0, default=str)
