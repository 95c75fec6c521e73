"""A write to device-heap memory after it was freed: a kernel mallocs from the device heap, frees it,
then writes to it.

    kprof sanitize --tool memcheck -- python examples/cupy_heap.py
"""

import cupy as cp

SOURCE = r"""
extern "C" __global__ void use_after_free(int* out) {
    int* scratch = (int*)malloc(16 * sizeof(int));
    if (scratch == nullptr) return;
    scratch[0] = 7;
    free(scratch);
    scratch[1] = 8;  // BUG: the memory was freed on the line above
    out[0] = 1;
}
"""

kernel = cp.RawKernel(SOURCE, "use_after_free", options=("-lineinfo",))
out = cp.zeros(1, dtype=cp.int32)
kernel((1,), (1,), (out,))  # LAUNCH
cp.cuda.Device().synchronize()
