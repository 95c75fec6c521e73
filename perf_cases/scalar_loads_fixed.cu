// FIXED: one 16-byte load a neighbour (float4; positions are 16-byte aligned).
extern "C" __global__ void scalar_loads(const float* pos, const int* nbr, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float sx = 0.0f, sy = 0.0f, sz = 0.0f, sw = 0.0f;
#pragma unroll 4
    for (int k = 0; k < 32; ++k) {
        int j = nbr[(size_t)k * n + i];
        float4 p = reinterpret_cast<const float4*>(pos)[j];
        sx += p.x;
        sy += p.y;
        sz += p.z;
        sw += p.w;
    }
    out[i] = sx + 2.0f * sy + 3.0f * sz + 4.0f * sw;
}
