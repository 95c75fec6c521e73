extern "C" __global__ void copy_uncoalesced(const float* in_, float* out, int n) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;  // FIXED: lanes walk along a row
    int row = blockIdx.y;
    if (col < n) out[(size_t)row * n + col] = in_[(size_t)row * n + col];
}
