// A latency-bound chain of dependent loads, one chain a warp (its lanes follow the same indices),
// in blocks of 128 threads that each declare a 48 KiB shared array while using 512 bytes of it:
// four blocks fit an SM's shared memory, so 16 loads are in flight an SM where 64 warps could hold 64.
extern "C" __global__ void occupancy_shared(const int* next, float* y, int n) {
    __shared__ float scratch[12288];  // PERF: 48 KiB a block, 512 bytes of it used
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = i < n ? (i & ~31) : 0;  // the warp's first lane starts the chain
#pragma unroll 1
    for (int s = 0; s < 64; ++s) j = next[j];
    scratch[threadIdx.x] = (float)((j + threadIdx.x) & 1023);
    __syncthreads();
    if (i < n) y[i] = scratch[threadIdx.x ^ 1];
}
