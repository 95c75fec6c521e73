"""An NVRTC program whose source is a string in this file and whose program name is a bare file name, as
many cuda-python programs write it: compute-sanitizer names the file after the program (under the
working folder, where no such file is); kprof reports this file's line.

    kprof sanitize --tool racecheck -- python examples/nvrtc_inline.py           # the race, at the line below
    kprof sanitize --tool racecheck -- python examples/nvrtc_inline.py --fixed   # the clean control
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cuda_python_sum import main

KERNEL = r"""
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
#if BARRIER
    __syncthreads();
#endif
    if (threadIdx.x == 0) {
        float total = 0.0f;
        for (int k = 0; k < blockDim.x; ++k) total += s[k];  // BUG without BARRIER: read before the others wrote
        atomicAdd(out, total);
    }
}
"""

if __name__ == "__main__":
    main(KERNEL.encode(), b"block_sum.cu")
