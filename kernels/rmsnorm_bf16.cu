// rmsnorm_bf16: rmsnorm_onepass for bfloat16 activations and weights, with float32 arithmetic:
// y = bf16(x / sqrt(mean(x^2) + eps) * w), the sum of squares accumulated in float32.
// Each thread loads its part of the row as 16-byte vectors (8 bfloat16 values, one LDG.128), VPT of
// them in flight, keeps them in registers as loaded (bfloat16: half the registers of float32) through
// the reduction, and stores 16-byte vectors of the rounded results. Half the bytes of the float32
// kernel for the same row.
// Who takes a row (the launch in rmsnorm_bf16.yaml sizes the block and grid to match):
// - WROWS > 0 (default 8): a row of at most 32 * 8 * VPT columns (1,024 at VPT 4) is one warp's,
//   WROWS rows to a block of 32 * WROWS threads, its sum reduced with shuffles alone (no barrier);
// - a longer row (or every row with WROWS 0) is one block's. FIT 1 (default): the block is sized to the
//   row, 8 * VPT columns per thread, a multiple of 32 up to BLOCK threads, so every thread has VPT
//   loads in flight; FIT 0: BLOCK threads at every length.
// A row longer than the block holds (BLOCK * 8 * VPT columns) is read twice, with 16-byte vectors.
// Rows whose length is not a multiple of 8 and buffers not 16-byte aligned take a scalar path, also
// reading the row twice.
// The row code is a template on its thread count, so the loops stride by a constant: 32 (a warp), the
// power-of-two blocks up to BLOCK, and 0 for any other block (the count read at run time).
#include <cuda_bf16.h>
#ifndef BLOCK
#define BLOCK 1024
#endif
#ifndef VPT
#define VPT 4  // 16-byte vectors per thread in the fast path (4 loads in flight: 1 left the DRAM two-thirds busy)
#endif
#ifndef WROWS
#define WROWS 8
#endif
#ifndef FIT
#define FIT 1
#endif
#ifndef MAXREG
#define MAXREG 0  // > 0: at most MAXREG registers per thread (__maxnreg__), in place of __launch_bounds__(BLOCK)
// (40: 0.983x torch.compile at 4096 x 16384 but 0.868x at 32768 x 8192, where its spills cost more; docs/fused.md)
#endif
#if MAXREG
static_assert(MAXREG * BLOCK <= 65536, "MAXREG registers for each of BLOCK threads must fit in an SM's 65,536");
#define BOUNDS __maxnreg__(MAXREG)
#else
#define BOUNDS __launch_bounds__(BLOCK)
#endif
static_assert(WROWS * 32 <= BLOCK, "WROWS rows of one warp each must fit in BLOCK threads");
#define NTR (NT ? NT : (int)blockDim.x)

// The sum over the threads of a row: NT == 32 is one warp (shuffles only); otherwise the block.
template <int NT>
__device__ __forceinline__ float row_sum(float v, float* shared) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (NT == 32) return v;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < (NTR >> 5) ? shared[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ void unpack(const uint4& raw, float* f) {
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const float2 p = __bfloat1622float2(h[q]);
        f[2 * q] = p.x;
        f[2 * q + 1] = p.y;
    }
}

__device__ __forceinline__ uint4 scaled(const float* v, float scale, const uint4& wraw) {
    float g[8];
    unpack(wraw, g);
    uint4 out;
    __nv_bfloat162* oh = reinterpret_cast<__nv_bfloat162*>(&out);
#pragma unroll
    for (int q = 0; q < 4; ++q) oh[q] = __floats2bfloat162_rn(v[2 * q] * scale * g[2 * q], v[2 * q + 1] * scale * g[2 * q + 1]);
    return out;
}

