"""The reference vocabulary: what a spec's ``reference:`` expressions may say.

A spec maps each output buffer to an expression over the input buffers, the scalar arguments
and the sizes, for example ``C: A @ B``, ``y: rmsnorm(x, w, eps)`` or ``y: 2 * x[4:]`` (slices
and whole-number indices only). Expressions are parsed
with :mod:`ast` and checked against a whitelist when the spec is loaded (no NumPy needed); they
are evaluated in float64 by :func:`evaluate`, which walks the tree itself: nothing from a spec
ever reaches ``eval``. The functions are plain NumPy code kept in this module, so adding a word
to the vocabulary is adding one entry to :data:`FUNCTIONS`.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from typing import Any

from kprof.errors import ReferenceExprError
from kprof.spec import safeexpr

MAX_LEN = 1000


def _np() -> Any:
    import numpy

    return numpy


# elements of a row-wise function's block of rows (float64 temporaries of 32 MiB)
ROWS_AT_ONCE = 1 << 22


def _by_rows(fn: Callable[..., object], x: Any, axis: int, *rest: Any) -> Any:
    """``fn(x, *rest)`` for a function of each row along the last axis alone (a softmax, an
    RMSNorm): on a large ``x``, blocks of rows on several threads (NumPy releases the GIL), each
    with the rows of any argument of ``x``'s shape and the rest as given (a weight broadcast over
    rows). Each row is computed as in the whole array (its reduction along the contiguous last axis
    is the same), so the result is the same to the bit; the float64 temporaries are a block's, not
    the whole array's."""
    np = _np()
    x = np.asarray(x)
    if x.ndim < 2 or axis not in (-1, x.ndim - 1) or x.size < 2 * ROWS_AT_ONCE or not x.shape[-1]:
        return fn(x, *rest)
    from concurrent.futures import ThreadPoolExecutor

    from kprof.parallel import scan_threads

    rows = x.reshape(-1, x.shape[-1])
    others = [np.asarray(r).reshape(-1, x.shape[-1]) if np.shape(r) == x.shape else r for r in rest]
    if any(np.ndim(r) == x.ndim and np.shape(r)[0] not in (1,) and np.shape(r) != x.shape
           for r in rest):
        return fn(x, *rest)  # an argument that is neither x's shape nor broadcast over its rows
    out = np.empty(rows.shape,
                   dtype=np.result_type(rows, *[np.asarray(r) for r in rest], np.float64))
    step = max(1, ROWS_AT_ONCE // x.shape[-1])

    def block(start: int) -> None:
        part = [r[start:start + step] if isinstance(r, np.ndarray) and r.shape == rows.shape else r
                for r in others]
        out[start:start + step] = fn(rows[start:start + step], *part)

    starts = range(0, rows.shape[0], step)
    with ThreadPoolExecutor(scan_threads(len(starts))) as pool:
        list(pool.map(block, starts))
    return out.reshape(x.shape)


def _softmax_rows(x: object) -> Any:
    np = _np()
    shifted = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=-1, keepdims=True)


def _softmax(x: object, axis: int = -1) -> Any:
    np = _np()
    if axis in (-1, np.ndim(x) - 1):
        return _by_rows(_softmax_rows, x, -1)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


def _rmsnorm_rows(x: Any, w: Any, eps: Any) -> Any:
    np = _np()
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def _rmsnorm(x: Any, w: object, eps: object, axis: int = -1) -> object:
    np = _np()
    if axis in (-1, np.ndim(x) - 1):
        return _by_rows(_rmsnorm_rows, x, -1, w, eps)
    return x / np.sqrt(np.mean(x * x, axis=axis, keepdims=True) + eps) * w


def _shift(x: Any, k: Any) -> object:
    """y[..., i] = x[..., clip(i + k, 0, n - 1)]: a neighbour along the last axis, edges clamped."""
    np = _np()
    n = x.shape[-1]
    idx = np.clip(np.arange(n) + int(k), 0, n - 1)
    return x[..., idx]


