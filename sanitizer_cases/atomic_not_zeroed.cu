// A sum accumulated with atomicAdd into an output nobody zeroed: the result is garbage plus the sum.
extern "C" __global__ void atomic_not_zeroed(const float* x, float* out, int n) {
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += x[i];
    atomicAdd(out, s);  // BUG: *out was never set to zero
}
