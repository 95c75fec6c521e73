// reduce_sum_vec4: out += sum(x) with 16-byte loads, four independent accumulators per thread so
// several loads are in flight, a grid sized to the GPU, then warp shuffles, one value per warp
// through shared memory, and one atomic per block. The spec zeroes *out before the launch.
#define BLOCK 256
#define WARPS (BLOCK / 32)

extern "C" __global__ void __launch_bounds__(BLOCK) reduce_sum_vec4(const float* __restrict__ x,
                                                                  float* __restrict__ out, long long n) {
    __shared__ float partial[WARPS];
    const long long n4 = n / 4;
    const long long stride = (long long)gridDim.x * BLOCK;
    const long long first = (long long)blockIdx.x * BLOCK + threadIdx.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    for (long long i = first; i < n4; i += stride) {
        float4 v = x4[i];
        s0 += v.x; s1 += v.y; s2 += v.z; s3 += v.w;
    }
    for (long long i = 4 * n4 + first; i < n; i += stride) s0 += x[i];
    float acc = (s0 + s1) + (s2 + s3);
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) partial[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < WARPS ? partial[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
        if (lane == 0) atomicAdd(out, acc);
    }
}
