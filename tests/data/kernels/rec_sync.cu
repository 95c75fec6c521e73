// Recording kernel: __syncthreads() reached by only some lanes of a warp (synccheck).
extern "C" __global__ void rec_sync(const float* x, float* out, int n) {
    __shared__ float s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    if (threadIdx.x % 2 == 0) {
        __syncthreads();
    }
    if (i < n) out[i] = s[threadIdx.x];
}
