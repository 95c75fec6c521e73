// Test kernel: y = 2 * x with bfloat16 input and float32 output (bfloat16 support in specs).
#include <cuda_bf16.h>
extern "C" __global__ void scale_bf16(const __nv_bfloat16* x, float* y, __nv_bfloat16 factor, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __bfloat162float(x[i]) * __bfloat162float(factor);
}
