"""Inputs, poison and the verdict: pure NumPy, no GPU.

Inputs are random with a fixed seed (same spec, same sizes, same seed: same bytes). Outputs are
poisoned before every launch (NaN for floats, a sentinel for integers) so an element the kernel
never wrote cannot pass. The verdict is elementwise, in float64: every element within
``atol + rtol * |ref|`` (the semantics of ``numpy.isclose`` and ``torch.testing.assert_close``), so
one wrong element in a million fails; integers must match exactly; the normwise metric
``max|out - ref| <= rtol * max|ref|`` is kept as an explicit option. Any NaN or Inf in an output fails
whatever the metric says, because a harness that lets NaN through is how a broken kernel reports a
record speed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
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


def pack_scalar(dtype_name: str, value: int | float) -> int | float:
    """A scalar as a launch passes it: half-precision types as their raw 16 bits, the rest as they are."""
    if dtype_name == "float16":
        import numpy as np

        return int(np.float16(value).view(np.uint16))
    if dtype_name == "bfloat16":
        return int(to_bf16(value))
    return value


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


# Per-dtype defaults (rtol, atol), as torch.testing.assert_close has them. They suit outputs of
# order one; an output with many small values (probabilities) needs its own atol, and the check
# says so when more than SMALL_SHARE of the reference lies below the default atol.
DEFAULT_TOLERANCE = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
}  # fmt: skip
SMALL_SHARE = 0.01
WORST_SHOWN = 5
# The rtols at which a check also reports the smallest atol that passes (Check.frontier): what
# `kprof run --json` gives a spec author choosing the tightest tolerance (docs/spec.md).
FRONTIER_RTOLS = (0.0, 1e-7, 2e-7, 5e-7, 1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2)


def tolerance_for(dtype_name: str, rtol: float | None, atol: float | None) -> tuple[float, float]:
    """The (rtol, atol) a check of a ``dtype_name`` output uses: the spec's, else the default."""
    d_rtol, d_atol = DEFAULT_TOLERANCE.get(dtype_name, DEFAULT_TOLERANCE["float32"])
    return (d_rtol if rtol is None else rtol), (d_atol if atol is None else atol)


@dataclass(frozen=True)
class Check:
    """The verdict for one output buffer."""

    name: str
    ok: bool
    rel_err: float | None  # normwise relative error max|out - ref| / max|ref|; None when it cannot be computed
    max_abs_err: float | None
    nonfinite: int  # NaN or Inf elements in the output
    poisoned: int  # elements still holding the poison (never written), integer outputs
    first_bad: list[int] | None  # index of the worst element, or of the first non-finite one
    got: float | None
    expected: float | None
    rtol: float
    message: str
    atol: float = 0.0
    metric: str = "elementwise"  # or normwise, or exact (integer outputs)
    failing: int = 0  # elements outside the tolerance (elementwise), or that differ (exact)
    worst: list[dict[str, Any]] = field(default_factory=list)  # the worst elements: index, got, expected
    needed_atol: float | None = None  # the smallest atol at which this output passes, at this rtol
    needed_rtol: float | None = None  # the smallest rtol at which it passes, at this atol (None: none does)
    note: str = ""
    frontier: list[list[float]] = field(default_factory=list)  # [rtol, the smallest atol that passes at it]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compare(name: str, got: Any, expected: Any, rtol: float | None = None, poison_value: Any = None,
            atol: float | None = None, metric: str = "elementwise", dtype: str | None = None,
            frontier: bool = False) -> Check:
    """Compare one output with its float64 reference. Integers must match exactly. Floats:
    elementwise, every element within ``atol + rtol * |ref|`` (numpy.isclose); or normwise,
    ``max|out - ref| <= rtol * max|ref|``. A None tolerance takes ``dtype``'s default.
    ``frontier`` adds the smallest passing atol at each of FRONTIER_RTOLS (a pass over the
    output per rtol: for choosing a tolerance, not for every run)."""
    import numpy as np

    raw = np.asarray(got)
    got64 = raw.astype(np.float64)
    exp64 = np.broadcast_to(np.asarray(expected, dtype=np.float64), got64.shape)
    dtype = dtype or raw.dtype.name
    defaulted = rtol is None and atol is None
    rtol_v, atol_v = tolerance_for(dtype, rtol, atol)
    exact = raw.dtype.kind in "iu"  # integer outputs: counts, indices, sums of integers
    used_atol, used_metric = (0.0, "exact") if exact else (atol_v, metric)
    poisoned = int((raw == poison_value).sum()) if poison_value is not None and exact else 0
    nonfinite_mask = ~np.isfinite(got64)
    nonfinite = int(nonfinite_mask.sum())
    if not np.all(np.isfinite(exp64)):
        return Check(ok=False, rel_err=None, max_abs_err=None, nonfinite=nonfinite, poisoned=poisoned, first_bad=None,
                     got=None, expected=None, failing=nonfinite, name=name, rtol=rtol_v, atol=used_atol,
                     metric=used_metric,
                     message="the reference itself has NaN or Inf: check the spec's fill and reference")
    if nonfinite:
        idx = [int(i) for i in np.unravel_index(int(np.argmax(nonfinite_mask)), got64.shape)]
        return Check(ok=False, rel_err=None, max_abs_err=None, nonfinite=nonfinite, poisoned=poisoned, first_bad=idx,
                     got=float(got64[tuple(idx)]), expected=float(exp64[tuple(idx)]), failing=nonfinite,
                     name=name, rtol=rtol_v, atol=used_atol, metric=used_metric,
                     message=f"{nonfinite:,} of {got64.size:,} elements are NaN or Inf (unwritten or produced), "
                             f"first at {name}{_index_text(idx)}")
    diff = np.abs(got64 - exp64)
    del got64  # large outputs: keep at most three full-size float64 arrays alive
    mag = np.abs(exp64)
    max_abs = float(diff.max()) if diff.size else 0.0
    scale = float(mag.max()) if exp64.size else 0.0
    rel = max_abs / scale if scale > 0 else max_abs
    if exact:
        ok, failing, excess, message, needed = _exact(name, diff, poisoned)
    elif metric == "normwise":
        ok, failing, excess = rel <= rtol_v, int(rel > rtol_v), diff
        message = f"max relative error {rel:.2e} {'<=' if ok else '>'} {rtol_v:.1e} (normwise)"
        needed = (None, rel)
    else:
        excess = diff - rtol_v * mag
        excess -= atol_v
        failing = int((excess > 0).sum())
        ok, message, needed = failing == 0, "", _needed(diff, mag, excess, atol_v)
    worst = _worst(name, raw, exp64, excess)
    if exact and failing and not poisoned:
        message += "; worst " + _shown(name, worst)
    if not message:
        message = _elementwise_message(name, diff.size, failing, rtol_v, atol_v, max_abs, needed[0], worst)
    note = ""
    if defaulted and not exact and metric == "elementwise" and exp64.size:
        small = float((mag < atol_v).mean())
        if small > SMALL_SHARE:
            note = (f"{small:.0%} of {name}'s reference values are below the default atol {atol_v:g}, so they "
                    f"are barely checked: give the spec a tolerance.atol (this run passes at {needed[0]:.1e})")
    first = worst[0]["index"] if worst else None
    return Check(ok=ok and poisoned == 0, rel_err=rel, max_abs_err=max_abs, nonfinite=0, poisoned=poisoned,
                 first_bad=first, got=worst[0]["got"] if worst else None,
                 expected=worst[0]["expected"] if worst else None, failing=failing, worst=worst,
                 needed_atol=needed[0], needed_rtol=needed[1], note=note, message=message,
                 frontier=_frontier(diff, mag) if frontier and not exact else [], name=name, rtol=rtol_v,
                 atol=used_atol,
                 metric=used_metric)


