"""stencil_window_local's reference: the mean of each element's 17-point window, the 8 elements at each end copied."""

import numpy as np


def mean17(x):
    x = np.asarray(x, dtype=np.float64)
    y = x.copy()
    y[8:-8] = np.lib.stride_tricks.sliding_window_view(x, 17).mean(axis=1)
    return y
