// reduce_sum: out += sum(x). Two levels: each thread sums a grid-stride slice, warps reduce
// with shuffles, one value per warp goes through shared memory to the first warp, and each block
// adds its total to *out with one atomic. The spec zeroes *out before the launch.
#define BLOCK 256
#define WARPS (BLOCK / 32)

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK) reduce_sum(const float* __restrict__ x,
                                                             float* __restrict__ out, long long n) {
    __shared__ float partial[WARPS];
    float acc = 0.0f;
    long long stride = (long long)gridDim.x * BLOCK;
    for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < n; i += stride) acc += x[i];
    acc = warp_sum(acc);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) partial[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < WARPS ? partial[lane] : 0.0f;
        acc = warp_sum(acc);
        if (lane == 0) atomicAdd(out, acc);
    }
}
