// FIXED: float math (0.999f), 16 FFMA an element.
extern "C" __global__ void fp64_memory(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
#pragma unroll
    for (int s = 0; s < 16; ++s) v = v * 0.999f + 0.001f;
    y[i] = v;
}
