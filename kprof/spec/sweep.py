"""The one grammar of ``--size`` and ``--param``, for every command: pure.

An item is ``NAME=V1,V2,...``; names joined by commas move together (``M,N,K=1024,2048`` is two
square points), separate items give every combination. ``kprof run``, ``sanitize``, ``profile``
and ``occupancy`` take one value per name; ``kprof bench`` sweeps. Several items may follow one
option (``--size M=127 N=131 K=97``) or the option may repeat. Size values are size arithmetic
(``2**20``); parameter values are numbers or identifiers (they become ``-DNAME=VALUE``).

The old ``kprof run --size M=127,N=131`` (pairs joined by commas) still works and says it is
deprecated.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from kprof.errors import SizeExprError, UsageError
from kprof.spec import sizeexpr


@dataclass(frozen=True)
class Axis:
    names: tuple[str, ...]  # one name, or several that move together
    values: tuple[str, ...]


@dataclass(frozen=True)
class Sweep:
    """``--size`` or ``--param`` as given: the axes in order, and any deprecation to say."""

    what: str  # "size" or "param"
    axes: tuple[Axis, ...] = ()
    deprecated: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for axis in self.axes for n in axis.names)

    def only(self, known: set[str] | tuple[str, ...]) -> Sweep:
        """The axes whose names all belong to ``known`` (with several kernels, each takes its
        own)."""
        return Sweep(self.what, tuple(a for a in self.axes if set(a.names) <= set(known)),
                     self.deprecated)

    def single(self, command: str) -> dict[str, str]:
        """One value per name, for the commands that do not sweep."""
        out: dict[str, str] = {}
        for axis in self.axes:
            if len(axis.values) != 1:
                example = "--size M=127 N=131" if self.what == "size" else "--param BK=16"
                raise UsageError(f"--{self.what} {','.join(axis.names)}={','.join(axis.values)}: "
                                 f"kprof {command} takes one value per name (kprof "
                                 f"bench sweeps), e.g. {example}")
            out.update(dict.fromkeys(axis.names, axis.values[0]))
        return out

    def single_sizes(self, command: str) -> dict[str, int]:
        return {k: size_value(k, v) for k, v in self.single(command).items()}


# points of one sweep: kernels x sizes x parameters, far beyond a day of benching
MAX_POINTS = 10_000


def parse(items: list[str], what: str) -> Sweep:
    """``["M,N,K=1024,2048", "BLOCK=64"]`` -> a :class:`Sweep`, every item checked for form."""
    axes: list[Axis] = []
    seen: set[str] = set()
    deprecated = ""
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise TypeError(f"--{what}: give a list of strings such as [\"N=1000,2000\"], not "
                        f"{type(items).__name__} {str(items)[:40]}")
    for item in _legacy_pairs(items, what):
        if isinstance(item, tuple):
            deprecated = item[1]
            item = item[0]
        keys, sep, values = item.partition("=")
        names = tuple(k.strip() for k in keys.split(","))
        parts = tuple(v.strip() for v in values.split(",") if v.strip())
        if not sep or not all(k.isidentifier() for k in names) or not parts:
            example = "M=127 N=131, or M,N,K=1024,2048 to move together" if what == "size" else "BLOCK=64,128"
            raise UsageError(f"--{what} {item!r}: write NAME=VALUE (or N1,N2=V1,V2 to move "
                             f"together), e.g. --{what} {example}")
        twice = [k for k in names if k in seen] or [k for k in names if names.count(k) > 1]
        if twice:
            raise UsageError(f"--{what}: {twice[0]} is given twice")
        seen.update(names)
        if what == "param":
            for v in parts:
                if not (v.lstrip("-").isdigit() or v.isidentifier()):
                    raise UsageError(f"--param {','.join(names)}={v}: a parameter value is a "
                                     "number or an identifier")
        axes.append(Axis(names, parts))
    return Sweep(what, tuple(axes), deprecated)


def _legacy_pairs(items: list[str], what: str) -> list[str | tuple[str, str]]:
    """``M=127,N=131`` (the old ``kprof run`` form) -> ``M=127`` and ``N=131``, with a
    deprecation."""
    out: list[str | tuple[str, str]] = []
    for item in items:
        pieces = item.split(",")
        if what == "size" and len(pieces) > 1 and all("=" in p for p in pieces):
            note = (f"--size {item}: pairs joined by commas are deprecated; write --size "
                    f"{' '.join(p.strip() for p in pieces)}")
            out += [(p.strip(), note) for p in pieces]
        else:
            out.append(item)
    return out


def size_value(name: str, text: str) -> int:
    try:
        n = sizeexpr.evaluate_int(text, {})
    except SizeExprError as exc:
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise UsageError(f"--size {name}={shown}: give a whole number (or arithmetic like 2**20): "
                         f"{exc}") from None
    if n <= 0:
        raise UsageError(f"--size {name}={text}: sizes must be positive")
    return n


def points(sizes: Sweep, params: Sweep, size_names: tuple[str, ...], defines: dict[str, str],
           kernel: str) -> list[tuple[dict[str, int], dict[str, str]]]:
    """Every combination of the swept sizes and parameters, each name checked against the spec."""
    for name in sizes.names:
        if name not in size_names:
            raise UsageError(f"{kernel}: unknown size '{name}' (known: "
                             f"{', '.join(size_names) or 'none'})")
    for name in params.names:
        if name not in defines:
            raise UsageError(f"{kernel}: unknown parameter '{name}' (parameters are the spec's "
                             f"defines: {', '.join(defines) or 'none'})")
    axes: list[tuple[str, Axis, list[int] | list[str]]] = []
    for axis in sizes.axes:
        axes.append(("size", axis, [size_value(",".join(axis.names), v) for v in axis.values]))
    for axis in params.axes:
        axes.append(("param", axis, list(axis.values)))
    count = math.prod(len(values) for _, _, values in axes)
    # counted before one is listed: a 300 x 300 x 300 sweep is one line, not minutes
    if count > MAX_POINTS:
        shape = " x ".join(str(len(values)) for _, _, values in axes)
        raise UsageError(f"{kernel}: the sweep has {count:,} points ({shape}); kprof runs at most "
                         f"{MAX_POINTS:,} at once: sweep fewer values, or "
                         "split it into several runs")
    out = []
    for combo in itertools.product(*(values for _, _, values in axes)):
        s: dict[str, int] = {}
        p: dict[str, str] = {}
        for (kind, axis, _), value in zip(axes, combo):
            for name in axis.names:
                if kind == "size":
                    s[name] = int(str(value))
                else:
                    p[name] = str(value)
        out.append((s, p))
    return out or [({}, {})]
