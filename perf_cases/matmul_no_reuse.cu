// C = A @ B, one thread an element of C, every operand read from global memory: each element of A
// and B is loaded N (or M) times, through L1 and L2, where a tile in shared memory would load it once
// a block.
extern "C" __global__ void matmul_no_reuse(const float* A, const float* B, float* C, int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];  // PERF: no reuse
    C[(size_t)row * N + col] = acc;
}
