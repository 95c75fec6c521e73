// vector_add_vec4: c = a + b with 16-byte loads and stores, for the copy ceiling. A grid sized to
// the GPU (BLOCKS blocks, a grid-stride loop) keeps enough bytes in flight; the n % 4 tail is done
// with scalar accesses by the first threads. cudaMalloc'd buffers are 256-byte aligned.
extern "C" __global__ void vector_add_vec4(const float* __restrict__ a, const float* __restrict__ b,
                                           float* __restrict__ c, long long n) {
    const long long n4 = n / 4;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4* c4 = reinterpret_cast<float4*>(c);
    for (long long i = first; i < n4; i += stride) {
        float4 x = a4[i], y = b4[i];
        c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    for (long long i = 4 * n4 + first; i < n; i += stride) c[i] = a[i] + b[i];
}
