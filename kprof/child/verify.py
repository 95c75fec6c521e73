"""The verdict: what a kernel wrote against its float64 reference. Pure NumPy, no GPU.

Elementwise, in float64: every element within ``atol + rtol * |ref|`` (the semantics of
``numpy.isclose`` and ``torch.testing.assert_close``), so one wrong element in a million fails;
integers must match exactly; the normwise metric ``max|out - ref| <= rtol * max|ref|`` is kept as an
explicit option. Any NaN or Inf in an output fails whatever the metric says, because a harness that
lets NaN through is how a broken kernel reports a record speed; an element still holding the poison
(:mod:`kprof.child.hostdata`) was never written.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kprof.errors import UsageError
from kprof.launch.childresult import OutputCheck
from kprof.parallel import scan_threads

# Per-dtype defaults (rtol, atol), as torch.testing.assert_close has them. They suit outputs of
# order one; an output with many small values (probabilities) needs its own atol, and the check
# says so when more than SMALL_SHARE of the reference lies below the default atol.
DEFAULT_TOLERANCE = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}  # fmt: skip
SMALL_SHARE = 0.01
WORST_SHOWN = 5
# The rtols at which a check also reports the smallest atol that passes (OutputCheck.frontier): what
# `kprof run --json` gives a spec author choosing the tightest tolerance (docs/spec.md).
FRONTIER_RTOLS = (0.0, 1e-7, 2e-7, 5e-7, 1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 1e-3, 2e-3, 4e-3,
                  8e-3, 1.6e-2)


def tolerance_for(dtype_name: str, rtol: float | None, atol: float | None) -> tuple[float, float]:
    """The (rtol, atol) a check of a ``dtype_name`` output uses: the spec's, else the default."""
    d_rtol, d_atol = DEFAULT_TOLERANCE.get(dtype_name, DEFAULT_TOLERANCE["float32"])
    return (d_rtol if rtol is None else rtol), (d_atol if atol is None else atol)


@dataclass(frozen=True)
class Criterion:
    """How one output is judged: its rtol and atol (None: ``dtype``'s defaults), the metric
    (``elementwise`` or ``normwise``), and the text of its ``tolerance.scale``, for the message."""

    rtol: float | None = None
    atol: float | None = None
    metric: str = "elementwise"
    dtype: str | None = None
    scale_text: str | None = None


