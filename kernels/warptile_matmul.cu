// warptile_matmul: vec_matmul with the block's threads organised by warp.
// The block tile (BM x BN) is split into warp tiles (WM x WN); inside a warp tile the 32 lanes form
// an LM x LN grid, and each lane computes RM x RN sub-tiles of 4 x 4 that are LM*4 rows and LN*4
// columns apart. So:
// - each LDS.128 of a warp reads at most 128 contiguous bytes of a shared-memory row: one
//   wavefront, no bank conflicts, and the other lanes get the same values by broadcast;
// - the lanes of a warp that write one row of C write 16 * LN contiguous bytes (STG.128), where
//   regblock_matmul's lanes wrote words 32 bytes apart;
// - a warp touches only WM + WN values per k step of the shared tiles, which keeps its reads local.
// Loads and bounds are as in vec_matmul: float4 where aligned and in bounds, scalar otherwise.
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef RM
#define RM 2
#endif
#ifndef RN
#define RN 2
#endif
#define TM (4 * RM)
#define TN (4 * RN)
#define LM (WM / TM)
#define LN (WN / TN)
#define THREADS ((BM / WM) * (BN / WN) * 32)
#define PAD 4
#define A_LOADS (BM * BK / 4 / THREADS)
#define B_LOADS (BK * BN / 4 / THREADS)
static_assert(LM * LN == 32, "a warp tile is 32 lanes of TM x TN");
static_assert(BM % WM == 0 && BN % WN == 0 && BK % 4 == 0, "warp tiles divide the block tile");
static_assert(A_LOADS * 4 * THREADS == BM * BK && B_LOADS * 4 * THREADS == BK * BN,
              "each thread loads a whole number of float4s of each tile");

extern "C" __global__ void __launch_bounds__(THREADS)
warptile_matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                int M, int N, int K) {
    __shared__ __align__(16) float As[BK][BM + PAD];
    __shared__ __align__(16) float Bs[BK][BN];
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
    const int lm = (lane / LN) * 4, ln = (lane % LN) * 4;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const bool vec_a = (K % 4) == 0, vec_bc = (N % 4) == 0;
    float acc[TM][TN] = {};
    float a[TM], b[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            const int idx = t + i * THREADS;
            const int r = idx / (BK / 4), c = (idx % (BK / 4)) * 4;
            const int gr = bm + r, gc = k0 + c;
            float4 v;
            if (vec_a && gr < M && gc < K) {  // K and gc multiples of 4: the whole float4 is in the row
                v = *reinterpret_cast<const float4*>(&A[(size_t)gr * K + gc]);
            } else {
                const float* row = A + (size_t)gr * K;
                v.x = (gr < M && gc < K) ? row[gc] : 0.0f;
                v.y = (gr < M && gc + 1 < K) ? row[gc + 1] : 0.0f;
                v.z = (gr < M && gc + 2 < K) ? row[gc + 2] : 0.0f;
                v.w = (gr < M && gc + 3 < K) ? row[gc + 3] : 0.0f;
            }
            As[c][r] = v.x;
            As[c + 1][r] = v.y;
            As[c + 2][r] = v.z;
            As[c + 3][r] = v.w;
        }
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
            const int idx = t + i * THREADS;
            const int r = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
            const int gr = k0 + r, gc = bn + c;
            float4 v;
            if (vec_bc && gr < K && gc < N) {  // N and gc multiples of 4: the whole float4 is in the row
                v = *reinterpret_cast<const float4*>(&B[(size_t)gr * N + gc]);
            } else {
                const float* row = B + (size_t)gr * N;
                v.x = (gr < K && gc < N) ? row[gc] : 0.0f;
                v.y = (gr < K && gc + 1 < N) ? row[gc + 1] : 0.0f;
                v.z = (gr < K && gc + 2 < N) ? row[gc + 2] : 0.0f;
                v.w = (gr < K && gc + 3 < N) ? row[gc + 3] : 0.0f;
            }
            *reinterpret_cast<float4*>(&Bs[r][c]) = v;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int s = 0; s < RM; ++s)
                *reinterpret_cast<float4*>(&a[4 * s]) = *reinterpret_cast<const float4*>(&As[k][wm + s * LM * 4 + lm]);
#pragma unroll
            for (int s = 0; s < RN; ++s)
                *reinterpret_cast<float4*>(&b[4 * s]) = *reinterpret_cast<const float4*>(&Bs[k][wn + s * LN * 4 + ln]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = bm + wm + (i / 4) * LM * 4 + lm + i % 4;
        if (row >= M) continue;
#pragma unroll
        for (int s = 0; s < RN; ++s) {
            const int col = bn + wn + s * LN * 4 + ln;
            float* out = C + (size_t)row * N + col;
            const float* v = &acc[i][4 * s];
            if (vec_bc && col < N) {  // N and col multiples of 4: the whole float4 is in the row
                *reinterpret_cast<float4*>(out) = make_float4(v[0], v[1], v[2], v[3]);
            } else {
#pragma unroll
                for (int jj = 0; jj < 4; ++jj)
                    if (col + jj < N) out[jj] = v[jj];
            }
        }
    }
}
