// rmsnorm: y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w. Fused: one block per row sums
// the squares (warp shuffles, then one value per warp through shared memory), and the same block
// scales the row, so the row is read from DRAM once and written once (the second read hits L1/L2).
#define BLOCK 256
#define WARPS (BLOCK / 32)

extern "C" __global__ void __launch_bounds__(BLOCK) rmsnorm(const float* __restrict__ x,
                                                          const float* __restrict__ w,
                                                          float* __restrict__ y, int rows,
                                                          int cols, float eps) {
    __shared__ float partial[WARPS];
    __shared__ float scale;
    const int row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) ss += xr[c] * xr[c];
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_down_sync(0xffffffffu, ss, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) partial[warp] = ss;
    __syncthreads();
    if (warp == 0) {
        ss = lane < WARPS ? partial[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_down_sync(0xffffffffu, ss, o);
        if (lane == 0) scale = rsqrtf(ss / cols + eps);
    }
    __syncthreads();
    const float s = scale;
    for (int c = threadIdx.x; c < cols; c += BLOCK) yr[c] = xr[c] * s * w[c];
}
