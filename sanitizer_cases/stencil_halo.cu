// A 3-point stencil whose left halo reads x[-1] at i = 0: a read before the start of x.
extern "C" __global__ void stencil_halo(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int right = i + 1 < n ? i + 1 : n - 1;
    y[i] = (x[i - 1] + x[i] + x[right]) / 3.0f;  // BUG: i - 1 is -1 at the left edge
}
