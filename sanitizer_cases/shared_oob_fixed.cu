extern "C" __global__ void shared_oob(const float* x, float* y, int n) {
    __shared__ float tile[257];  // FIXED: room for the shifted slot
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x + 1] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) y[i] = threadIdx.x + 1 < 256 ? tile[threadIdx.x + 1] : x[i];
}
