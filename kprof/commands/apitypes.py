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
    try:
        text = repr(value)
    except ValueError:  # an int of more digits than Python prints
        return f"an int of {value.bit_length():,} bits" if isinstance(value, int) else type(value).__name__
    return f"{type(value).__name__} {text[:40] + '...' if len(text) > 40 else text}"


def _wanted(annotation: str) -> str:
    return " or ".join(_WORDS.get(alt, alt) for alt in _split(annotation, "|"))


def _between(low: float, high: float, what: str) -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        if value is None or not isinstance(value, (int, float)) or isinstance(value, bool):
            return None  # None where the annotation allows it; a wrong type is the type check's
        try:
            ok = low <= float(value) <= high
        except OverflowError:  # an int past float64's range
            ok = False
        return None if ok else f"must be {what}, not {_shown(value)}"
    return check


def _arch(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    from kprof.build.toolchain import check_arch
    from kprof.errors import KprofError

    try:
        check_arch(value)
    except KprofError as exc:
        return f"is not an architecture kprof builds for: {exc}"
    return None


@functools.lru_cache(maxsize=1)  # made once, at the first API call, not at every call
def _value_rules() -> dict[str, Callable[[object], str | None]]:
    """The values the CLI's options refuse, by the API's argument names: the same rules for a
    notebook as for the command line (a limit of 0, a 400-digit count that reached SQLite, an
    architecture with a newline, a negative or enormous shared memory)."""
    from kprof.inputs import MAX_COUNT, MAX_SECONDS, MIN_TIMEOUT

    seconds = _between(1e-9, MAX_SECONDS, f"a positive number of seconds, at most {MAX_SECONDS:.0f}")
    count = _between(1, MAX_COUNT, f"a whole number from 1 to {MAX_COUNT:,}")
    size = _between(0, MAX_COUNT, f"a whole number from 0 to {MAX_COUNT:,}")
    return {"timeout": _between(MIN_TIMEOUT, MAX_SECONDS, f"from {MIN_TIMEOUT:g} to {MAX_SECONDS:.0f} "
                                "seconds (a child takes about a second to start)"),
            "min_time": seconds, "max_time": seconds, "rel_stdev": _between(1e-9, 1.0, "a fraction in (0, 1]"),
            "jobs": count, "limit": count, "launch_count": count, "launch_skip": size, "padding": size,
            "seed": size, "dynamic_smem": size, "arch": _arch}


def _define(name: str, value: object) -> str | None:
    """A define given as a keyword (``kprof.load(NAME, BLOCK=128)``): a number or a word, never None
    (it would reach the compiler as ``-DBLOCK=None``)."""
    if value is None or isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return f"define {name} must be a number or a word (BLOCK=128), not {_shown(value)}"
    return None


def checked(fn: F) -> F:
    """``fn`` with its arguments held to its annotations (a ``TypeError`` in one line where one is
    not), then to the values the CLI's options allow (a :class:`~kprof.errors.UsageError` in the
    CLI's words), and an unknown keyword a ``TypeError`` as Python's own."""
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
        _check_values(fn.__name__, signature, bound.arguments)
        return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _check_values(name: str, signature: inspect.Signature, arguments: dict[str, Any]) -> None:
    from kprof.errors import UsageError

    rules = _value_rules()
    problems: list[str] = []
    for arg, value in arguments.items():
        if signature.parameters[arg].kind is inspect.Parameter.VAR_KEYWORD:
            problems += [p for k, v in value.items() if (p := _define(k, v))]
        elif arg in rules and (problem := rules[arg](value)):
            problems.append(f"{arg} {problem}")
    if problems:
        raise UsageError(f"kprof.{name}(): {problems[0]}")
