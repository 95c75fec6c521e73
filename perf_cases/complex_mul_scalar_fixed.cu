extern "C" __global__ void cmul(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ yr,
                                float* __restrict__ yi, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float2 p = reinterpret_cast<const float2*>(a)[i], q = reinterpret_cast<const float2*>(b)[i];  // FIXED: one 8-byte load each
        yr[i] = p.x * q.x - p.y * q.y;
        yi[i] = p.x * q.y + p.y * q.x;
    }
}
