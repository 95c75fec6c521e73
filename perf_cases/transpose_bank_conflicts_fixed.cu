#define TILE 32
extern "C" __global__ void transpose_bank_conflicts(const float* in_, float* out, int n) {
    __shared__ float tile[TILE][TILE + 1];  // FIXED: one padding column spreads a column over 32 banks
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = in_[(size_t)y * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    out[(size_t)y * n + x] = tile[threadIdx.x][threadIdx.y];
}
