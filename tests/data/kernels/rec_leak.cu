// Recording kernel: allocates device heap memory and never frees it (memcheck --leak-check full).
extern "C" __global__ void rec_leak(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) {
        float* p = (float*)malloc(64 * sizeof(float));
        p[0] = x[0];
        out[0] = p[0];
    } else if (i < n) {
        out[i] = x[i];
    }
}
