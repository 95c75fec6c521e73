extern "C" __global__ void trap_kernel(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 5) {
        __trap();
    }
    if (i < n) {
        out[i] = 1.0f;
    }
}
