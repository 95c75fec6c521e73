"""The whitelist walk shared by size arithmetic and reference expressions.

Both parse with :mod:`ast` and refuse every node that is not plain arithmetic over names,
numbers and calls of named functions; each module adds its own functions and operators. Nothing
here evaluates anything.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection

ARITHMETIC_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Call,
                    ast.Load, ast.operator, ast.unaryop)


def check_node(
    node: ast.AST,
    *,
    allowed: tuple[type, ...],
    binops: tuple[type, ...],
    functions: Collection[str],
    error: type[Exception],
    where: str,
    attribute_hint: str,
    unknown_call: Callable[[str], str],
    booleans: bool = False,
) -> None:
    """Raise ``error`` for a node outside the whitelist; function signatures are the caller's to
    check."""
    if not isinstance(node, allowed):
        raise error(f"'{type(node).__name__}' is not allowed in {where}")
    if isinstance(node, ast.Constant) and (
            (isinstance(node.value, bool) and not booleans)
            or not isinstance(node.value, (int, float))):
        what = "numbers and True or False are" if booleans else "numbers are"
        raise error(f"only {what} allowed, not {node.value!r}")
    if isinstance(node, ast.BinOp) and not isinstance(node.op, binops):
        raise error(f"operator '{type(node.op).__name__}' is not allowed")
    if isinstance(node, ast.UnaryOp) and not isinstance(node.op, (ast.USub, ast.UAdd)):
        raise error(f"operator '{type(node.op).__name__}' is not allowed")
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute):
            raise error(f"'Attribute' is not allowed: call functions by name, e.g. {attribute_hint}")
        if not isinstance(node.func, ast.Name) or node.func.id not in functions:
            raise error(unknown_call(node.func.id if isinstance(node.func, ast.Name)
                                     else "an expression"))


# the deepest shipped expression nests under 10; the evaluators recurse once a level
MAX_DEPTH = 100


def parse_bounded(text: str, error: type[Exception]) -> ast.Expression:
    """``ast.parse`` in eval mode, with the nesting depth of the tree checked (iteratively) before
    any recursive walk: ``-`` repeated 999 times parses into 999 nested nodes, and the evaluators
    and CPython's own compiler recurse once a level. SyntaxError is the caller's to word."""
    try:
        text.encode("utf-8")
    # bytes that were not UTF-8 (a command line's), kept as surrogates by Python
    except UnicodeEncodeError:
        raise error("the expression holds bytes that are not UTF-8 text") from None
    try:
        tree = ast.parse(text, mode="eval")
    except (RecursionError, MemoryError):
        raise error(f"nested deeper than {MAX_DEPTH} levels") from None
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise error(f"nested deeper than {MAX_DEPTH} levels")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return tree
