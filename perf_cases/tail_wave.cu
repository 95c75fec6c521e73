// Each thread of a 1024-thread block computes PER elements (2,048 dependent steps each). Two such
// blocks fit an SM, so 265 blocks on a 132-SM GPU are one full wave of 264 and a last wave of one
// block: the GPU spends half its time running a single block.
extern "C" __global__ void tail_wave(const float* x, float* y, int n) {
    int base = blockIdx.x * blockDim.x * PER + threadIdx.x;
    for (int k = 0; k < PER; ++k) {  // PERF: PER elements a thread, so the grid is a few large blocks
        int i = base + k * blockDim.x;
        if (i >= n) return;
        float v = x[i];
#pragma unroll 1
        for (int s = 0; s < 2048; ++s) v = v * 0.999f + 0.001f;
        y[i] = v;
    }
}
