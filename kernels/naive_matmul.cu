// naive_matmul: C = A @ B, row-major, one thread per element of C. threadIdx.x walks columns so
// a warp reads consecutive elements of B and writes consecutive elements of C (coalesced); each
// thread reads a whole row of A and column of B from global memory.
extern "C" __global__ void naive_matmul(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = acc;
}
