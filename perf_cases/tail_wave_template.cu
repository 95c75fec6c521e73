// A templated elementwise kernel, PER elements a thread, instantiated through a define: the grid comes
// to one block more than the GPU holds at once, so that block runs a whole second wave alone.
#ifndef PER
#define PER 8
#endif

template <int P>
__device__ __forceinline__ void gelu_tanh(const float* __restrict__ x, float* __restrict__ y, int n) {
    int base = (blockIdx.x * blockDim.x + threadIdx.x) * P;
#pragma unroll
    for (int k = 0; k < P; ++k) {
        int i = base + k;
        if (i < n) {
            float v = x[i];
            float t = v;
            for (int r = 0; r < 64; ++r) t = tanhf(0.7978845608f * (t + 0.044715f * t * t * t)) * 0.5f + 0.5f * v;
            y[i] = t;
        }
    }
}

extern "C" __global__ void gelu_iter(const float* __restrict__ x, float* __restrict__ y, int n) { gelu_tanh<PER>(x, y, n); }
