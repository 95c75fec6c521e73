// test kernel: a two-launch spec (t = 2 x, then y = t + 1), for the runner's steps.
extern "C" __global__ void twice(const float* x, float* t, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) t[i] = 2.0f * x[i];
}

extern "C" __global__ void plus_one(const float* t, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = t[i] + 1.0f;
}
