// streamk_matmul: tuned_matmul (dbuf_matmul at BK 16, 8 x 16 outputs per thread, two blocks per
// SM) made persistent, with a stream-K schedule for the tiles that do not fill a whole wave.
//
// Why: at 4096^3 there are 1,024 tiles of 128 x 128 and 264 block slots (132 SMs x 2), so a
// one-block-per-tile grid runs 3 full waves and a fourth in which 32 slots sit idle: 3.88 waves of
// work take 4 waves of time. Here the grid is exactly the slots (SLOTS blocks, the launch's grid):
// - Data-parallel part: every block computes whole tiles, tile sk_tiles + block + j * SLOTS.
// - Stream-K part: the k-slices of the remaining sk_tiles tiles (tiles % SLOTS, plus SKWAVES whole
//   waves) are one iteration space cut into SLOTS equal ranges, so every block does the same amount
//   of work. A range may start or end inside a tile: the block that computes a tile's last k-slice
//   adds the other blocks' partial sums (from ws) and writes C; the others write partial sums.
//   The stream-K part runs first and the data-parallel tiles after it.
//
// The fix-up never deadlocks: a block walks its range from the end, so the one tile it does not
// finish (where its range ends) comes first, and its partial is published (flags[block] = 1) before
// it waits for anything. The block finishing a tile waits only on lower-numbered blocks, which are
// dispatched first. Each waiting block resets the flags it consumed, so flags is all zeros again
// when the kernel ends (the spec checks that) and the next launch needs no memset.
// Partial sums are added in block order, so results are deterministic, but they differ from the
// data-parallel order in the last bits.
//
// The arithmetic of a tile, its loads and bounds are dbuf_matmul's, over a k-range [kb, ke) of
// BK-slices instead of all of K.
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 16
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef RM
#define RM 2
#endif
#ifndef RN
#define RN 4
#endif
#ifndef GROUP
#define GROUP 8
#endif
#ifndef MINB
#define MINB 2
#endif
#ifndef SKWAVES
#define SKWAVES 0  // whole waves added to the stream-K part (1: every stream-K range is over a tile)
#endif
#ifndef SKMIN
#define SKMIN 4  // fewest k-slices in a stream-K range: small problems use fewer blocks
#endif
#define TM (4 * RM)
#define TN (4 * RN)
#define LM (WM / TM)
#define LN (WN / TN)
#define THREADS ((BM / WM) * (BN / WN) * 32)
#define PAD 4
#define A_LOADS (BM * BK / 4 / THREADS)
#define B_LOADS (BK * BN / 4 / THREADS)
#define PART4 (TM * TN / 4)  // float4s of partial sums per thread
static_assert(LM * LN == 32, "a warp tile is 32 lanes of TM x TN");
static_assert(BM % WM == 0 && BN % WN == 0 && BK % 4 == 0, "warp tiles divide the block tile");
static_assert(A_LOADS * 4 * THREADS == BM * BK && B_LOADS * 4 * THREADS == BK * BN,
              "each thread loads a whole number of float4s of each tile");

__device__ __forceinline__ float4 load4(const float* __restrict__ p, bool row_ok, int c, int cols, bool vec) {
    if (vec && row_ok && c + 3 < cols) return *reinterpret_cast<const float4*>(p);
    float4 v;
    v.x = (row_ok && c < cols) ? p[0] : 0.0f;
    v.y = (row_ok && c + 1 < cols) ? p[1] : 0.0f;
    v.z = (row_ok && c + 2 < cols) ? p[2] : 0.0f;
    v.w = (row_ok && c + 3 < cols) ? p[3] : 0.0f;
    return v;
}

