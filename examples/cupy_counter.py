"""A race in global memory that no sanitizer sees (as DRACC's first case): 51,200 threads add one to
the same counter with a plain load and store, so most additions are lost, differently each run.

    kprof sanitize -- python examples/cupy_counter.py                  # the four tools: clean
    kprof sanitize --tool values -- python examples/cupy_counter.py    # the race, at the launch below
    kprof sanitize --tool values -- python examples/cupy_counter.py --fixed       # atomicAdd: clean
    kprof sanitize --tool values -- python examples/cupy_counter.py --float-sum   # a float sum by atomics:
                                                                        # nondeterministic on purpose, said
"""

import sys

import cupy as cp

MODE = "fixed" if "--fixed" in sys.argv else "float" if "--float-sum" in sys.argv else "racy"
SOURCE = r"""
extern "C" __global__ void count(int* counter, const float* x, float* total, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
#if MODE == 0
    counter[0] = counter[0] + 1;  // BUG: a load and a store, not one atomic addition
#elif MODE == 1
    atomicAdd(counter, 1);
#else
    atomicAdd(total, x[i]);  // a float sum whose order changes each run
#endif
}
"""


def main() -> None:
    mode = {"racy": 0, "fixed": 1, "float": 2}[MODE]
    kernel = cp.RawKernel(SOURCE, "count", options=("-lineinfo", f"-DMODE={mode}"))
    n = 51_200
    counter = cp.zeros(1, dtype=cp.int32)
    total = cp.zeros(1, dtype=cp.float32)
    x = cp.asarray(cp.random.default_rng(0).standard_normal(n, dtype=cp.float32))
    kernel(((n + 255) // 256,), (256,), (counter, x, total, cp.int32(n)))  # LAUNCH
    cp.cuda.Device().synchronize()
    print(f"counter {int(counter[0])} of {n}, total {float(total[0]):.6f}")


if __name__ == "__main__":
    main()
