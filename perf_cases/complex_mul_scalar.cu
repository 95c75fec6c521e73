// Element-wise product of two arrays of complex numbers stored interleaved (re, im): each thread loads
// its four floats one by one, where two 8-byte loads would do.
extern "C" __global__ void cmul(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ yr,
                                float* __restrict__ yi, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float ar = a[2 * i], ai = a[2 * i + 1], br = b[2 * i], bi = b[2 * i + 1];  // PERF: four 4-byte loads of two adjacent pairs
        yr[i] = ar * br - ai * bi;
        yi[i] = ar * bi + ai * br;
    }
}
