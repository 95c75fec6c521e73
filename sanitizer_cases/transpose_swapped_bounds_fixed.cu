extern "C" __global__ void transpose_swapped_bounds(const float* in_, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = in_[r * cols + c];  // FIXED
}
