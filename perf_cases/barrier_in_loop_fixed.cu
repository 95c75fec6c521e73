// FIXED: no barrier in the loop (each thread works on its own value).
extern "C" __global__ void barrier_in_loop(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
#pragma unroll 1
    for (int s = 0; s < 512; ++s) v = v * 0.999f + 0.001f;
    if (i < n) y[i] = v;
}
