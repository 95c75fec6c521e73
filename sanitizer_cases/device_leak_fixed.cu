extern "C" __global__ void device_leak(const float* x, float* y, int n) {
    __shared__ float* scratch;
    if (threadIdx.x == 0) scratch = (float*)malloc(blockDim.x * sizeof(float));
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    scratch[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) y[i] = scratch[threadIdx.x] * 2.0f;
    __syncthreads();
    if (threadIdx.x == 0) free(scratch);  // FIXED
}
