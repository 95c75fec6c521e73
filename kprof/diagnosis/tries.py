"""Advice that is measured: a spec's defines changed, each variant verified and timed in the same
run.

``kprof profile NAME --try BLOCK=128,256`` names the variants; for the first cause, kprof picks some
itself where the change is a define of the launch (a grid or block expression names it): a tail wave
or a small grid gets other values of that define. Where no define does it, kprof tries what a user
could change without editing the source (:func:`variants`): the block size where the spec's launch
writes it as a number its grid is computed from, ``-maxrregcount`` for registers, the launch's
dynamic shared memory. Each variant goes through ``kprof bench``'s point (the spec's verdict first,
then the timing loop), in one run with the original, so the gain is a ratio of two times measured
minutes apart at most on the same GPU.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from kprof.diagnosis.model import Cause, Gain, Try
from kprof.spec import sizeexpr

if TYPE_CHECKING:
    from kprof.measure.points import PointResult, PointStatus
    from kprof.spec import KernelSpec


class SweepReport(Protocol):
    """What a try reads of a ``kprof bench`` run (:class:`kprof.results.reports.BenchReport`): its
    points."""

    @property
    def points(self) -> Sequence[PointResult]: ...

MAX_AUTO = 4  # variants kprof tries by itself for one cause


_TRY = re.compile(r"([A-Za-z_]\w*)=([A-Za-z0-9_.+-]+(?:,[A-Za-z0-9_.+-]+)*)\Z")


def parse(words: list[str]) -> dict[str, list[str]]:
    """``--try BLOCK=128,256 TILE=32``: define -> its values, or one line saying what is wrong."""
    from kprof.errors import UsageError

    out: dict[str, list[str]] = {}
    for word in words:
        m = _TRY.match(word)
        if not m:
            raise UsageError(f"--try {word!r}: write DEFINE=VALUE[,VALUE...], e.g. --try "
                             "BLOCK=128,256")
        out.setdefault(m.group(1), [])
        out[m.group(1)] += [v for v in m.group(2).split(",") if v not in out[m.group(1)]]
    return out


def launch_defines(spec: KernelSpec) -> dict[str, int]:
    """The spec's numeric defines that its launch expressions (grid, block) name."""
    exprs: list[str] = []
    for st in spec.steps or ():
        if st.launch is not None:
            exprs += [*st.launch.grid, *st.launch.block]
    if spec.launch is not None:
        exprs += [*spec.launch.grid, *spec.launch.block]
    named = {w for e in exprs for w in sizeexpr.names(e)}
    out = {}
    for k, v in spec.defines:
        if k in named and re.fullmatch(r"\d+", str(v)):
            out[k] = int(v)
    return out


