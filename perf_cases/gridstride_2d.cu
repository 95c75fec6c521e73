// y = a * x + y over a matrix, with a two-dimensional grid-stride loop: any grid covers it, and the
// spec launches a small one.
extern "C" __global__ void axpy_2d(const float* __restrict__ x, float* __restrict__ y, float a, int rows, int cols) {
    for (int r = blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += gridDim.y * blockDim.y)
        for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += gridDim.x * blockDim.x)
            y[(size_t)r * cols + c] = a * x[(size_t)r * cols + c] + y[(size_t)r * cols + c];
}
