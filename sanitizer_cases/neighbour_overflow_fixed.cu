extern "C" __global__ void neighbour_overflow(const float* x, float* out, float* neighbour, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i];  // FIXED
    if (i < n) neighbour[i] = 0.0f;
}
