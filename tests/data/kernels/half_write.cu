// Writes only the first half of its output: the poison left in the rest must fail verification.
extern "C" __global__ void half_write(const float* a, float* c, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 2) c[i] = a[i];
}
