// A workspace in global memory that the host never wrote: only the first half is filled before
// every element is read back.
extern "C" __global__ void workspace_uninit(const float* x, float* ws, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 2) ws[i] = x[i] * 2.0f;
    if (i < n) out[i] = ws[i] + 1.0f;  // BUG: ws[n/2..n) was never written
}
