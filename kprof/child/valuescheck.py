"""The values detector's side in the child (:mod:`kprof.child.runner`'s values mode): the order of
the poison patterns, the scrubber's word, and the analysis of the runs' outputs against each other
and the reference: ``unwritten-output``, ``uninitialized-read``, ``race``, ``wrong-result``
(:mod:`kprof.tools.sanitizers.values` says what each means and runs the child).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from kprof.demangle import demangle, short
from kprof.findings import Finding
from kprof.launch.job import Target

FIRST_INDICES = 5


def run_plan(repeats: int) -> list[bool]:
    """Which runs use the alternate pattern: A, B, then A again until ``repeats`` runs (at least
    3)."""
    repeats = max(repeats, 3)
    return [False, True] + [False] * (repeats - 2)


def smem_pattern(alternate: bool) -> int:
    """The 32-bit word the scrubber writes: a quiet NaN, or the alternate float poison."""
    from kprof.child.hostdata import ALT_FLOAT_POISON

    if not alternate:
        return 0x7FC00000
    return int(struct.unpack("<I", struct.pack("<f", ALT_FLOAT_POISON))[0])


def analyse(target: Target, runs: list[tuple[bool, dict[str, object]]],
            expected: Mapping[str, object],
            scales: Mapping[str, object] | None = None,
            shaken: list[dict[str, object]] | None = None) -> list[Finding]:
    """The findings of the runs (pattern B where the flag is set), and of ``shaken``: runs of the
    warp-delay build under pattern A, each held against the first A run (``race`` where one differs:
    the order of the warps changed the result)."""
    import numpy as np

    from kprof.child import hostdata, verify

    findings: list[Finding] = []
    file = target.source
    for buf in target.buffers:
        name = buf.arg.name
        if buf.arg.role not in ("out", "inout"):
            continue
        raw_a = [o[name] for alt, o in runs if not alt]
        raw_b = [o[name] for alt, o in runs if alt]
        outs_a = [hostdata.decode(buf.arg.dtype, o) for o in raw_a]  # numbers, for the comparisons
        a, b = outs_a[0], hostdata.decode(buf.arg.dtype, raw_b[0])
        ref = np.broadcast_to(np.asarray(expected[name], dtype=np.float64), a.shape)
        # The same verdict as kprof run (kprof.child.verify.compare): the spec's tolerance or the
        # dtype's.
        rtol, atol = verify.tolerance_for(buf.arg.dtype, target.rtol, target.atol)
        if target.metric == "normwise":
            scale = float(np.abs(ref).max()) if ref.size and np.isfinite(ref).all() else 1.0
            tol: Any = rtol * (scale if scale > 0 else 1.0)
            bound = f"{rtol:g} x max|ref| (normwise)"
        # tolerance.scale: rtol times the size of the terms, as in kprof run
        elif scales and name in scales:
            scaled = np.abs(verify.scale_for(name, scales[name], a))
            tol, bound = atol + rtol * scaled, f"{atol:g} + {rtol:g} x ({dict(target.scale)[name]})"
        else:
            tol, bound = atol + rtol * np.abs(ref), f"{atol:g} + {rtol:g} x |ref|"

        def finding(kind: str, mask: Any, message: str, name: str = name,
                    buf: Any = buf) -> Finding:
            idx = tuple(tuple(int(i) for i in ix) for ix in np.argwhere(mask)[:FIRST_INDICES])
            where = ", ".join(f"{name}[{', '.join(map(str, ix))}]" for ix in idx)
            count = int(mask.sum())
            # a C++ kernel's symbol is mangled: named as its file writes it
            kernel = short(demangle(target.entry))
            return Finding("values", kind, kernel, file, None, thread=None, block=None, count=count,
                           message=f"{message}: {count:,} of {mask.size:,} elements of {name}, "
                                   f"first at {where}",
                           buffer=name, detail=buf.describe(), indices=idx)

        unwritten = np.zeros(a.shape, dtype=bool)
        if buf.arg.role == "out":
            pa, pb = hostdata.poison(buf), hostdata.poison(buf, alternate=True)
            unwritten = _same_bits(raw_a[0], pa) & _same_bits(raw_b[0], pb)
            if unwritten.any():
                findings.append(finding("unwritten-output", unwritten,
                                        "never written (still poison in every run)"))
        # Nondeterminism first: a race also makes the A and B runs differ, but only a result that
        # is stable across the A runs and still moves with the pattern really follows the poison.
        nondeterministic = _any_differs(a, outs_a[1:], tol) & ~unwritten
        if nondeterministic.any():
            findings.append(finding(
                "race", nondeterministic,
                f"results differ between {len(outs_a)} identical runs beyond the tolerance: a race",
            ))  # fmt: skip
        delayed = _any_differs(a,
                               [hostdata.decode(buf.arg.dtype, out[name]) for out in shaken or ()],
                               tol)
        delayed &= ~unwritten & ~nondeterministic
        if delayed.any():
            findings.append(finding(
                "race", delayed,
                "results change when kprof delays some warps (its warp-delay build): the kernel "
                "depends on the order its warps run in, a missing __syncthreads() or a race",
            ))  # fmt: skip
        nondeterministic |= delayed
        poison_dependent = _differs(a, b, tol) & ~unwritten & ~nondeterministic
        if poison_dependent.any():
            findings.append(finding(
                "uninitialized-read", poison_dependent,
                "the result follows the poison pattern, so it reads memory nothing wrote (an "
                "output read before it was written, or shared memory no thread stored)",
            ))  # fmt: skip
        explained = unwritten | poison_dependent | nondeterministic
        wrong = _differs(a, ref, tol) & ~explained
        if wrong.any():
            findings.append(finding("wrong-result", wrong,
                                    f"differs from the float64 reference by more than {bound}"))
    return findings


def _any_differs(a: Any, others: list[object], tol: Any) -> object:
    """Elementwise: some run of ``others`` differs from ``a`` beyond ``tol``."""
    import numpy as np

    out = np.zeros(a.shape, dtype=bool)
    for other in others:
        out |= _differs(a, other, tol)
    return out


def _same_bits(x: Any, y: Any) -> Any:
    import numpy as np

    kind = f"u{x.dtype.itemsize}"
    return np.asarray(x).view(kind) == np.asarray(y).view(kind)


def _differs(x: Any, y: Any, tol: float) -> Any:
    """Elementwise: different beyond ``tol``; NaN equals NaN, NaN differs from any number."""
    import numpy as np

    x64 = np.asarray(x, dtype=np.float64)
    y64 = np.asarray(y, dtype=np.float64)
    nan_x, nan_y = np.isnan(x64), np.isnan(y64)
    with np.errstate(invalid="ignore", over="ignore"):
        far = np.abs(x64 - y64) > tol
    far = np.where(np.isinf(x64) | np.isinf(y64), x64 != y64, far)
    return np.where(nan_x | nan_y, nan_x != nan_y, far)