// One row, by NTR threads of which this is thread t.
template <int NT>
__device__ __forceinline__ void rmsnorm_row(const __nv_bfloat16* __restrict__ xr, const __nv_bfloat16* __restrict__ w,
                                            __nv_bfloat16* __restrict__ yr, int cols, float eps, int t,
                                            bool vec, float* shared) {
    float ss = 0.0f;
    if (vec && cols <= NTR * 8 * VPT) {  // the row in registers, as loaded (bfloat16): x read once
        uint4 raw[VPT];
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
            const int c = (t + j * NTR) * 8;
            raw[j] = c < cols ? *reinterpret_cast<const uint4*>(xr + c) : make_uint4(0u, 0u, 0u, 0u);
        }
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
            float v[8];
            unpack(raw[j], v);
#pragma unroll
            for (int q = 0; q < 8; ++q) ss += v[q] * v[q];
        }
        const float scale = rsqrtf(row_sum<NT>(ss, shared) / cols + eps);
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
            const int c = (t + j * NTR) * 8;
            if (c < cols) {
                float v[8];
                unpack(raw[j], v);
                *reinterpret_cast<uint4*>(yr + c) = scaled(v, scale, *reinterpret_cast<const uint4*>(w + c));
            }
        }
    } else if (vec) {  // a long row: read twice, 16 bytes at a time
#pragma unroll 4
        for (int c = t * 8; c + 8 <= cols; c += NTR * 8) {  // vec: c and cols multiples of 8
            float v[8];
            unpack(*reinterpret_cast<const uint4*>(xr + c), v);
#pragma unroll
            for (int q = 0; q < 8; ++q) ss += v[q] * v[q];
        }
        const float scale = rsqrtf(row_sum<NT>(ss, shared) / cols + eps);
#pragma unroll 4
        for (int c = t * 8; c + 8 <= cols; c += NTR * 8) {  // vec: c and cols multiples of 8
            float v[8];
            unpack(*reinterpret_cast<const uint4*>(xr + c), v);
            *reinterpret_cast<uint4*>(yr + c) = scaled(v, scale, *reinterpret_cast<const uint4*>(w + c));
        }
    } else {
        for (int c = t; c < cols; c += NTR) {
            const float f = __bfloat162float(xr[c]);
            ss += f * f;
        }
        const float scale = rsqrtf(row_sum<NT>(ss, shared) / cols + eps);
        for (int c = t; c < cols; c += NTR)
            yr[c] = __float2bfloat16_rn(__bfloat162float(xr[c]) * scale * __bfloat162float(w[c]));
    }
}

extern "C" __global__ void BOUNDS rmsnorm_bf16(const __nv_bfloat16* __restrict__ x,
                                                                const __nv_bfloat16* __restrict__ w,
                                                                __nv_bfloat16* __restrict__ y, int rows,
                                                                int cols, float eps) {
    __shared__ float shared[BLOCK / 32];
    const bool vec = cols % 8 == 0 &&
        ((reinterpret_cast<size_t>(x) | reinterpret_cast<size_t>(w) | reinterpret_cast<size_t>(y)) & 15) == 0;
#if WROWS
    if (cols <= 32 * 8 * VPT) {  // one warp per row: WROWS rows to a block
        const int row = blockIdx.x * WROWS + (threadIdx.x >> 5);
        if (row >= rows) return;
        rmsnorm_row<32>(x + (size_t)row * cols, w, y + (size_t)row * cols, cols, eps, threadIdx.x & 31, vec, shared);
        return;
    }
#endif
    const int row = blockIdx.x;
    if (row >= rows) return;
    const __nv_bfloat16* xr = x + (size_t)row * cols;
    __nv_bfloat16* yr = y + (size_t)row * cols;
#define ROW(N) rmsnorm_row<N>(xr, w, yr, cols, eps, threadIdx.x, vec, shared)
    if (blockDim.x == BLOCK) {
        ROW(BLOCK);
    }
#if FIT
    else if (BLOCK > 128 && blockDim.x == 128) {
        ROW(128);
    } else if (BLOCK > 256 && blockDim.x == 256) {
        ROW(256);
    } else if (BLOCK > 512 && blockDim.x == 512) {
        ROW(512);
    } else {
        ROW(0);
    }
#endif
#undef ROW
}
