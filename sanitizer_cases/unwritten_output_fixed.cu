extern "C" __global__ void unwritten_output(const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)  // FIXED
        y[i] = x[i] + 1.0f;
}
