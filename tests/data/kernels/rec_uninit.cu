// Recording kernel: reads scratch memory nothing wrote (initcheck).
extern "C" __global__ void rec_uninit(const float* x, const float* scratch, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + scratch[i];
}
