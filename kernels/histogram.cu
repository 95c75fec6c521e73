// histogram: hist[b] += the number of x[i] equal to b, for values 0 .. BINS-1. Each block counts its
// slice in shared memory (atomics on shared memory are cheap), then adds its counts to the global
// histogram once per bin. Integer counts: the verdict is exact.
extern "C" __global__ void histogram(const int* __restrict__ x, int* __restrict__ hist, long long n) {
    __shared__ int local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
        local[b] = 0;
    }
    __syncthreads();
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int v = x[i];
        if (v >= 0 && v < BINS) {
            atomicAdd(&local[v], 1);
        }
    }
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
        if (local[b] != 0) {
            atomicAdd(&hist[b], local[b]);
        }
    }
}
