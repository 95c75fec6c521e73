"""Inputs, poison and the verdict: pure NumPy, no GPU.

Inputs are random with a fixed seed (same spec, same sizes, same seed: same bytes). Outputs are
poisoned before every launch (NaN for floats, a sentinel for integers) so an element the kernel
never wrote cannot pass. The metric is the normwise relative error in float64,
``max|out - ref| / max|ref|``; any NaN or Inf in an output fails whatever the metric says,
because a harness that lets NaN through is how a broken kernel reports a record speed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kprof.spec import DTYPES, ResolvedBuffer

# Integer poison: a recognisable pattern, cut to the width of the type.
INT_POISON = 0x5EADBEEFDEADBEEF
ALT_INT_POISON = 0x2BADF00D2BADF00D
ALT_FLOAT_POISON = 31337.0


# NumPy has no bfloat16: such buffers are stored as their raw 16-bit patterns (uint16) and
# converted with to_bf16() / decode() below, rounding to nearest even as the hardware does.
STORAGE = {"bfloat16": "uint16"}


def numpy_dtype(name: str) -> Any:
    """The NumPy dtype a buffer of spec dtype ``name`` is held in on the host."""
    import numpy as np

    return np.dtype(STORAGE.get(name, name))


def to_bf16(values: Any) -> Any:
    """float values -> bfloat16 bit patterns (uint16), round to nearest even; NaN stays NaN."""
    import numpy as np

    f = np.array(values, dtype=np.float32)  # a contiguous copy that keeps a scalar 0-d
    u = f.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), np.uint16(0x7FC0), rounded)


def decode(dtype_name: str, array: Any) -> Any:
    """Host storage -> numbers: bfloat16 bit patterns become float32; everything else is as stored."""
    import numpy as np

    if dtype_name == "bfloat16":
        return (np.asarray(array, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
    return array


def make_input(buf: ResolvedBuffer, rng: Any) -> Any:
    """An input array filled by the spec's rule, from ``rng`` (a seeded ``numpy.random.Generator``)."""
    import numpy as np

    dtype = numpy_dtype(buf.arg.dtype)
    kind, params = buf.arg.fill.kind, buf.arg.fill.params
    n = buf.count
    if kind == "uniform":
        lo, hi = params if params else (-1.0, 1.0)
        data = rng.uniform(lo, hi, n)
    elif kind == "normal":
        mean, std = params if params else (0.0, 1.0)
        data = rng.normal(mean, std, n)
    elif kind == "randint":
        data = rng.integers(int(params[0]), int(params[1]), n)
    elif kind == "zeros":  # made in the target dtype: a 2 GiB uint8 input must not become 16 GiB of float64
        return np.zeros(buf.shape, dtype=dtype)  # all-zero bits are 0.0 in bfloat16 too
    elif kind in ("ones", "const") and buf.arg.dtype == "bfloat16":
        return np.full(buf.shape, to_bf16(1.0 if kind == "ones" else params[0]), dtype=dtype)
    elif kind == "ones":
        return np.ones(buf.shape, dtype=dtype)
    elif kind == "const":
        return np.full(buf.shape, params[0], dtype=dtype)
    elif kind == "arange":
        data = np.arange(n)
    else:  # the spec loader admits only the kinds above
        raise ValueError(f"unknown fill {kind}")
    if buf.arg.dtype == "bfloat16":
        return np.ascontiguousarray(to_bf16(data).reshape(buf.shape))
    return np.ascontiguousarray(data.astype(dtype, copy=False).reshape(buf.shape))


def poison(buf: ResolvedBuffer, alternate: bool = False) -> Any:
    """An array of poison the shape of ``buf``: NaN or a sentinel for integers.

    ``alternate`` gives a second, different pattern (a large finite float, another sentinel):
    the values detector compares runs under both to see which results follow the poison.
    """
    import numpy as np

    dtype = numpy_dtype(buf.arg.dtype)
    if DTYPES[buf.arg.dtype][1] == "f":
        # A moderate value, not 1e30: 1e30 + x == 1e30 in float32, which would hide a kernel
        # that adds into an output it never zeroed behind the "never written" verdict.
        fill = ALT_FLOAT_POISON if alternate else np.nan
        if buf.arg.dtype == "bfloat16":
            return np.full(buf.shape, to_bf16(fill), dtype=dtype)
        return np.full(buf.shape, fill, dtype=dtype)
    bits = 8 * dtype.itemsize
    pattern = (ALT_INT_POISON if alternate else INT_POISON) & ((1 << bits) - 1)
    raw = np.full(buf.shape, pattern, dtype=np.dtype(f"u{dtype.itemsize}"))
    return raw.view(dtype)


