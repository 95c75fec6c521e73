import numpy as np
import pytest

from kprof import parallel
from kprof.child import hostdata, verify
from kprof.spec import BufferArg, Fill, ResolvedBuffer


def buf(dtype="float32", shape=(4, 5), role="in", fill=Fill()):
    return ResolvedBuffer(BufferArg("x", dtype, tuple(map(str, shape)), role, fill), shape)


def test_inputs_are_seeded_and_follow_the_fill():
    a = hostdata.make_input(buf(), np.random.default_rng(0))
    b = hostdata.make_input(buf(), np.random.default_rng(0))
    assert a.dtype == np.float32 and a.shape == (4, 5)
    np.testing.assert_array_equal(a, b)
    assert a.min() >= -1 and a.max() <= 1
    u = hostdata.make_input(buf(fill=Fill("uniform", (0.0, 1.0))), np.random.default_rng(0))
    assert u.min() >= 0
    z = hostdata.make_input(buf(fill=Fill("zeros")), np.random.default_rng(0))
    assert not z.any()
    r = hostdata.make_input(buf("int32", fill=Fill("randint", (3, 7))), np.random.default_rng(0))
    assert r.dtype == np.int32 and r.min() >= 3 and r.max() < 7
    assert hostdata.make_input(buf(fill=Fill("arange")), None).ravel()[7] == 7


@pytest.mark.parametrize("dtype, fill",
                         [("float32", Fill()), ("bfloat16", Fill("uniform", (0.5, 1.5))),
                          ("float64", Fill("uniform", (-3.0, 7.0))), ("int32", Fill
                          ("uniform", (0.0, 9.0)))])
def test_a_large_uniform_input_made_in_chunks_is_the_one_calls_to_the_bit(monkeypatch, dtype, fill):
    """In chunks on threads (a 268M-element input) and in one call: the same values, and the same
    generator state after, so the next input is the same too."""
    shape = (37, 1001)  # 37,037 elements: nine chunks of 4,096 and a ragged tail
    one_rng, chunk_rng = np.random.default_rng(5), np.random.default_rng(5)
    whole = hostdata.make_input(buf(dtype, shape, fill=fill), one_rng)
    monkeypatch.setattr(hostdata, "CHUNK", 4096)
    chunked = hostdata.make_input(buf(dtype, shape, fill=fill), chunk_rng)
    assert chunked.dtype == whole.dtype and chunked.shape == whole.shape
    np.testing.assert_array_equal(chunked, whole)
    np.testing.assert_array_equal(chunk_rng.normal(size=5), one_rng.normal(size=5))


@pytest.mark.parametrize("dtype, fill",
                         [("bfloat16", Fill("normal", (0.0, 1.0))),
                          ("float32", Fill("normal", (2.0, 3.0))),
                          ("int32", Fill("randint", (-5, 9))), ("float16", Fill("arange"))])
def test_a_large_input_cast_in_chunks_is_the_one_calls(monkeypatch, dtype, fill):
    shape = (37, 1001)
    whole = hostdata.make_input(buf(dtype, shape, fill=fill), np.random.default_rng(3))
    monkeypatch.setattr(hostdata, "CHUNK", 4096)
    chunked = hostdata.make_input(buf(dtype, shape, fill=fill), np.random.default_rng(3))
    assert chunked.dtype == whole.dtype and chunked.shape == whole.shape
    np.testing.assert_array_equal(chunked, whole)


def test_bfloat16_rounding_in_32_bits_is_the_64_bit_formulas_on_every_pattern_class():
    rng = np.random.default_rng(1)
    u = np.concatenate([rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32),
                        np.array([0, 0x7F800000, 0xFF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7FC00000,
                                  0xFFFFFFFF,
                                  0x00008000, 0x3F80FFFF, 0x3F808000, 0x3F818000], np.uint32)])
    f = u.view(np.float32)
    w = u.astype(np.uint64)
    wide = np.where(np.isnan(f), np.uint16(0x7FC0),
                    ((w + 0x7FFF + ((w >> 16) & 1)) >> 16).astype(np.uint16))
    np.testing.assert_array_equal(hostdata.to_bf16(f), wide)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "int32", "uint8", "float64"])
