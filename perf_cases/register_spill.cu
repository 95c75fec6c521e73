// A per-thread array indexed with a value known only at run time cannot live in registers: it
// goes to local memory, and every access is a load or store through L1.
extern "C" __global__ void register_spill(const float* x, const int* idx, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc[32];  // dynamically indexed below, so it lives in local memory
#pragma unroll
    for (int k = 0; k < 32; ++k) acc[k] = x[i] * (k + 1);
    float s = 0.0f;
    for (int k = 0; k < 32; ++k) s += acc[(idx[i] + k) & 31];  // PERF: a run-time index puts acc in local memory
    y[i] = s;
}
