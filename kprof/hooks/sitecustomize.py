"""kprof's sitecustomize for a program under ``kprof sanitize -- CMD``: CuPy's memory pools off.

With ``KPROF_CUPY_NO_POOL=1``, the moment ``cupy`` is imported its device and pinned allocators are
set to plain ``cudaMalloc`` (``cupy.cuda.set_allocator(None)``), so every array is its own allocation
and memcheck sees an access past its end. Any other ``sitecustomize`` later on ``sys.path`` still runs.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys


class _AfterCupy(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps cupy's loader so the pools are turned off right after it loads."""

    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name != "cupy":
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        real_exec = loader.exec_module

        def exec_module(module):  # type: ignore[no-untyped-def]
            real_exec(module)
            module.cuda.set_allocator(None)
            module.cuda.set_pinned_memory_allocator(None)
            sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _AfterCupy)]

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


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


def _load(name: str) -> None:
    """One of kprof's hooks in this folder, installed: the launch recorder (``KPROF_LAUNCH_LOG``:
    ``kprof sanitize --tool values -- CMD``) or the launch tally (``KPROF_LAUNCH_TALLY``: the run of
    a program beside the tools' runs, kprof.tools.programs.launchcount), loaded from here so that it needs no importable kprof.
    One at most: CUPTI takes one subscriber per process."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(f"_kprof_{name}", os.path.join(here, f"{name}.py"))
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[f"_kprof_{name}"] = module  # kept: its subscriber lives as long as the program
    spec.loader.exec_module(module)
    module.install()


if os.environ.get("KPROF_RANK_WRAP") and not os.environ.get("KPROF_RANK_WRAPPED"):
    _load("rank_wrap")  # a rank of a multi-process job starts again under compute-sanitizer (kprof.tools.programs.ranks)
if os.environ.get("KPROF_CUPY_NO_POOL") == "1":
    sys.meta_path.insert(0, _AfterCupy())
if os.environ.get("KPROF_NAN_LOG"):
    _load("nan_watch")  # the first non-finite output (kprof sanitize --tool nan -- CMD): no CUPTI, beside any other
if os.environ.get("KPROF_LAUNCH_LOG"):
    _load("launch_recorder")
elif os.environ.get("KPROF_LAUNCH_TALLY"):
    _load("launch_tally")
_chain()
