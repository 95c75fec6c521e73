// A warp sum with __shfl_down_sync whose mask names only half the warp, while all 32 lanes call it.
extern "C" __global__ void bad_shfl_mask(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0x0000ffffu, v, o);  // BUG: mask must be 0xffffffff
    if ((threadIdx.x & 31) == 0) out[i / 32] = v;
}