def _frontier(diff: Any, mag: Any) -> list[list[float]]:
    if not diff.size:
        return []
    return [[r, max(0.0, float((diff - r * mag).max()))] for r in FRONTIER_RTOLS]


def _exact(name: str, diff: Any, poisoned: int) -> tuple[bool, int, Any, str, tuple[float | None, float | None]]:
    wrong = int((diff != 0).sum())
    if poisoned:
        message = f"{poisoned:,} elements of {name} were never written (still poison)"
    elif wrong:
        message = f"{wrong:,} of {diff.size:,} integer elements differ (integers must match exactly)"
    else:
        message = "every integer element matches exactly"
    return wrong == 0, wrong, diff, message, (None, None)


def _needed(diff: Any, mag: Any, excess: Any, atol: float) -> tuple[float, float | None]:
    """The smallest atol that passes at this rtol (``excess`` is |out - ref| - atol - rtol |ref|), and
    the smallest rtol at this atol (None: no rtol does, an element with a zero reference is off by
    more than atol)."""
    if not diff.size:
        return 0.0, 0.0
    needed_atol = max(0.0, float(excess.max()) + atol)
    over = diff > atol
    if not over.any():
        return needed_atol, 0.0
    if (mag[over] == 0).any():
        return needed_atol, None
    return needed_atol, float(((diff[over] - atol) / mag[over]).max())


def _worst(name: str, got: Any, exp64: Any, excess: Any) -> list[dict[str, Any]]:
    """The elements furthest outside the tolerance (or, when all pass, closest to its edge)."""
    import numpy as np

    if not excess.size:
        return []
    k = min(WORST_SHOWN, excess.size)
    flat = excess.ravel()
    top = np.argpartition(-flat, k - 1)[:k] if flat.size > k else np.arange(flat.size)
    top = top[np.argsort(-flat[top], kind="stable")]
    out = []
    for w in top:
        idx = [int(i) for i in np.unravel_index(int(w), excess.shape)]
        out.append({"index": idx, "got": float(got.flat[w]), "expected": float(exp64.flat[w])})
    return out


def _elementwise_message(name: str, size: int, failing: int, rtol: float, atol: float, max_abs: float,
                         needed_atol: float | None, worst: list[dict[str, Any]]) -> str:
    bound = f"{atol:.1e} + {rtol:.1e} x |ref|"
    if failing == 0:
        return f"every element within {bound} (max |out - ref| {max_abs:.2e}; passes down to atol {needed_atol:.1e})"
    return f"{failing:,} of {size:,} elements exceed {bound}; worst {_shown(name, worst)}"


def _shown(name: str, worst: list[dict[str, Any]]) -> str:
    return "; ".join(f"{name}{_index_text(w['index'])}: got {w['got']:.6g}, expected {w['expected']:.6g}"
                     for w in worst[:3])


def _index_text(idx: list[int]) -> str:
    return "[" + ", ".join(str(i) for i in idx) + "]"
