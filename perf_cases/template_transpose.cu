// A transpose through a shared tile, written once as a template and instantiated for 32 x 32 tiles.
// The tile is read down a column: 32 lanes on one bank.
template <int TILE, int ROWS>
__device__ __forceinline__ void transpose_tile(const float* in, float* out, int n) {
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < n && y + j < n) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < n && y + j < n) out[(size_t)(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];  // PERF: a column of an unpadded tile
}

extern "C" __global__ void transpose32(const float* in, float* out, int n) { transpose_tile<32, 8>(in, out, n); }
