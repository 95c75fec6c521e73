"""kprof's counter-less diagnosis of performance cases from a GPU's kprof bench JSON, on any
machine.

    python scripts/diagnose_bench.py [--show] BENCH.json [BENCH.json ...]

Each file is ``kprof bench CASE CASE_fixed --json`` of the performance corpus: the case's measured
time, its twin's (the measured gain), and the GPU's ceilings (kprof peak, in the JSON) are what the
GPU gave; the build, the PTX lines and the rules run here. It prints, per case, the first cause, its
line and its estimate against the twin's measured gain: what ``kprof cases --perf`` says without
counters.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

from kprof.commands import pipeline
from kprof.corpus import perfcases
from kprof.diagnosis import diagnose, gather
from kprof.measure import profiling as prof
from kprof.measure.ceilings import Ceilings
from kprof.spec import catalog


def main(paths: list[str]) -> int:
    show = "--show" in paths  # the whole diagnosis as kprof profile prints it, after each line
    paths = [p for p in paths if p != "--show"]
    corpus = {c.name: c for c in perfcases.load_all(catalog.group("perf"))}
    for path in paths:
        data = json.loads(Path(path).read_text())
        times = {p["kernel"]: (p.get("summary") or {}).get("median") for p in data["points"]
                 if p["status"] == "ok"}
        name = next(k for k in times if not k.endswith("_fixed"))
        bug, twin = times.get(name), times.get(f"{name}_fixed")
        theory = data["peak"]["theoretical"]
        attrs = theory.get("attributes", {})
        device = {"sm_count": attrs.get("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
                  "clock_khz": attrs.get("CU_DEVICE_ATTRIBUTE_CLOCK_RATE (kHz)")}
        prepared = pipeline.prepare(catalog.load(name), None, arch="sm_90")
        r, b = prepared.resolved, prepared.built
        u = b.usage_of(r.spec.entry)
        p = prof.fallback(name, r.sizes, bug, u.registers, r.threads_per_block, u.shared_static,
                          dynamic_smem=r.shared_mem, arch=b.arch,
                          spec_flops=r.flops, spec_bytes=r.bytes,
                          reason="replayed from kprof bench")
        from kprof.build import build

        d = diagnose(gather.facts_for(prepared, p, counters=False,
                                      ptx=build.ptx(prepared.resolved.spec, "sm_90"),
                                      timed=SimpleNamespace(device=device, time_ms=None),
                                      peak=Ceilings.from_dict(data["peak"]), seconds=bug))
        first = d.first()
        gain = bug / twin if bug and twin else None
        est = first.gain.estimate if first else None
        print(f"{name} ({data['machine']['gpu']}, driver {data['machine']['driver']}, commit "
              f"{data['commit']}): measured gain {gain:.2f}x (twin, same run); expected "
              f"{corpus[name].expect.cause}; "
              + (f"first cause {first.rule} at {first.line.show() if first.line else '-'}, "
                 "estimate "
                 + (f"{est:.2f}x ({est / gain:.2f} of measured)" if est else "none") if first
                 else "no cause")
              + f"; cannot see: {', '.join(d.cannot_see) or 'nothing'}")
        if show:
            from kprof.diagnosis.model import render

            print(render(d).replace(str(Path.cwd()) + "/", ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
