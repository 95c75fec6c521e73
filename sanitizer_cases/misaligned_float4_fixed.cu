extern "C" __global__ void misaligned_float4(const float* x, float* y, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4) return;
    float4 v = reinterpret_cast<const float4*>(x + 4)[i];  // FIXED: x + 4 is 16-byte aligned
    reinterpret_cast<float4*>(y)[i] = make_float4(v.x * 2.0f, v.y * 2.0f, v.z * 2.0f, v.w * 2.0f);
}
