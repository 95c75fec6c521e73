import re

import numpy as np
import pytest

from kprof.spec import reference
from kprof.spec.reference import ReferenceExprError


def test_matmul_and_arithmetic():
    rng = np.random.default_rng(1)
    a, b = rng.random((5, 3)), rng.random((3, 4))
    np.testing.assert_allclose(reference.evaluate("A @ B", {"A": a, "B": b}), a @ b)
    np.testing.assert_allclose(reference.evaluate("matmul(A, B) * 2 - 1", {"A": a, "B": b}),
                               a @ b * 2 - 1)


def test_softmax_rows_sum_to_one_and_match_definition():
    x = np.random.default_rng(2).normal(0, 30, (7, 33))
    y = reference.evaluate("softmax(x, axis=-1)", {"x": x})
    np.testing.assert_allclose(y.sum(axis=1), 1.0)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True))


def test_rmsnorm():
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=(4, 9)), rng.random(9)
    y = reference.evaluate("rmsnorm(x, w, eps)", {"x": x, "w": w, "eps": 1e-6})
    np.testing.assert_allclose(y, x / np.sqrt((x**2).mean(axis=1, keepdims=True) + 1e-6) * w)


def test_reductions_and_constants():
    x = np.arange(6.0).reshape(2, 3)
    assert reference.evaluate("sum(x)", {"x": x}) == 15
    np.testing.assert_allclose(reference.evaluate("max(x, axis=0)", {"x": x}), [3, 4, 5])
    np.testing.assert_allclose(reference.evaluate("relu(x - 2.5)", {"x": x}),
                               np.maximum(x - 2.5, 0))
    assert reference.evaluate(0, {}) == 0


@pytest.mark.parametrize(
    "expr, message",
    [
        ("x.T", "'Attribute' is not allowed"),
        ("__import__('os')", "unknown function __import__"),
        ("np.sum(x)", "'Attribute' is not allowed"),
        ("(lambda: x)()", "unknown function an expression"),
        ("sum(x, dtype=int)", "takes no keyword 'dtype'"),
        ("softmax()", "takes 1 positional"),
        ("'text'", "only numbers"),
        ("x if x else x", "'IfExp' is not allowed"),
        ("[x for x in y]", "is not allowed"),
        ("x +", "cannot parse"),
    ],
)
def test_refuses(expr, message):
    with pytest.raises(ReferenceExprError, match=re.escape(message)):
        reference.parse(expr)


def test_names_excludes_functions():
    assert reference.names("rmsnorm(x, w, eps) + sum(y)") == {"x", "w", "eps", "y"}


def test_slices_and_indices():
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(reference.evaluate("x[1:, :2]", {"x": x}), x[1:, :2])
    np.testing.assert_array_equal(reference.evaluate("x[N - 1]", {"x": x, "N": 3}), x[2])
    np.testing.assert_array_equal(reference.evaluate("shift(x, 1)", {"x": x}), x[:, [1, 2, 3, 3]])
    with pytest.raises(ReferenceExprError, match="whole number or a slice"):
        reference.evaluate("x[y]", {"x": x, "y": x})


def test_keepdims_true_is_allowed():
    import numpy as np

    x = np.arange(6.0).reshape(2, 3)
    assert reference.evaluate("x / sum(x, axis=1, keepdims=True)", {"x": x}).shape == (2, 3)


def test_an_integer_input_defaults_to_randint_and_scratch_needs_no_fill(tmp_path):
    from kprof import spec as spec_mod

    (tmp_path / "k.cu").write_text("")
    (tmp_path / "k.yaml").write_text(
        "sizes: {N: 8}\nargs:\n  - {name: idx, buffer: int32, shape: [N]}\n"
        "  - {name: tmp, buffer: int32, shape: [N], role: scratch}\n  - {name: y, buffer: float32, "
        "shape: [N], role: out}\nlaunch: {grid: [1], block: [8]}\nreference: {y: idx}\n")
    spec = spec_mod.load(tmp_path / "k.yaml")
    assert spec.args[0].fill.kind == "randint" and spec.args[1].fill.kind == "zeros"


def test_a_scratch_buffer_with_a_fill_reads_right(tmp_path):
    from kprof import spec as spec_mod
    from kprof.errors import SpecError

    (tmp_path / "k.cu").write_text("")
    (tmp_path / "k.yaml").write_text(
        "sizes: {N: 8}\nargs:\n  - {name: tmp, buffer: float32, shape: [N], role: scratch, fill: "
        "zeros}\n  - {name: y, buffer: float32, shape: [N], role: out}\nlaunch: {grid: [1], block: "
        "[8]}\nreference: {y: 1}\n")
    with pytest.raises(SpecError, match="a scratch buffer is poisoned"):
        spec_mod.load(tmp_path / "k.yaml")


@pytest.mark.parametrize("shape", [(300, 301), (2, 50, 4000), (5000, 3)])
def test_a_row_wise_reference_in_blocks_of_rows_is_the_whole_arrays_to_the_bit(monkeypatch, shape):
    """softmax and rmsnorm over blocks of rows on threads (a 268M-element default size): the same
    float64 values as over the whole array, a weight broadcast over the rows or of x's own shape."""
    import numpy as np

    rng = np.random.default_rng(4)
    x = rng.normal(size=shape)
    w, full = rng.uniform(0.5, 1.5, shape[-1]), rng.uniform(0.5, 1.5, shape)
    whole = [reference.evaluate(e, {"x": x, "w": w, "f": full})
             for e in ("softmax(x)", "rmsnorm(x, w, 1e-6)", "rmsnorm(x, f, 1e-6)")]
    monkeypatch.setattr(reference, "ROWS_AT_ONCE", 512)
    blocks = [reference.evaluate(e, {"x": x, "w": w, "f": full})
              for e in ("softmax(x)", "rmsnorm(x, w, 1e-6)", "rmsnorm(x, f, 1e-6)")]
    for a, b in zip(whole, blocks):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
