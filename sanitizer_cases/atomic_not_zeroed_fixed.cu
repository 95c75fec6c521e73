extern "C" __global__ void atomic_not_zeroed(const float* x, float* out, int n) {
    if (threadIdx.x == 0) *out = 0.0f;  // FIXED: zero the accumulator first
    __syncthreads();
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[i];
    atomicAdd(out, s);
}
