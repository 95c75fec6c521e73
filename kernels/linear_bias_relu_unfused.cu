// linear_bias_relu_unfused: y = relu(x @ W + b) the way a framework runs it without fusion: cuBLAS
// SGEMM writes x @ W to memory (t), a bias kernel reads t and writes t + b (u), and a ReLU kernel
// reads u and writes y. Three launches; the spec's steps list them. The baseline of linear_bias_relu.

extern "C" __global__ void add_bias(const float* __restrict__ t, const float* __restrict__ bias,
                                    float* __restrict__ u, int B, int N) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (size_t)B * N) u[i] = t[i] + bias[i % N];
}

extern "C" __global__ void relu(const float* __restrict__ u, float* __restrict__ y, int count) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) y[i] = fmaxf(u[i], 0.0f);
}
