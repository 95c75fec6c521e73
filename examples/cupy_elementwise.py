"""A CuPy ElementwiseKernel that reads one element past its input (``x[i + 1]`` for the last ``i``): CuPy
generates the kernel's source from these pieces and deletes its copy, so kprof names the call below.

    kprof sanitize --tool memcheck -- python examples/cupy_elementwise.py
"""

import cupy as cp

shift = cp.ElementwiseKernel("raw float32 x", "float32 y", "y = x[i + 1]", "shift_next", options=("-lineinfo",))
x = cp.arange(1000, dtype=cp.float32)
y = cp.empty(1000, dtype=cp.float32)
shift(x, y)  # LAUNCH: y[999] reads x[1000], past the end
cp.cuda.Device().synchronize()
