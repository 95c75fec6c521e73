"""Roofline pictures (optional: ``pip install "kprof[plot]"`` brings matplotlib)."""

from __future__ import annotations

from pathlib import Path

from kprof.errors import UsageError


def require() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError('--plot needs matplotlib: pip install "kprof[plot]"') from None


def roofline(profiles: list, path: Path) -> Path:
    """Log-log roofline: the memory roof, the FP32 roof, each kernel as a labelled point."""
    require()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    peaks = [(p.roofline.peak_flops, p.roofline.peak_bytes) for p in profiles
             if p.roofline.peak_flops and p.roofline.peak_bytes]
    points = [p for p in profiles if p.roofline.intensity and p.flops_per_s]
    fig, ax = plt.subplots(figsize=(8, 5.5))
    if peaks:
        peak_flops, peak_bytes = peaks[0]
        ridge = peak_flops / peak_bytes
        xs = [min([ridge / 100] + [p.roofline.intensity / 3 for p in points]),
              max([ridge * 100] + [p.roofline.intensity * 3 for p in points])]
        ax.plot([xs[0], ridge], [xs[0] * peak_bytes, peak_flops], color="tab:blue",
                label=f"DRAM {peak_bytes / 1e12:.2f} TB/s")
        ax.plot([ridge, xs[1]], [peak_flops, peak_flops], color="tab:red", label=f"FP32 {peak_flops / 1e12:.1f} TFLOP/s")
    for p in points:
        ax.scatter([p.roofline.intensity], [p.flops_per_s], zorder=3)
        ax.annotate(p.kernel, (p.roofline.intensity, p.flops_per_s), textcoords="offset points", xytext=(6, 4))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("FLOP/s")
    ax.set_title("Roofline (ceilings from ncu's peak metrics; points measured by ncu)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right")
    return _save(fig, path)


def bench(results: list, path: Path) -> Path:
    """Throughput against the swept variable, one line per kernel and one per baseline."""
    require()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in results if r.status == "ok"]
    # FLOP/s for arithmetic-heavy kernels, bytes/s for the rest (vector_add does 1 FLOP per 12 bytes).
    use_flops = all(r.flops_per_s for r in ok) and all(r.flops and (not r.bytes or r.flops / r.bytes >= 1) for r in ok)
    swept = _swept(ok)
    fig, ax = plt.subplots(figsize=(8, 5))
    drawn: set[str] = set()
    for name in dict.fromkeys(r.kernel for r in ok):
        mine = [r for r in ok if r.kernel == name]
        xs = [_x(r, swept) for r in mine]
        ys = [((r.flops_per_s if use_flops else r.bytes_per_s) or 0) / 1e9 for r in mine]
        ax.plot(xs, ys, marker="o", label=name)
        rate = "baseline_flops_per_s" if use_flops else "baseline_bytes_per_s"
        base = [r for r in mine if getattr(r, rate, None)]
        if base and base[0].baseline not in drawn:  # one line per baseline, not per kernel
            drawn.add(base[0].baseline)
            ax.plot([_x(r, swept) for r in base], [getattr(r, rate) / 1e9 for r in base], marker="x",
                    linestyle="--", label=f"{base[0].baseline} (timed beside {name})")
    ax.set_xlabel(_label(ok, swept) or "point")
    ax.set_ylabel("GFLOP/s" if use_flops else "GB/s")
    ax.set_title("kprof bench: median over samples")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best")
    return _save(fig, path)


def _swept(results: list) -> str | None:
    for attr in ("params", "sizes"):
        keys = {k for r in results for k in getattr(r, attr)}
        for k in sorted(keys):
            if len({str(getattr(r, attr).get(k)) for r in results}) > 1:
                return k
    return None


def _label(results: list, swept: str | None) -> str | None:
    """``M=N=K`` when several sizes move together."""
    if swept is None:
        return None
    together = [k for k in sorted({k for r in results for k in r.sizes})
                if [r.sizes.get(k) for r in results] == [r.sizes.get(swept, r.params.get(swept)) for r in results]]
    return "=".join(together) if len(together) > 1 else swept


def _x(r, swept: str | None):
    if swept is None:
        return 0
    v = r.params.get(swept, r.sizes.get(swept))
    try:
        return int(v)
    except (TypeError, ValueError):
        return v


def _save(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as exc:
        raise UsageError(f"--plot {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
    return path
