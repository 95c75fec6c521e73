"""C++ symbol names as people write them: ``_Z10add_kernelPfS_i`` -> ``add_kernel(float*, float*,
int)``, and cut to a report line's width (:func:`short`; a PyTorch kernel's whole name can fill a
screen).

Uses the C++ runtime's own demangler (``__cxa_demangle`` from libstdc++, through ctypes), loaded
once; where it is missing, names stay as they are.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _demangler() -> Any:
    for name in (ctypes.util.find_library("stdc++"), "libstdc++.so.6"):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
            fn = lib.__cxa_demangle
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t),
                       ctypes.POINTER(ctypes.c_int)]
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.free.argtypes = [ctypes.c_void_p]
        return fn, libc.free
    return None


@lru_cache(maxsize=4096)
def demangle(name: str) -> str:
    """The demangled name, or ``name`` itself when it is not a mangled C++ name."""
    if not name.startswith("_Z"):
        return name
    found = _demangler()
    if found is None:
        return name
    fn, free = found
    status = ctypes.c_int()
    ptr = fn(name.encode(), None, None, ctypes.byref(status))
    if not ptr or status.value != 0:
        return name
    try:
        text = ctypes.string_at(ptr).decode(errors="replace")
    finally:
        free(ptr)
    return text


SHORT = 80  # characters a kernel's name may take in a report line; --json keeps the whole name


def short(name: str, limit: int = SHORT) -> str:
    """A demangled kernel name cut to what a report line can show: no ``void``, no parameter list,
    template arguments below the first level as ``<…>``, and the first level too while it is longer
    than ``limit``. ``void at::native::vectorized_elementwise_kernel<4,
    at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, ...)`` ->
    ``at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<…>, std::array<…> >`` at
    100 characters, and ``at::native::vectorized_elementwise_kernel<…>`` at 80. A ``#3`` launch
    suffix stays. Pure."""
    base, hash_, suffix = name.rpartition("#") if "#" in name and name.rpartition("#")[2].isdigit() else (name, "", "")
    text = base.removeprefix("void ").strip()
    text = _without_parameters(text)
    if len(text) <= limit:
        return text + hash_ + suffix
    for depth in (2, 1):
        text = _collapse(text, depth)
        if len(text) <= limit:
            break
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text + hash_ + suffix


def base_name(name: str) -> str:
    """A kernel's bare function name: ``void ns::scale<float>(float*, int)`` -> ``scale``, and
    through an anonymous namespace as ncu writes it (``at::<unnamed>::cunn_SoftMaxForward<4, ...>``)
    or the demangler does (``(anonymous namespace)``). Pure."""
    text = short(name, 10_000).replace("<unnamed>::", "").replace("(anonymous namespace)::", "")
    return text.split("<", 1)[0].rsplit("::", 1)[-1].strip()


def _without_parameters(text: str) -> str:
    """``name<...>(int, float*)`` -> ``name<...>``: the last parenthesised group at depth 0, when it
    ends the name."""
    if not text.endswith(")"):
        return text
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        c = text[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return text[:i].rstrip() if text[:i].strip() else text
    return text


def _collapse(text: str, depth: int) -> str:
    """Every template argument list opened at ``depth`` (1: the outermost) or deeper written
    ``<…>``."""
    out: list[str] = []
    level = 0
    for c in text:
        if c == "<":
            level += 1
            if level == depth:
                out.append("<…")
                continue
        elif c == ">" and level > 0:
            level -= 1
            if level == depth - 1:
                out.append(">")
                continue
        if level < depth:
            out.append(c)
    return "".join(out)
