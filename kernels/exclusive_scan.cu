// exclusive_scan: y[r, c] = the sum of x[r, 0 .. c-1], one block per row. The row is walked in
// chunks of blockDim.x; each chunk is scanned in shared memory (Hillis-Steele, a barrier between
// every read and write), and a running carry joins the chunks. Integers: the verdict is exact.
extern "C" __global__ void exclusive_scan(const int* __restrict__ x, int* __restrict__ y, int rows, int cols) {
    extern __shared__ int s[];
    int r = blockIdx.x;
    if (r >= rows) {
        return;
    }
    const int* xr = x + (long long)r * cols;
    int* yr = y + (long long)r * cols;
    int t = threadIdx.x;
    int carry = 0;
    for (int base = 0; base < cols; base += blockDim.x) {
        int c = base + t;
        int v = c < cols ? xr[c] : 0;
        s[t] = v;
        __syncthreads();
        for (int off = 1; off < blockDim.x; off <<= 1) {
            int add = t >= off ? s[t - off] : 0;
            __syncthreads();
            s[t] += add;
            __syncthreads();
        }
        if (c < cols) {
            yr[c] = carry + s[t] - v;
        }
        carry += s[blockDim.x - 1];
        __syncthreads();
    }
}