def test_a_large_input_widened_in_chunks_is_decode_then_astype(monkeypatch, dtype):
    stored = hostdata.make_input(buf(dtype, (37, 1001), fill=Fill("uniform", (0.0, 100.0))),
                                 np.random.default_rng(2))
    decoded = hostdata.decode(dtype, stored)
    expected = decoded.astype(np.int64 if decoded.dtype.kind in "iu" else np.float64)
    monkeypatch.setattr(hostdata, "CHUNK", 4096)
    wide = hostdata.widened(dtype, stored)
    assert wide.dtype == expected.dtype and wide.shape == expected.shape
    np.testing.assert_array_equal(wide, expected)


def test_poison_is_nan_or_sentinel():
    assert np.isnan(hostdata.poison(buf())).all()
    p = hostdata.poison(buf("int32"))
    assert (p.view(np.uint32) == 0xDEADBEEF).all()
    assert (hostdata.poison(buf("uint8")) == 0xEF).all()
    assert not np.array_equal(hostdata.poison(buf("int32")),
                              hostdata.poison(buf("int32"), alternate=True))


def test_compare_pass_and_fail():
    ref = np.linspace(-1, 1, 100)
    ok = verify.compare("C", ref.astype(np.float32), ref, verify.Criterion(rtol=1e-6, atol=0.0))
    assert ok.ok and ok.rel_err < 1e-7 and ok.metric == "elementwise" and ok.failing == 0
    assert ok.needed_atol == 0.0, "float32 rounding of values within [-1, 1] is within 1e-6 relative"
    bad = ref.copy()
    bad[42] += 0.5
    check = verify.compare("C", bad.astype(np.float32), ref, verify.Criterion(rtol=1e-6))
    assert not check.ok and check.first_bad == (42,) and check.failing == 1
    assert "worst C[42]" in check.message and check.rel_err == pytest.approx(0.5, rel=1e-6)
    assert check.worst[0] == {"index": [42], "got": pytest.approx(bad[42], rel=1e-6),
                              "expected": ref[42]}
    assert check.needed_atol == pytest.approx(0.5, rel=1e-5)


def test_the_defaults_are_per_dtype_and_a_default_atol_that_hides_small_values_is_flagged():
    ref = np.linspace(1, 2, 100)
    check = verify.compare("y", ref.astype(np.float32), ref)
    assert (check.ok and (check.rtol, check.atol) == verify.DEFAULT_TOLERANCE["float32"]
            and not check.note)
    bf = verify.compare("y", ref.astype(np.float32), ref, verify.Criterion(dtype="bfloat16"))
    assert (bf.rtol, bf.atol) == verify.DEFAULT_TOLERANCE["bfloat16"]
    tiny = np.full(100, 1e-7)
    assert "below the default atol" in verify.compare("p", np.zeros(100, np.float32), tiny).note
    assert (not verify.compare("p", np.zeros(100, np.float32), tiny, verify.Criterion(rtol=1e-6, atol=1e-9)).ok)


def test_the_normwise_metric_is_an_explicit_option():
    big = np.random.default_rng(2).uniform(-1, 1, 10_000)
    big[7] = 0.01
    wrong = big.astype(np.float32)
    wrong[7] += 1e-4  # 1% of that element, 1e-4 of the largest
    normwise = verify.compare("y", wrong, big, verify.Criterion(rtol=1e-3, metric="normwise"))
    assert normwise.ok and normwise.metric == "normwise" and "(normwise)" in normwise.message
    elementwise = verify.compare("y", wrong, big, verify.Criterion(rtol=1e-3, atol=0.0))
    assert not elementwise.ok and elementwise.failing == 1 and elementwise.first_bad == (7,)


