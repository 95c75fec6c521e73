// The ladder's next step: 16 x 16 tiles of A and B staged in shared memory, each element read once a tile.
#define T 16

extern "C" __global__ void sgemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n) {
    __shared__ float a[T][T], b[T][T];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < n; k0 += T) {
        a[threadIdx.y][threadIdx.x] = row < n && k0 + threadIdx.x < n ? A[(size_t)row * n + k0 + threadIdx.x] : 0.0f;
        b[threadIdx.y][threadIdx.x] = col < n && k0 + threadIdx.y < n ? B[(size_t)(k0 + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < T; ++k) acc += a[threadIdx.y][k] * b[k][threadIdx.x];
        __syncthreads();
    }
    if (row < n && col < n) C[(size_t)row * n + col] = acc;  // FIXED: each element of A and B read once a tile
}
