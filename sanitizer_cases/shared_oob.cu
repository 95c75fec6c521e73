// Stages x shifted by one in a 256-slot shared tile: thread 255 stores slot 256.
extern "C" __global__ void shared_oob(const float* x, float* y, int n) {
    __shared__ float tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x + 1] = i < n ? x[i] : 0.0f;  // BUG: slot 256 does not exist
    __syncthreads();
    if (i < n) y[i] = threadIdx.x + 1 < 256 ? tile[threadIdx.x + 1] : x[i];
}