def _pad(x: Any, before: Any, after: Any) -> object:
    """Zeros added before and after along the last axis."""
    np = _np()
    width = [(0, 0)] * (x.ndim - 1) + [(int(before), int(after))]
    return np.pad(x, width)


def _cumsum(x: Any, axis: int = -1, exclusive: bool = False) -> object:
    """Inclusive prefix sums along ``axis``; ``exclusive=True``: each element's sum of those before
    it."""
    inclusive = _np().cumsum(x, axis=axis)
    return inclusive - x if exclusive else inclusive


def _bincount(x: object, minlength: int = 0) -> object:
    """Counts of each value 0, 1, ... in ``x`` (non-negative integers), at least ``minlength`` of
    them."""
    np = _np()
    return np.bincount(np.asarray(x).astype(np.int64).ravel(), minlength=int(minlength))


def _histogram(x: object, bins: Any, lo: Any, hi: Any) -> object:
    """Counts in ``bins`` equal bins over [lo, hi) (numpy.histogram: the last bin also takes hi)."""
    return _np().histogram(_np().asarray(x).ravel(), bins=int(bins), range=(float(lo), float(hi)))[0]


def _take(x: Any, idx: object, axis: int = 0) -> object:
    """A gather: ``x``'s entries at ``idx`` along ``axis`` (numpy.take)."""
    np = _np()
    return np.take(x, np.asarray(idx).astype(np.int64), axis=int(axis))


def _arg(name: str) -> Callable[..., object]:
    def fn(x: object, axis: object = None) -> object:
        return getattr(_np(), name)(x, axis=axis)

    fn.__name__ = name
    return fn


def _topk(x: object, k: Any, axis: int = -1) -> object:
    """The ``k`` largest values along ``axis``, largest first."""
    np = _np()
    return np.flip(np.sort(x, axis=axis), axis=axis).take(np.arange(int(k)), axis=axis)


def _reduction(name: str) -> Callable[..., object]:
    def fn(x: Any, axis: object = None, keepdims: bool = False) -> object:
        return getattr(_np(), name)(x, axis=axis, keepdims=keepdims)

    fn.__name__ = name
    return fn


def _elementwise(name: str) -> Callable[..., object]:
    def fn(*args: object) -> object:
        return getattr(_np(), name)(*args)

    fn.__name__ = name
    return fn


#: name -> (function, allowed keyword names, number of positional arguments (min, max))
FUNCTIONS: dict[str, tuple[Callable[..., object], frozenset[str], tuple[int, int]]] = {
    "sum": (_reduction("sum"), frozenset({"axis", "keepdims"}), (1, 1)),
    "mean": (_reduction("mean"), frozenset({"axis", "keepdims"}), (1, 1)),
    "max": (_reduction("max"), frozenset({"axis", "keepdims"}), (1, 1)),
    "min": (_reduction("min"), frozenset({"axis", "keepdims"}), (1, 1)),
    "exp": (_elementwise("exp"), frozenset(), (1, 1)),
    "log": (_elementwise("log"), frozenset(), (1, 1)),
    "sqrt": (_elementwise("sqrt"), frozenset(), (1, 1)),
    "abs": (_elementwise("abs"), frozenset(), (1, 1)),
    "tanh": (_elementwise("tanh"), frozenset(), (1, 1)),
    "maximum": (_elementwise("maximum"), frozenset(), (2, 2)),
    "minimum": (_elementwise("minimum"), frozenset(), (2, 2)),
    "rsqrt": (lambda x: 1.0 / _np().sqrt(x), frozenset(), (1, 1)),
    "relu": (lambda x: _np().maximum(x, 0.0), frozenset(), (1, 1)),
    "sigmoid": (lambda x: 1.0 / (1.0 + _np().exp(-x)), frozenset(), (1, 1)),
    "transpose": (lambda x: _np().swapaxes(x, -1, -2), frozenset(), (1, 1)),
    "matmul": (lambda a, b: a @ b, frozenset(), (2, 2)),
    "softmax": (_softmax, frozenset({"axis"}), (1, 1)),
    "rmsnorm": (_rmsnorm, frozenset({"axis"}), (3, 3)),
    "shift": (_shift, frozenset(), (2, 2)),
    "pad": (_pad, frozenset(), (3, 3)),
    # scans, counts, gathers, selections: exact on integers (integer inputs arrive as int64)
    "cumsum": (_cumsum, frozenset({"axis", "exclusive"}), (1, 1)),
    "bincount": (_bincount, frozenset({"minlength"}), (1, 1)),
    "histogram": (_histogram, frozenset(), (4, 4)),
    "take": (_take, frozenset({"axis"}), (2, 2)),
    "where": (_elementwise("where"), frozenset(), (3, 3)),
    "clip": (_elementwise("clip"), frozenset(), (3, 3)),
    "argmax": (_arg("argmax"), frozenset({"axis"}), (1, 1)),
    "argmin": (_arg("argmin"), frozenset({"axis"}), (1, 1)),
    "topk": (_topk, frozenset({"axis"}), (2, 2)),
}

