extern "C" __global__ void softsign(const float* __restrict__ x, float* __restrict__ y, int n) {
    for (int base = blockIdx.x * blockDim.x; base < n; base += gridDim.x * blockDim.x) {
        int i = base + threadIdx.x;
        if (i < n) y[i] = x[i] / (1.0f + fabsf(x[i]));  // FIXED: no barrier
    }
}
