// __syncthreads() inside a data-dependent branch: only the threads with a positive input reach
// it, so lanes of one warp arrive at different barriers.
extern "C" __global__ void divergent_barrier(const float* x, float* y, int n) {
    __shared__ float s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    if (v > 0.0f) {
        s[threadIdx.x] = v;
        __syncthreads();  // BUG: a barrier in divergent code
    } else {
        s[threadIdx.x] = 0.0f;
    }
    if (i < n) y[i] = 2.0f * s[threadIdx.x];
}
