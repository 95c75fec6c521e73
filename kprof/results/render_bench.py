"""Text of what kprof bench, peak, history and compare return, and the cheat corpus. Pure
functions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kprof.measure.ceilings import Ceilings
from kprof.results.render import cut, fit, micros, percent, table, terminal_width
from kprof.units import si

if TYPE_CHECKING:
    from kprof.measure.points import BaselineResult, PointResult
    from kprof.results import history
    from kprof.results.reports import BenchCasesReport


def baseline_label(baseline: str | None, asked: str | None = None) -> str:
    """How a report names a baseline: the name it was asked by (torch.compile), else cublas_sgemm, a
    spec's name, or a Python callable's FILE.py:FUNCTION."""
    from kprof.spec.baseline import label_of

    return label_of(baseline, asked)


def _baseline_notes(b: BaselineResult | None) -> list[str]:
    """What a report says beside a baseline's time: cuBLAS's math mode, the kernels one call
    launched, the framework its inputs came as, its compile time."""
    if b is None:
        return []
    notes = [b.math_mode or "",
             f"{b.baseline_kernels} kernel(s) per call" if b.baseline_kernels is not None else "",
             f"{b.baseline_framework} inputs" if b.baseline_framework else "",
             f"prepared (compiled) in {b.baseline_prepare_s:.1f} s"
             if b.baseline_prepare_s is not None else ""]
    return [n for n in notes if n]


def bench_table(results: list[PointResult], peak: Ceilings | None, run_id: str | None) -> str:
    rows = []
    for r in results:
        point = " ".join([f"{k}={v}" for k, v in r.sizes.items()] + [f"{k}={v}" for k, v in r.params.items()])
        s = r.summary
        if r.status != "ok" or s is None:
            rows.append((r.kernel, point, r.status.upper(), "", "", "", "", "", "", "", "", ""))
            continue
        base, first, rt = "-", r.first, r.rates
        if first is not None and first.of_baseline is not None:
            # A library routine is the target ("78% of cublas_sgemm"); another spec is what the
            # kernel replaces ("3.41x faster than rmsnorm_unfused").
            ratio = first.of_baseline
            base = (f"{ratio:.0%} of {first.label}" if first.baseline_kind == "library"
                    else f"{ratio:.2f}x faster than {first.label}" if ratio >= 1
                    else f"{1 / ratio:.2f}x slower than {first.label}")
        rows.append((
            r.kernel, point, micros(s.median), f"{micros(s.q1)}-{micros(s.q3)}",
            f"{s.rel_stdev:.1%}", r.stop or "",
            si(rt.flops_per_s, "FLOP/s") if rt.flops_per_s else "-",
            si(rt.bytes_per_s, "B/s") if rt.bytes_per_s else "-",
            percent(rt.of_fma_peak) if rt.of_fma_peak else "-",
            f"{percent(rt.of_ceiling)} {rt.mix}" if rt.of_ceiling and rt.bytes_per_s else "-",
            percent(rt.of_dram_peak) if rt.of_dram_peak else "-", base,
        ))  # fmt: skip
    out = [table(["KERNEL", "POINT", "MEDIAN(us)", "IQR(us)", "RSD", "STOP", "FLOP/s", "BYTES/s",
                  "%FMA CEIL",
                  "%BW CEIL (MIX)", "%DRAM PEAK", "VS BASELINE"], rows, "llrrrlrrrrrl")]
    for r in results:
        first, rt = r.first, r.rates
        if first is not None and first.of_baseline is not None and first.baseline_summary:
            rate = (si(first.baseline_flops_per_s, "FLOP/s") if first.baseline_flops_per_s
                    and rt.flops_per_s
                    and rt.bytes_per_s and rt.flops and rt.bytes and rt.flops >= rt.bytes
                    else si(first.baseline_bytes_per_s or 0, "B/s"))
            out.append(f"{r.kernel} {' '.join(f'{k}={v}' for k, v in r.sizes.items())}: "
                       f"{first.label} median {micros(first.baseline_summary.median)} us ({rate})"
                       + "".join(f", {e}" for e in _baseline_notes(first)))
        for more in r.others:
            if more.of_baseline and more.baseline_summary:
                ratio = more.of_baseline
                faster = f"{ratio:.2f}x faster than" if ratio >= 1 else f"{1 / ratio:.2f}x slower than"
                out.append(f"{r.kernel} {' '.join(f'{k}={v}' for k, v in r.sizes.items())}: "
                           f"{faster} {more.label} (median "
                           f"{micros(more.baseline_summary.median)} us"
                           + "".join(f", {n}" for n in _baseline_notes(more)) + ")")
        for w in r.warnings:
            out.append(f"warning: {r.kernel}: {w}")
        if r.message:
            out.append(f"{r.kernel}: {r.message}")
    if peak:
        out.append(ceilings_line(peak))
    mode = results[0].mode if results else "cold"
    timers = sorted({r.timer.name for r in results if r.timer.name})
    how = {"cupti": "the kernel's own GPU start and end (CUPTI activity records)",
           "events": "its own CUDA events around the launch"}
    timed = " and ".join(how.get(t, t) for t in timers) or "its own CUDA events around the launch"
    out.append(f"{mode} mode; median over samples, each timed by {timed}"
               + (f"; recorded as run {run_id} (kprof history, kprof compare)" if run_id else ""))
    for note in sorted({r.timer.note for r in results if r.timer.note}):
        out.append(f"note: CUPTI timing not used: {note}")
    return "\n".join(out)


def ceilings_line(peak: Ceilings) -> str:
    th = peak.theoretical
    measured = ", ".join(f"{k} {si(c.bytes_per_s, 'B/s')}" for k, c in peak.mixes.items())
    if not measured and peak.copy_bytes_per_s:
        measured = f"copy {si(peak.copy_bytes_per_s, 'B/s')}"
    theory = ", ".join(x
                       for x in (f"DRAM {si(th.dram_bytes_per_s, 'B/s')}" if th.dram_bytes_per_s
                                 else "",
                                 f"FP32 {si(th.fp32_flops_per_s, 'FLOP/s')}" if th.fp32_flops_per_s else "") if x)
    src = "cached " + peak.cached if peak.cached else "measured now"
    if peak.seconds is not None and not peak.cached:
        src += f" in {peak.seconds:.0f} s"
    fma = si(peak.fma_flops_per_s, "FLOP/s") if peak.fma_flops_per_s else "unknown"
    quick = "; quick: each mix once, no PyTorch op (`kprof peak` measures all)" if peak.quick else ""
    return (f"measured ceilings ({src}{quick}): {measured}, FP32 FMA {fma}"
            + (f"; theoretical peaks: {theory}" if theory else ""))


def peak_report(peak: Ceilings) -> str:
    took = f" in {peak.seconds:.0f} s" if peak.seconds is not None else ""
    src = f"cached in {peak.cached}" if peak.cached else f"measured now{took}"
    lines = [f"{peak.gpu or 'GPU'} (driver {peak.driver or '?'}), {src}, measured "
             f"{peak.measured or '?'}"]
    th = peak.theoretical
    dram, fp32 = th.dram_bytes_per_s, th.fp32_flops_per_s
    lines.append("theoretical peaks, from the device's attributes:")
    lines.append(f"  DRAM bandwidth  {si(dram, 'B/s') if dram else 'unknown'}  "
                 f"({th.formula('dram')})")
    lines.append(f"  FP32 rate       {si(fp32, 'FLOP/s') if fp32 else 'unknown'}  "
                 f"({th.formula('fp32')})")
    if th.tensor_flops_per_s:  # a peak file of an older kprof has none
        lines.append(f"  tensor, 16-bit  {si(th.tensor_flops_per_s, 'FLOP/s')}  (dense, FP32 "
                     f"accumulation, the fastest part of this architecture: {th.formula('tensor')})")
    if th.attributes:
        lines.append("  from " + "; ".join(f"{k} = {v}" for k, v in th.attributes))
    lines += [f"  note: {n}" for n in th.notes]
    lines.append("measured ceilings (cold; the best of kprof's stream kernels over the access "
                 "widths, grids and sizes tried, and of PyTorch's op of each "
                 "mix where it is installed):")
    for kind, c in peak.mixes.items():
        frac = f", {c.bytes_per_s / dram:.0%} of the DRAM peak" if dram else ""
        lines.append(f"  {kind:<6} {si(c.bytes_per_s, 'B/s'):>12}  by {c.by}{frac}")
    lines += [f"  not measured: {why}" for why in peak.not_measured]
    if peak.ops_note:
        lines.append(f"  note: {peak.ops_note}")
    if not peak.mixes and peak.copy_bytes_per_s:
        lines.append(f"  copy   {si(peak.copy_bytes_per_s, 'B/s'):>12}  (a peak file from an older "
                     "kprof: --refresh)")
    if peak.memcpy_bytes_per_s:
        lines.append(f"  device-to-device memcpy {si(peak.memcpy_bytes_per_s, 'B/s')} (timed by "
                     "CUDA events)")
    if peak.fma_flops_per_s:
        frac = f", {peak.fma_flops_per_s / fp32:.0%} of the FP32 peak" if fp32 else ""
        lines.append(f"  FP32 FMA {si(peak.fma_flops_per_s, 'FLOP/s'):>12}  by kprof_fma "
                     f"(warm){frac}")
    top = th.tensor_flops_per_s
    for r in peak.tensor:
        if r.flops_per_s:
            frac = f", {r.flops_per_s / top:.0%} of the dense 16-bit tensor peak" if top else ""
            lines.append(f"  tensor   {si(r.flops_per_s, 'FLOP/s'):>12}  by {r.by}{frac}")
        else:
            lines.append(f"  tensor   not measured by {r.name}: {r.not_measured}")
    width = terminal_width()
    return "\n".join(fit(lines, width, 4))


def history_table(rows: list[history.HistoryRow], where: str) -> str:
    if not rows:
        return f"no bench results yet in {where}"
    out = []
    for r in rows:
        point = " ".join(f"{k}={v}" for k, v in r.values.items())
        med = micros(r.summary.median) if r.summary else r.status
        out.append((r.run, r.kernel, point, med, r.commit or "-", r.gpu or "-"))
    return table(["RUN", "KERNEL", "POINT", "MEDIAN(us)", "COMMIT", "GPU"], out, "lllrll") + f"\n(store: {where})"


def compare_table(before: str, after: str, rows: list[history.RunChange]) -> str:
    body = [(r.kernel, " ".join(f"{k}={v}" for k, v in r.values.items()),
             micros(r.before_s), micros(r.after_s), f"{r.change:+.1%}", r.verdict) for r in rows]
    return f"before: {before}\nafter:  {after}\n" + table(
        ["KERNEL", "POINT", "BEFORE(us)", "AFTER(us)", "CHANGE", "VERDICT"], body, "llrrrl")


def bench_cases_list(rows: list[dict[str, Any]]) -> str:
    """``kprof cases --bench --list``: each cheat, its exploit, the flags that catch it."""
    return table(["CHEAT", "EXPLOIT", "CAUGHT BY"],
                 [(r["name"], cut(r["exploit"], 70), ", ".join(r["catch"]))
                   for r in rows], "lll")


def bench_cases_report(report: BenchCasesReport) -> str:
    """``kprof cases --bench``: caught or missed per cheat, by which flag, and the honest
    operation's flags."""
    rows = [(r.cheat.name, "caught" if r.caught else "MISSED", ", ".join(r.kinds) or "none",
             cut(r.cheat.exploit, 60))
            for r in report.results]
    caught = sum(r.caught for r in report.results)
    honest = ("the honest operation: no flag" if not report.honest else
              "the honest operation: FLAGGED (a false alarm): " + "; ".join(report.honest))
    return "\n".join([table(["CHEAT", "RESULT", "FLAGS", "EXPLOIT"], rows, "llll"), "",
                      f"{caught} of {len(report.results)} cheats caught; {honest}"])
