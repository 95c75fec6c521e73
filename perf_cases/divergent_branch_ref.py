"""The reference of divergent_branch.yaml: 256 steps of one map for odd elements, another for even."""

import numpy as np


def paths(x):
    x = np.asarray(x, dtype=np.float64)
    odd = x.copy()
    even = x.copy()
    for _ in range(256):
        odd = odd * 0.999 + 0.001
        even = even * even * 0.5 + 0.25
    return np.where(np.arange(x.size) % 2 == 1, odd, even)
