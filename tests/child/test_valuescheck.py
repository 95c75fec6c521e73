"""The values detector's analysis, on synthetic runs (no GPU)."""

import numpy as np
import pytest

from kprof import spec as spec_mod
from kprof.child import hostdata, valuescheck
from kprof.launch.job import target_of


@pytest.fixture
def kernel(tmp_path):
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "k.yaml").write_text(
        "sizes: {N: 8}\nargs:\n  - {name: x, buffer: float32, shape: [N], role: in}\n"
        "  - {name: y, buffer: float32, shape: [N], role: out}\nlaunch: {grid: [1], block: [8]}\n"
        "reference: {y: 2 * x}\ntolerance: 1e-5\n"
    )
    spec = spec_mod.load(tmp_path / "k.yaml")
    return spec, spec.resolve()


def runs_for(kernel, outputs):
    spec, resolved = kernel
    buf = resolved.buffers[1]
    plan = valuescheck.run_plan(len(outputs))
    out = []
    for alternate, fn in zip(plan, outputs):
        y = fn(hostdata.poison(buf, alternate).copy(), alternate)
        out.append((alternate, {"y": y.astype(np.float32)}))
    return out


def analyse(kernel, outputs):
    spec, resolved = kernel
    x = np.arange(8, dtype=np.float64)
    target = target_of(resolved, "k.cubin")
    return valuescheck.analyse(target, runs_for(kernel, outputs), {"y": 2 * x})


def good(y, alt):
    y[:] = 2 * np.arange(8)
    return y


def test_plan_and_patterns():
    assert valuescheck.run_plan(1) == [False, True, False]
    assert valuescheck.run_plan(5) == [False, True, False, False, False]
    assert (valuescheck.smem_pattern(False) == 0x7FC00000
            and valuescheck.smem_pattern(True) != valuescheck.smem_pattern(False))


def test_clean_kernel_has_no_findings(kernel):
    assert analyse(kernel, [good] * 4) == []


def test_unwritten_elements(kernel):
    def skips_last(y, alt):
        y[:7] = 2 * np.arange(7)
        return y

    found = analyse(kernel, [skips_last] * 4)
    assert ([(f.kind, f.count, f.indices, f.buffer) for f in found] == [("unwritten-output", 1, ((7,),), "y")])


def test_result_following_the_poison(kernel):
    def accumulates(y, alt):
        return y + 2 * np.arange(8) + 1  # y += ...: NaN in A runs, 31337 + ... in B runs

    found = analyse(kernel, [accumulates] * 4)
    assert [f.kind for f in found] == ["uninitialized-read"] and found[0].count == 8


def test_nondeterminism_between_identical_runs(kernel):
    calls = iter(range(100))

    def racy(y, alt):
        y[:] = 2 * np.arange(8)
        y[3] += next(calls)  # differs on every run
        return y

    found = analyse(kernel, [racy] * 5)
    assert [(f.kind, f.indices) for f in found] == [("race", ((3,),))]


def test_tiny_differences_within_tolerance_are_not_races(kernel):
    calls = iter(range(100))

    def reordered(y, alt):
        y[:] = 2 * np.arange(8) + next(calls) * 1e-7  # float atomics reorder: ~1e-7 relative
        return y

    assert analyse(kernel, [reordered] * 4) == []


def test_wrong_result(kernel):
    def wrong(y, alt):
        y[:] = 3 * np.arange(8)
        return y

    found = analyse(kernel, [wrong] * 4)
    # element 0 is 0 either way
    assert [f.kind for f in found] == ["wrong-result"] and found[0].count == 7


def slightly_off(y, alt):
    """y = 2x, but y[1] (= 2) off by 1e-4."""
    y[:] = 2 * np.arange(8)
    y[1] += 1e-4
    return y


def test_the_values_detector_uses_the_specs_elementwise_verdict(kernel):
    """y = 2x with x = 0..7: an error of 1e-4 on y[1] (= 2) hides under a normwise 1e-4 x max|ref|
    (14), not under an elementwise 1e-6 + 1e-5 x |ref|."""
    from dataclasses import replace

    spec, resolved = kernel
    runs = runs_for(kernel, [slightly_off] * 4)
    expected = {"y": 2 * np.arange(8, dtype=np.float64)}
    normwise = replace(target_of(resolved, "k.cubin"), rtol=1e-4)
    assert valuescheck.analyse(normwise, runs, expected) == []
    elementwise = replace(normwise, rtol=1e-5, atol=1e-6)
    (f,) = valuescheck.analyse(elementwise, runs, expected)
    assert (f.kind == "wrong-result" and f.indices == ((1,),)
            and "1e-06 + 1e-05 x |ref|" in f.message)


