extern "C" __global__ void misaligned_store(const float* x, float* y, int pairs) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) y[0] = 0.0f;
    if (i >= pairs) return;
    float2 v = reinterpret_cast<const float2*>(x)[i];
    y[2 * i + 1] = v.x;  // FIXED: scalar stores at the shifted position
    y[2 * i + 2] = v.y;
}
