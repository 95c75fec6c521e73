"""References of the pointer-chasing performance cases: 64 steps of j = next[j] from each index,
and the weighted sum of sin(x + k), k = 0 .. 95."""

import numpy as np


def chase(next):
    nxt = np.asarray(next)
    j = np.arange(nxt.size)
    for _ in range(64):
        j = nxt[j]
    return j


def weighted_sines(x):
    x = np.asarray(x, dtype=np.float64)
    return sum(np.sin(x + k) * (k + 1) for k in range(96))


def neighbour_chase(next):
    """One chain a warp, from its first index: y[i] = (the chain's end + the neighbour's lane in a block
    of 128) & 1023, each thread reading its neighbour's slot."""
    nxt = np.asarray(next)
    i = np.arange(nxt.size)
    j = i & ~31
    for _ in range(64):
        j = nxt[j]
    return ((j + ((i ^ 1) & 127)) & 1023).astype(np.float64)