@dataclass(frozen=True)
class Check:
    """The verdict for one output buffer."""

    name: str
    ok: bool
    rel_err: float | None  # normwise relative error; None when it cannot be computed
    max_abs_err: float | None
    nonfinite: int  # NaN or Inf elements in the output
    poisoned: int  # elements still holding the poison (never written), integer outputs
    first_bad: list[int] | None  # index of the worst element, or of the first non-finite one
    got: float | None
    expected: float | None
    rtol: float
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compare(name: str, got: Any, expected: Any, rtol: float, poison_value: Any = None,
            atol: float | None = None) -> Check:
    """Compare one output with its float64 reference: exactly for integers; for floats the normwise
    error against ``rtol``, or with ``atol`` every element against ``atol + rtol * |ref|``."""
    import numpy as np

    got64 = np.asarray(got).astype(np.float64)
    exp64 = np.broadcast_to(np.asarray(expected, dtype=np.float64), got64.shape)
    if exp64.shape != got64.shape:  # broadcast_to raises first; kept for clarity
        raise ValueError("shape mismatch")
    nonfinite_mask = ~np.isfinite(got64)
    nonfinite = int(nonfinite_mask.sum())
    poisoned = 0
    if poison_value is not None and np.asarray(got).dtype.kind in "iu":
        poisoned = int((np.asarray(got) == poison_value).sum())
    if not np.all(np.isfinite(exp64)):
        return Check(name, False, None, None, nonfinite, poisoned, None, None, None, rtol,
                     "the reference itself has NaN or Inf: check the spec's fill and reference")
    if nonfinite:
        idx = [int(i) for i in np.unravel_index(int(np.argmax(nonfinite_mask)), got64.shape)]
        where = _index_text(idx)
        return Check(
            name, False, None, None, nonfinite, poisoned, idx, float(got64[tuple(idx)]),
            float(exp64[tuple(idx)]), rtol,
            f"{nonfinite:,} of {got64.size:,} elements are NaN or Inf (unwritten or produced), first at {name}{where}",
        )
    diff = np.abs(got64 - exp64)
    worst = int(np.argmax(diff)) if diff.size else 0
    idx = [int(i) for i in np.unravel_index(worst, got64.shape)] if diff.size else []
    max_abs = float(diff.max()) if diff.size else 0.0
    scale = float(np.abs(exp64).max()) if exp64.size else 0.0
    rel = max_abs / scale if scale > 0 else max_abs
    exact = np.asarray(got).dtype.kind in "iu"  # integer outputs: counts, indices, sums of integers
    wrong = int((diff != 0).sum()) if exact else 0
    ok = (wrong == 0 if exact else rel <= rtol) and poisoned == 0
    if poisoned:
        message = f"{poisoned:,} elements of {name} were never written (still poison)"
    elif atol is not None and not exact:
        ok, message = _elementwise(name, got64, exp64, rtol, atol, poisoned)
    elif exact and wrong:
        message = (f"{wrong:,} of {got64.size:,} integer elements differ (integers must match exactly); worst at "
                   f"{name}{_index_text(idx)}: got {got64[tuple(idx)]:.0f}, expected {exp64[tuple(idx)]:.0f}")
    elif exact:
        message = "every integer element matches exactly"
    elif ok:
        message = f"max relative error {rel:.2e} <= {rtol:.0e}"
    else:
        message = (
            f"max relative error {rel:.2e} > {rtol:.0e}; worst at {name}{_index_text(idx)}: "
            f"got {got64[tuple(idx)]:.6g}, expected {exp64[tuple(idx)]:.6g}"
        )
    got_v = float(got64[tuple(idx)]) if diff.size else None
    exp_v = float(exp64[tuple(idx)]) if diff.size else None
    return Check(name, ok, rel, max_abs, 0, poisoned, idx, got_v, exp_v, rtol, message)


def _elementwise(name: str, got64: Any, exp64: Any, rtol: float, atol: float, poisoned: int) -> tuple[bool, str]:
    """|out - ref| <= atol + rtol * |ref| for every element: how many fail, and the worst of them."""
    import numpy as np

    bound = atol + rtol * np.abs(exp64)
    excess = np.abs(got64 - exp64) - bound
    bad = excess > 0
    count = int(bad.sum())
    if count == 0:
        return poisoned == 0, f"every element within {atol:.0e} + {rtol:.0e} x |ref|"
    worst = np.argsort(-excess, axis=None)[:3]
    shown = "; ".join(f"{name}{_index_text([int(i) for i in np.unravel_index(int(w), got64.shape)])}: got "
                      f"{got64.flat[w]:.6g}, expected {exp64.flat[w]:.6g}" for w in worst)
    return False, f"{count:,} of {got64.size:,} elements exceed {atol:.0e} + {rtol:.0e} x |ref|; worst {shown}"


def _index_text(idx: list[int]) -> str:
    return "[" + ", ".join(str(i) for i in idx) + "]"
