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
__global__ void next_diff(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#if FIXED
    if (i + 1 < n) y[i] = x[i + 1] - x[i];
#else
    if (i < n) y[i] = x[i + 1] - x[i];  // BUG: i == n - 1 reads x[n]
#endif
}

torch::Tensor next_diff_op(torch::Tensor x) {
    auto y = torch::zeros_like(x);
    int n = x.numel();
    next_diff<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

module = load_inline(name=f"kprof_next_diff_{int(FIXED)}", cpp_sources="torch::Tensor next_diff_op(torch::Tensor x);",
                     cuda_sources=CUDA, functions=["next_diff_op"],
                     extra_cuda_cflags=["-lineinfo", f"-DFIXED={int(FIXED)}"], verbose=False)
x = torch.arange(1000, dtype=torch.float32, device="cuda")
y = module.next_diff_op(x)  # LAUNCH
torch.cuda.synchronize()
print(f"sum of differences {float(y.sum()):.1f}")
