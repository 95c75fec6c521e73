// Transpose of a rows x cols matrix with its bounds check written for the output's shape:
// fine when square, out of bounds when not.
extern "C" __global__ void transpose_swapped_bounds(const float* in_, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;  // column of in_
    int r = blockIdx.y * blockDim.y + threadIdx.y;  // row of in_
    if (r < cols && c < rows) out[c * rows + r] = in_[r * cols + c];  // BUG: should be r < rows && c < cols
}