def test_nan_anywhere_fails_even_within_tolerance():
    ref = np.ones((3, 3))
    got = ref.astype(np.float32)
    got[2, 1] = np.nan
    check = verify.compare("y", got, ref, verify.Criterion(rtol=0.99))
    assert not check.ok and check.nonfinite == 1 and check.first_bad == (2, 1)
    assert "NaN or Inf" in check.message
    inf = ref.astype(np.float32)
    inf[0, 0] = np.inf
    assert not verify.compare("y", inf, ref, verify.Criterion(rtol=0.99)).ok


def test_unwritten_integer_output_is_caught():
    b = buf("int32", shape=(10,), role="out")
    got = hostdata.poison(b)
    got[:5] = 1
    sentinel = hostdata.poison(b).flat[0]
    check = verify.compare("idx", got, np.ones(10), verify.Criterion(rtol=1e9),
                           poison_value=sentinel)
    assert not check.ok and check.poisoned == 5


def test_reference_with_nan_is_reported():
    check = verify.compare("y", np.ones(3, np.float32), np.array([1, np.nan, 1]),
                           verify.Criterion(rtol=1e-3))
    assert not check.ok and "reference itself" in check.message


def test_scalar_reference_broadcasts():
    assert (verify.compare("out", np.array([6.0], np.float32), np.float64(6.0), verify.Criterion(rtol=1e-6)).ok)


def test_bfloat16_round_trip_and_rounding():
    bits = hostdata.to_bf16([1.0, -2.0, 3.140625, 0.0, float("nan"), 1e30])
    assert list(bits[:4]) == [0x3F80, 0xC000, 0x4049, 0x0000] and bits[4] == 0x7FC0
    back = hostdata.decode("bfloat16", bits)
    assert (back.dtype == np.float32 and list(back[:4]) == [1.0, -2.0, 3.140625, 0.0]
            and np.isnan(back[4]))
    assert back[5] == pytest.approx(1e30, rel=1e-2)
    # round to nearest even: 1 + 2^-8 is halfway between two bfloat16 values and goes to the even
    # one
    assert (hostdata.to_bf16(1.0 + 2.0**-8) == 0x3F80
            and hostdata.to_bf16(1.0 + 3 * 2.0**-8) == 0x3F82)
    assert hostdata.decode("float32", np.ones(2, np.float32)).dtype == np.float32


def test_bfloat16_buffers():
    b = buf("bfloat16", shape=(3, 4))
    x = hostdata.make_input(b, np.random.default_rng(0))
    assert x.dtype == np.uint16 and x.shape == (3, 4)
    assert np.all(np.abs(hostdata.decode("bfloat16", x)) <= 1.0)
    assert ((hostdata.poison(b) == 0x7FC0).all()
            and np.isnan(hostdata.decode("bfloat16", hostdata.poison(b))).all())
    # 31337 rounded to bfloat16 (steps of 128 there)
    assert hostdata.decode("bfloat16", hostdata.poison(b, alternate=True))[0, 0] == 31360.0
    ones = hostdata.make_input(buf("bfloat16", fill=Fill("ones")), None)
    assert (ones == 0x3F80).all()


def test_integer_outputs_must_match_exactly():
    """A count off by one in a million passes a 1e-5 relative tolerance; an integer verdict is
    exact."""
    import numpy as np

    expected = np.full(10, 1_000_000, dtype=np.int64)
    got = expected.astype(np.int32).copy()
    assert verify.compare("hist", got, expected, verify.Criterion(rtol=1e-5)).ok
    got[3] += 1
    check = verify.compare("hist", got, expected, verify.Criterion(rtol=1e-5))
    assert (not check.ok and "1 of 10 integer elements differ" in check.message
            and check.first_bad == (3,))


