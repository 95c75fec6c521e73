// Half the threads stage the tile in shared memory, but every thread reads its own slot.
// initcheck sees only global memory and racecheck sees no conflicting pair: neither reports it.
extern "C" __global__ void uninit_shared_read(const float* x, float* y, int n) {
    __shared__ float tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x < 128 && i < n) tile[threadIdx.x] = x[i];  // BUG: threads 128..255 never store their slot
    __syncthreads();
    if (i < n) y[i] = tile[threadIdx.x] * 2.0f;
}
