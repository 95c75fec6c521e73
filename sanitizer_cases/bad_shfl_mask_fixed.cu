extern "C" __global__ void bad_shfl_mask(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);  // FIXED
    if ((threadIdx.x & 31) == 0) out[i / 32] = v;
}
