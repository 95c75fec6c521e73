// FIXED: the 96 values are computed after the chain, so nothing is live across it (few registers,
// full occupancy); same chain, same sums.
extern "C" __global__ void occupancy_registers(const int* next, const float* x, float* y, int* last, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int j = i;
#pragma unroll 1
    for (int s = 0; s < 64; ++s) {
        j = next[j];
        if (j < 0) {
            float t = 0.0f;
#pragma unroll
            for (int k = 0; k < 96; ++k) t += sinf(x[i] + k);
            y[i] = t;
            return;
        }
    }
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < 96; ++k) acc += sinf(x[i] + k) * (k + 1);
    y[i] = acc;
    last[i] = j;
}
