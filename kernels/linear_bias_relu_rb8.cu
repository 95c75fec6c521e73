// linear_bias_relu_rb8: the first cluster version of linear_bias_relu (kept as a step of the ladder): y = relu(x @ W + b) for a small batch (B rows of x, B from 1 to 64), fused in one
// kernel: the product never goes to DRAM and there is no second or third launch.
// With a small batch the work is reading W (K x N floats) once, so the kernel is organised to have
// as many bytes of W in flight as the memory system needs:
// - a block owns 32 output columns (one per lane: each warp-wide load of a row of W is 128
//   contiguous bytes), RB batch rows (RB accumulators per thread) and 1/KSPLIT of K;
// - the KSPLIT blocks that share columns and rows form a thread-block cluster (sm_90): each sums
//   its part of K, then the cluster adds the parts through distributed shared memory, and block 0
//   of the cluster adds the bias, applies the ReLU and stores. No partial sums go to DRAM;
// - inside a block the warps split each KT-row slice of K; x is staged through shared memory as
//   xs[k][r], so a lane reads its RB values of x for one k as float4 broadcasts;
// - blocks that read the same columns of W for other batch rows are neighbours in launch order
//   (blockIdx.x is the batch-row block), so W comes from DRAM once and from L2 after that.
// Every access is bounds-checked: any B, K, N works.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef RB
#define RB 8
#endif
#ifndef KT
#define KT 256
#endif
#ifndef KSPLIT
#define KSPLIT 8
#endif
#define WARPS (BLOCK / 32)
#define KW (KT / WARPS)  // rows of each KT-row slice a warp takes
static_assert(KT % WARPS == 0 && RB % 4 == 0 && KSPLIT >= 1 && KSPLIT <= 8, "shape of the tiles");

extern "C" __global__ void __cluster_dims__(1, 1, KSPLIT) __launch_bounds__(BLOCK)
linear_bias_relu_rb8(const float* __restrict__ x, const float* __restrict__ W, const float* __restrict__ bias,
                 float* __restrict__ y, int B, int K, int N) {
    __shared__ __align__(16) float xs[KT][RB];
    __shared__ float partial[WARPS][RB][33];  // 33: the per-lane reads of the sum are conflict-free
    __shared__ float total[RB][32];           // this block's part of the sum, read by the cluster
    cg::cluster_group cluster = cg::this_cluster();
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int r0 = blockIdx.x * RB;
    const int n = blockIdx.y * 32 + lane;
    const bool col_ok = n < N;
    const int per = (K + KSPLIT - 1) / KSPLIT;  // this block's rows of W: [kbeg, kend)
    const int kbeg = min(K, (int)cluster.block_rank() * per), kend = min(K, kbeg + per);
    float acc[RB];
#pragma unroll
    for (int r = 0; r < RB; ++r) acc[r] = 0.0f;

    for (int k0 = kbeg; k0 < kend; k0 += KT) {
        for (int i = threadIdx.x; i < RB * KT; i += BLOCK) {
            const int r = i / KT, k = i % KT;  // consecutive threads read consecutive k of a row of x
            xs[k][r] = (r0 + r < B && k0 + k < kend) ? x[(size_t)(r0 + r) * K + k0 + k] : 0.0f;
        }
        __syncthreads();
        const int kb = k0 + warp * KW;
        const float* wp = W + (size_t)kb * N + n;
#pragma unroll 8
        for (int k = 0; k < KW; ++k) {
            const float w = (col_ok && kb + k < kend) ? wp[(size_t)k * N] : 0.0f;
#pragma unroll
            for (int r = 0; r < RB; r += 4) {
                const float4 xv = *reinterpret_cast<const float4*>(&xs[warp * KW + k][r]);
                acc[r] += xv.x * w;
                acc[r + 1] += xv.y * w;
                acc[r + 2] += xv.z * w;
                acc[r + 3] += xv.w * w;
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < RB; ++r) partial[warp][r][lane] = acc[r];
    __syncthreads();
    if (warp == 0) {
#pragma unroll
        for (int r = 0; r < RB; ++r) {
            float s = 0.0f;
#pragma unroll
            for (int w = 0; w < WARPS; ++w) s += partial[w][r][lane];
            total[r][lane] = s;
        }
    }
    cluster.sync();  // every block's part is in its shared memory
    if (cluster.block_rank() == 0 && warp == 0 && col_ok) {
        const float bn = bias[n];
#pragma unroll
        for (int r = 0; r < RB; ++r) {
            float s = 0.0f;
            for (int q = 0; q < KSPLIT; ++q) s += cluster.map_shared_rank(&total[0][0], q)[r * 32 + lane];
            if (r0 + r < B) y[(size_t)(r0 + r) * N + n] = fmaxf(s + bn, 0.0f);
        }
    }
    cluster.sync();  // the other blocks keep their shared memory until block 0 has read it
}
