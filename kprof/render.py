"""Text output: tables and reports from results. Pure functions; nothing here measures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "") -> str:
    """A plain text table. ``align`` has one character per column, 'l' or 'r' (default 'l')."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align.ljust(len(headers), "l")

    def fmt(row: list[str]) -> str:
        parts = [c.rjust(w) if a == "r" else c.ljust(w) for c, w, a in zip(row, widths, align)]
        return "  ".join(parts).rstrip()

    lines = [fmt(cells[0]), "  ".join("-" * w for w in widths)]
    lines += [fmt(r) for r in cells[1:]]
    return "\n".join(lines)


def list_table(rows: list[dict[str, str]]) -> str:
    if not rows:
        return "no kernels found (kernels/, sanitizer_cases/, KPROF_PATH)"
    return table(["NAME", "GROUP", "DESCRIPTION"], [(r["name"], r["group"], r["description"]) for r in rows])


def build_table(results: list) -> str:
    rows = []
    for spec, built in results:
        u = built.usage_of(spec.entry)
        rows.append((
            spec.name, built.arch, u.registers, u.shared_static, u.stack_frame,
            f"{u.spill_stores}/{u.spill_loads}", u.barriers, "cached" if built.cached else "built",
        ))  # fmt: skip
    return table(
        ["KERNEL", "ARCH", "REGS", "SMEM(B)", "STACK(B)", "SPILL ST/LD(B)", "BARRIERS", "CUBIN"],
        rows,
        "llrrrrrl",
    )


def si(value: float, unit: str) -> str:
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def run_report(result, resolved, built) -> str:
    dev = result.device
    lines = [f"{result.kernel}  {resolved.size_text()}  on {dev.get('name', '?')} ({dev.get('arch', built.arch)})"]
    usage = built.usage_of(resolved.spec.entry)
    lines.append(
        f"  grid {tuple(resolved.grid)} x block {tuple(resolved.block)}, {resolved.shared_mem} B dynamic shared, "
        f"{usage.registers} registers, {usage.shared_static} B static shared"
    )
    for check in result.checks:
        verdict = "PASS" if check["ok"] else "FAIL"
        lines.append(f"  {check['name']}: {verdict}  {check['message']}")
    if not result.nvtx:
        lines.append("  warning: the nvtx package is missing; launches carry no NVTX range (pip install nvtx)")
    if result.time_ms is not None:
        lines.append(
            f"  time: {result.time_ms:.4f} ms (one launch after one warm-up; `kprof bench` gives a median and its spread)"
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


def doctor_table(checks: list) -> str:
    rows = []
    for c in checks:
        rows.append(("ok" if c.ok else "MISSING", c.name, c.detail + (f"\n{'':>9}fix: {c.fix}" if not c.ok and c.fix else "")))
    out = []
    for status, name, detail in rows:
        out.append(f"{status:<8} {name:<18} {detail}")
    return "\n".join(out)