def _softmax(x):
    import numpy as np

    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_a_softmax_that_flushes_small_probabilities_fails_the_elementwise_verdict():
    """8192 columns of normal(0, 3): most probabilities are below 1e-5 of the largest, so the
    normwise verdict passes a kernel that writes 0 for every one below 1e-6; the elementwise one
    does not."""
    import numpy as np

    x = np.random.default_rng(0).normal(0, 3, (4, 8192))
    ref = _softmax(x)
    flushed = np.where(ref < 1e-6, 0.0, ref).astype(np.float32)
    assert verify.compare("y", flushed, ref, verify.Criterion(rtol=1e-5, metric="normwise")).ok, "the normwise blind spot"
    check = verify.compare("y", flushed, ref, verify.Criterion(rtol=1e-5, atol=1e-9))
    assert not check.ok and "elements exceed" in check.message and check.failing > 10_000
    assert verify.compare("y", ref.astype(np.float32), ref, verify.Criterion(rtol=1e-5, atol=1e-9)).ok, "float32 rounding passes"
    defaulted = verify.compare("y", flushed, ref)
    assert "below the default atol" in defaulted.note, "the default atol would pass it: the check says so"


def test_a_matmul_within_rounding_passes_and_one_wrong_element_in_a_million_fails():
    import numpy as np

    rng = np.random.default_rng(1)
    a, b = rng.uniform(-1, 1, (256, 512)), rng.uniform(-1, 1, (512, 256))
    ref = a @ b
    got = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float32)
    # K = 512 float32 products: a per-element bound of 1e-5 relative plus an absolute 1e-4 (about K
    # * eps)
    assert verify.compare("C", got, ref, verify.Criterion(rtol=1e-5, atol=1e-4)).ok
    big = rng.uniform(-1, 1, 1_000_000)
    wrong = big.astype(np.float32).copy()
    wrong[123_456] += 1e-3
    assert verify.compare("y", wrong, big, verify.Criterion(rtol=1e-3, metric="normwise")).ok, \
        "normwise: one element off by 1e-3 hides under 1e-3 x max|ref|"
    check = verify.compare("y", wrong, big, verify.Criterion(rtol=1e-6, atol=1e-7))
    assert (not check.ok and check.message.startswith("1 of 1,000,000 elements exceed")
            and "y[123456]" in check.message)


def test_an_elementwise_tolerance_in_a_spec(tmp_path):
    from kprof import spec as spec_mod
    from kprof.spec import Tolerance

    (tmp_path / "k.cu").write_text("")
    base = ("sizes: {K: 400}\nargs: [{name: a, buffer: float32, shape: [4], role: out}]\n"
            "launch: {grid: [1], block: [4]}\nreference: {a: 1}\n")

    def load(tolerance):
        (tmp_path / "k.yaml").write_text(base + (f"tolerance: {tolerance}\n" if tolerance else ""))
        spec = spec_mod.load(tmp_path / "k.yaml")
        r = spec.resolve()
        return spec.tolerance, (r.rtol, r.atol, r.metric)

    assert load("") == (Tolerance(), (None, None, "elementwise")), "absent: the output dtype's defaults"
    assert load("1e-5")[1] == (1e-5, None, "elementwise"), "a number is rtol, with the dtype's atol"
    assert load("{rtol: 1e-5, atol: 1e-7}")[1] == (1e-5, 1e-7, "elementwise")
    assert load("{atol: 1e-7}")[1] == (None, 1e-7, "elementwise")
    assert load("{metric: normwise, rtol: 1e-5}")[1] == (1e-5, None, "normwise")
    rtol, atol, _ = load('{rtol: 2e-6, atol: "1e-7 * sqrt(K)"}')[1]
    assert rtol == 2e-6 and atol == pytest.approx(2e-6), "grows with the reduction: 1e-7 * sqrt(400)"