def auto_values(cause: Cause, spec: KernelSpec, slots: int | None) -> dict[str, list[int]]:
    """Variants worth timing for ``cause`` (a define of the launch, and values of it), else
    empty."""
    defines = launch_defines(spec)
    if not defines or cause.rule not in ("tail-wave", "small-grid"):
        return {}
    out: dict[str, list[int]] = {}
    for name, v in defines.items():
        if cause.rule == "small-grid" and slots:
            vals = [slots * k for k in (1, 2, 4, 8)]
        else:
            vals = [v // 8, v // 4, v // 2, v * 2]
        out[name] = sorted({x for x in vals if x >= 1 and x != v})[:MAX_AUTO]
    return out


BLOCK_RULES = ("tail-wave", "small-grid", "occupancy-registers", "occupancy-shared")


def _block_variants(spec: KernelSpec, cause: Cause) -> list[tuple[dict[str, str], KernelSpec]]:
    """Other block sizes where the launch writes its block as a number (one dimension) and its grid
    divides by it."""
    from dataclasses import replace

    launch = spec.launch
    dims = [b for b in launch.block if str(b).strip() != "1"]
    if len(dims) != 1 or not re.fullmatch(r"\d+", str(dims[0]).strip()):
        return []
    block = int(dims[0])
    token = re.compile(rf"\b{block}\b")
    if not any(token.search(str(g)) for g in launch.grid):
        return []
    wanted = [block // 4, block // 2, block * 2] if cause.rule != "small-grid" else [block // 4, block // 2, block // 8]
    out = []
    for b in sorted({v for v in wanted if 32 <= v <= 1024 and v % 32 == 0 and v != block}):
        gx, gy, gz = (token.sub(str(b), str(g)) for g in launch.grid)
        bx, by, bz = (str(b) if str(x).strip() == str(block) else x for x in launch.block)
        out.append(({"block": str(b)}, replace(spec, name=f"{spec.name}__block{b}",
                                               launch=replace(launch, grid=(gx, gy, gz),
                                                              block=(bx, by, bz)))))
    return out


def variants(cause: Cause, spec: KernelSpec, *,
             registers: int | None = None) -> list[tuple[dict[str, str], KernelSpec]]:
    """What a user could change for ``cause`` without editing the source, each a spec of its own to
    time beside the original: the block size (where the launch writes it as the number its grid
    divides by), ``-maxrregcount`` (occupancy limited by registers), the launch's dynamic shared
    memory (occupancy limited by shared memory). Empty for a spec of several steps, or a cause none
    of these touches."""
    from dataclasses import replace

    if spec.steps or spec.launch is None or spec.python:
        return []
    out: list[tuple[dict[str, str], KernelSpec]] = []
    if cause.rule == "occupancy-registers" and registers:
        for cap in sorted({r for r in (128, 96, 64, 48, 32) if r < registers}, reverse=True)[:3]:
            flags = tuple(f for f in spec.nvcc_flags if "maxrregcount" not in f) + (f"-maxrregcount={cap}",)
            out.append(({"maxrregcount": str(cap)},
                        replace(spec, name=f"{spec.name}__maxrreg{cap}", nvcc_flags=flags)))
    if cause.rule == "occupancy-shared" and str(spec.launch.shared_mem).strip() not in ("", "0"):
        for k, label in ((0, "0"), (4, "1/4"), (2, "1/2")):
            smem = "0" if not k else f"({spec.launch.shared_mem}) / {k}"
            out.append(({"shared_mem": label}, replace(spec, name=f"{spec.name}__smem{k}",
                                                       launch=replace(spec.launch, shared_mem=smem))))
    if cause.rule in BLOCK_RULES:
        out += _block_variants(spec, cause)
    return out[:MAX_AUTO]


def measured_variants(report: SweepReport, original: str,
                      labelled: list[tuple[dict[str, str], str]]) -> list[Try]:
    """The tries of :func:`variants` from one ``kprof bench`` report of the original and each
    variant (by name)."""
    times = {pt.kernel: (pt.status, pt.summary.median if pt.status == "ok" and pt.summary else None,
                         getattr(pt, "message", "") or "") for pt in report.points}
    base = times.get(original, ("error", None, ""))[1]
    out = []
    for params, name in labelled:
        status, secs, msg = times.get(name, ("error", None, "not measured"))
        out.append(Try(params, status, secs, base / secs if base and secs else None, msg))
    return out


def sweep_of(define: str, original: str, values: list[str]) -> str:
    """``kprof bench --param``'s words for the original and the values tried, the original first."""
    return f"{define}=" + ",".join([original, *[v for v in values if v != original]])


def measured(report: SweepReport, define: str, original: str, values: list[str]) -> list[Try]:
    """The tries from one ``kprof bench`` report of :func:`sweep_of`: each value's time against the
    original's from the same run (a failed verdict is a try that did not work, with its status)."""
    times: dict[str, tuple[PointStatus, float | None, str]] = {}
    for pt in report.points:
        med = pt.summary.median if pt.status == "ok" and pt.summary else None
        times[str(pt.params.get(define))] = (pt.status, med, getattr(pt, "message", "") or "")
    base = times.get(original, ("error", None, ""))[1]
    out = []
    for v in [x for x in values if x != original]:
        status, secs, msg = times.get(v, ("error", None, "not measured"))
        out.append(Try({define: v}, status, secs, base / secs if base and secs else None, msg))
    return out


def confirm(cause: Cause, tries: list[Try]) -> Cause:
    """The cause with the best verified try's measured gain beside its estimate."""
    from dataclasses import replace

    good = [t for t in tries if t.status == "ok" and t.gain]
    if not good:
        return cause
    best = max(good, key=lambda t: t.gain or 0.0)
    return replace(cause, gain=Gain(cause.gain.estimate, cause.gain.basis, best.gain, best.label()))
