// Row sums of a matrix of COLS columns. TPR threads share a row: with TPR = 1 each thread walks its own
// row in a loop the compiler unrolls, so the lanes of a warp read addresses COLS floats apart.
#ifndef TPR
#define TPR 1
#endif
#define COLS 64

extern "C" __global__ void row_sums(const float* __restrict__ x, float* __restrict__ y, int rows) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int row = t / TPR, lane = t % TPR;
    float s = 0.0f;
    if (row < rows) {
#pragma unroll
        for (int k = 0; k < COLS / TPR; ++k) s += x[(size_t)row * COLS + lane + k * TPR];  // PERF: lanes COLS floats apart
    }
#pragma unroll
    for (int off = TPR / 2; off > 0; off /= 2) s += __shfl_down_sync(0xffffffffu, s, off, TPR);
    if (row < rows && lane == 0) y[row] = s;
}
