// Threads past the end return early, then the rest wait at __syncthreads(): with n not a
// multiple of 32, part of a warp never reaches the barrier.
extern "C" __global__ void early_return_barrier(const float* x, float* y, int n) {
    __shared__ float s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    s[threadIdx.x] = x[i];
    __syncthreads();  // BUG: threads that returned above never arrive here
    y[i] = 2.0f * s[threadIdx.x];
}
