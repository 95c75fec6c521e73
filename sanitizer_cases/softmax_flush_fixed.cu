// softmax_flush, fixed: every probability written as computed, however small.
#define BLOCK 256
#define WARPS (BLOCK / 32)

__device__ __forceinline__ float block_reduce(float v, bool is_max, float* shared) {
    for (int o = 16; o > 0; o >>= 1) {
        float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = shared[lane < WARPS ? lane : 0];
    if (lane >= WARPS) v = is_max ? -INFINITY : 0.0f;
    for (int o = 16; o > 0; o >>= 1) {
        float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    __syncthreads();  // shared is reused by the next reduction
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK) softmax(const float* __restrict__ x,
                                                          float* __restrict__ y, int rows, int cols) {
    __shared__ float shared[WARPS];
    const int row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, xr[c]);
    m = block_reduce(m, true, shared);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) s += __expf(xr[c] - m);
    s = block_reduce(s, false, shared);
    const float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += BLOCK) yr[c] = __expf(xr[c] - m) * inv;
}
