import re
from fractions import Fraction

import pytest

from kprof.errors import SizeExprError
from kprof.spec import sizeexpr


@pytest.mark.parametrize(
    "expr, env, expected",
    [
        ("ceil(N / 32)", {"N": 100}, 4),
        ("ceil(N / 32)", {"N": 96}, 3),
        ("floor(N / 32)", {"N": 100}, 3),
        ("N // 32", {"N": 100}, 3),
        ("N % 32", {"N": 100}, 4),
        ("cdiv(N, 256)", {"N": 257}, 2),
        ("round_up(N, 128)", {"N": 129}, 256),
        ("min(ceil(N / 256), 1048576)", {"N": 2**40}, 1048576),
        ("max(1, N - 5)", {"N": 3}, 1),
        ("2 * M * N * K", {"M": 4096, "N": 4096, "K": 4096}, 2 * 4096**3),
        ("4 * (M * K + K * N + M * N)", {"M": 127, "N": 131, "K": 97},
         4 * (127 * 97 + 97 * 131 + 127 * 131)),
        ("2 ** 20", {}, 1 << 20),
        ("-N + 2 * N", {"N": 7}, 7),
        (64, {}, 64),
        ("(BM / TM) * (BN / TN)", {"BM": 128, "TM": 8, "BN": 128, "TN": 8}, 256),
        ("le(C, 1024)", {"C": 1024}, 1),
        ("le(C, 1024)", {"C": 1025}, 0),
        ("where(le(C, 1024), 256, cdiv(C, 32))", {"C": 300}, 256),
        ("where(le(C, 1024), 256, cdiv(C, 32))", {"C": 4096}, 128),
        ("where(W * le(C, 1024), cdiv(R, W), R)", {"W": 0, "C": 8, "R": 37}, 37),
        # the branch not taken is not evaluated
        ("where(C - C, R / (C - C), R)", {"C": 3, "R": 5}, 5),
    ],
)
def test_evaluates(expr, env, expected):
    assert sizeexpr.evaluate_int(expr, env) == expected


def test_exact_where_float_would_round():
    # (2**53 + 1) / 1 is not representable as a double; Fraction keeps it exact.
    n = 2**53 + 1
    assert sizeexpr.evaluate_int("ceil(N / 1)", {"N": n}) == n
    assert sizeexpr.evaluate("N / 3", {"N": 10}) == Fraction(10, 3)


def test_float_literals_for_scalars():
    assert float(sizeexpr.evaluate("1e-6", {})) == pytest.approx(1e-6)


@pytest.mark.parametrize(
    "expr, message",
    [
        ("Q + 1", "unknown size 'Q'"),
        ("N.__class__", "'Attribute' is not allowed"),
        ("__import__('os')", "cannot call __import__"),
        ("__import__('os').system('true')", "'Attribute' is not allowed"),
        ("open('/etc/passwd')", "cannot call open"),
        ("N[0]", "'Subscript' is not allowed"),
        ("(lambda: 1)()", "cannot call an expression"),
        ("'abc'", "only numbers are allowed"),
        ("True", "only numbers are allowed"),
        ("ceil(N / 2, 3)", "takes 1 argument"),
        ("ceil(x=N)", "no keyword"),
        ("min(N)", "at least 2"),
        ("where(N, 1)", "takes 3 argument"),
        ("le(N)", "takes 2 argument"),
        ("N if N else 1", "'IfExp' is not allowed"),
        ("N << 2", "'LShift' is not allowed"),
        ("N == 2", "'Compare' is not allowed"),
        ("[N]", "'List' is not allowed"),
        ("9 ** 9 ** 9", "exponent must be"),
        ("N / 0", "division by zero"),
        ("min(ceil(N / 256)", "quote an expression that has a comma"),
        ("N" + " + N" * 200, "longer than"),
        ("2 ** 64 * 2 ** 64", "too large"),
    ],
)
def test_refuses(expr, message):
    with pytest.raises(SizeExprError, match=re.escape(message)):
        sizeexpr.evaluate(expr, {"N": 5})


def test_whole_number_required():
    with pytest.raises(SizeExprError, match="not a whole number: use ceil"):
        sizeexpr.evaluate_int("N / 32", {"N": 100})


def test_names():
    assert sizeexpr.names("ceil(N / TILE) + max(M, 2)") == {"N", "TILE", "M"}


@pytest.mark.parametrize("expr", ["9 ** 9 ** 9 ** 9", "N * 2 ** 100", "N ** -1", "N ** (1 / 2)"])
def test_a_constant_exponent_out_of_range_is_refused_when_the_expression_is_read(expr):
    """``work.bytes: 9**9**9**9`` loaded, built, and failed only when a command worked it out at a
    size."""
    with pytest.raises(SizeExprError, match="exponent must be a whole number from 0 to 64"):
        sizeexpr.names(expr)


def test_an_exponent_that_names_a_size_is_judged_at_the_size():
    assert sizeexpr.names("2 ** N") == {"N"}
