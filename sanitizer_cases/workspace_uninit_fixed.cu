extern "C" __global__ void workspace_uninit(const float* x, float* ws, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) ws[i] = x[i] * 2.0f;  // FIXED: fill all of it
    if (i < n) out[i] = ws[i] + 1.0f;
}