def test_the_values_detector_takes_the_specs_scale_as_kprof_run_does(kernel):
    """tolerance.scale: rtol times the scale, not |ref|. An error of 1e-4 on y[1] (= 2) is outside
    1e-5 x |ref| but inside 1e-5 x 100; a scale that cannot take the output's shape is refused."""
    from dataclasses import replace

    from kprof.errors import UsageError

    spec, resolved = kernel
    runs = runs_for(kernel, [slightly_off] * 4)
    expected = {"y": 2 * np.arange(8, dtype=np.float64)}
    target = replace(target_of(resolved, "k.cubin"), rtol=1e-5, atol=0.0, scale=(("y", "100"),))
    assert [f.kind for f in valuescheck.analyse(target, runs, expected)] == ["wrong-result"]
    assert valuescheck.analyse(target, runs, expected, {"y": np.full(8, 100.0)}) == []
    (f,) = valuescheck.analyse(target, runs, expected, {"y": np.full(8, 1.0)})
    assert f.indices == ((1,),) and "0 + 1e-05 x (100)" in f.message
    with pytest.raises(UsageError, match=r"tolerance.scale of y: shape \(3,\)"):
        valuescheck.analyse(target, runs, expected, {"y": np.ones(3)})


def test_a_result_that_changes_when_warps_are_delayed_is_a_race(kernel):
    """The warp-delay build's runs are held against the first A run: an element that moved there is
    a race even where every run of the kernel itself agreed (a missing barrier whose warps keep
    step)."""
    spec, resolved = kernel
    target = target_of(resolved, "k.cubin", shaken_cubin="k-shaken.cubin")
    expected = {"y": 2 * np.arange(8, dtype=np.float64)}
    lost = (2 * np.arange(8)).astype(np.float32)
    lost[5] = 0  # a count zeroed by a late warp after another added to it
    same = (2 * np.arange(8)).astype(np.float32)
    found = valuescheck.analyse(target, runs_for(kernel, [good] * 4), expected,
                                shaken=[{"y": same}, {"y": lost}])
    assert [(f.kind, f.indices) for f in found] == [("race", ((5,),))]
    assert "delays some warps" in found[0].message and "__syncthreads()" in found[0].message
    # the same runs without the delayed ones: clean; delayed runs that agree: clean
    assert valuescheck.analyse(target, runs_for(kernel, [good] * 4), expected) == []
    assert (valuescheck.analyse(target, runs_for(kernel, [good] * 4), expected, shaken=[{"y": same}] * 3) == [])


def test_a_peaked_fill_puts_its_share_at_its_height():
    """peaked(height, share): normal(0, 1), about that share of the elements at height (a dominant
    logit: the rest of a softmax row just below a 1e-6 flush of its sum's terms)."""
    from dataclasses import replace

    from kprof.spec import catalog
    from kprof.spec.schema import Fill

    spec = catalog.load("softmax_online")
    (x,) = [b for b in spec.resolve({"R": 50, "C": 20000}).buffers if b.arg.name == "x"]
    x = replace(x, arg=replace(x.arg, fill=Fill("peaked", (14.5, 0.001))))
    data = hostdata.make_input(x, np.random.default_rng(0))
    at = np.isclose(data, 14.5)
    assert (0.0008 < at.mean() < 0.0012 and abs(float(data[~at].mean())) < 0.01
            and 0.99 < float(data[~at].std()) < 1.01)
    # peaked(height, share, spread): the others normal(0, spread); softmax_online's last checks fill
    # x so
    x = replace(x, arg=replace(x.arg, fill=Fill("peaked", (14.0, 0.001, 0.01))))
    data = hostdata.make_input(x, np.random.default_rng(0))
    at = np.isclose(data, 14.0)
    assert 0.0008 < at.mean() < 0.0012 and 0.0099 < float(data[~at].std()) < 0.0101
    (check,) = [c for c in spec.checks if dict(c.sizes) == {"R": 4, "C": 1048576}]
    assert check.fills == (("x", Fill("peaked", (14.0, 2e-6, 0.01))),)
