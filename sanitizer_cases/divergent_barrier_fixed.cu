extern "C" __global__ void divergent_barrier(const float* x, float* y, int n) {
    __shared__ float s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    s[threadIdx.x] = v > 0.0f ? v : 0.0f;
    __syncthreads();  // FIXED: every thread of the block reaches the same barrier
    if (i < n) y[i] = 2.0f * s[threadIdx.x];
}