def test_the_frontier_is_computed_only_when_asked_and_agrees_with_the_needed_atol():
    ref = np.random.default_rng(3).normal(0, 1, 1000)
    got = (ref * (1 + 1e-6)).astype(np.float32)
    plain = verify.compare("y", got, ref, verify.Criterion(rtol=1e-6, atol=0.0))
    assert plain.frontier == ()
    full = verify.compare("y", got, ref, verify.Criterion(rtol=1e-6, atol=0.0), frontier=True)
    at = dict((r, a) for r, a in full.frontier)
    assert at[1e-6] == pytest.approx(full.needed_atol, abs=1e-15) and at[0.0] >= at[1e-5] == 0.0


@pytest.mark.parametrize("shape", [(1000,), (37, 53), (3, 4, 129)])
def test_the_verdict_is_the_same_in_chunks_of_any_size(monkeypatch, shape):
    """compare() reads the output a chunk at a time (float64 temporaries of CHUNK elements, not of
    the whole output): every field of the verdict is the same whatever the chunk size."""
    rng = np.random.default_rng(1)
    ref = rng.normal(0, 3, shape)
    got = (ref * (1 + rng.normal(0, 1e-6, shape))).astype(np.float32)
    bad = got.copy()
    bad.flat[rng.integers(0, bad.size, 20)] += 1
    nan = got.copy()
    nan.flat[[5, 77]] = np.nan
    ints = rng.integers(0, 10, shape).astype(np.int32)
    poisoned, wrong = ints.copy(), ints.copy()
    poisoned.flat[[1, 2]] = -7
    wrong.flat[[4, 9]] += 3
    zero = np.zeros(shape)
    off = zero.astype(np.float32)
    off.flat[0] = 1e-3
    cases = [(got, ref, {}), (bad, ref, {"rtol": 1e-5, "atol": 1e-6}),
             (bad, ref, {"rtol": 1e-5, "frontier": True}),
             (bad, ref, {"rtol": 1e-5, "metric": "normwise"}), (nan, ref, {}),
             (poisoned, ints, {"poison_value": -7}),
             (wrong, ints, {}), (got, np.float64(0.5), {"rtol": 1e-3}),
             (off, zero, {"rtol": 1e-5, "atol": 1e-6}),
             ((ref * 1e-7).astype(np.float32), ref * 1e-7, {})]
    inf_ref = ref.copy()
    inf_ref.flat[-3] = np.inf
    late_nan = bad.copy()
    # a non-finite value in a late chunk, failing elements in the earlier ones
    late_nan.flat[-2] = np.nan
    cases += [(got, inf_ref, {}),
              (late_nan, ref, {"rtol": 1e-5, "poison_value": np.float32(np.nan)})]
    monkeypatch.setenv("KPROF_VERDICT_THREADS", "1")
    def judge(g, e, kw):  # the case's tolerance as a Criterion, the rest as compare's own keywords
        rule = verify.Criterion(**{k: v for k, v in kw.items() if k in ("rtol", "atol", "metric")})
        return repr(verify.compare("y", g, e, rule,
                                   **{k: v for k, v in kw.items()
                                      if k in ("frontier", "poison_value")}))

    whole = [judge(g, e, kw) for g, e, kw in cases]
    for chunk in (7, 1000):
        # chunks judged on several threads, merged in order: the same verdict
        for threads in ("1", "4"):
            monkeypatch.setattr(verify, "CHUNK", chunk)
            monkeypatch.setenv("KPROF_VERDICT_THREADS", threads)
            assert [judge(g, e, kw) for g, e, kw in cases] == whole, (chunk, threads)
    # ties (all the exact zeros) are shown from the lowest index: the same elements in every run
    worst = verify.compare("y", off, zero, verify.Criterion(rtol=1e-5, atol=1e-6)).worst
    assert [w["index"] for w in worst] == [[int(i) for i in np.unravel_index(f, shape)]
                                           for f in range(5)]


