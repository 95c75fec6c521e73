"""Numbers with SI prefixes, as every report prints them: ``si(4.25e12, "B/s")`` -> ``4.25 TB/s``.
Pure."""

from __future__ import annotations


def si(value: float, unit: str) -> str:
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            # past 1000 of the largest prefix (a tensor peak of 1070 TFLOP/s): whole units, no
            # exponent
            x = value / factor
            return f"{x:.3g} {prefix}{unit}" if abs(x) < 1000 else f"{x:.0f} {prefix}{unit}"
    return f"{value:.3g} {unit}"
