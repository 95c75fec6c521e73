// A block-wide shared-memory sum. Without its barrier (BARRIER 0) a thread reads its neighbour's
// partial sum before the neighbour wrote it: a race racecheck reports at the two lines below.
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) {
            s[threadIdx.x] += s[threadIdx.x + stride];
        }
#if BARRIER
        __syncthreads();
#endif
    }
    if (threadIdx.x == 0) {
        atomicAdd(out, s[0]);
    }
}
