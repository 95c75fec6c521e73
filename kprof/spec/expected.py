"""What a spec expects of its outputs, loaded and checked with the rest of the spec (:mod:`kprof.spec.loader`):
each output's reference (an expression of the reference vocabulary, or a Python function), the tolerance
and its scale, and the extra sizes (and fills) the verdict is checked at. Every error names the file and the
field, as the loader's do.
"""

from __future__ import annotations

from pathlib import Path

from kprof.errors import ReferenceExprError
from kprof.spec import reference
from kprof.spec.fields import CheckExpr, Fail, cut, fill_of, show
from kprof.spec.schema import Arg, BufferArg, Check, Fill, ScalarArg, Tolerance


def input_names(args: tuple[Arg, ...]) -> set[str]:
    """What a reference, a scale or a Python baseline may name besides the sizes: the scalars and
    the input buffers."""
    return {a.name for a in args if isinstance(a, ScalarArg)
            or (isinstance(a, BufferArg) and a.role in ("in", "inout"))}


def output_names(args: tuple[Arg, ...]) -> set[str]:
    return {a.name for a in args if isinstance(a, BufferArg) and a.role in ("out", "inout")}


SPEC_WIDE = "*"  # the output key of a spec-wide Python reference (it returns every output)


def load_reference(raw: object, args: tuple[Arg, ...], known_sizes: set[str], fail: Fail,
                    folder: Path) -> tuple[tuple[str, str], ...]:
    """Each output's reference: an expression of the vocabulary, or a Python function
    (``FILE.py:FN``, ``package.module:FN``; stored resolved as ``python:/abs/FILE.py:FN``). A
    spec-wide ``reference: FILE.py:FN`` returns a dict of every output."""
    from kprof.spec import pyref

    outputs = output_names(args)
    known = input_names(args) | known_sizes

    def python(text: str, fld: str) -> str:
        try:
            return pyref.check(text, folder, known).stored()
        except ValueError as exc:
            raise fail(fld, cut(str(exc), 300)) from None

    if isinstance(raw, str) and pyref.looks_like(raw):
        return ((SPEC_WIDE, python(raw, "reference")),)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise fail("reference",
                   "must map each output buffer to an expression (C: A @ B), or name a Python "
                   "function (refs.py:expected)")
    out = []
    for key, expr in raw.items():
        fld = f"reference.{key}"
        _an_output(key, outputs, fld, fail)
        if pyref.looks_like(expr):
            out.append((key, python(str(expr), fld)))
            continue
        out.append((key, _vocabulary_expr(expr, known, fld, fail)))
    missing = sorted(outputs - {k for k, _ in out})
    if missing:
        raise fail("reference",
                   f"output '{missing[0]}' has no reference; add '{missing[0]}: <expression>' "
                   "(or name a Python function: refs.py:expected)")
    return tuple(out)


def load_tolerance(raw: object, fail: Fail, check_expr: CheckExpr, args: tuple[Arg, ...],
                    known_sizes: set[str]) -> Tolerance:
    """Absent: the output dtype's default. ``1e-5``: that rtol with the dtype's atol.
    ``{rtol: 1e-6, atol: "2e-7 * sqrt(K)"}``: numbers or size expressions, either may be left out.
    ``{metric: normwise, rtol: 1e-5}``: the normwise verdict, ``max|out - ref| <= rtol * max|ref|``.
    ``{rtol: 1e-6, scale: {C: "abs(A) @ abs(B)"}}``: rtol times that, element by element, not
    |ref|."""
    if raw is None:
        return Tolerance()
    if not isinstance(raw, dict):
        return Tolerance(rtol=_tolerance_value(raw, "tolerance", fail, check_expr))
    unknown = sorted(set(raw) - {"rtol", "atol", "metric", "scale"})
    if unknown or not raw:
        raise fail(f"tolerance.{unknown[0]}" if unknown else "tolerance",
                   "a tolerance is a number (rtol) or a mapping of rtol, atol, metric and scale, "
                   "e.g. {rtol: 1e-6, atol: 1e-7}")
    metric = raw.get("metric", "elementwise")
    if metric not in ("elementwise", "normwise"):
        raise fail("tolerance.metric", f"{show(metric)} must be elementwise (every element within "
                                       "atol + rtol * |ref|) or normwise (max|out - "
                                       "ref| <= rtol * max|ref|)")
    if metric == "normwise" and "atol" in raw:
        raise fail("tolerance.atol",
                   "the normwise metric has no atol; leave it out or use metric: elementwise")
    if metric == "normwise" and "rtol" not in raw:
        raise fail("tolerance.rtol",
                   "the normwise metric needs an rtol, e.g. {metric: normwise, rtol: 1e-5}")
    if "scale" in raw and metric == "normwise":
        raise fail("tolerance.scale",
                   "the normwise metric has no scale; leave it out or use metric: elementwise")
    return Tolerance(rtol=_tolerance_value(raw["rtol"], "tolerance.rtol", fail, check_expr)
                     if "rtol" in raw else None,
                     atol=_tolerance_value(raw["atol"], "tolerance.atol", fail, check_expr)
                     if "atol" in raw else None,
                     metric=metric, scale=_load_scale(raw.get("scale"), args, known_sizes, fail))


