// Writes 4 elements too far: with 512-byte buffers back to back, the overflow lands inside the
// next allocation, where plain memcheck sees nothing. kprof runs memcheck with --padding 256.
extern "C" __global__ void neighbour_overflow(const float* x, float* out, float* neighbour, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i + 4] = x[i];  // BUG: index shifted by 4
    if (i < n) neighbour[i] = 0.0f;
}