def test_a_failing_verdict_says_how_far_off_and_names_only_failing_elements():
    """Seen on the H200 at 8192^3: "got 129.14, expected 129.14" told the user nothing. The message
    now gives the digits that differ, the distance, and the atol at which this rtol would pass."""
    expected = np.array([129.14, -43.107, 1.0])
    got = (expected + np.array([8e-4, 0, 0])).astype(np.float32)
    check = verify.compare("C", got, expected, verify.Criterion(rtol=2e-6, atol=4e-4))
    assert not check.ok and check.failing == 1
    assert "this rtol passes at atol 5.3e-04" in check.message
    assert "C[0]: got 129.140793, expected 129.14 (off by 7.93e-04)" in check.message
    assert "C[1]" not in check.message and "C[2]" not in check.message


@pytest.mark.parametrize("threads", ["1", "3"])
@pytest.mark.parametrize("chunk", [7, 64, 1 << 22])
def test_an_exact_verdict_skips_equal_chunks_and_says_the_same(monkeypatch, chunk, threads):
    """At rtol = atol = 0 a chunk equal to its reference is taken in one comparison (kprof peak
    checks 1 GiB outputs this way); every field of the verdict is what the full scan gives."""
    monkeypatch.setattr(verify, "CHUNK", chunk)
    monkeypatch.setenv("KPROF_VERDICT_THREADS", threads)
    rng = np.random.default_rng(2)
    ref = rng.normal(0, 3, 1000).astype(np.float32).astype(np.float64)
    same = ref.astype(np.float32)
    some = same.copy()
    some[[3, 500, 999]] += 1
    nan = same.copy()
    nan[700] = np.nan
    ones, twos = np.ones(1000, np.float32), np.full(1000, 2, np.int32)
    holes, unwritten = ones.copy(), twos.copy()
    holes[[0, 999]] = np.nan
    unwritten[[10, 11]] = -7
    nan32, seven = np.float32(np.nan), np.int32(-7)
    # (output, reference, poison): a reference of one value (kprof peak's) is judged by one
    # comparison
    cases = [(same, ref, None), (some, ref, nan32), (nan, ref, nan32),
             (ones, np.float64(1.0), None),
             (ones, np.broadcast_to(np.float64(1.0), (1000,)), nan32),
             (holes, np.float64(1.0), nan32),
             (ones, np.float64(1.0 + 2**-30), nan32),
             (twos, np.broadcast_to(np.int64(2), (1000,)), seven),
             (unwritten, np.int64(2), seven), (np.full(1000, -7, np.int32), np.int64(-7), seven),
             (same.reshape(10, 100), ref.reshape(10, 100), None),
             (np.zeros(0, np.float32), np.zeros(0), None)]
    fast = [repr(verify.compare("y", g, e, verify.Criterion(rtol=0, atol=0), poison_value=p))
            for g, e, p in cases]
    # the full scan everywhere, on a whole reference
    monkeypatch.setattr(np, "array_equal", lambda *a, **k: False)
    assert [repr(verify.compare("y", g, np.array(np.broadcast_to(e, g.shape)),
                                verify.Criterion(rtol=0, atol=0), poison_value=p))
            for g, e, p in cases] == fast


@pytest.mark.parametrize("tolerance, problem", [
    ('{rtol: 1e-6, scale: {D: "abs(A)"}}', "tolerance.scale.D: 'D' is not an out or inout buffer"),
    ('{rtol: 1e-6, scale: {C: "abs(Z) @ abs(B)"}}', "tolerance.scale.C: unknown name 'Z'"),
    ('{rtol: 1e-6, scale: {C: 3}}', "tolerance.scale.C: 3 must be an expression of the inputs"),
    ('{rtol: 1e-6, scale: [abs(A)]}', "tolerance.scale: must map outputs to expressions"),
    ('{metric: normwise, rtol: 1e-5, scale: {C: "abs(A) @ abs(B)"}}',
     "tolerance.scale: the normwise metric has no scale"),
])
def test_a_bad_scale_is_refused_at_load(tmp_path, tolerance, problem):
    import re

    from kprof import spec as spec_mod
    from kprof.errors import SpecError

    (tmp_path / "k.cu").write_text("")
    (tmp_path / "k.yaml").write_text(
        "sizes: {M: 4, K: 8}\nargs:\n  - {name: A, buffer: float32, shape: [M, K], role: in}\n"
        "  - {name: B, buffer: float32, shape: [K, M], role: in}\n  - {name: C, buffer: float32, "
        "shape: [M, M], role: out}\n"
        f"launch: {{grid: [1], block: [4]}}\nreference: {{C: A @ B}}\ntolerance: {tolerance}\n")
    with pytest.raises(SpecError, match=re.escape(problem)):
        spec_mod.load(tmp_path / "k.yaml")


