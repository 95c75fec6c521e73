// linear_bias_relu: y = relu(x @ W + b) for a small batch (B rows of x, B from 1 to 64), fused in one
// kernel: the product never goes to DRAM and there is no second or third launch.
// With a small batch the work is reading W (K x N floats) once, so the kernel is organised for
// bandwidth:
// - a block owns 32 output columns (one per lane: each warp-wide load of a row of W is 128
//   contiguous bytes) and RB batch rows (RB accumulators per thread);
// - the block's warps split K between them, so a block has BLOCK / 32 rows of W in flight at a
//   time, and the loop over a warp's rows is unrolled for more loads in flight;
// - x is staged through shared memory KT rows at a time and read back as broadcasts;
// - at the end the warps' partial sums meet in shared memory, and one warp adds the bias, applies
//   the ReLU and stores.
// Every access is bounds-checked: any B, K, N works. (No __launch_bounds__: with it ptxas spilled
// 8 bytes at the same 40 registers.)
#ifndef BLOCK
#define BLOCK 512
#endif
#ifndef RB
#define RB 8
#endif
#ifndef KT
#define KT 256
#endif
#define WARPS (BLOCK / 32)
#define KW (KT / WARPS)  // rows of each KT-row slice a warp takes
static_assert(KT % WARPS == 0, "the warps split a slice of KT rows evenly");

extern "C" __global__ void linear_bias_relu(const float* __restrict__ x,
                                                                    const float* __restrict__ W,
                                                                    const float* __restrict__ bias,
                                                                    float* __restrict__ y, int B, int K, int N) {
    __shared__ float xs[RB][KT];
    __shared__ float partial[WARPS][RB][33];  // 33: the final per-lane reads are conflict-free
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int n = blockIdx.x * 32 + lane;
    const int r0 = blockIdx.y * RB;
    const bool col_ok = n < N;
    float acc[RB];
#pragma unroll
    for (int r = 0; r < RB; ++r) acc[r] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += KT) {
        for (int i = threadIdx.x; i < RB * KT; i += BLOCK) {
            const int r = i / KT, k = i % KT;
            xs[r][k] = (r0 + r < B && k0 + k < K) ? x[(size_t)(r0 + r) * K + k0 + k] : 0.0f;
        }
        __syncthreads();
        const int kb = k0 + warp * KW;  // this warp's rows of the slice: kb .. kb + KW - 1
        const float* wp = W + (size_t)kb * N + n;
#pragma unroll 8
        for (int k = 0; k < KW; ++k) {
            const float w = (col_ok && kb + k < K) ? wp[(size_t)k * N] : 0.0f;
#pragma unroll
            for (int r = 0; r < RB; ++r) acc[r] += xs[r][warp * KW + k] * w;
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < RB; ++r) partial[warp][r][lane] = acc[r];
    __syncthreads();
    if (warp == 0 && col_ok) {
        const float bn = bias[n];
#pragma unroll
        for (int r = 0; r < RB; ++r) {
            float s = 0.0f;
#pragma unroll
            for (int w = 0; w < WARPS; ++w) s += partial[w][r][lane];
            if (r0 + r < B) y[(size_t)(r0 + r) * N + n] = fmaxf(s + bn, 0.0f);
        }
    }
}
