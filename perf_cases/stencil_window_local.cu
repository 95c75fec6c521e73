// A 1-D 17-point stencil that copies each thread's window into a small array and picks from it with an
// index known only at run time (the window's rotation), so the array lives in local memory.
#define R 8

extern "C" __global__ void stencil7(const float* __restrict__ x, float* __restrict__ y, int n, int rot) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < R || i >= n - R) {
        if (i < n) y[i] = x[i];
        return;
    }
    float w[2 * R + 1];
#pragma unroll 1
    for (int k = 0; k < 2 * R + 1; ++k) w[k] = x[i - R + k];
    float s = 0.0f;
#pragma unroll 1
    for (int k = 0; k < 2 * R + 1; ++k) s += w[(k + rot) % (2 * R + 1)];  // PERF: an index known at run time puts w in local memory
    y[i] = s * (1.0f / (2 * R + 1));
}
