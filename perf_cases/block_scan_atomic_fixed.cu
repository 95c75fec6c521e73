#define B 1024

extern "C" __global__ void scan_blocks(const float* __restrict__ x, float* __restrict__ y, float* total) {
    __shared__ float s[B];
    int t = threadIdx.x;
    size_t i = (size_t)blockIdx.x * B + t;
    s[t] = x[i];
    __syncthreads();
    for (int off = 1; off < B; off *= 2) {
        float v = t >= off ? s[t - off] : 0.0f;
        __syncthreads();
        s[t] += v;
        __syncthreads();
    }
    y[i] = s[t];
    if (t == B - 1) atomicAdd(total, s[t]);  // FIXED: the block's sum, one atomic a block
}
