// vector_add_vec4: c = a + b with 16-byte loads and stores. The grid is capped at BLOCKS blocks with a
// grid-stride loop; the default cap (1,048,576) gives one float4 per thread up to N = 2^30, the grid
// at which kprof peak's own add kernel (the same loop) is fastest on the H200: 4.47 TB/s against
// 4.16 TB/s with 2,048 blocks (docs/results). The n % 4 tail is done with scalar accesses by the
// first threads. cudaMalloc'd buffers are 256-byte aligned.
// UNROLL: float4s each thread loads before it stores any (more bytes in flight per thread);
// CACHE 1: streaming loads and stores (__ldcs/__stcs: used once, evict first). Both are for
// kprof bench --param sweeps; UNROLL 1, CACHE 0 is the plain loop.
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef CACHE
#define CACHE 0
#endif

__device__ __forceinline__ float4 load4(const float4* p) {
#if CACHE
    return __ldcs(p);
#else
    return *p;
#endif
}

__device__ __forceinline__ void store4(float4* p, float4 v) {
#if CACHE
    __stcs(p, v);
#else
    *p = v;
#endif
}

extern "C" __global__ void vector_add_vec4(const float* __restrict__ a, const float* __restrict__ b,
                                           float* __restrict__ c, long long n) {
    const long long n4 = n / 4;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4* c4 = reinterpret_cast<float4*>(c);
#if UNROLL == 1
    for (long long i = first; i < n4; i += stride) {
        float4 x = load4(a4 + i), y = load4(b4 + i);
        store4(c4 + i, make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w));
    }
#else
    long long i = first;
    for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
        float4 x[UNROLL], y[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            x[u] = load4(a4 + i + u * stride);
            y[u] = load4(b4 + i + u * stride);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            store4(c4 + i + u * stride, make_float4(x[u].x + y[u].x, x[u].y + y[u].y, x[u].z + y[u].z, x[u].w + y[u].w));
    }
    for (; i < n4; i += stride) {  // the last partial round
        float4 x = load4(a4 + i), y = load4(b4 + i);
        store4(c4 + i, make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w));
    }
#endif
    for (long long j = 4 * n4 + first; j < n; j += stride) c[j] = a[j] + b[j];
}