def _load_scale(raw: object, args: tuple[Arg, ...], known_sizes: set[str],
                fail: Fail) -> tuple[tuple[str, str], ...]:
    """``scale: {C: "abs(A) @ abs(B)"}``: per output, an expression of the inputs, sizes and scalars
    in the reference vocabulary, with the output's shape (or one that broadcasts to it)."""
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        raise fail("tolerance.scale",
                   "must map outputs to expressions, e.g. {C: \"abs(A) @ abs(B)\"}: the size of "
                   "the terms each element sums, which rtol multiplies in place of |ref|")
    outputs = output_names(args)
    known = input_names(args) | known_sizes
    out = []
    for key, expr in raw.items():
        fld = f"tolerance.scale.{key}"
        _an_output(key, outputs, fld, fail)
        if not isinstance(expr, str):
            raise fail(fld,
                       f"{show(expr)} must be an expression of the inputs, e.g. \"abs(A) @ abs(B)\"")
        out.append((str(key), _vocabulary_expr(expr, known, fld, fail)))
    return tuple(out)


def _an_output(key: object, outputs: set[str], fld: str, fail: Fail) -> None:
    """A key of ``reference:`` or ``tolerance.scale:`` names an out or inout buffer."""
    if key not in outputs:
        raise fail(fld, f"'{key}' is not an out or inout buffer (outputs: "
                        f"{', '.join(sorted(outputs)) or 'none'})")


def _vocabulary_expr(expr: object, known: set[str], fld: str, fail: Fail) -> str:
    """An expression of the reference vocabulary over ``known`` names, checked now (not
    evaluated)."""
    try:
        used = reference.names(expr)
    except ReferenceExprError as exc:
        raise fail(fld, str(exc)) from None
    unknown = sorted(used - known)
    if unknown:
        raise fail(fld, f"unknown name '{unknown[0]}' (inputs: {', '.join(sorted(known))})")
    return str(expr)


def _tolerance_value(raw: object, fld: str, fail: Fail, check_expr: CheckExpr) -> str:
    """A number, or a size expression checked now and worked out at each size."""
    is_atol = fld.endswith("atol")
    what = ("an absolute error of 0 or more, e.g. 1e-7" if is_atol
            else "a relative error between 0 and 1, e.g. 1e-5")
    if isinstance(raw, str):
        try:
            raw = float(raw)
        except ValueError:
            return check_expr(raw, fld)
    try:  # an integer too large for a float (1e400 written out) is refused here, not at each size
        value = float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else None
    except OverflowError:
        value = None
    if value is None or not 0 <= value < (float("inf") if is_atol else 1):
        raise fail(fld, f"{show(raw)} must be {what}, or a size expression such as 1e-7 * sqrt(K)")
    return repr(value)


def load_checks(raw: object, sizes: set[str], args: tuple[Arg, ...],
                 fail: Fail) -> tuple[Check, ...]:
    if not isinstance(raw, list):
        raise fail("checks",
                   "must be a list of size sets to verify, e.g. [{M: 127, N: 131, K: 97}]")
    inputs = {a.name: a for a in args if isinstance(a, BufferArg) and a.role == "in"}
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not item:
            raise fail(f"checks[{i}]", "must be a mapping of sizes (and fill: {INPUT: RULE})")
        fills: list[tuple[str, Fill]] = []
        for key, value in item.items():
            if key == "fill":
                if not isinstance(value, dict) or not value:
                    raise fail(f"checks[{i}].fill",
                               "must map input buffers to fill rules, e.g. {x: \"normal(0, 3)\"}")
                for buf, rule in value.items():
                    if buf not in inputs:
                        raise fail(f"checks[{i}].fill.{buf}",
                                   f"not an input buffer (inputs: {', '.join(inputs) or 'none'})")
                    fills.append((str(buf),
                                  fill_of(rule, f"checks[{i}].fill.{buf}", inputs[buf].dtype,
                                          fail)))
                continue
            if key not in sizes:
                raise fail(f"checks[{i}].{key}",
                           f"unknown size (known: {', '.join(sorted(sizes))}; or fill)")
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise fail(f"checks[{i}].{key}", f"{show(value)} must be a positive whole number")
        out.append(Check(tuple((k, v) for k, v in item.items() if k != "fill"), tuple(fills)))
    return tuple(out)
