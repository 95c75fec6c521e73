// FIXED: the shared array is as large as the block uses, so sixteen blocks (64 warps) fit an SM.
extern "C" __global__ void occupancy_shared(const int* next, float* y, int n) {
    __shared__ float scratch[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = i < n ? (i & ~31) : 0;
#pragma unroll 1
    for (int s = 0; s < 64; ++s) j = next[j];
    scratch[threadIdx.x] = (float)((j + threadIdx.x) & 1023);
    __syncthreads();
    if (i < n) y[i] = scratch[threadIdx.x ^ 1];
}
