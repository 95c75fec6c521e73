// y += x where y = x was meant: the kernel reads an output buffer nothing initialised.
extern "C" __global__ void accumulate_into_output(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += x[i];  // BUG: += reads y before anything wrote it
}
