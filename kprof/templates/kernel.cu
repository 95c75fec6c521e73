// NAME: y = alpha * x + y, one thread per element with a grid-stride loop.
// Change the body and the arguments; keep the spec (NAME.yaml) in step with them.
extern "C" __global__ void NAME(const float* __restrict__ x, float* __restrict__ y, float alpha, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = alpha * x[i] + y[i];
    }
}
