"""kprof profile's diagnosis stage (kprof/diagnosis/stage.py) replayed on what a GPU measured: an
H200's times without counters, an H200's profiles with counters, an H100's Source pages."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from diagnosed import prepared_of, profile_of

from kprof.corpus import perfcases
from kprof.diagnosis import diagnose, gather
from kprof.measure.ceilings import Ceilings
from kprof.spec import catalog


@pytest.mark.nvcc
def test_the_counter_less_diagnosis_on_times_an_h200_measured(ptx_compiler, data_dir):
    """Replayed on the H200's times of four cases and their twins (kprof bench, one run each) and
    kprof peak's ceilings from the same run: the first cause and its line are right, and every
    estimate given is within
    1.5x of the twin's measured gain (copy 8.00 / 6.38, FP64 3.00 / 3.59, divergence 2.00 /
    1.94)."""
    from kprof.build import build

    recorded = json.loads((data_dir / "diagnosis" / "h200-perf-times.json").read_text())
    corpus = {c.name: c for c in perfcases.load_all(catalog.group("perf"))}
    for name, t in recorded["cases"].items():
        prepared = prepared_of(name)
        p = profile_of(prepared, t["seconds"])
        d = diagnose(gather.facts_for(prepared, p, counters=False,
                                      ptx=build.ptx(prepared.resolved.spec, "sm_90"),
                                      timed=SimpleNamespace(device=recorded["device"],
                                                            time_ms=None),
                                      peak=Ceilings.from_dict(recorded["peak"]),
                                      seconds=t["seconds"]))
        case, first, gain = corpus[name], d.first(), t["seconds"] / t["twin_seconds"]
        assert first is not None and first.rule == case.expect.cause, (name, d.causes)
        assert first.line.line == case.expect.line, (name, first.line)
        if first.gain.estimate is not None:
            assert 1 / 1.5 <= first.gain.estimate / gain <= 1.5, (name, first.gain.estimate, gain)
    assert d.headroom and d.headroom > 1


def _replay(data_dir):
    """kprof cases --perf's diagnoses, replayed from the profiles an H200 gave (a46d1a2): the same
    facts the GPU run had (the profile as kprof read it, the timed seconds, the SM count and clock,
    kprof peak's ceilings), the PTX built here."""
    from kprof.build import build
    from kprof.measure.kernelprofile import KernelProfile

    recorded = json.loads((data_dir / "diagnosis" / "h200-perf-cases-a46d1a2.json").read_text())
    peak = Ceilings.from_dict(recorded["peak"])
    for c in recorded["cases"]:
        prepared = prepared_of(c["case"])
        device = {"sm_count": c["sm_count"], "clock_khz": c["sm_hz"] / 1e3}
        facts = gather.facts_for(prepared, KernelProfile.from_dict(c["profile"]), counters=True,
                                 ptx=build.ptx(prepared.resolved.spec, "sm_90"),
                                 timed=SimpleNamespace(device=device, time_ms=None),
                                 peak=peak, seconds=c["seconds"],
                                 kernel_seconds=tuple(c.get("kernel_seconds") or ()))
        yield c, diagnose(facts)


# atomics: the roof then, the SMs' spread now
CHANGED_SINCE = {"scalar_loads": 3.27, "global_atomics": 328.1}


WITHIN = ["barrier_in_loop", "copy_uncoalesced", "divergent_branch", "fp64_constants",
          "global_atomics",
          "int64_division", "matmul_no_reuse", "occupancy_registers", "occupancy_shared",
          "register_spill",
          "scalar_loads", "tail_wave", "too_few_blocks", "transpose_bank_conflicts"]


OUTSIDE = ["launch_overhead"]


@pytest.mark.nvcc
def test_the_counters_diagnosis_replayed_on_an_h200s_profiles(ptx_compiler, data_dir):
    """Every case's first cause and line as kprof gives them now, from the profiles an H200
    measured: the same first cause as the GPU run gave, right on all 16 (the FP64 control silent),
    and each estimate the run gave but those CHANGED_SINCE."""
    from kprof.diagnosis.facts import fp64_ratio_of, kernel_line

    corpus = {c.name: c for c in perfcases.load_all(catalog.group("perf"))}
    wrong, results = {}, []
    for c, d in _replay(data_dir):
        first = d.first()
        got = first.rule if first else None
        # the replay gives what the GPU run gave; where that was no cause, the kernel's limiter
        # lines now (far from its roof)
        assert got == c["first"] or (c["first"] is None and got == "limiter-lines"), (c["case"], got, c["first"])
        if c["estimate"] is not None and c["case"] not in CHANGED_SINCE:
            assert first.gain.estimate == pytest.approx(c["estimate"], rel=0.02), c["case"]
        if c["case"] == "global_atomics":  # 1,056 blocks on 132 SMs, the roof 328x above it
            assert (first.gain.estimate == 132
                    and "over the 132 SMs that run blocks at once" in first.gain.basis)
        case = corpus[c["case"]]
        source = case.spec.source.read_text().splitlines() if case.spec.source else []
        r = perfcases.judge(case, d, c["measured"],
                            control=perfcases.control_here(case, fp64_ratio_of("sm_90")),
                            launch_line=gather.launch_line(case.spec),
                            entry_line=kernel_line(source, case.spec.entry))
        results.append(r)
        unmeasured = first is not None and first.line is not None and first.line.why.startswith("line not measured")
        # these profiles have no Source page (a46d1a2)
        if not (r.cause_right and (r.line_right or unmeasured)):
            wrong[c["case"]] = got
    assert wrong == {}, wrong
    within = sorted(r.case for r in results if r.estimate_right)
    outside = sorted(r.case for r in results if r.estimate_right is False)
    assert len(results) == 16 and (within, outside) == (WITHIN, OUTSIDE), (within, outside)


# The case the H100 replay still gets wrong, and why: complex_mul_scalar's twin measured 0.9995x
# there (the kernel at the DRAM roof: no cause is the right answer, the case's expectation is not)
H100_MISSES = {"complex_mul_scalar": (None, None)}


@pytest.mark.nvcc
def test_the_diagnosis_replayed_on_an_h100s_source_pages(ptx_compiler):
    """Each case's first cause and line from what an H100 measured (the profile, and its Source page
    re-read by today's parser: scripts/replay_pages.py): 19 of the 20 recorded cases right at the
    right line."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("replay_pages",
                                                  Path(__file__).parents[2] / "scripts" / "replay_pages.py")
    replay = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(replay)
    recorded = json.loads(replay.RECORDED.read_text())["cases"]
    wrong = {}
    for rec in recorded:
        r, d = replay.judged(rec)
        if not (r.cause_right and r.line_right):
            wrong[r.case] = (r.first, r.line)
        # measured inside atomicAdd (a CUDA header), named at the user's call
        if r.first == "atomics":
            assert d.first().line.line == 6 or rec["case"] != "global_atomics"
    assert len(recorded) == 20 and wrong == H100_MISSES, wrong