def test_a_scale_bound_is_the_same_in_chunks_and_refuses_a_shape_that_does_not_fit(monkeypatch):
    rng = np.random.default_rng(4)
    a, b = rng.normal(0, 1, (40, 300)), rng.normal(0, 1, (300, 30))
    ref, scale = a @ b, np.abs(a) @ np.abs(b)
    got = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float32)
    got[7, 7] += 0.05
    rule = verify.Criterion(rtol=1e-6, atol=0.0, scale_text="abs(A) @ abs(B)")
    whole = repr(verify.compare("C", got, ref, rule, scale=scale, frontier=True))
    monkeypatch.setattr(verify, "CHUNK", 11)
    monkeypatch.setenv("KPROF_VERDICT_THREADS", "4")
    assert repr(verify.compare("C", got, ref, rule, scale=scale, frontier=True)) == whole
    check = verify.compare("C", got, ref, rule, scale=scale)
    assert check.failing == 1 and check.first_bad == (7, 7) and check.rel_err == pytest.approx(
        np.abs(got - ref).max() / np.abs(ref).max()), "rel_err stays of |ref|"
    from kprof.errors import UsageError

    with pytest.raises(UsageError, match=r"tolerance.scale of C: shape \(3,\) does not broadcast"):
        verify.compare("C", got, ref, verify.Criterion(rtol=1e-6), scale=np.ones(3))


def test_the_verdicts_threads_are_capped_by_the_cpus_and_the_chunks(monkeypatch):
    monkeypatch.delenv("KPROF_VERDICT_THREADS", raising=False)
    assert verify.scan_threads(1) == 1, "one chunk: no pool"
    assert 1 <= verify.scan_threads(1000) <= parallel.SCAN_THREADS
    monkeypatch.setenv("KPROF_VERDICT_THREADS", "1")
    assert verify.scan_threads(1000) == 1
    monkeypatch.setenv("KPROF_VERDICT_THREADS", "zero")
    assert verify.scan_threads(1000) == verify.scan_threads(1000 * 1000), "an unreadable value: the default"


def test_an_output_whose_order_is_not_defined_is_checked_as_a_multiset():
    """order: any (a stream compaction): the first M elements, M the reference's count, in any
    order; the rest of the buffer is not the kernel's to define."""
    import numpy as np

    # three kept, then whatever was there
    got = np.array([3.0, 1.0, 2.0, -7.0, 99.0], dtype=np.float32)
    ok = verify.compare_unordered("y", got, np.array([1.0, 2.0, 3.0]),
                                  verify.Criterion(rtol=1e-6, atol=0.0))
    assert ok.ok and "multiset of its first 3 of 5 elements" in ok.note
    bad = verify.compare_unordered("y", got, np.array([1.0, 2.0, 4.0]),
                                   verify.Criterion(rtol=1e-6, atol=0.0))
    assert not bad.ok
    ints = verify.compare_unordered("i", np.array([5, 4, 0, 0]), np.array([4, 5]))
    assert ints.ok and ints.metric == "exact"
    over = verify.compare_unordered("y", got, np.arange(9.0))
    assert not over.ok and "the reference has 9 elements, the buffer 5" in over.message
