"""A Triton kernel under PyTorch whose store has no mask: the last block writes past the end of y.

    kprof sanitize -- python examples/triton_scale.py           # the bug: an out-of-bounds write
    kprof sanitize -- python examples/triton_scale.py --fixed   # the clean control

Run by hand, ``compute-sanitizer python examples/triton_scale.py`` reports nothing: the write
lands inside PyTorch's caching allocator's pool. kprof turns the pool off.
"""

import sys

import torch
import triton
import triton.language as tl

FIXED = "--fixed" in sys.argv


@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr, MASK_STORE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if MASK_STORE:
        tl.store(y_ptr + offs, x * 2.0, mask=mask)
    else:
        tl.store(y_ptr + offs, x * 2.0)  # BUG: no mask, the last block writes past the end of y


def main() -> None:
    n = 1000
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    scale[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256, MASK_STORE=FIXED)
    torch.cuda.synchronize()
    assert torch.allclose(y, 2 * x)


# The same kernel as Python operations for a kprof spec (python: triton_scale.py:scale_op): kprof run,
# bench and sanitize them on kprof's own buffers (tests/data/kernels/triton_scale.yaml).
def scale_op(x, y, N):
    scale[(triton.cdiv(N, 256),)](x, y, N, BLOCK=256, MASK_STORE=True)


def scale_op_unmasked(x, y, N):
    scale[(triton.cdiv(N, 256),)](x, y, N, BLOCK=256, MASK_STORE=False)


if __name__ == "__main__":
    main()
