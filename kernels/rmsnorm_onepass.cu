// rmsnorm_onepass: y = x / sqrt(mean(x^2) + eps) * w, reading each x once: the row stays in
// registers (up to BLOCK * PER elements) between the sum of squares and the scaling. Longer rows
// fall back to a second read.
// VEC 1: 16-byte loads and stores of x, w and y (each thread's slice is PER / 4 float4s) where the
// row length is a multiple of 4 and the pointers are 16-byte aligned, for the row in registers and for
// the long row read twice; the scalar paths otherwise.
// The default; VEC 0 is the plain kernel.
#ifndef VEC
#define VEC 1
#endif
#ifndef BLOCK
#define BLOCK 1024
#endif
#ifndef PER
#define PER 8
#endif
#ifndef FIT
#define FIT 1
#endif
#ifndef WROWS
#define WROWS 0
#endif
#define WARPS (BLOCK / 32)
// NT: the threads that share a row. FIT 1: the launch sizes the block to the row (a multiple of 32 up
// to BLOCK, PER elements per thread), so a short row does not leave most of a 1,024-thread block idle;
// FIT 0: BLOCK, the same code as before FIT existed.
// The row's code is a template on the block: NTT = BLOCK, a constant the loops are unrolled and
// strided with; NTT = 0, the launched block (FIT 1 and a block smaller than BLOCK). A FIT 1 launch
// with a full block runs the same code as FIT 0.
// WROWS > 0 (with FIT 1): a row of at most 32 * PER columns is one warp's, WROWS rows to a block of
// 32 * WROWS threads, reduced by shuffles alone (no barrier, no shared memory): NTT = 32. A block of
// one warp per row holds at most half an SM (32 blocks of 32 threads); this fills it. 0: off (the default).
#define NT (NTT ? NTT : (int)blockDim.x)
#define TID (NTT == 32 ? (threadIdx.x & 31) : threadIdx.x)  // this thread in the row

template <int NTT>
__device__ float block_sum(float v, float* shared) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (NTT == 32) return v;  // one warp's row (WROWS): the shuffles are the whole sum
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < (NT >> 5) ? shared[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <int NTT>
__device__ __forceinline__ void rmsnorm_row(const float* __restrict__ x, const float* __restrict__ w,
                                            float* __restrict__ y, int row, int cols, float eps, float* shared) {
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float ss = 0.0f;
#if VEC
    static_assert(PER % 4 == 0, "VEC 1 needs PER to be a multiple of 4");
    const bool vec4 = (cols & 3) == 0 &&
        ((reinterpret_cast<size_t>(x) | reinterpret_cast<size_t>(w) | reinterpret_cast<size_t>(y)) & 15) == 0;
    const int cols4 = cols >> 2;
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    const float4* w4 = reinterpret_cast<const float4*>(w);
    float4* y4 = reinterpret_cast<float4*>(yr);
    if (vec4 && cols <= NT * PER) {
        float4 v[PER / 4];
#pragma unroll
        for (int j = 0; j < PER / 4; ++j) {
            const int c = TID + j * NT;
            v[j] = c < cols4 ? x4[c] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            ss += (v[j].x * v[j].x + v[j].y * v[j].y) + (v[j].z * v[j].z + v[j].w * v[j].w);
        }
        const float scale = rsqrtf(block_sum<NTT>(ss, shared) / cols + eps);
#pragma unroll
        for (int j = 0; j < PER / 4; ++j) {
            const int c = TID + j * NT;
            if (c < cols4) {
                const float4 g = w4[c];
                y4[c] = make_float4(v[j].x * scale * g.x, v[j].y * scale * g.y, v[j].z * scale * g.z, v[j].w * scale * g.w);
            }
        }
        return;
    }
    if (vec4) {  // a long row, read twice, 16 bytes at a time (4-byte loads issued four times the instructions: ncu)
#pragma unroll 2
        for (int c = TID; c < cols4; c += NT) {
            const float4 v = x4[c];
            ss += (v.x * v.x + v.y * v.y) + (v.z * v.z + v.w * v.w);
        }
        const float scale = rsqrtf(block_sum<NTT>(ss, shared) / cols + eps);
#pragma unroll 2
        for (int c = TID; c < cols4; c += NT) {
            const float4 v = x4[c], g = w4[c];
            y4[c] = make_float4(v.x * scale * g.x, v.y * scale * g.y, v.z * scale * g.z, v.w * scale * g.w);
        }
        return;
    }
#endif
    if (cols <= NT * PER) {  // kprof-mutants: equivalent: a row one longer than the registers hold takes the long-row path, which computes it too
        float v[PER];
#pragma unroll
        for (int j = 0; j < PER; ++j) {
            const int c = TID + j * NT;
            v[j] = c < cols ? xr[c] : 0.0f;
            ss += v[j] * v[j];
        }
        const float scale = rsqrtf(block_sum<NTT>(ss, shared) / cols + eps);
#pragma unroll
        for (int j = 0; j < PER; ++j) {
            const int c = TID + j * NT;
            if (c < cols) yr[c] = v[j] * scale * w[c];
        }
    } else {
        for (int c = TID; c < cols; c += NT) ss += xr[c] * xr[c];
        const float scale = rsqrtf(block_sum<NTT>(ss, shared) / cols + eps);
        for (int c = TID; c < cols; c += NT) yr[c] = xr[c] * scale * w[c];
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK) rmsnorm_onepass(const float* __restrict__ x,
                                                                   const float* __restrict__ w,
                                                                   float* __restrict__ y, int rows,
                                                                   int cols, float eps) {
    __shared__ float shared[WARPS];
#if WROWS && FIT
    static_assert(WROWS * 32 <= BLOCK, "WROWS rows of one warp each must fit in BLOCK threads");
    if (cols <= 32 * PER) {  // one warp per row, WROWS rows to a block (the launch made ceil(rows / WROWS) blocks)
        const int wrow = blockIdx.x * WROWS + (threadIdx.x >> 5);
        if (wrow < rows) rmsnorm_row<32>(x, w, y, wrow, cols, eps, shared);
        return;
    }
#endif
    const int row = blockIdx.x;
    if (row >= rows) return;
#if FIT
    if (blockDim.x != BLOCK) {
        rmsnorm_row<0>(x, w, y, row, cols, eps, shared);
        return;
    }
#endif
    rmsnorm_row<BLOCK>(x, w, y, row, cols, eps, shared);
}
