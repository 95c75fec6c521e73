// gather_rows: y[i, :] = table[idx[i], :], an embedding lookup. One thread per output element, a
// grid-stride loop over rows x columns; an index outside the table is clamped to its last row.
extern "C" __global__ void gather_rows(const float* __restrict__ table, const int* __restrict__ idx,
                                       float* __restrict__ y, int rows, int vocab, int dim) {
    long long total = (long long)rows * dim;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
        long long i = e / dim;
        int d = (int)(e - i * dim);
        int row = idx[i];
        row = row < 0 ? 0 : (row >= vocab ? vocab - 1 : row);
        y[e] = table[(long long)row * dim + d];
    }
}
