extern "C" __global__ void early_return_barrier(const float* x, float* y, int n) {
    __shared__ float s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;  // FIXED: every thread reaches the barrier
    __syncthreads();
    if (i < n) y[i] = 2.0f * s[threadIdx.x];
}
