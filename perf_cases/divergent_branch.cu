// Even and odd elements take different paths of 256 dependent steps each. Lanes of one warp
// disagree on the branch, so the warp runs both paths one after the other, half its lanes idle.
extern "C" __global__ void divergent_branch(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    if (i & 1) {  // PERF: neighbouring lanes take different paths
#pragma unroll 1
        for (int k = 0; k < 256; ++k) v = v * 0.999f + 0.001f;
    } else {
#pragma unroll 1
        for (int k = 0; k < 256; ++k) v = v * v * 0.5f + 0.25f;
    }
    y[i] = v;
}
