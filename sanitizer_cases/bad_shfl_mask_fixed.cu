extern "C" __global__ void bad_shfl_mask(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    float v = i < n ? x[i] : 0.0f;
    if (lane < 16) {
        for (int o = 8; o > 0; o >>= 1) v += __shfl_down_sync(0x0000ffffu, v, o);  // FIXED: the lanes that call
        if (lane == 0) out[i / 32] = v;
    }
}
