"""kprof's sitecustomize for a program under ``kprof sanitize -- CMD``: CuPy's memory pools off.

With ``KPROF_CUPY_NO_POOL=1``, the moment ``cupy`` is imported its device and pinned allocators are
set to plain ``cudaMalloc`` (``cupy.cuda.set_allocator(None)``), so every array is its own
allocation and memcheck sees an access past its end. Any other ``sitecustomize`` later on
``sys.path`` still runs.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Callable
from types import ModuleType


class _After(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps ``name``'s loader so ``then(module)`` runs right after the module
    loads (CuPy's pools turned off, the nan watcher installed on torch and Triton). ``then`` raising
    is said on stderr, never the import's failure."""

    def __init__(self, name: str, then: Callable[[ModuleType], None]) -> None:
        self.name, self.then = name, then

    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader, then = spec.loader, self.then
        real_exec = loader.exec_module

        def exec_module(module):  # type: ignore[no-untyped-def]
            real_exec(module)
            sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
            try:
                then(module)
            except Exception as exc:  # noqa: BLE001 - the user's import goes on
                sys.stderr.write(f"kprof: after importing {name}: {type(exc).__name__}: {exc}\n")

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def after(name: str, then: Callable[[ModuleType], None]) -> None:
    """Run ``then(module)`` as soon as ``name`` is imported."""
    sys.meta_path.insert(0, _After(name, then))


def _pools_off(cupy) -> None:  # type: ignore[no-untyped-def]
    cupy.cuda.set_allocator(None)
    cupy.cuda.set_pinned_memory_allocator(None)


def _chain() -> None:
    """Run the next sitecustomize on sys.path, as Python would have without this one."""
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == here:
            continue
        candidate = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_kprof_next_sitecustomize", candidate)
            if spec is not None and spec.loader is not None:
                spec.loader.exec_module(importlib.util.module_from_spec(spec))
            return


def _load(name: str, **kw) -> None:  # type: ignore[no-untyped-def]
    """One of kprof's hooks in this folder, installed: the launch recorder (``KPROF_LAUNCH_LOG``:
    ``kprof sanitize --tool values -- CMD``) or the launch tally (``KPROF_LAUNCH_TALLY``: the run of
    a program beside the tools' runs, kprof.tools.programs.launchcount), loaded from here so that it
    needs no importable kprof. One at most: CUPTI takes one subscriber per process."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(f"_kprof_{name}",
                                                  os.path.join(here, f"{name}.py"))
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[f"_kprof_{name}"] = module  # kept: its subscriber lives as long as the program
    spec.loader.exec_module(module)
    module.install(**kw)


if os.environ.get("KPROF_RANK_WRAP") and not os.environ.get("KPROF_RANK_WRAPPED"):
    # a rank of a multi-process job starts again under compute-sanitizer
    # (kprof.tools.programs.ranks)
    _load("rank_wrap")
if os.environ.get("KPROF_CUPY_NO_POOL") == "1":
    after("cupy", _pools_off)
if os.environ.get("KPROF_NAN_LOG"):
    # the first non-finite output (kprof sanitize --tool nan -- CMD): no CUPTI, beside any other
    _load("nan_watch", after=after)
if os.environ.get("KPROF_LAUNCH_LOG"):
    _load("launch_recorder")
elif os.environ.get("KPROF_LAUNCH_TALLY"):
    _load("launch_tally")
_chain()
