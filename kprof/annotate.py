"""``kprof.range``: an NVTX push/pop range in domain ``kprof``, as a context manager or a decorator.

    with kprof.range("attention"):
        out = attn(q, k, v)

    @kprof.range("step")
    def step(batch): ...

``kprof profile --range attention -- python train.py`` then profiles only the kernels launched
inside it. Without the ``nvtx`` package a range does nothing and costs well under a microsecond
(one attribute check); nvtx is imported on first use, never by ``import kprof``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., object])
DOMAIN = "kprof"
_nvtx: Any = None  # the nvtx module, False when it is missing, None before the first use


def _module() -> Any:
    global _nvtx
    if _nvtx is None:
        try:
            import nvtx

            _nvtx = nvtx
        except ImportError:
            _nvtx = False
    return _nvtx


class range:
    """An NVTX range named ``name`` in domain ``kprof`` (``kprof@name`` to ncu's NVTX filter)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name or "/" in name:
            raise ValueError(f"kprof.range({name!r}): give a non-empty name without '/' (ncu reads "
                             "'/' as nesting)")
        self.name = name

    def __enter__(self) -> range:
        nvtx = _nvtx if _nvtx is not None else _module()
        if nvtx:
            nvtx.push_range(self.name, domain=DOMAIN)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if _nvtx:
            _nvtx.pop_range(domain=DOMAIN)

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: object, **kwargs: object) -> object:
            with self:
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]
