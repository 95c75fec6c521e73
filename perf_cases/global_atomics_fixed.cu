// FIXED: each block counts into shared memory, then adds its 64 counts to the global histogram.
extern "C" __global__ void global_atomics(const int* x, int* hist, long long n) {
    __shared__ int local[64];
    if (threadIdx.x < 64) local[threadIdx.x] = 0;
    __syncthreads();
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        atomicAdd(&local[x[i] & 63], 1);
    }
    __syncthreads();
    if (threadIdx.x < 64 && local[threadIdx.x] != 0) atomicAdd(&hist[threadIdx.x], local[threadIdx.x]);
}