_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.MatMult)


def parse(text: object) -> ast.Expression:
    """Parse and check a reference expression against the vocabulary."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = repr(text)
    if not isinstance(text, str):
        raise ReferenceExprError(f"expected an expression, got {type(text).__name__}")
    if len(text) > MAX_LEN:
        raise ReferenceExprError(f"expression longer than {MAX_LEN} characters")
    try:
        tree = safeexpr.parse_bounded(text.strip(), ReferenceExprError)
    except SyntaxError as exc:
        hint = ""
        if text.count("(") != text.count(")") or text.count("[") != text.count("]"):
            hint = " (inside a YAML {a: b} mapping, quote an expression that has a comma or brackets)"
        raise ReferenceExprError(f"cannot parse {text!r}: {exc.msg}{hint}") from None
    for node in ast.walk(tree):
        _check(node)
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            _check_constant_exponent(node.right)
    return tree


def _check_constant_exponent(node: ast.AST) -> None:
    """An exponent made of numbers alone is worked out when the spec is loaded, under the runner's
    rule (at most 64), so ``2**2**2**2**2**2`` is refused by every command, not in the child."""
    value = _fold(node)
    if value is not None and abs(value) > MAX_EXPONENT:
        raise ReferenceExprError(f"an exponent above {MAX_EXPONENT} is not allowed in a reference "
                                 "expression")


def _fold(node: ast.AST) -> float | None:
    """The value of a subtree of numbers and + - * / ** (each power's exponent at most 64), or None
    when it names anything or calls a function."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        try:
            return float(node.value)
        # an integer past float64's range: as large as any float, so any power of it overflows
        except OverflowError:
            return math.inf if node.value > 0 else -math.inf
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _fold(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if not isinstance(node, ast.BinOp) or not isinstance(node.op,
                                                         (ast.Add, ast.Sub, ast.Mult, ast.Div,
                                                          ast.Pow)):
        return None
    a, b = _fold(node.left), _fold(node.right)
    if a is None or b is None:
        return None
    if isinstance(node.op, ast.Pow) and abs(b) > MAX_EXPONENT:
        raise ReferenceExprError(f"an exponent above {MAX_EXPONENT} is not allowed in a reference "
                                 "expression")
    try:
        value = _FOLD[type(node.op)](a, b)
    except (ZeroDivisionError, OverflowError):
        return None  # the runner reports it with the inputs in hand (inf, nan), as NumPy would
    return None if isinstance(value, complex) else float(value)


_FOLD: dict[type[ast.operator], Callable[[float, float], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a**b,
}


def _check(node: ast.AST) -> None:
    safeexpr.check_node(
        node,
        allowed=safeexpr.ARITHMETIC_NODES + (ast.keyword, ast.Tuple, ast.Subscript, ast.Slice,
                                             ast.Compare,
                                             ast.Gt, ast.GtE, ast.Lt, ast.LtE, ast.Eq, ast.NotEq),
        binops=_BINOPS,
        functions=FUNCTIONS,
        error=ReferenceExprError,
        where="a reference expression",
        attribute_hint="sum(x), not x.sum()",
        unknown_call=lambda what: f"unknown function {what}: the vocabulary is "
                                  f"{', '.join(sorted(FUNCTIONS))}",
        booleans=True,  # keepdims=True
    )
    if isinstance(node, ast.Call):
        name = _func_name(node)
        _, kws, (lo, hi) = FUNCTIONS[name]
        if not lo <= len(node.args) <= hi:
            raise ReferenceExprError(f"{name}() takes {lo} positional argument(s), got "
                                     f"{len(node.args)}")
        for kw in node.keywords:
            if kw.arg not in kws:
                raise ReferenceExprError(f"{name}() takes no keyword '{kw.arg}'")


def _func_name(node: ast.Call) -> str:
    if not isinstance(node.func, ast.Name):
        raise ReferenceExprError("only the vocabulary's functions can be called, by name")
    return node.func.id


MAX_EXPONENT = 64
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
}


def _check_exponent(b: object) -> None:
    """A scalar exponent at most 64, as in size arithmetic: ``2**2**2**2**2**2`` must not hang the
    runner."""
    import numpy as np

    exponent = np.asarray(b)
    if exponent.size and np.issubdtype(exponent.dtype, np.number) and float(np.max(np.abs(exponent))) > MAX_EXPONENT:
        raise ReferenceExprError(f"an exponent above {MAX_EXPONENT} is not allowed in a reference "
                                 "expression")


def names(text: object) -> set[str]:
    """The buffer, scalar and size names an expression uses."""
    tree = parse(text)
    funcs = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in funcs}


def evaluate(text: str, env: Mapping[str, object]) -> Any:
    """Evaluate in float64 over ``env`` (arrays already float64, scalars as numbers)."""
    return _eval(parse(text).body, env)


def _index(value: object) -> Any:
    """Subscripts take whole numbers and slices only (no arrays: no fancy indexing from a spec)."""
    if isinstance(value, slice):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ReferenceExprError("an index must be a whole number or a slice, not "
                             f"{type(value).__name__}")


def _eval(node: ast.AST, env: Mapping[str, object]) -> Any:
    if isinstance(node, ast.Constant):
        return float(node.value) if isinstance(node.value, float) else node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise ReferenceExprError(f"unknown name '{node.id}'")
        return env[node.id]
    if isinstance(node, ast.Tuple):
        return tuple(_eval(e, env) for e in node.elts)
    if isinstance(node, ast.Compare):  # x > 0 (for where); a < b < c compares pairwise
        left, result = _eval(node.left, env), True
        for cmp, right_node in zip(node.ops, node.comparators):
            right = _eval(right_node, env)
            result = result & _COMPARE[type(cmp)](left, right)
            left = right
        return result
    if isinstance(node, ast.Slice):
        parts = [None if p is None else _index(_eval(p, env))
                 for p in (node.lower, node.upper, node.step)]
        return slice(*parts)
    if isinstance(node, ast.Subscript):
        index = _eval(node.slice, env)
        index = tuple(_index(i) for i in index) if isinstance(index, tuple) else _index(index)
        return _eval(node.value, env)[index]
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, env)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, env), _eval(node.right, env)
        op = node.op
        if isinstance(op, ast.Add):
            return a + b
        if isinstance(op, ast.Sub):
            return a - b
        if isinstance(op, ast.Mult):
            return a * b
        if isinstance(op, ast.Div):
            return a / b
        if isinstance(op, ast.Pow):
            _check_exponent(b)
            return a**b
        return a @ b
    if isinstance(node, ast.Call):
        fn, _, _ = FUNCTIONS[_func_name(node)]
        args = [_eval(a, env) for a in node.args]
        kwargs = {str(kw.arg): _eval(kw.value, env) for kw in node.keywords}
        return fn(*args, **kwargs)
    raise ReferenceExprError(f"'{type(node).__name__}' is not allowed in a reference expression")
