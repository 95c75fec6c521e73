// rmsnorm_onepass: y = x / sqrt(mean(x^2) + eps) * w, reading each x once: the row stays in
// registers (up to BLOCK * PER elements) between the sum of squares and the scaling. Longer rows
// fall back to a second read.
#ifndef BLOCK
#define BLOCK 1024
#endif
#ifndef PER
#define PER 8
#endif
#define WARPS (BLOCK / 32)

__device__ float block_sum(float v, float* shared) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < WARPS ? shared[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK) rmsnorm_onepass(const float* __restrict__ x,
                                                                   const float* __restrict__ w,
                                                                   float* __restrict__ y, int rows,
                                                                   int cols, float eps) {
    __shared__ float shared[WARPS];
    const int row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float ss = 0.0f;
    if (cols <= BLOCK * PER) {
        float v[PER];
#pragma unroll
        for (int j = 0; j < PER; ++j) {
            const int c = threadIdx.x + j * BLOCK;
            v[j] = c < cols ? xr[c] : 0.0f;
            ss += v[j] * v[j];
        }
        const float scale = rsqrtf(block_sum(ss, shared) / cols + eps);
#pragma unroll
        for (int j = 0; j < PER; ++j) {
            const int c = threadIdx.x + j * BLOCK;
            if (c < cols) yr[c] = v[j] * scale * w[c];
        }
    } else {
        for (int c = threadIdx.x; c < cols; c += BLOCK) ss += xr[c] * xr[c];
        const float scale = rsqrtf(block_sum(ss, shared) / cols + eps);
        for (int c = threadIdx.x; c < cols; c += BLOCK) yr[c] = xr[c] * scale * w[c];
    }
}
