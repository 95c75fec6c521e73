"""Text of what kprof build, run, list, doctor and occupancy return. Pure functions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kprof.results.render import fit, percent, table, terminal_width, wrap
from kprof.units import si

if TYPE_CHECKING:
    from kprof.build.build import BuildResult, ResourceUsage
    from kprof.build.occupancy import Occupancy
    from kprof.launch.childresult import ChildResult
    from kprof.spec import KernelSpec, Resolved
    from kprof.spec.catalog import Listing
    from kprof.tools.machine.doctor import Check, Readiness


def list_table(rows: list[Listing], width: int | None = None) -> str:
    """Names, groups and descriptions, each line at most ``width`` characters
    (:func:`terminal_width`): a long description wraps under itself. A kernel that needs a newer
    architecture than ``--arch`` is marked before its description: ``[needs sm_80: cp.async]``."""
    if not rows:
        return "no kernels found (kernels/, sanitizer_cases/, KPROF_PATH)"
    return table(["NAME", "GROUP", "DESCRIPTION"],
                 [(r.name, r.group, (f"[{r.unsupported}] " if r.unsupported else "") + r.description) for r in rows],
                 width=width)


def build_table(results: Sequence[tuple[KernelSpec, BuildResult]],
                params: tuple[str, ...] = ()) -> str:
    """One row per kernel built: a spec's own, or each of its steps' as ``NAME:KERNEL`` (the kernel
    as the spec writes it); ``params``, the defines given by --param, are shown beside each name."""
    rows: list[tuple[Any, ...]] = []
    for spec, built in results:
        defines = dict(spec.defines)
        name = " ".join([spec.name, *(f"{k}={defines[k]}" for k in params if k in defines)])
        if spec.python:
            rows.append((name, built.arch, "-", "-", "-", "-", "-", "python (nothing to build)"))
            continue
        kernels = spec.entries
        for entry in kernels:
            u = built.usage_of(entry)
            rows.append((
                f"{name}:{entry}" if len(kernels) > 1 else name, built.arch, u.registers,
                u.shared_static, u.stack_frame,
                f"{u.spill_stores}/{u.spill_loads}", u.barriers,
                "cached" if built.cached else "built",
            ))  # fmt: skip
    return table(
        ["KERNEL", "ARCH", "REGS", "SMEM(B)", "STACK(B)", "SPILL ST/LD(B)", "BARRIERS", "CUBIN"],
        rows,
        "llrrrrrl",
    )


def run_report(result: ChildResult, resolved: Resolved, built: BuildResult) -> str:
    dev = result.device
    lines = [f"{result.kernel}  {resolved.size_text()}  on {dev.name if dev else '?'} "
             f"({dev.arch if dev else built.arch})"]
    from kprof.spec import pyref

    usage = built.usage_of(resolved.spec.entry)
    if resolved.spec.python:
        fw = (result.operation.framework if result.operation else None) or "?"
        lines.append("  a Python operation: "
                     f"{pyref.Ref.from_stored(resolved.spec.python).label()}, your code, run in "
                     f"kprof's runner on its buffers as {fw} tensors")
    else:
        lines.append(
            f"  grid {tuple(resolved.grid)} x block {tuple(resolved.block)}, {resolved.shared_mem} "
            f"B dynamic shared, {usage.registers} registers, {usage.shared_static} B static shared"
        )

    for _, ref in resolved.spec.reference:
        if pyref.is_stored(ref):
            lines.append(f"  reference: {pyref.Ref.from_stored(ref).label()}, your Python, run in "
                         "kprof's runner process")
    for check in result.checks:
        verdict = "PASS" if check.ok else "FAIL"
        lines.append(f"  {check.name}: {verdict}  {check.message}")
        if check.note:
            lines.append(f"    note: {check.note}")
    if not result.nvtx:
        lines.append("  warning: the nvtx package is missing; launches carry no NVTX range (pip "
                     "install nvtx)")
    if result.time_ms is not None:
        lines.append(
            f"  time: {result.time_ms:.4f} ms (one launch after one warm-up; `kprof bench` gives a "
            "median and its spread)"
        )
        seconds = result.time_ms / 1e3
        rates = []
        if resolved.flops:
            rates.append(si(resolved.flops / seconds, "FLOP/s"))
        if resolved.bytes:
            rates.append(si(resolved.bytes / seconds, "B/s"))
        if rates:
            lines.append(f"  throughput: {', '.join(rates)} (from the spec's work formulas)")
    if not result.ok:
        lines.append("  verification FAILED")
    return "\n".join(lines)


def doctor_table(checks: list[Check], ready: Sequence[Readiness] = (),
                 width: int | None = None) -> str:
    """One check a line (wrapped to ``width``, default the terminal's, under its detail), and its
    fix; then whether each command asked about can run here, those lacking the same checks on one
    line."""
    width = width or terminal_width()
    out = []
    for c in checks:
        out += wrap(f"{'ok' if c.ok else 'MISSING':<8} {c.name:<18} {c.detail}", width, 28)
        if not c.ok and c.fix:
            out += wrap(f"{'':<9}fix: {c.fix}", width, 14)
    if ready:
        out.append("")
    groups: dict[tuple[str, ...], list[Readiness]] = {}
    for r in ready:
        groups.setdefault(r.missing, []).append(r)
    for missing, rs in groups.items():
        names = ", ".join(f"kprof {r.command}" for r in rs)
        line = f"{names}: ready" if not missing else f"{names}: cannot run here (exit {rs[0].exit_code}): missing " \
                                                       f"{', '.join(missing)}"
        out += wrap(line, width, 4)
    return "\n".join(out)


def occupancy_report(name: str, arch: str, usage: ResourceUsage, dynamic: int,
                     chosen: list[Occupancy],
                     table_rows: list[Occupancy], *, advice: list[str]) -> str:
    out = [f"{name} on {arch}: {usage.registers} registers per thread, {usage.shared_static:,} B "
           f"static + {dynamic:,} B dynamic shared memory per block"]
    for occ, tip in zip(chosen, advice):
        out.append(f"  block {occ.block_size}: {occ.describe()}")
        out.append(f"    {tip}")
    width = terminal_width()
    out = fit(out, width, 2)
    out.append("")
    out.append(table(["BLOCK", "BLOCKS/SM", "WARPS/SM", "OCCUPANCY", "LIMITER"],
                     [(o.block_size, o.blocks_per_sm, o.warps_per_sm, percent(o.occupancy), o.limiter)
                      for o in table_rows],
                     "rrrrl", width=width))
    return "\n".join(out)
