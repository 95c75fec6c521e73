// Each thread scales four consecutive floats with four 4-byte loads and stores: a warp's request
// spans 512 bytes with gaps, four times as many load and store instructions as 16-byte ones.
extern "C" __global__ void scalar_loads(const float* x, float* y, int n) {
    int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    if (i + 3 >= n) return;
    float a = x[i], b = x[i + 1], c = x[i + 2], d = x[i + 3];  // PERF: four 4-byte loads of adjacent floats
    y[i] = 2.0f * a;
    y[i + 1] = 2.0f * b;
    y[i + 2] = 2.0f * c;
    y[i + 3] = 2.0f * d;
}
