// tiled_matmul: C = A @ B with TILE x TILE tiles of A and B staged in shared memory, so each
// element loaded from global memory is reused TILE times. Loads outside the matrices fill zeros
// and stores are guarded, so any M, N, K works, not only multiples of the tile.
#ifndef TILE
#define TILE 32
#endif

extern "C" __global__ void tiled_matmul(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();  // the tile is complete before anyone reads it
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();  // everyone is done reading before the next tile overwrites it
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}