def compare(name: str, got: object, expected: object, rule: Criterion = Criterion(), *,
            poison_value: object = None, scale: object = None,
            frontier: bool = False) -> OutputCheck:
    """Compare one output with its float64 reference. Integers must match exactly. Floats:
    elementwise, every element within ``atol + rtol * |ref|`` (numpy.isclose), or ``atol + rtol *
    |scale|`` where the spec gives a scale (``scale_text``, e.g. ``abs(A) @ abs(B)``: the size of
    the terms a sum adds, which its rounding errors grow with, where |ref| can be small by
    cancellation); or normwise, ``max|out - ref| <= rtol * max|ref|``. A None tolerance takes
    ``dtype``'s default. ``frontier`` adds the smallest passing atol at each of FRONTIER_RTOLS (a
    pass over the output per rtol: for choosing a tolerance, not for every run)."""
    import numpy as np

    rtol, atol, metric, dtype = rule.rtol, rule.atol, rule.metric, rule.dtype
    scale_text = rule.scale_text
    raw = np.asarray(got)
    ref = np.asarray(expected)
    if ref.shape != raw.shape:
        ref = np.broadcast_to(ref, raw.shape)
    sized = scale_for(name, scale, raw) if metric == "elementwise" and raw.dtype.kind not in "iu" else None
    dtype = dtype or raw.dtype.name
    defaulted = rtol is None and atol is None
    rtol_v, atol_v = tolerance_for(dtype, rtol, atol)
    exact = raw.dtype.kind in "iu"  # integer outputs: counts, indices, sums of integers
    used_atol, used_metric = (0.0, "exact") if exact else (atol_v, metric)
    scan = _Scan(raw, ref, rtol_v, 0.0 if exact else atol_v, poison_value if exact else None,
                 used_metric, frontier=frontier and not exact, scale=sized)
    poisoned = scan.poisoned
    if scan.ref_nonfinite:
        return OutputCheck(
            ok=False, nonfinite=scan.nonfinite, poisoned=poisoned, failing=scan.nonfinite, name=name,
            rtol=rtol_v, atol=used_atol, metric=used_metric,
            message="the reference itself has NaN or Inf: check the spec's fill and reference")
    if scan.nonfinite:
        idx = _unravel(scan.first_nonfinite, raw.shape)
        return OutputCheck(
            ok=False, nonfinite=scan.nonfinite, poisoned=poisoned, first_bad=tuple(idx),
            got=float(raw[tuple(idx)]), expected=float(ref[tuple(idx)]), failing=scan.nonfinite,
            name=name, rtol=rtol_v, atol=used_atol, metric=used_metric,
            message=f"{scan.nonfinite:,} of {raw.size:,} elements are NaN or Inf (unwritten or "
                    f"produced), first at {name}{_index_text(idx)}")
    max_abs, scale = scan.max_abs, scan.scale
    rel = max_abs / scale if scale > 0 else max_abs
    needed: tuple[float | None, float | None]
    if exact:
        ok, failing = scan.differ == 0, scan.differ
        if poisoned:
            message = f"{poisoned:,} elements of {name} were never written (still poison)"
        elif failing:
            message = f"{failing:,} of {raw.size:,} integer elements differ (integers must match exactly)"
        else:
            message = "every integer element matches exactly"
        needed = (None, None)
    elif metric == "normwise":
        ok, failing = rel <= rtol_v, int(rel > rtol_v)
        message = f"max relative error {rel:.2e} {'<=' if ok else '>'} {rtol_v:.1e} (normwise)"
        needed = (None, rel)
    else:
        failing = scan.failing
        ok, message = failing == 0, ""
        needed = scan.needed(atol_v)
    worst = scan.worst(raw, ref)
    if exact and failing and not poisoned:
        message += "; worst " + _shown(name,
                                       [w for w in worst if w["got"] != w["expected"]] or worst)
    if not message:
        message = _elementwise_message(name, raw.size, failing, rtol_v, atol_v, max_abs,
                                       needed_atol=needed[0], worst=worst,
                                       scale_text=(scale_text or "scale") if sized is not None
                                       else None, scale=sized)
    note = ""
    if defaulted and not exact and metric == "elementwise" and raw.size:
        small = scan.small / raw.size
        if small > SMALL_SHARE:
            note = (f"{small:.0%} of {name}'s reference values are below the default atol "
                    f"{atol_v:g}, so they are barely checked: give the spec a tolerance.atol (this "
                    f"run passes at {needed[0]:.1e})")
    first = worst[0]["index"] if worst else None
    return OutputCheck(ok=ok and poisoned == 0, rel_err=rel, max_abs_err=max_abs, nonfinite=0,
                       poisoned=poisoned, first_bad=tuple(first) if first is not None else None,
                       got=worst[0]["got"] if worst else None,
                       expected=worst[0]["expected"] if worst else None,
                       failing=failing, worst=tuple(worst), needed_atol=needed[0],
                       needed_rtol=needed[1], note=note,
                       message=message, name=name, rtol=rtol_v, atol=used_atol, metric=used_metric,
                       frontier=tuple(tuple(r) for r in scan.frontier_rows()) if frontier
                       and not exact else ())


def compare_unordered(name: str, got: object, expected: object,
                      rule: Criterion = Criterion()) -> OutputCheck:
    """An output whose order the kernel does not define (``order: any``: a stream compaction's), as
    a multiset: its first M elements, M the reference's count (the rest of the buffer is not the
    kernel's to define), sorted, against the reference sorted, by the spec's tolerance. A reference
    with more elements than the buffer fails."""
    import numpy as np

    raw = np.asarray(got).ravel()
    ref = np.asarray(expected, dtype=np.float64 if raw.dtype.kind == "f" else None).ravel()
    if ref.size > raw.size:
        rtol, _atol = tolerance_for(rule.dtype or raw.dtype.name, rule.rtol, rule.atol)
        return OutputCheck(name=name, ok=False, rtol=rtol,
                           message=f"{name}: the reference has {ref.size:,} elements, the buffer "
                                   f"{raw.size:,} (order: any)")
    check = compare(name, np.sort(raw[:ref.size]), np.sort(ref), rule)
    where = f"{name} as a multiset of its first {ref.size:,} of {raw.size:,} elements (order: any)"
    return replace(check, note=(check.note + "; " if check.note else "") + where)


