// softmax_online: one read and one write per element. Each thread keeps its slice of the row in
// registers (up to PER elements), takes its own max m and sum s of e^(x - m) (one exponential per
// element, kept in the registers), and the block merges the (max, sum) pairs online in a single
// reduction (m = max(m1, m2), s = s1 e^(m1-m) + s2 e^(m2-m)). Each thread then scales its stored
// exponentials by e^(m_thread - m) / s and writes them. Rows longer than BLOCK * PER fall back to
// a second read of the row with a running (max, sum) per thread.
// VEC 1: 16-byte loads and stores (each thread's slice is PER / 4 float4s) where the row length is a
// multiple of 4 and the pointers are 16-byte aligned, a quarter of the load and store instructions,
// for the row in registers and for the long row read twice; the scalar paths otherwise. The default; VEC 0 is the plain kernel.
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

struct MS { float m, s; };

__device__ __forceinline__ MS merge(MS a, MS b) {
    float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return {m, 0.0f};
    return {m, a.s * __expf(a.m - m) + b.s * __expf(b.m - m)};
}

__device__ __forceinline__ MS push(MS a, float x) {
    float m = fmaxf(a.m, x);
    return {m, a.s * __expf(a.m - m) + __expf(x - m)};
}

template <int NTT>
__device__ MS block_merge(MS v, MS* shared) {
    for (int o = 16; o > 0; o >>= 1) {
        MS other = {__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
        v = merge(v, other);
    }
    if (NTT == 32) return v;  // one warp's row (WROWS): the shuffles are the whole merge
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < (NT >> 5) ? shared[lane] : MS{-INFINITY, 0.0f};
    for (int o = 16; o > 0; o >>= 1) {
        MS other = {__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
        v = merge(v, other);
    }
    return v;
}

template <int NTT>
__device__ __forceinline__ void softmax_row(const float* __restrict__ x, float* __restrict__ y, int row, int cols,
                                            MS* shared) {
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    MS acc = {-INFINITY, 0.0f};
#if VEC
    static_assert(PER % 4 == 0, "VEC 1 needs PER to be a multiple of 4");
    const bool vec4 = (cols & 3) == 0 && ((reinterpret_cast<size_t>(x) | reinterpret_cast<size_t>(y)) & 15) == 0;
    const int cols4 = cols >> 2;
    const float4* x4 = reinterpret_cast<const float4*>(xr);
    float4* y4 = reinterpret_cast<float4*>(yr);
    if (vec4 && cols <= NT * PER) {  // kprof-mutants: equivalent: a row one longer than the registers hold takes the long-row path, which computes it too
        float4 v[PER / 4];
        float m = -INFINITY;
#pragma unroll
        for (int j = 0; j < PER / 4; ++j) {
            const int c = TID + j * NT;
            v[j] = c < cols4 ? x4[c] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
            m = fmaxf(m, fmaxf(fmaxf(v[j].x, v[j].y), fmaxf(v[j].z, v[j].w)));
        }
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < PER / 4; ++j) {
            if (m == -INFINITY) {
                v[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            } else {  // 0 for the padding past the row
                v[j] = make_float4(__expf(v[j].x - m), __expf(v[j].y - m), __expf(v[j].z - m), __expf(v[j].w - m));
            }
            s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
        }
        acc = block_merge<NTT>(MS{m, s}, shared);
        const float f = m == -INFINITY ? 0.0f : __expf(m - acc.m) / acc.s;
#pragma unroll
        for (int j = 0; j < PER / 4; ++j) {
            const int c = TID + j * NT;
            if (c < cols4) y4[c] = make_float4(v[j].x * f, v[j].y * f, v[j].z * f, v[j].w * f);
        }
        return;
    }
    if (vec4) {  // a long row, read twice, 16 bytes at a time: one rescale of the running sum per 4 elements
#pragma unroll 2
        for (int c = TID; c < cols4; c += NT) {
            const float4 v = x4[c];
            const float m = fmaxf(acc.m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
            if (m != -INFINITY) {  // else all -inf so far: the sum stays 0
                acc.s = acc.s * __expf(acc.m - m) + ((__expf(v.x - m) + __expf(v.y - m)) + (__expf(v.z - m) + __expf(v.w - m)));
                acc.m = m;
            }
        }
        acc = block_merge<NTT>(acc, shared);
        const float inv = 1.0f / acc.s;
#pragma unroll 2
        for (int c = TID; c < cols4; c += NT) {
            const float4 v = x4[c];
            y4[c] = make_float4(__expf(v.x - acc.m) * inv, __expf(v.y - acc.m) * inv, __expf(v.z - acc.m) * inv,
                                __expf(v.w - acc.m) * inv);
        }
        return;
    }
#endif
    if (cols <= NT * PER) {  // kprof-mutants: equivalent: a row one longer than the registers hold takes the long-row path, which computes it too
        float v[PER];
        float m = -INFINITY;
#pragma unroll
        for (int j = 0; j < PER; ++j) {
            const int c = TID + j * NT;
            v[j] = c < cols ? xr[c] : -INFINITY;
            m = fmaxf(m, v[j]);
        }
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < PER; ++j) {
            v[j] = m == -INFINITY ? 0.0f : __expf(v[j] - m);  // 0 for the padding past the row
            s += v[j];
        }
        acc = block_merge<NTT>(MS{m, s}, shared);
        const float f = m == -INFINITY ? 0.0f : __expf(m - acc.m) / acc.s;
#pragma unroll
        for (int j = 0; j < PER; ++j) {
            const int c = TID + j * NT;
            if (c < cols) yr[c] = v[j] * f;
        }
    } else {
        for (int c = TID; c < cols; c += NT) acc = push(acc, xr[c]);
        acc = block_merge<NTT>(acc, shared);
        const float inv = 1.0f / acc.s;
        for (int c = TID; c < cols; c += NT) yr[c] = __expf(xr[c] - acc.m) * inv;
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK) softmax_online(const float* __restrict__ x,
                                                                  float* __restrict__ y, int rows, int cols) {
    __shared__ MS shared[WARPS];
#if WROWS && FIT
    static_assert(WROWS * 32 <= BLOCK, "WROWS rows of one warp each must fit in BLOCK threads");
    if (cols <= 32 * PER) {  // one warp per row, WROWS rows to a block (the launch made ceil(rows / WROWS) blocks)
        const int wrow = blockIdx.x * WROWS + (threadIdx.x >> 5);
        if (wrow < rows) softmax_row<32>(x, y, wrow, cols, shared);
        return;
    }
#endif
    const int row = blockIdx.x;
    if (row >= rows) return;
#if FIT
    if (blockDim.x != BLOCK) {
        softmax_row<0>(x, y, row, cols, shared);
        return;
    }
#endif
    softmax_row<BLOCK>(x, y, row, cols, shared);
}
