"""The reference of flash_attention.yaml and flash_attention_causal.yaml: softmax(Q K^T / sqrt(d)) V per
head in float64, of the bfloat16 values as stored (CAUSAL, the specs' define: query i sees keys 0 .. i), a
block of query rows at a time (a 4096-key row of logits is 32 KB; all of a head's at once would be 128 MB)."""

import numpy as np

ROWS = 1024


def attention(Q, K, V, CAUSAL):
    heads, seq, d = Q.shape
    out = np.empty((heads, seq, V.shape[-1]))
    for h in range(heads):
        for r0 in range(0, seq, ROWS):
            r1 = min(seq, r0 + ROWS)
            logits = Q[h, r0:r1] @ K[h].T / np.sqrt(d)
            if CAUSAL:  # query i sees keys 0 .. i
                logits[np.arange(r0, r1)[:, None] < np.arange(seq)[None, :]] = -np.inf
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            out[h, r0:r1] = (p / p.sum(axis=1, keepdims=True)) @ V[h]
    return out
