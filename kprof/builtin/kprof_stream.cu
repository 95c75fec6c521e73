// kprof peak's bandwidth ceilings: grid-stride streams over 1 GiB with WIDTH-byte accesses
// (4, 8 or 16). kprof_read only reads (a value that is not 1 would be written to flag[0], so the
// loads cannot be dropped, and flag stays 0 for the all-ones input); kprof_write only writes;
// kprof_copy reads and writes one byte for each byte; kprof_add reads two bytes for each byte it
// writes (out = a + b, the shape of most elementwise kernels).
#ifndef WIDTH
#define WIDTH 16
#endif
#if WIDTH == 16
typedef float4 word;
__device__ __forceinline__ float first(word v) { return v.x + v.y + v.z + v.w - 3.0f; }
__device__ __forceinline__ word ones() { return make_float4(1.0f, 1.0f, 1.0f, 1.0f); }
__device__ __forceinline__ word add(word u, word v) { return make_float4(u.x + v.x, u.y + v.y, u.z + v.z, u.w + v.w); }
#elif WIDTH == 8
typedef float2 word;
__device__ __forceinline__ float first(word v) { return v.x + v.y - 1.0f; }
__device__ __forceinline__ word ones() { return make_float2(1.0f, 1.0f); }
__device__ __forceinline__ word add(word u, word v) { return make_float2(u.x + v.x, u.y + v.y); }
#else
typedef float word;
__device__ __forceinline__ float first(word v) { return v; }
__device__ __forceinline__ word ones() { return 1.0f; }
__device__ __forceinline__ word add(word u, word v) { return u + v; }
#endif

extern "C" __global__ void kprof_copy(const word* __restrict__ in, word* __restrict__ out, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = in[i];
}

extern "C" __global__ void kprof_read(const word* __restrict__ in, float* __restrict__ flag, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    float acc = 1.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) acc *= first(in[i]);
    if (acc != 1.0f) flag[0] = acc;
}

extern "C" __global__ void kprof_write(word* __restrict__ out, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = ones();
}

extern "C" __global__ void kprof_add(const word* __restrict__ a, const word* __restrict__ b, word* __restrict__ out,
                                     long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = add(a[i], b[i]);
}
