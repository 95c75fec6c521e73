"""A PyTorch extension built with ``torch.utils.cpp_extension.load_inline`` whose kernel reads one
element past the end of its input: torch writes the CUDA source to ``<build folder>/cuda.cu`` and builds
it there; memcheck reports that file's line, and kprof says it is the file torch generated from the
string below.

    kprof sanitize --tool memcheck -- python examples/torch_extension.py           # the read, in cuda.cu
    kprof sanitize --tool memcheck -- python examples/torch_extension.py --fixed   # the clean control

The first run builds the extension (about a minute; torch keeps it under ~/.cache/torch_extensions).
"""

import sys

import torch
from torch.utils.cpp_extension import load_inline

FIXED = "--fixed" in sys.argv
CUDA = r"""
__global__ void next_diff(const float* x, float* y, int n, int last) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < last) y[i] = x[i + 1] - x[i];  // BUG: last == n lets i == n - 1 read x[n]
}

torch::Tensor next_diff_op(torch::Tensor x, bool fixed) {
    auto y = torch::zeros_like(x);
    int n = x.numel();
    next_diff<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n, fixed ? n - 1 : n);
    return y;
}
"""

# One extension for both runs (the bound is an argument): the clean control loads the first run's build.
module = load_inline(name="kprof_next_diff", cpp_sources="torch::Tensor next_diff_op(torch::Tensor x, bool fixed);",
                     cuda_sources=CUDA, functions=["next_diff_op"], extra_cuda_cflags=["-lineinfo"], verbose=False)
x = torch.arange(1000, dtype=torch.float32, device="cuda")
y = module.next_diff_op(x, FIXED)  # LAUNCH
torch.cuda.synchronize()
print(f"sum of differences {float(y.sum()):.1f}")
