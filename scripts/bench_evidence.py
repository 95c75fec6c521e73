"""Markdown evidence for kprof bench from a scripts/gpu-check.sh bench run (its logs folder)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

UNITS = {"ns": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3, "s": 1.0, "nsecond": 1e-9}


def load(path: Path):
    text = path.read_text()
    return json.loads(text[text.index("{"):])


def ncu_time(path: Path) -> float | None:
    for line in path.read_text().splitlines():
        m = re.search(r"gpu__time_duration\.sum\s+(\w+)\s+([\d.,]+)", line)
        if m:
            return float(m.group(2).replace(",", "")) * UNITS[m.group(1)]
    return None


def us(x):
    return f"{x * 1e6:,.1f}"


def main(logs: Path) -> int:
    b = logs / "bench"
    print("# kprof bench evidence")
    print()
    print("```")
    print((logs / "peak.txt").read_text().strip())
    print("```")
    print()
    print("## Matmul ladder against cuBLAS SGEMM, same run (`kprof bench naive_matmul tiled_matmul regblock_matmul "
          "--size M,N,K=1024,2048,4096 --plot bench-matmul.png`)")
    print()
    data = load(b / "matmul.json")
    print(f"Cold mode (L2 flushed before each sample); math mode: "
          f"{next((p['math_mode'] for p in data['points'] if p.get('math_mode')), '?')}.")
    print()
    print("| kernel | size | median us (IQR) | RSD | stop | GFLOP/s | % FP32 FMA peak | cuBLAS GFLOP/s | kernel / cuBLAS |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p in data["points"]:
        s = p["summary"]
        if not s:
            print(f"| {p['kernel']} | {p['sizes']} | {p['status']} | | | | | | |")
            continue
        print(f"| {p['kernel']} | {p['sizes']['M']} | {us(s['median'])} ({us(s['q1'])}-{us(s['q3'])}) | "
              f"{s['rel_stdev']:.2%} | {p['stop']} | {p['flops_per_s'] / 1e9:,.0f} | {p['of_fma_peak']:.1%} | "
              f"{(p['baseline_flops_per_s'] or 0) / 1e9:,.0f} | {p['of_baseline']:.1%} |")
    print()
    print("## vector_add block-size sweep (`kprof bench vector_add --param BLOCK=32,...,1024 --plot`), N = 2^26")
    print()
    print("| block | median us | GB/s | % of copy ceiling | RSD |")
    print("|---|---|---|---|---|")
    for p in load(b / "vector_add-block.json")["points"]:
        s = p["summary"]
        print(f"| {p['params']['BLOCK']} | {us(s['median'])} | {p['bytes_per_s'] / 1e9:,.0f} | {p['of_copy_peak']:.1%} | {s['rel_stdev']:.2%} |")
    print()
    print("## Accuracy: kprof's median against ncu's gpu__time_duration for the same kernel and size")
    print()
    runs = [load(b / f"stability-{i}.json") for i in (1, 2, 3)]
    print("| kernel | kprof bench median (cold) | ncu gpu__time_duration (default cache control: flushed) | difference |")
    print("|---|---|---|---|")
    for p in runs[0]["points"]:
        t = ncu_time(logs / f"ncu-time-{p['kernel']}.txt")
        med = p["summary"]["median"]
        diff = f"{(med - t) / t:+.2%}" if t else "?"
        print(f"| {p['kernel']} {p['sizes']} | {us(med)} us | {us(t) if t else '?'} us | {diff} |")
    cold_t = ncu_time(logs / "ncu-time-vector_add-small-cold.txt")
    warm_t = ncu_time(logs / "ncu-time-vector_add-small-warm.txt")
    for name, label, ref, ref_label in (
        ("warm-small", "kprof --warm (one launch per sample)", warm_t, "--cache-control none"),
        ("hot-small", "kprof --hot (graph replay, per launch)", warm_t, "--cache-control none"),
    ):
        path = b / f"{name}.json"
        if not path.exists():
            continue
        p = load(path)["points"][0]
        med = p["summary"]["median"]
        extra = f", graph of {p['batch']} launches" if p.get("batch", 1) > 1 else ""
        diff = f"{(med - ref) / ref:+.2%} vs {ref_label}" if ref else "?"
        print(f"| vector_add N=65536, {label}{extra} | {us(med)} us | {us(ref) if ref else '?'} us ({ref_label}); "
              f"{us(cold_t) if cold_t else '?'} us (flushed) | {diff} |")
    print()
    print("## Stability: three back-to-back runs of `kprof bench naive_matmul tiled_matmul softmax`")
    print()
    print("| kernel | run 1 us | run 2 us | run 3 us | max deviation from their mean |")
    print("|---|---|---|---|---|")
    for i, p in enumerate(runs[0]["points"]):
        meds = [r["points"][i]["summary"]["median"] for r in runs]
        mean = sum(meds) / 3
        dev = max(abs(m - mean) / mean for m in meds)
        print(f"| {p['kernel']} | {' | '.join(us(m) for m in meds)} | {dev:.2%} |")
    print()
    print("## `kprof compare last~1 last` (runs 2 and 3 above)")
    print()
    print("```")
    print((logs / "compare.txt").read_text().strip())
    print("```")
    print()
    print("## Launch overhead (`python3 scripts/launch_overhead.py`)")
    print()
    print("```")
    print((logs / "launch-overhead.txt").read_text().strip())
    print("```")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
