__device__ __forceinline__ float horner(float v) {
    float p = 0.0f;
#pragma unroll
    for (int k = 0; k < 48; ++k) p = p * v + 1.0f / (k + 1);
    return p;
}

__device__ __forceinline__ float powers(float v) {
    float p = 0.0f, vk = 1.0f;
#pragma unroll
    for (int k = 47; k >= 0; --k) {
        p += vk / (k + 1);
        vk *= v;
    }
    return p;
}

extern "C" __global__ void poly(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    if ((threadIdx.x >> 5) & 1)  // FIXED: whole warps take one path
        y[i] = powers(v);
    else
        y[i] = horner(v);
}
