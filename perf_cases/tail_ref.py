"""tail_wave_template's reference: 64 steps of t = tanh(c (t + 0.044715 t^3)) / 2 + x / 2 from t = x."""

import numpy as np


def gelu_iter(x):
    x = np.asarray(x, dtype=np.float64)
    t = x.copy()
    for _ in range(64):
        t = np.tanh(0.7978845608 * (t + 0.044715 * t * t * t)) * 0.5 + 0.5 * x
    return t
