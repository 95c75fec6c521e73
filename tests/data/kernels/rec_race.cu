// Recording kernel: reads a shared tile with no barrier after writing it (racecheck RAW).
extern "C" __global__ void rec_race(const float* x, float* out, int n) {
    __shared__ float tile[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : 0.0f;
    float v = tile[(threadIdx.x + 1) % blockDim.x];
    if (i < n) out[i] = v;
}
