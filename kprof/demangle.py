"""C++ symbol names as people write them: ``_Z10add_kernelPfS_i`` -> ``add_kernel(float*, float*, int)``.

Uses the C++ runtime's own demangler (``__cxa_demangle`` from libstdc++, through ctypes), loaded once;
where it is missing, names stay as they are.
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
        fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_int)]
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
