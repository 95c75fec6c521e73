// Copies its input with the bound off by one (i <= n): every one of the n elements is right, and one
// more is written just past the output's end. The verdict's guard zones must fail it without a tool.
extern "C" __global__ void one_past(const float* a, float* c, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) c[i] = 2.0f;
    if (i < n) c[i] = a[i];
}