def out_of_bounds(name: str, damage: str) -> OutputCheck:
    """The failed check of a buffer whose guard zones were written (:meth:`Workspace.guard_damage`):
    an out-of-bounds write, found by the verdict alone."""
    return OutputCheck(name=name, ok=False, metric="bounds",
                       message=f"{name}: written outside its bounds: {damage}; kprof sanitize "
                               "--tool memcheck names the thread and the line")


def scale_for(name: str, scale: object, raw: Any) -> Any:
    """``tolerance.scale`` as float64 with the output's shape (broadcast), or None without one: for
    kprof run's verdict and the values detector alike."""
    import numpy as np

    if scale is None:
        return None
    sized = np.asarray(scale, dtype=np.float64)
    if sized.shape == raw.shape:
        return sized
    try:
        return np.broadcast_to(sized, raw.shape)
    except ValueError:
        raise UsageError(f"tolerance.scale of {name}: shape {sized.shape} does not broadcast to "
                         f"the output's {raw.shape}") from None


# elements per pass of the verdict: float64 temporaries of 32 MiB, not of the whole output
CHUNK = 1 << 22


class _Scan:
    """One pass over an output and its reference, a chunk at a time, gathering everything the
    verdict needs: non-finite values, the largest errors, the elements outside the tolerance, the
    worst few, the frontier. A 1 GiB output needs no 8 GiB float64 copies. Chunks are judged on
    several threads, each into its own partial scan, and merged in order: the result is the same
    whatever the number of threads (tests/child/test_verify.py)."""

    def __init__(self, raw: Any, ref: Any, rtol: float, atol: float, poison: Any, metric: str, *,
                 frontier: bool, scale: Any = None) -> None:
        from concurrent.futures import ThreadPoolExecutor

        import numpy as np

        self._reset(frontier)
        self.rtol, self.atol, self.poison, self.metric = rtol, atol, poison, metric
        # rtol = atol = 0 on floats: a chunk equal to its reference passes with nothing to find
        self.exact_bound = rtol == 0 and atol == 0 and metric == "elementwise" and not frontier
        # A reference of one value (a fill, kprof peak's 1 GiB outputs), read once, not widened per
        # chunk
        self.constant = ref.flat[0] if self.exact_bound and ref.size and not any(ref.strides) else None
        if self.constant is not None and (not np.isfinite(self.constant) or
                                          (poison is not None and self.constant == poison)):
            # the full scan says what a non-finite reference (or one equal to the poison) means
            self.constant = None
        flat_raw = raw.reshape(-1)
        # a broadcast reference: through .flat
        flat_ref = ref.reshape(-1) if ref.flags.c_contiguous else ref.flat
        flat_scale = None if scale is None else (scale.reshape(-1) if scale.flags.c_contiguous
                                                 else scale.flat)

        def chunk(bounds: tuple[int, int]) -> _Scan:
            start, stop = bounds
            part = _Scan.__new__(_Scan)
            part._reset(frontier)
            r = flat_raw[start:stop]
            # no NaN, no poison either
            if self.constant is not None and r.size and bool((r == self.constant).all()):
                part._all_equal(np.asarray(self.constant, dtype=np.float64).reshape(1), start,
                                r.size)
                return part
            part._judge(self, r, flat_ref[start:stop],
                        None if flat_scale is None else flat_scale[start:stop], start)
            return part

        chunks = [(start, min(start + CHUNK, raw.size)) for start in range(0, raw.size, CHUNK)]
        threads = scan_threads(len(chunks))
        if threads == 1:
            self._merge_all(map(chunk, chunks))
        else:
            with ThreadPoolExecutor(threads) as pool:
                self._merge_all(pool.map(chunk, chunks))

    def _reset(self, frontier: bool) -> None:
        import numpy as np

        self.nonfinite = self.poisoned = self.differ = self.failing = self.small = 0
        self.first_nonfinite = -1
        self.ref_nonfinite = False
        self.max_abs = self.scale = 0.0
        self.max_excess = -np.inf
        # an element with |ref| = 0 is off by more than atol: no rtol passes
        self.zero_ref_over = False
        # max (|out - ref| - atol) / |ref| over the elements off by more than atol
        self.max_ratio = 0.0
        self.frontier = [-np.inf] * len(FRONTIER_RTOLS) if frontier else []
        # (-excess, flat index): the worst of each chunk
        self.candidates: list[tuple[float, int]] = []

    def _merge_all(self, parts: Any) -> None:
        """The partial scans, in chunk order, into this one, as one pass over the chunks would have
        gathered them: after a non-finite reference nothing counts; after the first non-finite
        output element only the non-finite values are counted."""
        for part in parts:
            if self.ref_nonfinite:
                continue  # drain the rest: the verdict is the reference's own NaN or Inf
            if part.ref_nonfinite:
                self.ref_nonfinite = True
                continue
            self.poisoned += part.poisoned
            if part.nonfinite:
                if self.nonfinite == 0:
                    self.first_nonfinite = part.first_nonfinite
                self.nonfinite += part.nonfinite
            if self.nonfinite:
                continue  # the verdict is the non-finite values: only count them from here on
            self.max_abs = max(self.max_abs, part.max_abs)
            self.scale = max(self.scale, part.scale)
            self.differ += part.differ
            self.small += part.small
            self.failing += part.failing
            self.max_excess = max(self.max_excess, part.max_excess)
            self.zero_ref_over = self.zero_ref_over or part.zero_ref_over
            self.max_ratio = max(self.max_ratio, part.max_ratio)
            self.frontier = [max(a, b) for a, b in zip(self.frontier, part.frontier)]
            self.candidates = sorted(self.candidates + part.candidates)[:WORST_SHOWN]

    def _judge(self, how: _Scan, r: Any, ref: Any, scale: Any, start: int) -> None:
        """One chunk of the output (``r``, from flat index ``start``), its reference and its scale
        (or None), judged into this partial scan with ``how``'s tolerance."""
        import numpy as np

        rtol, atol, metric = how.rtol, how.atol, how.metric
        e = np.asarray(ref, dtype=np.float64)
        if not np.isfinite(e).all():
            self.ref_nonfinite = True
            return
        if how.exact_bound and e.size and np.array_equal(r, e):
            # the common case of an exact verdict (a copy, a fill), at a third of the cost
            self._all_equal(e, start, e.size)
            # a NaN poison cannot equal a finite reference
            if how.poison is not None and not np.isnan(how.poison):
                self.poisoned = int((r == how.poison).sum())
            return
        g = r.astype(np.float64)
        if how.poison is not None:
            self.poisoned = int((r == how.poison).sum())
        bad = ~np.isfinite(g)
        count = int(bad.sum())
        if count:
            self.first_nonfinite = start + int(np.argmax(bad))
            self.nonfinite = count
            return  # the verdict is the non-finite values: nothing else of this chunk counts
        diff = np.abs(g - e)
        mag = np.abs(e) if scale is None else np.abs(np.asarray(scale, dtype=np.float64))
        if diff.size:
            self.max_abs = float(diff.max())
            # rel_err stays of |ref|
            self.scale = float(mag.max() if scale is None else np.abs(e).max())
        if metric == "exact":
            self.differ = int((diff != 0).sum())
        elementwise = metric == "elementwise"
        # the worst: beyond the bound, or largest
        excess = diff - rtol * mag - atol if elementwise else diff
        if elementwise and excess.size:
            self.small = int((mag < atol).sum())
            self.failing = int((excess > 0).sum())
            self.max_excess = float(excess.max())
            over = diff > atol
            if over.any():
                if (mag[over] == 0).any():
                    self.zero_ref_over = True
                else:
                    self.max_ratio = float(((diff[over] - atol) / mag[over]).max())
        self.frontier = [float((diff - r_ * mag).max()) for r_ in FRONTIER_RTOLS] if self.frontier else []
        self._keep_worst(excess, start)

    def _all_equal(self, e: Any, start: int, size: int) -> None:
        """What the full scan gathers from a chunk of ``size`` elements equal to its (finite)
        reference ``e`` at rtol = atol = 0: no error, every excess 0 (so the worst are its first
        elements), the reference's largest magnitude."""
        self.scale = float(max(e.max(), -e.min()))
        self.max_excess = 0.0
        self.candidates = [(-0.0, start + i) for i in range(min(WORST_SHOWN, size))]

    def _keep_worst(self, excess: Any, start: int) -> None:
        """The chunk's WORST_SHOWN largest excesses (ties: the lowest indices); the merge keeps the
        WORST_SHOWN largest of all chunks."""
        import numpy as np

        k = min(WORST_SHOWN, excess.size)
        if k == 0:
            return
        if excess.size > k:
            kth = np.partition(excess, excess.size - k)[excess.size - k]
            above = np.flatnonzero(excess > kth)
            ties = np.flatnonzero(excess == kth)[: k - above.size]
            top = np.concatenate([above, ties])
        else:
            top = np.arange(excess.size)
        self.candidates = [(-float(excess[i]), start + int(i)) for i in top]

    def needed(self, atol: float) -> tuple[float, float | None]:
        """The smallest atol that passes at this rtol, and the smallest rtol at this atol (None:
        none does)."""
        if self.max_excess == float("-inf"):
            return 0.0, 0.0
        needed_atol = max(0.0, self.max_excess + atol)
        if self.zero_ref_over:
            return needed_atol, None
        return needed_atol, self.max_ratio

    def worst(self, raw: Any, ref: Any) -> list[dict[str, Any]]:
        out = []
        for _, flat in self.candidates:
            idx = _unravel(flat, raw.shape)
            out.append({"index": idx, "got": float(raw[tuple(idx)]),
                        "expected": float(ref[tuple(idx)])})
        return out

    def frontier_rows(self) -> list[list[float]]:
        if not self.frontier or self.frontier[0] == float("-inf"):
            return []
        return [[r, max(0.0, f)] for r, f in zip(FRONTIER_RTOLS, self.frontier)]


