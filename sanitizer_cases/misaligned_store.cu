// Copies x into y shifted by one element, with a float2 (8-byte) store at y + 1: every store
// address is 4 bytes off an 8-byte boundary.
extern "C" __global__ void misaligned_store(const float* x, float* y, int pairs) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) y[0] = 0.0f;
    if (i >= pairs) return;
    float2 v = reinterpret_cast<const float2*>(x)[i];
    reinterpret_cast<float2*>(y + 1)[i] = v;  // BUG: y + 1 is not 8-byte aligned
}
