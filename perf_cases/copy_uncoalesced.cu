// Copies a matrix walking it column by column: consecutive lanes of a warp touch addresses n
// floats apart, so every 4-byte access needs its own 32-byte sector.
extern "C" __global__ void copy_uncoalesced(const float* in_, float* out, int n) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;  // lanes walk down a column
    int col = blockIdx.y;
    if (row < n) out[(size_t)row * n + col] = in_[(size_t)row * n + col];  // PERF: lanes n floats apart
}
