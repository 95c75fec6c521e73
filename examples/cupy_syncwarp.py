"""A warp synchronisation with a bad mask: every lane of the warp calls ``__syncwarp`` with a mask that
leaves out half of them (the mask must name every calling lane). The tools report it inside CUDA's
header (``sm_30_intrinsics.hpp``); the line that called it is below.

    kprof sanitize --tool synccheck -- python examples/cupy_syncwarp.py
"""

import cupy as cp

SOURCE = r"""
extern "C" __global__ void half_mask(float* x) {
    x[threadIdx.x] += 1.0f;
    __syncwarp(0x0000ffff);  // BUG: lanes 16 to 31 call it too, and are not in the mask
    x[threadIdx.x] *= 2.0f;
}
"""

kernel = cp.RawKernel(SOURCE, "half_mask", options=("-lineinfo",))
x = cp.zeros(32, dtype=cp.float32)
kernel((1,), (32,), (x,))  # LAUNCH
cp.cuda.Device().synchronize()
