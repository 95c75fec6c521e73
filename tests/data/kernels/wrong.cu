// Computes a - b where the spec says a + b: verification must fail with the worst element.
extern "C" __global__ void wrong(const float* a, const float* b, float* c, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] - b[i];
}
