// rmsnorm_unfused: RMSNorm the way an eager framework runs it (y = w * (x * rsqrt(mean(x^2) + eps)),
// one library kernel per operation), as the baseline of the fused kernels:
//   square     t = x * x                      reads x,  writes t
//   row_mean   ms[r] = mean(t[r, :])           reads t
//   rsqrt_eps  rstd[r] = rsqrt(ms[r] + eps)    (R values)
//   scale_rows u = x * rstd[row]               reads x,  writes u
//   scale_cols y = u * w[col]                  reads u,  writes y
// Seven full passes over an R x C array where the fused kernel makes two, plus five launches.

extern "C" __global__ void square(const float* __restrict__ x, float* __restrict__ t, long long count) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) t[i] = x[i] * x[i];
}

extern "C" __global__ void row_mean(const float* __restrict__ t, float* __restrict__ ms, int rows, int cols) {
    __shared__ float part[32];
    const int row = blockIdx.x;
    if (row >= rows) return;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += t[(size_t)row * cols + c];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (threadIdx.x == 0) ms[row] = s / cols;
    }
}

extern "C" __global__ void rsqrt_eps(const float* __restrict__ ms, float* __restrict__ rstd, int rows, float eps) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) rstd[r] = rsqrtf(ms[r] + eps);
}

extern "C" __global__ void scale_rows(const float* __restrict__ x, const float* __restrict__ rstd,
                                      float* __restrict__ u, int cols, long long count) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) u[i] = x[i] * rstd[i / cols];
}

extern "C" __global__ void scale_cols(const float* __restrict__ u, const float* __restrict__ w,
                                      float* __restrict__ y, int cols, long long count) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) y[i] = u[i] * w[i % cols];
}
