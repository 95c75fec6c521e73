"""scripts/tolerances.py: the rule that turns measured frontiers into a spec's tolerance."""

import importlib.util
from pathlib import Path

from kprof.child import verify

_PATH = Path(__file__).resolve().parent.parent / "scripts" / "tolerances.py"
_spec = importlib.util.spec_from_file_location("tolerances_script", _PATH)
tolerances = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tolerances)


def _row(spec, sizes, frontier, dtype="float32", ok=True):
    return {"spec": spec, "preset": "check", "sizes": sizes, "dtypes": {"y": dtype}, "ok": ok,
            "checks": [{"name": "y",
                        "frontier": [[r, frontier(r)] for r in verify.FRONTIER_RTOLS]}]}


def test_round_up_keeps_two_significant_digits_and_never_rounds_down():
    assert tolerances._round_up(3.21e-6) == 3.3e-6
    assert tolerances._round_up(3.2e-6) == 3.2e-6
    assert tolerances._round_up(0.0) == 0.0
    assert tolerances._round_up(9.91e-8) == 1e-7


def test_an_elementwise_kernel_gets_the_smallest_rtol_with_no_atol():
    # within 2e-7 relative everywhere: atol needed 0 from rtol 2e-7 up
    rows = [_row("add", {"N": n}, lambda r: 0.0 if r >= 2e-7 else 1e-8) for n in (1, 1000)]
    assert tolerances.propose(rows)["add"] == {"rtol": 2e-7, "atol": 0.0, "sizes": 2,
                                               "failed_before": 0}


def test_a_reduction_over_k_gets_an_atol_growing_like_k_or_sqrt_k_whichever_fits():
    rows = [_row("mm", {"M": 8, "K": k}, lambda r, k=k: 1e-7 * k**0.5 if r < 1 else 0.0,
                 ok=(k < 1000))
            for k in (16, 4096)]
    t = tolerances.propose(rows)["mm"]
    assert t["rtol"] == 2e-6 and t["atol"] == "1e-07 * sqrt(K)" and t["failed_before"] == 1
    assert tolerances._yaml(t) == 'tolerance: {rtol: 2e-06, atol: "1e-07 * sqrt(K)"}'
    assert tolerances._yaml(t, (("C", "abs(A) @ abs(B)"),)) == \
        'tolerance: {rtol: 2e-06, atol: "1e-07 * sqrt(K)", scale: {C: "abs(A) @ abs(B)"}}', "a spec's scale is kept"
    linear = [_row("mm", {"M": 8, "K": k}, lambda r, k=k: 3e-8 * k) for k in (16, 100, 4096)]
    assert tolerances.propose(linear)["mm"]["atol"] == "3e-08 * K"


def test_integer_outputs_need_no_tolerance():
    rows = [{"spec": "hist", "preset": "default", "sizes": {"N": 5}, "dtypes": {"h": "int32"},
             "ok": True, "checks": [{"name": "h", "frontier": []}]}]
    assert tolerances.propose(rows)["hist"] == {"exact": True}


def test_an_atomic_spec_gets_ten_times_what_its_runs_needed_up_to_the_cap():
    needs = lambda need: (lambda r: 0.0 if r >= need else 1e-3)  # noqa: E731
    atomic = lambda name: True  # noqa: E731 - in place of the spec lookup: these names add with atomics
    assert tolerances.propose([_row("total", {"N": 9}, needs(5e-7))], atomic=atomic)["total"] == {
        "rtol": 5e-6, "atol": 0.0, "margin": 10.0, "cap": 1e-5, "sizes": 1, "failed_before": 0}
    assert tolerances.propose([_row("total", {"N": 9}, needs(2e-6))], atomic=atomic)["total"]["rtol"] == 1e-5  # the cap
    # not atomic
    assert tolerances.propose([_row("total", {"N": 9}, needs(5e-7))])["total"]["rtol"] == 5e-7
    over = [_row("dot", {"K": 100}, lambda r: 2e-6 if r < 1 else 0.0)]
    assert tolerances.propose(over, atomic=atomic)["dot"]["atol"] == "2e-07 * K"  # 10 x 2e-6 / 100


def test_whether_a_spec_is_atomic_comes_from_its_source():
    rows = [_row("global_race_fixed", {"N": 9}, lambda r: 0.0 if r >= 5e-7 else 1e-3)]
    assert tolerances.propose(rows)["global_race_fixed"]["rtol"] == 5e-6


def test_a_spec_judged_against_a_scale_gets_four_times_what_its_sizes_needed():
    needs = lambda need: (lambda r: 0.0 if r >= need else 1e-3)  # noqa: E731
    scaled = lambda name: True  # noqa: E731 - in place of the spec lookup: these names have a tolerance.scale
    t = tolerances.propose([_row("mm", {"K": 4096}, needs(2e-7))], scaled=scaled)["mm"]
    assert t == {"rtol": 1e-6, "atol": 0.0, "margin": 4.0, "cap": 1e-5, "sizes": 1,
                 "failed_before": 0}
    # no scale
    assert tolerances.propose([_row("mm", {"K": 4096}, needs(2e-7))])["mm"]["rtol"] == 2e-7
    assert tolerances.propose([_row("mm", {"K": 9}, needs(5e-6))], scaled=scaled)["mm"]["rtol"] == 1e-5  # the cap


def test_whether_a_spec_has_a_scale_comes_from_the_spec():
    assert tolerances.spec_has_scale("streamk_matmul") and tolerances.spec_has_scale("naive_matmul")
    assert (not tolerances.spec_has_scale("vector_add")
            and not tolerances.spec_has_scale("no_such_spec"))
