// A scan of each block's 1,024 elements in shared memory (Hillis-Steele), and the grand total kept in
// one global counter, to which every thread adds its own element.
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
    atomicAdd(total, x[i]);  // PERF: every element one atomic on one address
}
