"""Roofline pictures (optional: ``pip install "kprof[plot]"`` brings matplotlib)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kprof import outputs
from kprof.errors import UsageError

if TYPE_CHECKING:
    from kprof.measure.kernelprofile import KernelProfile
    from kprof.measure.points import BaselineResult, PointResult


def require(path: str | Path | None = None) -> None:
    """matplotlib is there and draws ``path``'s kind of file (its suffix; none: PNG): one line
    before anything runs, so a run is never measured and then lost to ``--plot roofline.jpg2``."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError('--plot needs matplotlib: pip install "kprof[plot]"') from None
    if path is None:
        return
    from matplotlib.backend_bases import FigureCanvasBase

    kinds = FigureCanvasBase.get_supported_filetypes()
    suffix = Path(path).suffix[1:].lower() or "png"
    if suffix not in kinds:
        raise UsageError(f"--plot {Path(path).name[:100]}: matplotlib draws no .{suffix[:20]} "
                         "file; name a .png, .svg or .pdf file (or "
                         f"{', '.join('.' + k for k in sorted(kinds) if k not in ('png', 'svg', 'pdf'))})")


def roofline(profiles: list[KernelProfile], path: Path) -> Path:
    """Log-log roofline: the memory roof, the compute roof of each kind of math among the kernels
    (FP32; the dense 16-bit tensor peak for a spec with ``work.math: tensor``), each kernel as a
    labelled point."""
    require()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # math -> (peak FLOP/s, peak bytes/s), the first profile's of each
    roofs: dict[str, tuple[float, float]] = {}
    for p in profiles:
        if p.roofline.peak_flops and p.roofline.peak_bytes:
            roofs.setdefault(p.math, (p.roofline.peak_flops, p.roofline.peak_bytes))
    points = [(p.kernel, p.roofline.intensity, p.compute.flops_per_s) for p in profiles
              if p.roofline.intensity and p.compute.flops_per_s]
    fig, ax = plt.subplots(figsize=(8, 5.5))
    if roofs:
        peak_bytes = next(iter(roofs.values()))[1]
        ridges = [f / b for f, b in roofs.values()]
        xs = [min([min(ridges) / 100] + [x / 3 for _, x, _ in points]),
              max([max(ridges) * 100] + [x * 3 for _, x, _ in points])]
        top = max(f for f, _ in roofs.values())
        ax.plot([xs[0], top / peak_bytes], [xs[0] * peak_bytes, top], color="tab:blue",
                label=f"DRAM {peak_bytes / 1e12:.2f} TB/s")
        names = {"fp32": ("FP32", "tab:red"), "tensor": ("dense 16-bit tensor", "tab:purple")}
        for math, (peak_flops, _) in roofs.items():
            name, color = names.get(math, (math, "tab:gray"))
            ax.plot([peak_flops / peak_bytes, xs[1]], [peak_flops, peak_flops], color=color,
                    label=f"{name} {peak_flops / 1e12:.1f} TFLOP/s")
    for name, x, y in points:
        ax.scatter([x], [y], zorder=3)
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(6, 4))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("FLOP/s")
    ax.set_title("Roofline (ceilings from ncu's peak metrics; points measured by ncu)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right")
    return _save(fig, path)


