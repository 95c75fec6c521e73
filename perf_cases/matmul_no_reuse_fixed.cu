// FIXED: 32 x 32 tiles of A and B in shared memory; each thread of a 32 x 8 block computes four
// elements of C, so each loaded element is used 32 times from shared memory.
extern "C" __global__ void matmul_no_reuse(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[32][33];
    __shared__ float Bs[32][33];
    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * 32 + tx;
    int row0 = blockIdx.y * 32;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k0 = 0; k0 < K; k0 += 32) {
        for (int r = ty; r < 32; r += 8) {
            int ar = row0 + r, ac = k0 + tx, br = k0 + r;
            As[r][tx] = (ar < M && ac < K) ? A[(size_t)ar * K + ac] : 0.0f;
            Bs[r][tx] = (br < K && col < N) ? B[(size_t)br * N + col] : 0.0f;
        }
        __syncthreads();
#pragma unroll 8
        for (int k = 0; k < 32; ++k) {
            float b = Bs[k][tx];
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[q] += As[ty + 8 * q][k] * b;
        }
        __syncthreads();
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        int row = row0 + ty + 8 * q;
        if (row < M && col < N) C[(size_t)row * N + col] = acc[q];
    }
}
