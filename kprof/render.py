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


def _dim(t) -> str:
    return "(" + ",".join(str(v) for v in t) + ")" if t else "-"


def sanitize_report(results: list) -> str:
    lines = []
    for r in results:
        state = {"clean": "clean", "findings": f"{len(r.findings)} finding(s)"}.get(r.status, r.status.upper())
        lines.append(f"{r.tool:<10} {state:<14} {r.seconds:6.1f} s  {r.message}".rstrip())
        for note in r.notes[:3]:
            lines.append(f"{'':<10} note: {note}")
        if r.status in ("timeout", "target-error", "tool-error") and r.log:
            lines += [f"{'':<10} | {ln}" for ln in r.log.splitlines()[-8:]]
    found = [f for r in results for f in r.findings]
    if not found:
        lines.append("no findings" if all(r.ok for r in results) else "no findings, but not every tool finished")
        return "\n".join(lines)
    lines.append("")
    lines.append(table(
        ["TOOL", "KIND", "WHERE", "THREAD", "BLOCK", "BUFFER", "COUNT"],
        [(f.tool, f.kind, f.location(), _dim(f.thread), _dim(f.block), f.buffer or "-", f.count) for f in found],
        "llllllr",
    ))  # fmt: skip
    lines.append("")
    for f in found:
        lines.append(f"- {f.tool} {f.kind} at {f.location()}: {f.message}")
        if f.detail:
            lines.append(f"    {f.detail}")
    return "\n".join(lines)


def cases_list(rows: list[dict]) -> str:
    return table(
        ["CASE", "TOOL", "KIND", "LINE", "BUFFER", "CAUGHT"],
        [(r["name"], r["tool"], r["kind"], r["line"], r["buffer"] or "-", "yes" if r["caught"] else "no: " + r["why"])
         for r in rows],
    )  # fmt: skip


def cases_matrix(results: list) -> str:
    rows = []
    for r in results:
        e = r.case.expect
        found = "yes" if r.caught else ("n/a" if not e.caught else f"NO ({r.bug.status})")
        rows.append((r.case.name, e.tool, e.kind, e.line, found, "yes" if r.twin_clean else f"NO ({r.twin.status})",
                     f"{r.bug.seconds + r.twin.seconds:.1f}"))
    ok = sum(r.ok for r in results)
    return table(["CASE", "TOOL", "EXPECTED KIND", "LINE", "FOUND", "TWIN CLEAN", "SECONDS"], rows, "llllllr") + (
        f"\n{ok} of {len(results)} cases as expected"
    )
