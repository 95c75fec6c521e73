"""Triton operations for kprof's Python-operation specs (tests/test_gpu_frameworks.py)."""

import triton
import triton.language as tl


@triton.jit
def _scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr, MASK_STORE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if MASK_STORE:
        tl.store(y_ptr + offs, x * 2.0, mask=mask)
    else:
        tl.store(y_ptr + offs, x * 2.0)  # BUG: no mask, the last block writes past the end of y


def scale(x, y, N):
    _scale[(triton.cdiv(N, 256),)](x, y, N, BLOCK=256, MASK_STORE=True)


def scale_unmasked(x, y, N):
    _scale[(triton.cdiv(N, 256),)](x, y, N, BLOCK=256, MASK_STORE=False)
