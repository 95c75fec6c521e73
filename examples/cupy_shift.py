"""A CuPy RawKernel that reads one element past the end of its input (i + 1 for the last i).

    kprof sanitize --tool memcheck -- python examples/cupy_shift.py           # the out-of-bounds read
    kprof sanitize --tool memcheck -- python examples/cupy_shift.py --fixed   # the clean control

By hand, memcheck sees nothing: the read lands inside CuPy's memory pool. kprof turns the pool off.
"""

import sys

import cupy as cp

FIXED = "--fixed" in sys.argv
SOURCE = r"""
extern "C" __global__ void forward_diff(const float* x, float* d, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float next = (FIXED || i + 1 < n) ? x[i + 1 < n ? i + 1 : i] : x[i + 1];  // BUG unless FIXED
        d[i] = next - x[i];
    }
}
"""


def main() -> None:
    kernel = cp.RawKernel(SOURCE, "forward_diff", options=("-lineinfo", f"-DFIXED={int(FIXED)}"))
    n = 1000
    x = cp.arange(n, dtype=cp.float32)
    d = cp.empty_like(x)
    kernel(((n + 255) // 256,), (256,), (x, d, cp.int32(n)))
    cp.cuda.Device().synchronize()
    assert float(d[:-1].sum()) == n - 1


if __name__ == "__main__":
    main()
