// Each thread follows a chain of 64 dependent loads (latency-bound: the GPU needs many warps in
// flight), while holding 96 values it computed before the chain and sums after it: about 120
// registers a thread, so only two blocks of 256 fit an SM (25% occupancy).
extern "C" __global__ void occupancy_registers(const int* next, const float* x, float* y, int* last, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float keep[96];
#pragma unroll
    for (int k = 0; k < 96; ++k) keep[k] = sinf(x[i] + k);  // PERF: 96 values live across the loop below
    int j = i;
#pragma unroll 1
    for (int s = 0; s < 64; ++s) {
        j = next[j];
        if (j < 0) {  // never taken (next holds indices), but it keeps keep[] live through the loop
            float t = 0.0f;
#pragma unroll
            for (int k = 0; k < 96; ++k) t += keep[k];
            y[i] = t;
            return;
        }
    }
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < 96; ++k) acc += keep[k] * (k + 1);
    y[i] = acc;
    last[i] = j;
}
