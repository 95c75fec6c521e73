// Sums one row of a 65536 x 32769 byte image. row * width is computed in 32-bit int and wraps
// negative past 2^31: the last rows read before the start of the image.
extern "C" __global__ void int32_index_overflow(const unsigned char* img, float* out, int width, int row0) {
    __shared__ float partial[256];
    int row = row0 + blockIdx.x;
    float s = 0.0f;
    for (int col = threadIdx.x; col < width; col += blockDim.x) {
        int idx = row * width + col;  // 32-bit: row * width wraps negative once it reaches 2^31
        s += img[idx];  // BUG: reads img[idx] with idx wrapped negative
    }
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) partial[threadIdx.x] += partial[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}
