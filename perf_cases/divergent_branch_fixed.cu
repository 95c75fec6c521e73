// FIXED: the first half of each block's threads takes the odd elements, the second half the even
// ones, so every warp agrees on its branch (same elements, same results).
extern "C" __global__ void divergent_branch(const float* x, float* y, int n) {
    int half = blockDim.x / 2;
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + (t < half ? 2 * t + 1 : 2 * (t - half));
    if (i >= n) return;
    float v = x[i];
    if (i & 1) {
#pragma unroll 1
        for (int k = 0; k < 256; ++k) v = v * 0.999f + 0.001f;
    } else {
#pragma unroll 1
        for (int k = 0; k < 256; ++k) v = v * v * 0.5f + 0.25f;
    }
    y[i] = v;
}
