// rmsnorm_bf16: rmsnorm_onepass for bfloat16 activations and weights, with float32 arithmetic:
// y = bf16(x / sqrt(mean(x^2) + eps) * w), the sum of squares accumulated in float32.
// Each thread loads its part of the row as 16-byte vectors (8 bfloat16 values, one LDG.128),
// keeps them in registers as float32 through the reduction, and stores 16-byte vectors of the
// rounded results. Half the bytes of the float32 kernel for the same row. Rows whose length is not a
// multiple of 8, or longer than BLOCK * 8 * VPT, and buffers not 16-byte aligned take a scalar path with a second read.
#include <cuda_bf16.h>
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VPT
#define VPT 4  // 16-byte vectors per thread in the fast path (4 loads in flight: 1 left the DRAM two-thirds busy)
#endif
#define WARPS (BLOCK / 32)

__device__ float block_sum(float v, float* shared) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < WARPS ? shared[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK) rmsnorm_bf16(const __nv_bfloat16* __restrict__ x,
                                                                const __nv_bfloat16* __restrict__ w,
                                                                __nv_bfloat16* __restrict__ y, int rows,
                                                                int cols, float eps) {
    __shared__ float shared[WARPS];
    const int row = blockIdx.x;
    if (row >= rows) return;
    const __nv_bfloat16* xr = x + (size_t)row * cols;
    __nv_bfloat16* yr = y + (size_t)row * cols;
    float ss = 0.0f;
    if (cols % 8 == 0 && cols <= BLOCK * 8 * VPT &&
        ((reinterpret_cast<size_t>(x) | reinterpret_cast<size_t>(w) | reinterpret_cast<size_t>(y)) & 15) == 0) {
        float v[VPT][8];
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
            const int c = (threadIdx.x + j * BLOCK) * 8;
            if (c < cols) {
                const uint4 raw = *reinterpret_cast<const uint4*>(xr + c);
                const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const float2 f = __bfloat1622float2(h[q]);
                    v[j][2 * q] = f.x;
                    v[j][2 * q + 1] = f.y;
                }
            } else {
#pragma unroll
                for (int q = 0; q < 8; ++q) v[j][q] = 0.0f;
            }
#pragma unroll
            for (int q = 0; q < 8; ++q) ss += v[j][q] * v[j][q];
        }
        const float scale = rsqrtf(block_sum(ss, shared) / cols + eps);
#pragma unroll
        for (int j = 0; j < VPT; ++j) {
            const int c = (threadIdx.x + j * BLOCK) * 8;
            if (c >= cols) continue;
            const uint4 wraw = *reinterpret_cast<const uint4*>(w + c);
            const __nv_bfloat162* wh = reinterpret_cast<const __nv_bfloat162*>(&wraw);
            uint4 out;
            __nv_bfloat162* oh = reinterpret_cast<__nv_bfloat162*>(&out);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const float2 wf = __bfloat1622float2(wh[q]);
                oh[q] = __floats2bfloat162_rn(v[j][2 * q] * scale * wf.x, v[j][2 * q + 1] * scale * wf.y);
            }
            *reinterpret_cast<uint4*>(yr + c) = out;
        }
    } else {
        for (int c = threadIdx.x; c < cols; c += BLOCK) {
            const float f = __bfloat162float(xr[c]);
            ss += f * f;
        }
        const float scale = rsqrtf(block_sum(ss, shared) / cols + eps);
        for (int c = threadIdx.x; c < cols; c += BLOCK)
            yr[c] = __float2bfloat16_rn(__bfloat162float(xr[c]) * scale * __bfloat162float(w[c]));
    }
}
