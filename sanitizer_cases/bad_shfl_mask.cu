// Half-warp sum: only lanes 0..15 take the branch, but the shuffle's mask names all 32 lanes.
extern "C" __global__ void bad_shfl_mask(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    float v = i < n ? x[i] : 0.0f;
    if (lane < 16) {
        for (int o = 8; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);  // BUG: mask must be 0x0000ffff
        if (lane == 0) out[i / 32] = v;
    }
}
