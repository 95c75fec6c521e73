"""The public API's arguments checked against their annotations before the function runs
(:func:`checked`).

A caller from a notebook can pass anything: ``kprof.occupancy_of(3)`` or ``kprof.run_bench(["a",
1])`` reached kprof's insides and ended in an ``AttributeError``. Each API function's annotations
are read once (as the strings ``from __future__ import annotations`` leaves, so nothing is imported
to read them) and each argument is held to them: a ``TypeError`` that names the function, the
argument, what it must be and what it was. A float must be a number (NaN and infinity are refused
where a float is asked for). A type kprof does not know by name (a ``Sweep``, a ``Test``) is let
through to the function, which takes it as it always did.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

# an annotation's name -> the check of one value, for the names the API's annotations use
_SIMPLE: dict[str, Callable[[object], bool]] = {
    "str": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and _finite(v),
    "bool": lambda v: isinstance(v, bool),
    "None": lambda v: v is None,
    "Path": lambda v: isinstance(v, os.PathLike),
    "Any": lambda v: True,
    "object": lambda v: True,
}
def _finite(value: float) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int past float64's range
        return False


_WORDS = {"str": "a str", "int": "an int", "float": "a finite number", "bool": "True or False",
          "None": "None", "Path": "a path"}


def _split(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` where no bracket is open."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i].strip())
            start = i + len(sep)
    parts.append(text[start:].strip())
    return parts


def matches(value: object, annotation: str) -> bool | None:
    """Whether ``value`` is what ``annotation`` (a string such as ``dict[str, int] | None``) says;
    None where the annotation names a type this module does not know (the function decides)."""
    verdicts = [_one(value, alt) for alt in _split(annotation, "|")]
    if any(v is True for v in verdicts):
        return True
    return None if any(v is None for v in verdicts) else False


def _one(value: object, annotation: str) -> bool | None:
    base, _, rest = annotation.partition("[")
    base = base.strip().split(".")[-1]
    inner = rest[:-1] if rest.endswith("]") else ""
    if base in _SIMPLE and not inner:
        return _SIMPLE[base](value)
    if base in ("dict", "Mapping"):
        if not isinstance(value, dict):
            return False
        key, _, val = inner.partition(",")
        checks = [(matches(k, key.strip()) if key else True,
                   matches(v, val.strip()) if val else True)
                  for k, v in value.items()]
        return None if any(None in c for c in checks) else all(all(c) for c in checks)
    if base in ("list", "Sequence", "tuple", "Iterable"):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            return False
        elements = _split(inner, ",") if inner else []
        # tuple[int, str]: each in its place
        if base == "tuple" and elements and "..." not in elements:
            if len(elements) != len(value):
                return False
            verdicts = [matches(v, e) for v, e in zip(value, elements)]
            return None if None in verdicts else all(verdicts)
        if not elements:
            return True
        verdicts = [matches(v, elements[0]) for v in value]
        return None if None in verdicts else all(verdicts)
    if base == "Callable":
        return callable(value)
    if base == "Literal":
        return value in [lit.strip().strip("'\"") for lit in _split(inner, ",")]
    return _public_type(value, base)


def _public_type(value: object, name: str) -> bool | None:
    """A type of kprof's public surface (``Check``, ``Finding``, ...) by its name; None for any
    other name."""
    import importlib

    from kprof import _PUBLIC

    where = _PUBLIC.get(name)
    if where is None or not name[:1].isupper():
        return None
    kind = getattr(importlib.import_module(where), name)
    try:
        return isinstance(value, kind) if isinstance(kind, type) else None
    except TypeError:  # a protocol that cannot be checked at run time: the function decides
        return None


def _shown(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:40] + '...' if len(text) > 40 else text}"


def _wanted(annotation: str) -> str:
    return " or ".join(_WORDS.get(alt, alt) for alt in _split(annotation, "|"))


def checked(fn: F) -> F:
    """``fn`` with its arguments held to its annotations (a ``TypeError`` in one line where one is
    not), and an unknown keyword a ``TypeError`` as Python's own."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # a missing or unknown argument: Python's own TypeError
        bound = signature.bind(*args, **kwargs)
        for name, value in bound.arguments.items():
            annotation = signature.parameters[name].annotation
            if not isinstance(annotation, str) or signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
                continue
            if matches(value, annotation) is False:
                raise TypeError(f"kprof.{fn.__name__}(): {name} must be {_wanted(annotation)}, not "
                                f"{_shown(value)}")
        return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
