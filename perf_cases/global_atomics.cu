// A 64-bin histogram where every element is one atomicAdd on global memory: 16 million atomics
// land on 64 addresses, and the L2 slices that own them serialise them.
extern "C" __global__ void global_atomics(const int* x, int* hist, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        atomicAdd(&hist[x[i] & 63], 1);  // PERF: every element an atomic on one of 64 global addresses
    }
}