// The schedule, a function of the sizes and the grid only. The stream-K iterations (k-slices of
// tiles 0 .. sk_tiles-1) are cut into g_sk ranges: block c takes [c * base + min(c, extra), ...),
// the first `extra` blocks one iteration more.
struct Plan {
    int tiles, ipt, sk_tiles, g_sk, base, extra;
    __device__ __forceinline__ Plan(int M, int N, int K, int G) {
        tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
        ipt = (K + BK - 1) / BK;  // k-slices per tile
        const int rem = tiles % G;
        sk_tiles = rem ? rem + min(tiles / G, SKWAVES) * G : 0;
        const int iters = sk_tiles * ipt;
        g_sk = iters ? min(G, max(1, iters / SKMIN)) : 0;  // blocks in the stream-K part
        base = g_sk ? iters / g_sk : 0;
        extra = g_sk ? iters % g_sk : 0;
    }
    __device__ __forceinline__ int bound(int c) const { return c * base + min(c, extra); }
    __device__ __forceinline__ int start(int c) const { return c < g_sk ? bound(c) : 0; }
    __device__ __forceinline__ int end(int c) const { return c < g_sk ? bound(c + 1) : 0; }
    __device__ __forceinline__ int owner(int it) const {
        const int split = extra * (base + 1);
        return it < split ? it / (base + 1) : extra + (it - split) / base;
    }
};

