// FIXED: float constants (0.999f), so the loop is FP32 math.
extern "C" __global__ void fp64_constants(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
#pragma unroll 1
    for (int s = 0; s < 64; ++s) v = v * 0.999f + 0.001f;
    y[i] = v;
}
