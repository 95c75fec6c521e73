"""divergent_halves' reference: sum over k = 0 .. 47 of x^(47 - k) / (k + 1) (both formulas of the kernel)."""

import numpy as np


def poly48(x):
    x = np.asarray(x, dtype=np.float64)
    return sum(x ** (47 - k) / (k + 1) for k in range(48))
