// Recording kernel: writes one element past the end of out (memcheck).
extern "C" __global__ void rec_oob(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) out[i] = x[i < n ? i : 0] * 2.0f;
}
