extern "C" __global__ void uninit_shared_read(const float* x, float* y, int n) {
    __shared__ float tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) tile[threadIdx.x] = x[i];  // FIXED
    __syncthreads();
    if (i < n) y[i] = tile[threadIdx.x] * 2.0f;
}
