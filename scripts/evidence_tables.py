"""Markdown tables from the bench, profile and ncu JSON committed under docs/results/.

    python3 scripts/evidence_tables.py matmul|accuracy|fused|linear|profile7|streamk [RAW_DIR]

The result pages (docs/results/2026-11-29-h200-*.md) were written from this script's output, so
anyone can regenerate every number in them from the recorded JSON.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

RAW = Path(__file__).resolve().parent.parent / "docs" / "results" / "2026-11-29-h200-raw"


def points(path: Path) -> list[dict]:
    return json.loads(path.read_text())["points"]


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f}"


def size(p: dict) -> str:
    s = p["sizes"]
    if {"M", "N", "K"} <= set(s):
        return f"{s['M']}x{s['N']}x{s['K']}"
    return " ".join(f"{k}={v}" for k, v in s.items())


def fmt(value, spec: str, scale: float = 1.0, unit: str = "") -> str:
    return "-" if value is None else f"{value * scale:{spec}}{unit}"


def params(p: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in p["params"].items()) or "spec defaults"


def matmul(raw: Path) -> None:
    prof = {k["kernel"]: k for k in json.loads((raw / "profile-matmul-ladder.json").read_text())["kernels"]}
    best_prof = json.loads((raw / "profile-matmul-best.json").read_text())["kernels"][0]
    sass = {}
    for line in (raw / "sass-counts.txt").read_text().splitlines():
        name, *kv = line.split()
        sass[name] = dict(x.split("=") for x in kv)
    print("| step | median us (IQR) | GFLOP/s | cuBLAS us | of cuBLAS | regs | occupancy achieved | DRAM | shared-memory pipe "
          "| FMA pipe | issue active | bank conflicts / request | store sectors / request | SASS: LDS.128, LDG.128, STG.128, LDGSTS per kernel |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = [(p, prof.get(p["kernel"])) for p in points(raw / "matmul-ladder.json")]
    tuned = [p for p in points(raw / "matmul-best.json") if p["sizes"]["M"] == 4096][0]
    rows.append((tuned, best_prof))
    for p, k in rows:
        s, b = p["summary"], p["baseline_summary"]
        name = p["kernel"] + (f" [{params(p)}]" if p["params"] else "")
        c = sass.get(p["kernel"], {}) if not p["params"] else {}
        code = f"{c.get('LDS.128', '-')}, {c.get('LDG.128', '-')}, {c.get('STG.128', '-')}, {c.get('LDGSTS', '-')}" if c else "-"
        print(f"| {name} | {us(s['median'])} ({us(s['q1'])}-{us(s['q3'])}) | {p['flops_per_s'] / 1e9:,.0f} | {us(b['median'])} "
              f"| {p['of_baseline']:.1%} | {k['registers']} | {fmt(k['achieved_occupancy'], '.0%')} | "
              f"{fmt(k['dram_bytes_per_s'], ',.0f', 1e-9, ' GB/s')} | {fmt(k['shared_bytes_per_s'], '.1f', 1e-12, ' TB/s')} "
              f"({fmt(k['shared_fraction'], '.0%')}) | {fmt(k['fma_pipe'], '.0%')} | {fmt(k['issue_active'], '.0%')} "
              f"| {fmt(k['conflicts_per_request'], '.2f')} | {fmt(k['global_store_sectors_per_request'], '.1f')} | {code} |")
    print()
    print("Tuned point across sizes (cuBLAS timed in the same run, each point):")
    print()
    print("| shape MxNxK | tuned dbuf_matmul us | GFLOP/s | cuBLAS us | cuBLAS GFLOP/s | of cuBLAS |")
    print("|---|---|---|---|---|---|")
    for f in ("matmul-best.json", "matmul-best-nonsquare.json"):
        for p in points(raw / f):
            s, b = p["summary"], p["baseline_summary"]
            print(f"| {size(p)} | {us(s['median'])} | {p['flops_per_s'] / 1e9:,.0f} | {us(b['median'])} "
                  f"| {p['baseline_flops_per_s'] / 1e9:,.0f} | {p['of_baseline']:.1%} |")
    print()
    print("Tuning sweeps at 4096 (kprof bench --param, no baseline), every call:")
    print()
    print("| call | kernel | parameters | median us | GFLOP/s |")
    print("|---|---|---|---|---|")
    for folder, label in ((raw / "call1", "1"), (raw / "call2", "2"), (raw / "call3", "3"), (raw, "4")):
        for f in sorted(folder.glob("sweep-*.json")):
            for p in points(f):
                print(f"| {label} | {p['kernel']} | {params(p)} | {us(p['summary']['median'])} | {p['flops_per_s'] / 1e9:,.0f} |")


def accuracy(raw: Path) -> None:
    c2 = raw / "call2"
    print("| kernel | size | kprof --timer cupti (cold) | kprof --timer events (cold) | ncu gpu__time_duration, median of launches 2-10 "
          "(cache flushed) | cupti vs ncu | events vs ncu |")
    print("|---|---|---|---|---|---|---|")
    for k in ("naive_matmul", "tiled_matmul", "regblock_matmul", "softmax", "rmsnorm", "vector_add", "reduce_sum"):
        cp = points(c2 / f"accuracy-{k}.json")[0]
        ep = points(c2 / f"accuracy-events-{k}.json")[0]
        n = json.loads((c2 / f"{k}.json").read_text())["median_us_after_first"] * 1e-6
        cm, em = cp["summary"]["median"], ep["summary"]["median"]
        print(f"| {k} | {size(cp)} | {us(cm)} | {us(em)} | {us(n)} | {(cm - n) / n:+.2%} | {(em - n) / n:+.2%} |")
    print()
    print("| vector_add N | kprof --hot (cupti: each kernel in a replayed graph) | kprof --hot --timer events (graph time / launches) "
          "| kprof --warm (cupti) | ncu, --cache-control none (median of launches 2-50) | ncu, caches flushed | hot cupti vs ncu none |")
    print("|---|---|---|---|---|---|---|")
    for n in (65536, 1048576):
        hot = points(c2 / f"hot-{n}.json")[0]["summary"]["median"]
        hote = points(c2 / f"hot-events-{n}.json")[0]["summary"]["median"]
        warm = points(c2 / f"warm-{n}.json")[0]["summary"]["median"]
        none = json.loads((c2 / f"vector_add-{n}-none.json").read_text())["median_us_after_first"] * 1e-6
        alls = json.loads((c2 / f"vector_add-{n}-all.json").read_text())["median_us_after_first"] * 1e-6
        print(f"| {n:,} | {hot * 1e6:.2f} | {hote * 1e6:.2f} | {warm * 1e6:.2f} | {none * 1e6:.2f} | {alls * 1e6:.2f} "
              f"| {(hot - none) / none:+.1%} |")
    print()
    print("| kernel | run 1 us | run 2 us | run 3 us | max deviation from the mean |")
    print("|---|---|---|---|---|")
    runs = [points(raw / f"stability-{i}.json") for i in (1, 2, 3)]
    for i, p in enumerate(runs[0]):
        ms = [r[i]["summary"]["median"] for r in runs]
        mean = statistics.fmean(ms)
        print(f"| {p['kernel']} | " + " | ".join(us(m) for m in ms) + f" | {max(abs(m - mean) for m in ms) / mean:.2%} |")


def fused(raw: Path) -> None:
    c2 = raw / "call2"
    print("| kernel | size | median us (IQR) | GB/s | of copy ceiling | baseline | baseline us | speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    for f in ("fused-vector_add.json", "fused-reduce_sum.json", "fused-rmsnorm.json", "fused-softmax.json"):
        for p in points(c2 / f):
            s = p["summary"]
            b = p.get("baseline_summary")
            print(f"| {p['kernel']} | {size(p)} | {us(s['median'])} ({us(s['q1'])}-{us(s['q3'])}) | {p['bytes_per_s'] / 1e9:,.0f} "
                  f"| {p['of_copy_peak']:.1%} | {p.get('baseline') or '-'} | {us(b['median']) if b else '-'} "
                  f"| {p['of_baseline']:.2f}x |" if b else
                  f"| {p['kernel']} | {size(p)} | {us(s['median'])} ({us(s['q1'])}-{us(s['q3'])}) | {p['bytes_per_s'] / 1e9:,.0f} "
                  f"| {p['of_copy_peak']:.1%} | - | - | - |")
    print()
    print("| B | K = N | fused linear_bias_relu us | unfused (cuBLAS + bias + ReLU) us | fused / unfused speed-up | faster |")
    print("|---|---|---|---|---|---|")
    for p in sorted(points(raw / "fused-linear.json"), key=lambda p: (p["sizes"]["K"], p["sizes"]["B"])):
        s, b = p["summary"], p["baseline_summary"]
        print(f"| {p['sizes']['B']} | {p['sizes']['K']} | {us(s['median'])} | {us(b['median'])} | {p['of_baseline']:.2f}x "
              f"| {'fused' if p['of_baseline'] > 1 else 'unfused'} |")


def linear(raw: Path) -> None:
    """The final linear_bias_relu against cuBLAS + bias + ReLU (session 3, call 5)."""
    print("| B | K = N | fused us (IQR) | unfused us (IQR) | speed-up | faster |")
    print("|---|---|---|---|---|---|")
    for p in sorted(points(raw / "session3" / "call5" / "linear.json"), key=lambda p: (p["sizes"]["K"], p["sizes"]["B"])):
        s, b = p["summary"], p["baseline_summary"]
        print(f"| {p['sizes']['B']} | {p['sizes']['K']} | {us(s['median'])} ({us(s['q1'])}-{us(s['q3'])}) "
              f"| {us(b['median'])} ({us(b['q1'])}-{us(b['q3'])}) | {p['of_baseline']:.2f}x "
              f"| {'fused' if p['of_baseline'] > 1 else 'unfused'} |")


def profile7(raw: Path) -> None:
    """ncu through kprof profile on the issue-7 kernels (session 3, calls 1 and 5)."""
    files = [raw / "session3" / "call1" / f for f in ("profile-bandwidth.json", "profile-fused-rows.json")]
    files += [raw / "session3" / "call5" / f for f in ("profile-linear-b1.json", "profile-linear-b64.json")]
    print("| kernel | size | ncu us | DRAM TB/s | warps occupied | regs | FMA pipe | issue | top stalls (cycles per instruction) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for f in files:
        for k in json.loads(f.read_text())["kernels"]:
            name = k["kernel"].split(":")[0] + (":" + k["kernel"].split(":")[1][:24] if ":" in k["kernel"] else "")
            if "split_k" in k["kernel"]:
                name += " (split-K reduce)"
            stalls = ", ".join(f"{n} {v:g}" for n, v in k["stalls"][:3])
            sz = " ".join(f"{a}={v}" for a, v in k["sizes"].items())
            print(f"| {name} | {sz} | {k['duration_s'] * 1e6:,.1f} | {k['dram_bytes_per_s'] / 1e12:.2f} "
                  f"| {k['achieved_occupancy']:.0%} | {k['registers']} | {k['fma_pipe']:.0%} | {k['issue_active']:.0%} | {stalls} |")


def streamk(raw: Path) -> None:
    """Issue 6, session 4: streamk_matmul's versions against tuned_matmul and cuBLAS, the final ladder.
    (Call 6 ran only the test suite.)"""
    s4 = raw / "session4"
    print("| call, commit | streamk_matmul version | run | streamk us (IQR) | tuned_matmul us (IQR) | cuBLAS us | streamk of cuBLAS | tuned of cuBLAS |")
    print("|---|---|---|---|---|---|---|---|")
    label = {1: "persistent: 264 blocks loop over all tiles", 2: "whole-tile blocks + 264 workers, one shared loop",
             3: "whole-tile blocks run their own loop (buffer index from k0)", 4: "that loop as dbuf_matmul's (toggled index)",
             5: "4 + SKFILL 90, SKFIRST removed", 7: "5, comments only (the SASS of 5)"}
    for call in (1, 2, 3, 4, 5, 7):
        folder = s4 / f"call{call}"
        commit = (folder / "commit.txt").read_text().strip()
        files = sorted(folder.glob("sk6-4096-*.json")) or [folder / "final6-4096.json"]
        for i, f in enumerate(files, 1):
            by = {p["kernel"]: p for p in points(f)}
            k, t = by["streamk_matmul"], by["tuned_matmul"]
            ks, ts = k["summary"], t["summary"]
            print(f"| {call}, {commit} | {label[call]} | {i} | {us(ks['median'])} ({us(ks['q1'])}-{us(ks['q3'])}) "
                  f"| {us(ts['median'])} ({us(ts['q1'])}-{us(ts['q3'])}) | {us(k['baseline_summary']['median'])} "
                  f"| {k['of_baseline']:.2%} | {t['of_baseline']:.2%} |")
    print()
    print("| kernel | M x N x K | median us (IQR) | TFLOP/s | cuBLAS us | of cuBLAS | file |")
    print("|---|---|---|---|---|---|---|")
    for f in ("final6-ladder.json", "final6-sizes.json", "final6-nonsquare.json"):
        for p in points(s4 / "call5" / f):
            st, b = p["summary"], p["baseline_summary"]
            print(f"| {p['kernel']} | {size(p).replace('x', ' x ')} | {us(st['median'])} ({us(st['q1'])}-{us(st['q3'])}) "
                  f"| {p['flops_per_s'] / 1e12:.2f} | {us(b['median'])} | {p['of_baseline']:.2%} | {f} |")
    print()
    print("| call | kernel | M x N x K | median us | cuBLAS us | of cuBLAS | file |")
    print("|---|---|---|---|---|---|---|")
    for call in (1, 2, 3, 4, 7):
        for f in sorted((s4 / f"call{call}").glob("sk6-*.json")):
            if "4096-" in f.name or "profile" in f.name:
                continue
            for p in points(f):
                print(f"| {call} | {p['kernel']}{' [' + params(p) + ']' if p['params'] else ''} | {size(p).replace('x', ' x ')} "
                      f"| {us(p['summary']['median'])} | {us(p['baseline_summary']['median'])} | {p['of_baseline']:.2%} | {f.name} |")
    print()
    print("| call | kernel | ncu us | grid | regs | occupancy achieved | FMA pipe | issue | L1 hit | L2 hit | DRAM GB/s | shared-memory pipe | top stalls |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for call, f in ((1, "sk6-profile.json"), (4, "sk6-profile.json"), (5, "final6-profile.json"), (7, "sk6-profile.json")):
        for k in json.loads((s4 / f"call{call}" / f).read_text())["kernels"]:
            stalls = ", ".join(f"{n} {v:g}" for n, v in k["stalls"][:3])
            print(f"| {call} | {k['kernel']} | {k['duration_s'] * 1e6:,.1f} | {k['grid_size']} | {k['registers']} "
                  f"| {k['achieved_occupancy']:.1%} | {k['fma_pipe']:.1%} "
                  f"| {k['issue_active']:.1%} | {k['l1_hit']:.1%} | {k['l2_hit']:.1%} | {k['dram_bytes_per_s'] / 1e9:,.0f} "
                  f"| {k['shared_bytes_per_s'] / 1e12:.1f} TB/s ({k['shared_fraction']:.1%}) | {stalls} |")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "matmul"
    raw = Path(sys.argv[2]) if len(sys.argv) > 2 else RAW
    {"matmul": matmul, "accuracy": accuracy, "fused": fused, "linear": linear, "profile7": profile7, "streamk": streamk}[what](raw)
