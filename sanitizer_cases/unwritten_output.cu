// A grid-stride loop that stops one element short: y[n-1] is never written.
extern "C" __global__ void unwritten_output(const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n - 1; i += gridDim.x * blockDim.x)  // BUG: < n - 1
        y[i] = x[i] + 1.0f;
}
