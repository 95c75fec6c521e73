extern "C" __global__ void softmax_missing_sync(const float* x, float* y, int cols) {
    __shared__ float warp_max[8];
    const float* xr = x + blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = m;
    __syncthreads();  // FIXED
    float row_max = -INFINITY;
    for (int w = 0; w < 8; ++w) row_max = fmaxf(row_max, warp_max[w]);
    __syncthreads();
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(xr[c] - row_max);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    __shared__ float warp_sum[8];
    if ((threadIdx.x & 31) == 0) warp_sum[threadIdx.x >> 5] = s;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < 8; ++w) total += warp_sum[w];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) y[blockIdx.x * cols + c] = __expf(xr[c] - row_max) / total;
}
