// y[b, r, c] = x[b, r, c] + bias[r], one thread an element, the row found with 64-bit / and %: each
// is a call to a software routine of dozens of instructions, so the kernel is bound by instruction
// issue, not by memory.
extern "C" __global__ void int64_division(const float* x, const float* bias, float* y, long long rows,
                                          long long cols, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long r = (i / cols) % rows;  // PERF: 64-bit division and remainder by run-time values
    y[i] = x[i] + bias[r];
}