def _unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    import numpy as np

    return [int(i) for i in np.unravel_index(int(flat), shape)] if shape else []


def _elementwise_message(name: str, size: int, failing: int, rtol: float, atol: float,
                         max_abs: float,
                         *, needed_atol: float | None, worst: list[dict[str, Any]],
                         scale_text: str | None = None, scale: Any = None) -> str:
    bound = f"{atol:.1e} + {rtol:.1e} x {'(' + scale_text + ')' if scale_text else '|ref|'}"
    if failing == 0:
        return f"every element within {bound} (max |out - ref| {max_abs:.2e}; passes down to atol {needed_atol:.1e})"
    passes = f"; this rtol passes at atol {needed_atol:.1e}" if needed_atol is not None else ""
    def bound_at(w: dict[str, Any]) -> float:
        return atol + rtol * (abs(float(scale[tuple(w["index"])])) if scale is not None
                              else abs(w["expected"]))

    outside = [w for w in worst if abs(w["got"] - w["expected"]) > bound_at(w)]
    return (f"{failing:,} of {size:,} elements exceed {bound} (max |out - ref| "
            f"{max_abs:.2e}{passes}); worst {_shown(name, outside or worst)}")


def _shown(name: str, worst: list[dict[str, Any]]) -> str:
    """The worst elements, with enough digits to tell got from expected, and how far apart they
    are."""
    return "; ".join(f"{name}{_index_text(w['index'])}: got {w['got']:.9g}, expected "
                     f"{w['expected']:.9g}"
                     + (f" (off by {abs(w['got'] - w['expected']):.2e})"
                        if w['got'] != w['expected'] else "")
                     for w in worst[:3])


def _index_text(idx: list[int]) -> str:
    return "[" + ", ".join(str(i) for i in idx) + "]"
