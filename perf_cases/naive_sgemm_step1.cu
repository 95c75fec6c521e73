// The first step of a matmul ladder: a thread an element of C, each reading a row of A and a column of
// B straight from global memory, so every element of A and B is read N times over.
extern "C" __global__ void sgemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float acc = 0.0f;
        for (int k = 0; k < n; ++k) acc += A[(size_t)row * n + k] * B[(size_t)k * n + col];  // PERF: no reuse of A or B
        C[(size_t)row * n + col] = acc;
    }
}