// threadIdx.x and blockIdx.x read afresh (volatile asm is not hoisted out of loops), so that the
// partial-sum addresses are computed where they are used, not held in registers through the FMAs.
__device__ __forceinline__ int fresh_tid() { int v; asm volatile("mov.u32 %0, %%tid.x;" : "=r"(v)); return v; }
__device__ __forceinline__ int fresh_cta() { int v; asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(v)); return v; }

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
streamk_matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
               float* __restrict__ ws, int* flags, int M, int N, int K) {
    __shared__ __align__(16) float As[2][BK][BM + PAD];
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
    const int lm = (lane / LN) * 4, ln = (lane % LN) * 4;

    const bool vec_a = (K % 4) == 0, vec_bc = (N % 4) == 0;
    constexpr int A_STEP = THREADS / (BK / 4), B_STEP = THREADS / (BN / 4);
    const int ar = t / (BK / 4), ac = (t % (BK / 4)) * 4;
    const int br = t / (BN / 4), bc = (t % (BN / 4)) * 4;

    // The schedule lives in shared memory and thread 0 steps it, so that none of it holds a
    // register through the FMA loop (at 255 registers, a few more spill).
    __shared__ int sched[5];  // next stream-K iteration + 1 (walking down), next data-parallel tile; lin, kb, ke
    if (t == 0) {
        const Plan plan(M, N, K, gridDim.x);
        sched[0] = plan.end(blockIdx.x);
        sched[1] = plan.sk_tiles + blockIdx.x;
    }

    while (true) {
        __syncthreads();  // everyone is done with the previous unit's sched[2..4]
        if (t == 0) {
            const Plan plan(M, N, K, gridDim.x);
            const int my_start = plan.start(blockIdx.x), pos = sched[0];
            if (pos > my_start) {  // stream-K, from the end of this block's range
                const int lin = (pos - 1) / plan.ipt, tb = lin * plan.ipt, kb = max(my_start, tb) - tb;
                sched[0] = tb + kb;
                sched[2] = lin;
                sched[3] = kb;
                sched[4] = pos - tb;
            } else {  // then whole tiles, G apart
                sched[2] = sched[1];
                sched[3] = 0;
                sched[4] = plan.ipt;
                sched[1] += gridDim.x;
            }
        }
        __syncthreads();
        const int lin = sched[2], kb = sched[3], ke = sched[4];  // this unit: tile lin, k-slices [kb, ke)
        const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;  // not kept through the loop
        if (lin >= tiles_m * tiles_n) break;
        // Grouped order: tile ids run down GROUP tile-rows, then right.
        const int per_group = GROUP * tiles_n;
        const int first_m = (lin / per_group) * GROUP;
        const int group_m = min(tiles_m - first_m, GROUP);
        const int bm = (first_m + (lin % per_group) % group_m) * BM;
        const int bn = ((lin % per_group) / group_m) * BN;

        const float* pa = A + (size_t)(bm + ar) * K + kb * BK + ac;
        const float* pb = B + (size_t)(kb * BK + br) * N + bn + bc;
        float acc[TM][TN] = {};
        float a[TM], b[TN];
        float4 ra[A_LOADS], rb[B_LOADS];

        auto load = [&](int k0) {
#pragma unroll
            for (int i = 0; i < A_LOADS; ++i)
                ra[i] = load4(pa + (size_t)i * A_STEP * K, bm + ar + i * A_STEP < M, k0 + ac, K, vec_a);
#pragma unroll
            for (int i = 0; i < B_LOADS; ++i)
                rb[i] = load4(pb + (size_t)i * B_STEP * N, k0 + br + i * B_STEP < K, bn + bc, N, vec_bc);
            pa += BK;
            pb += (size_t)BK * N;
        };
        auto store = [&](int buf) {
#pragma unroll
            for (int i = 0; i < A_LOADS; ++i) {
                const int r = ar + i * A_STEP;
                As[buf][ac][r] = ra[i].x;
                As[buf][ac + 1][r] = ra[i].y;
                As[buf][ac + 2][r] = ra[i].z;
                As[buf][ac + 3][r] = ra[i].w;
            }
#pragma unroll
            for (int i = 0; i < B_LOADS; ++i)
                *reinterpret_cast<float4*>(&Bs[buf][br + i * B_STEP][bc]) = rb[i];
        };

        const int kend = ke * BK;
        load(kb * BK);
        store(0);
        __syncthreads();
        int buf = 0;
        for (int k0 = kb * BK; k0 < kend; k0 += BK) {
            const bool more = k0 + BK < kend;
            if (more) load(k0 + BK);
#pragma unroll
            for (int k = 0; k < BK; ++k) {
#pragma unroll
                for (int s = 0; s < RM; ++s)
                    *reinterpret_cast<float4*>(&a[4 * s]) = *reinterpret_cast<const float4*>(&As[buf][k][wm + s * LM * 4 + lm]);
#pragma unroll
                for (int s = 0; s < RN; ++s)
                    *reinterpret_cast<float4*>(&b[4 * s]) = *reinterpret_cast<const float4*>(&Bs[buf][k][wn + s * LN * 4 + ln]);
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
            }
            if (more) store(buf ^ 1);
            __syncthreads();  // also: the shared tiles are free for the next unit's first store
            buf ^= 1;
        }

        // The unit is re-read from shared memory rather than kept in registers through the loop.
        if (sched[4] < (K + BK - 1) / BK) {
            // Not this tile's last k-slice: publish the partial sums for the block that has it.
            float4* part = reinterpret_cast<float4*>(ws) + (size_t)fresh_cta() * PART4 * THREADS + fresh_tid();
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int s = 0; s < RN; ++s)
                    __stcg(part + (i * RN + s) * THREADS,
                           make_float4(acc[i][4 * s], acc[i][4 * s + 1], acc[i][4 * s + 2], acc[i][4 * s + 3]));
            __threadfence();
            __syncthreads();
            if (t == 0) atomicExch(&flags[blockIdx.x], 1);
            continue;
        }
        if (sched[3] > 0) {
            // This block has the last k-slice; blocks first .. blockIdx.x - 1 computed those before kb.
            const Plan plan(M, N, K, gridDim.x);
            const int first = plan.owner(sched[2] * plan.ipt), cta = blockIdx.x;
            if (t == 0) {
                for (int c = first; c < cta; ++c) {
                    while (*reinterpret_cast<volatile int*>(&flags[c]) == 0) __nanosleep(64);
                    flags[c] = 0;  // consumed; nothing else reads it in this launch
                }
                __threadfence();
            }
            __syncthreads();
            for (int c = first; c < cta; ++c) {
                const float4* part = reinterpret_cast<const float4*>(ws) + (size_t)c * PART4 * THREADS + fresh_tid();
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int s = 0; s < RN; ++s) {
                        const float4 p = __ldcg(part + (i * RN + s) * THREADS);
                        acc[i][4 * s] += p.x;
                        acc[i][4 * s + 1] += p.y;
                        acc[i][4 * s + 2] += p.z;
                        acc[i][4 * s + 3] += p.w;
                    }
            }
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
                if (vec_bc && col + 3 < N) {
                    *reinterpret_cast<float4*>(out) = make_float4(v[0], v[1], v[2], v[3]);
                } else {
#pragma unroll
                    for (int jj = 0; jj < 4; ++jj)
                        if (col + jj < N) out[jj] = v[jj];
                }
            }
        }
    }
}
