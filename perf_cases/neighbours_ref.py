"""Reference of the neighbour-list case: out[i] = sum over i's 32 neighbours j of
pos[j].x + 2 pos[j].y + 3 pos[j].z + 4 pos[j].w."""

import numpy as np


def weighted_sum(pos, nbr):
    p = np.asarray(pos, dtype=np.float64).reshape(-1, 4) @ np.array([1.0, 2.0, 3.0, 4.0])
    idx = np.asarray(nbr)
    return sum(p[idx[k]] for k in range(idx.shape[0]))
