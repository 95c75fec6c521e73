"""The switches that make frameworks' memory pools visible to compute-sanitizer: pure.

A pool (PyTorch's caching allocator, CuPy's memory pool, JAX's preallocated arena) serves many
tensors from one large ``cudaMalloc``; an access past the end of one tensor lands inside the pool,
and memcheck, which knows only the driver's allocations, reports nothing. ``kprof sanitize -- CMD``
sets these switches in the target's environment and says which it set. Measured on an H200 (driver
580.159.04): a Triton store without its mask reports 0 errors under memcheck with PyTorch's pool on,
and the invalid write at the ``tl.store`` line with it off.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

HOOKS = Path(__file__).resolve().parents[2] / "hooks"  # sitecustomize.py: CuPy's pool off at import


@dataclass(frozen=True)
class Switch:
    framework: str
    variable: str
    value: str
    effect: str


SWITCHES = (
    Switch("PyTorch", "PYTORCH_NO_CUDA_MEMORY_CACHING", "1",
           "the caching allocator off: one cudaMalloc per tensor"),
    Switch("CuPy", "KPROF_CUPY_NO_POOL", "1",
           "cupy.cuda.set_allocator(None) and set_pinned_memory_allocator(None) when cupy is "
           "imported (kprof's sitecustomize hook)"),
    Switch("JAX", "XLA_PYTHON_CLIENT_ALLOCATOR", "platform",
           "no preallocated arena: allocate and free on demand"),
    Switch("JAX", "XLA_PYTHON_CLIENT_PREALLOCATE", "false",
           "do not reserve most of the GPU at start"),
    Switch("Numba", "NUMBA_CUDA_MEMORY_MANAGER", "default",
           "Numba's own allocator (no external pool plug-in)"),
)


def environment(base: dict[str, str], *, pools: bool = False) -> tuple[dict[str, str], list[str]]:
    """``base`` with every switch set (unless the user set the variable already, or ``pools`` keeps
    the pools), and one note per switch saying what was set."""
    env = dict(base)
    notes: list[str] = []
    if pools:
        return env, ["framework memory pools left on (--keep-pools): out-of-bounds accesses inside "
                     "a pool go unseen"]
    for s in SWITCHES:
        if s.variable in base:
            notes.append(f"{s.framework}: {s.variable}={base[s.variable]} kept as you set it")
            continue
        env[s.variable] = s.value
        notes.append(f"{s.framework}: {s.variable}={s.value} ({s.effect})")
    return with_hooks(env), notes


def with_hooks(env: dict[str, str]) -> dict[str, str]:
    """``env`` with kprof's site hooks (``kprof/hooks``) first on PYTHONPATH, once: where a
    program's Python finds them (CuPy's pool switch, the launch tally, the launch recorder)."""
    from kprof.tools.programs.ranks import RANK_VARS

    # where the hooks read a rank from (the launchers' table)
    out = {**env, "KPROF_RANK_VARS": ",".join(RANK_VARS)}
    path = out.get("PYTHONPATH", "")
    if str(HOOKS) not in path.split(os.pathsep):
        out["PYTHONPATH"] = os.pathsep.join(p for p in (str(HOOKS), path) if p)
    return out