def bench(results: list[PointResult], path: Path) -> Path:
    """Throughput against the swept variable, one line per kernel and one per baseline."""
    require()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in results if r.status == "ok"]
    # FLOP/s for arithmetic-heavy kernels, bytes/s for the rest (vector_add does 1 FLOP per 12
    # bytes).
    use_flops = all(r.rates.flops_per_s for r in ok) and all(
        r.rates.flops and (not r.rates.bytes or r.rates.flops / r.rates.bytes >= 1) for r in ok)
    swept = _swept(ok)
    if swept is None and ok:  # one point per kernel (a ladder at one size): bars, not lines
        return _bars(ok, use_flops, path, plt)
    fig, ax = plt.subplots(figsize=(8, 5))
    # Anything else that varies (a second swept size, say) makes its own line: "K=1024 N=1024".
    together = set((_label(ok, swept) or swept or "").split("="))
    others = [k
              for k in sorted({k for r in ok for k in r.sizes} | {k for r in ok for k in r.params})
              if k not in together and len({str(r.sizes.get(k, r.params.get(k))) for r in ok}) > 1]

    def group(r: PointResult) -> str:
        return " ".join(f"{k}={r.sizes.get(k, r.params.get(k))}" for k in others)

    drawn: set[str] = set()
    for name in dict.fromkeys(r.kernel for r in ok):
        for g in dict.fromkeys(group(r) for r in ok if r.kernel == name):
            mine = [r for r in ok if r.kernel == name and group(r) == g]
            xs = [_x(r, swept) for r in mine]
            ys = [(_rate(r, use_flops) or 0) / 1e9 for r in mine]
            line = ax.plot(xs, ys, marker="o", label=f"{name} {g}".rstrip())[0]
            base = [(r, b, rate) for r in mine if (b := r.first)
                    and (rate := _baseline_rate(b, use_flops))]
            key = f"{base[0][1].baseline} {g}" if base else ""
            if base and key not in drawn:  # one line per baseline (and group), not per kernel
                drawn.add(key)
                ax.plot([_x(r, swept) for r, _, _ in base], [rate / 1e9 for _, _, rate in base],
                        marker="x", linestyle="--", color=line.get_color() if others else None,
                        label=f"{base[0][1].baseline} {g} (timed beside {name})".replace("  ", " "))
    ax.set_xlabel(_label(ok, swept) or "point")
    ax.set_ylabel("GFLOP/s" if use_flops else "GB/s")
    ax.set_title("kprof bench: median over samples")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best")
    return _save(fig, path)


def _rate(r: PointResult, use_flops: bool) -> float | None:
    return r.rates.flops_per_s if use_flops else r.rates.bytes_per_s


def _baseline_rate(b: BaselineResult, use_flops: bool) -> float | None:
    """The kernel's own work over the baseline's time, in the plot's unit."""
    return b.baseline_flops_per_s if use_flops else b.baseline_bytes_per_s


def _bars(ok: list[PointResult], use_flops: bool, path: Path, plt: Any) -> Path:
    """Each kernel's throughput as a bar, its baseline (timed beside it) as a hatched bar after
    it."""
    unit = "GFLOP/s" if use_flops else "GB/s"
    labels, values, colors = [], [], []
    base: dict[str, tuple[str, float]] = {}
    for r in ok:
        labels.append(r.kernel + (" [" + " ".join(f"{k}={v}" for k, v in r.params.items()) + "]"
                                  if r.params else ""))
        values.append((_rate(r, use_flops) or 0) / 1e9)
        colors.append("tab:blue")
        first = r.first
        rate = _baseline_rate(first, use_flops) if first else None
        if first and rate and first.baseline not in base:  # one bar per baseline, after the kernels
            base[first.baseline] = (f"{first.baseline} (timed beside {r.kernel})", rate / 1e9)
    for label, value in base.values():
        labels.append(label)
        values.append(value)
        colors.append("tab:gray")
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(labels) + 1.5))
    ax.barh(range(len(labels)), values, color=colors)
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    for i, v in enumerate(values):
        ax.text(v, i, f" {v:,.0f}", va="center")
    ax.set_xlabel(unit)
    point = " ".join(f"{k}={v}" for k, v in ok[0].sizes.items())
    ax.set_title(f"kprof bench, {point} (medians)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_xlim(0, max(values) * 1.15 if values else 1)
    return _save(fig, path)


def _swept(results: list[PointResult]) -> str | None:
    for attr in ("params", "sizes"):
        keys = {k for r in results for k in getattr(r, attr)}
        for k in sorted(keys):
            if len({str(getattr(r, attr).get(k)) for r in results}) > 1:
                return str(k)
    return None


def _label(results: list[PointResult], swept: str | None) -> str | None:
    """``M=N=K`` when several sizes move together."""
    if swept is None:
        return None
    together = [k for k in sorted({k for r in results for k in r.sizes})
                if [r.sizes.get(k) for r in results] == [r.sizes.get(swept, r.params.get(swept))
                                                         for r in results]]
    return "=".join(together) if len(together) > 1 else swept


def _x(r: PointResult, swept: str | None) -> int | str:
    if swept is None:
        return 0
    v = r.params.get(swept, r.sizes.get(swept))
    try:
        return int(str(v))
    except (TypeError, ValueError):
        return str(v)


def _save(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    # drawn whole first, then written the way every output is (kprof.outputs.replace_file)
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, dpi=120, format=path.suffix[1:].lower() or "png")
    except ValueError as exc:  # a suffix matplotlib has no writer for
        raise UsageError(f"--plot {path}: {exc}; name a .png, .svg or .pdf file") from None
    finally:
        plt.close(fig)
    outputs.replace_file(path, buffer.getvalue())
    return path
