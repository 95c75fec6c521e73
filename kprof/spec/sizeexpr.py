"""Size arithmetic for specs: ``ceil(N / 32)``, ``2 * M * N * K``, ``min(ceil(N / 256), 4096)``.

Expressions are parsed with :mod:`ast` and walked against a whitelist: numbers, size names,
``+ - * / // % **``, unary minus, and the functions ``ceil``, ``floor``, ``min``, ``max``,
``cdiv``, ``round_up``, ``sqrt``, ``le`` and ``where`` (``where(le(C, 1024), 256, C)``: a launch
that depends on a size, without comparison syntax). Nothing else is evaluated: no attribute access,
no subscripts, no calls to anything outside the list, no keywords. Arithmetic is exact
(:class:`fractions.Fraction`) so ``ceil(N / 32)`` never suffers float rounding, and large products
stay exact; ``sqrt`` alone is not (float precision), and is meant for tolerances that grow like
``sqrt(K)``.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from fractions import Fraction

from kprof.errors import SizeExprError
from kprof.spec import safeexpr

MAX_LEN = 400
MAX_EXPONENT = 64
MAX_MAGNITUDE = 1 << 80  # far beyond any byte count, small enough to stop runaway arithmetic
# of a value's numerator or denominator: (1/3)**64 is 102 bits; a tower of powers stops here
MAX_BITS = 256


def _ceil(x: Fraction) -> Fraction:
    return Fraction(math.ceil(x))


def _floor(x: Fraction) -> Fraction:
    return Fraction(math.floor(x))


def _cdiv(a: Fraction, b: Fraction) -> Fraction:
    if b == 0:
        raise SizeExprError("division by zero in cdiv()")
    return Fraction(math.ceil(a / b))


def _sqrt(x: Fraction) -> Fraction:
    """The one inexact function (float precision): for tolerances that grow like sqrt(K)."""
    if x < 0:
        raise SizeExprError("sqrt() of a negative number")
    return Fraction(math.sqrt(x))


def _round_up(a: Fraction, b: Fraction) -> Fraction:
    if b == 0:
        raise SizeExprError("round_up() to a multiple of zero")
    return Fraction(math.ceil(a / b)) * b


def _le(a: Fraction, b: Fraction) -> Fraction:
    """1 where a <= b, else 0: a condition for where(), or a factor."""
    return Fraction(1 if a <= b else 0)


def _where(cond: Fraction, a: Callable[[], Fraction], b: Callable[[], Fraction]) -> Fraction:
    """a where cond is not 0, else b; the branches come unevaluated, and only the one taken is:
    where(le(C, 0), 1, N / C) divides by no zero."""
    return a() if cond != 0 else b()


_FUNCS: dict[str, tuple[Callable[..., Fraction], int | None]] = {
    "ceil": (_ceil, 1),
    "floor": (_floor, 1),
    "cdiv": (_cdiv, 2),
    "round_up": (_round_up, 2),
    "sqrt": (_sqrt, 1),
    "le": (_le, 2),
    "where": (_where, 3),
    "min": (min, None),
    "max": (max, None),
}

_BINOPS: dict[type[ast.operator], Callable[[Fraction, Fraction], Fraction]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
}

FUNCTION_NAMES = tuple(sorted(_FUNCS))


def parse(text: object) -> ast.Expression:
    """Parse and check an expression; raises :class:`SizeExprError` for anything not allowed."""
    if isinstance(text, bool):
        raise SizeExprError(f"expected a number or size expression, got {text!r}")
    if isinstance(text, (int, float)):
        text = repr(text)
    if not isinstance(text, str):
        raise SizeExprError(f"expected a number or size expression, got {type(text).__name__}")
    if len(text) > MAX_LEN:
        raise SizeExprError(f"expression longer than {MAX_LEN} characters")
    try:
        tree = safeexpr.parse_bounded(text.strip(), SizeExprError)
    except SyntaxError as exc:
        hint = ""
        if text.count("(") != text.count(")"):
            hint = " (inside a YAML [a, b] list, quote an expression that has a comma: \"min(x, y)\")"
        raise SizeExprError(f"cannot parse {text!r}: {exc.msg}{hint}") from None
    for node in ast.walk(tree):
        _check_node(node)
    return tree


def _check_node(node: ast.AST) -> None:
    safeexpr.check_node(
        node,
        allowed=safeexpr.ARITHMETIC_NODES,
        binops=(ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow),
        functions=_FUNCS,
        error=SizeExprError,
        where="size arithmetic",
        attribute_hint="ceil(N / 32)",
        unknown_call=lambda what: f"cannot call {what}: only {', '.join(FUNCTION_NAMES)} are "
                                  "allowed",
    )
    if isinstance(node, ast.Call):
        name = _func_name(node)
        if node.keywords:
            raise SizeExprError(f"{name}() takes no keyword arguments")
        _, arity = _FUNCS[name]
        if arity is not None and len(node.args) != arity:
            raise SizeExprError(f"{name}() takes {arity} argument(s), got {len(node.args)}")
        if arity is None and len(node.args) < 2:
            raise SizeExprError(f"{name}() needs at least 2 arguments")


def _func_name(node: ast.Call) -> str:
    """The called name (the whitelist walk admits only plain names of known functions)."""
    if not isinstance(node.func, ast.Name):
        raise SizeExprError("only plain function names can be called in size arithmetic")
    return node.func.id


def names(text: object) -> set[str]:
    """The size names an expression refers to (function names excluded)."""
    tree = parse(text)
    # a constant exponent is judged now, at load time, not at the first size
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and \
                not any(isinstance(m, ast.Name) for m in ast.walk(node.right)):
            exponent = _eval(node.right, {})
            if exponent.denominator != 1 or not 0 <= exponent <= MAX_EXPONENT:
                raise SizeExprError(f"exponent must be a whole number from 0 to {MAX_EXPONENT}")
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called}


def evaluate(text: str | int | float, env: Mapping[str, int | Fraction]) -> Fraction:
    """Evaluate exactly. ``env`` maps size names to values."""
    tree = parse(text)
    return _eval(tree.body, env)


def evaluate_int(text: str | int | float, env: Mapping[str, int | Fraction]) -> int:
    """Evaluate and insist on a whole number (a grid, a block, a shape)."""
    value = evaluate(text, env)
    if value.denominator != 1:
        raise SizeExprError(
            f"{text!r} = {float(value):g} is not a whole number: use ceil(), floor() or //"
        )
    return int(value)


def _eval(node: ast.AST, env: Mapping[str, int | Fraction]) -> Fraction:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, float) and not math.isfinite(value):
            raise SizeExprError(f"{value!r} is not a finite number (a literal like 1e9999 "
                                "overflows)")
        number = Fraction(value) if isinstance(value, int) else Fraction(str(value))
        if abs(number) > MAX_MAGNITUDE:
            raise SizeExprError("value too large for size arithmetic")
        return number
    if isinstance(node, ast.Name):
        if node.id not in env:
            known = ", ".join(sorted(env)) or "none"
            raise SizeExprError(f"unknown size '{node.id}' (known: {known})")
        return Fraction(env[node.id])
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, env)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp):
        left = _eval(node.left, env)
        right = _eval(node.right, env)
        result = _binop(node.op, left, right)
        if abs(result) > MAX_MAGNITUDE:
            raise SizeExprError("value too large for size arithmetic")
        return _bounded(result)
    if isinstance(node, ast.Call):
        name = _func_name(node)
        if name == "where":
            cond, if_true, if_false = node.args
            return _where(_eval(cond, env), lambda: _eval(if_true, env),
                          lambda: _eval(if_false, env))
        fn, _ = _FUNCS[name]
        args = [_eval(a, env) for a in node.args]
        return Fraction(fn(*args))  # min and max of Fractions are Fractions
    raise SizeExprError(f"'{type(node).__name__}' is not allowed in size arithmetic")


def _binop(op: ast.operator, a: Fraction, b: Fraction) -> Fraction:
    if type(op) in _BINOPS:
        return _BINOPS[type(op)](a, b)
    if isinstance(op, (ast.Div, ast.FloorDiv, ast.Mod)) and b == 0:
        raise SizeExprError("division by zero")
    if isinstance(op, ast.Div):
        return a / b
    if isinstance(op, ast.FloorDiv):
        return Fraction(a // b)
    if isinstance(op, ast.Mod):
        return a % b
    # Pow: whole, small exponents only, so '9 ** 9 ** 9' cannot hang the loader.
    if b.denominator != 1 or not 0 <= b <= MAX_EXPONENT:
        raise SizeExprError(f"exponent must be a whole number from 0 to {MAX_EXPONENT}")
    # bounded before it is computed: the result's bits are at most the base's times the exponent
    if max(a.numerator.bit_length(), a.denominator.bit_length()) * int(b) > 4 * MAX_BITS:
        raise SizeExprError(f"a power with more than {4 * MAX_BITS} bits is too large (or too "
                            "fine) for size arithmetic")
    return a ** int(b)


def _bounded(x: Fraction) -> Fraction:
    """``x``, or one line where its numerator or denominator outgrows :data:`MAX_BITS` (a tower of
    powers of fractions would otherwise take minutes: every step squares the digits)."""
    if max(x.numerator.bit_length(), x.denominator.bit_length()) > MAX_BITS:
        raise SizeExprError(f"a value with more than {MAX_BITS} bits of precision is too fine for "
                            "size arithmetic")
    return x
