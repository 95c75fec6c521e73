// streamk_matmul: tuned_matmul (dbuf_matmul at BK 16, 8 x 16 outputs per thread, two blocks per
// SM) with a stream-K schedule for the tiles that do not fill a whole wave.
//
// Why: at 4096^3 there are 1,024 tiles of 128 x 128 and 264 block slots (132 SMs x 2), so a
// one-block-per-tile grid runs 3 full waves and a fourth in which 32 slots sit idle: 3.88 waves of
// work take 4 waves of time. Small problems are worse: at 1024^3, 64 tiles leave 200 slots idle.
// With SLOTS the number of blocks resident at once, tiles = dp + rem, rem = tiles % SLOTS:
// - Blocks 0 .. dp-1 each compute one whole tile, exactly as tuned_matmul does.
// - Blocks dp .. dp+SLOTS-1 are stream-K workers. The k-slices of the last rem tiles are one
//   iteration space cut into SLOTS equal ranges, so every worker does the same amount of work. A
//   range may start or end inside a tile: the worker that computes a tile's last k-slice adds the
//   others' partial sums (from ws) and writes C; the others write partial sums.
// - A last wave at least SKFILL% full (2048^3: 256 tiles on 264 slots) runs as whole tiles: there
//   the split costs more than the idle slots (396.6 against 386.3 us on the H200).
// The grid is round_up(tiles, SLOTS). Workers start as the last whole-tile blocks finish.
//
// The fix-up never deadlocks: a worker walks its range from the end, so the one tile it does not
// finish (where its range ends) comes first, and its partial is published (flags[worker] = 1)
// before it waits for anything. The worker finishing a tile waits only on lower-numbered workers,
// which are dispatched first. Each waiting worker resets the flags it consumed, so flags is all
// zeros again when the kernel ends (the spec checks that) and the next launch needs no memset.
// Partial sums are added in worker order, so results are deterministic, but they differ from the
// one-block order in the last bits.
//
// Registers decide the speed here. tuned_matmul uses 255, and every value that lives through the
// FMA loop takes a register from the loads of the next k step's fragments: ptxas then issues six
// LDS.128 and waits on them before 128 FFMAs instead of spreading them, and the kernel is 2-4%
// slower. Three versions measured that way on the H200 (commits 3a24d7d persistent, a604e44,
// d1fcf8d: 3,055 to 3,095 us at 4096^3 against tuned_matmul's 2,988). So: the whole-tile blocks run
// their own copy of the loop over 0..K (its SASS is tuned_matmul's); the workers' schedule lives in
// shared memory, stepped by thread 0 and re-read after the loop.
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
#ifndef SLOTS
#define SLOTS 264  // blocks resident at once: 2 per SM x 132 SMs (H200, H100 SXM); any value is correct
#endif
#ifndef SKFILL
#define SKFILL 90  // a last wave at least SKFILL% full runs as whole tiles (100: never)
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
    if (vec && row_ok && c < cols) return *reinterpret_cast<const float4*>(p);  // vec: cols, c multiples of 4
    float4 v;
    v.x = (row_ok && c < cols) ? p[0] : 0.0f;
    v.y = (row_ok && c + 1 < cols) ? p[1] : 0.0f;
    v.z = (row_ok && c + 2 < cols) ? p[2] : 0.0f;
    v.w = (row_ok && c + 3 < cols) ? p[3] : 0.0f;
    return v;
}

// The schedule, a function of the sizes only. dp tiles are whole-tile blocks, the k-slices of the
// other rem tiles are cut into g_sk ranges: worker w takes [w * base + min(w, extra), ...), the
// first `extra` workers one iteration more. Whole tiles come first, in blocks and in tile order.
// (Workers first, so that they all start together, measured 0.1-0.4% slower.)
struct Plan {
    int tiles_m, tiles_n, tiles, ipt, dp, g_sk, base, extra;
    Plan() = default;
    __device__ __forceinline__ Plan(int M, int N, int K) {
        tiles_m = (M + BM - 1) / BM;
        tiles_n = (N + BN - 1) / BN;
        tiles = tiles_m * tiles_n;
        ipt = (K + BK - 1) / BK;  // k-slices per tile
        const int rem = tiles % SLOTS;
        dp = rem * 100 >= SKFILL * SLOTS ? tiles : tiles - rem;  // a nearly full last wave runs as whole tiles; kprof-mutants: equivalent: either schedule computes every tile
        const int iters = (tiles - dp) * ipt;
        g_sk = iters ? min(SLOTS, max(1, iters / SKMIN)) : 0;  // workers with a range
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

// threadIdx.x read afresh (volatile asm is not hoisted out of loops), so that the partial-sum
// addresses are computed where they are used, not held in registers through the FMAs.
__device__ __forceinline__ int fresh_tid() { int v; asm volatile("mov.u32 %0, %%tid.x;" : "=r"(v)); return v; }

struct Smem {
    float As[2][BK][BM + PAD];  // A transposed: As[buf][k][m]
    float Bs[2][BK][BN];
};

// Grouped order: tile ids run down GROUP tile-rows, then right (as dbuf_matmul's block ids).
__device__ __forceinline__ void tile_origin(int lin, int tiles_m, int tiles_n, int& bm, int& bn) {
    const int per_group = GROUP * tiles_n;
    const int first_m = (lin / per_group) * GROUP;
    const int group_m = min(tiles_m - first_m, GROUP);
    bm = (first_m + (lin % per_group) % group_m) * BM;
    bn = ((lin % per_group) / group_m) * BN;
}

// acc += A[bm.., k_begin..k_end) @ B[k_begin..k_end), bn..], k_begin a multiple of BK: dbuf_matmul's
// loop, buffer index toggled as there. A whole tile calls it with 0 and K: k0 and its bound are then
// uniform registers and the SASS is tuned_matmul's loop (scripts/sass_loops.py). A worker's range
// comes from shared memory; in that copy of the loop ptxas, short of registers, re-derives the
// shared-memory base every slice and issues the fragment loads in clumps (the shape that cost whole
// tiles 2-4% in the earlier versions; the workers' loop was not timed on its own).
__device__ __forceinline__ void mac_range(float (&acc)[TM][TN], Smem& sm, const float* __restrict__ A,
                                          const float* __restrict__ B, int M, int N, int K, int bm,
                                          int bn, int k_begin, int k_end) {
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
    const int lm = (lane / LN) * 4, ln = (lane % LN) * 4;
    const bool vec_a = (K % 4) == 0, vec_bc = (N % 4) == 0;
    constexpr int A_STEP = THREADS / (BK / 4), B_STEP = THREADS / (BN / 4);
    const int ar = t / (BK / 4), ac = (t % (BK / 4)) * 4;
    const int br = t / (BN / 4), bc = (t % (BN / 4)) * 4;
    const float* pa = A + (size_t)(bm + ar) * K + k_begin + ac;
    const float* pb = B + (size_t)(k_begin + br) * N + bn + bc;
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
            sm.As[buf][ac][r] = ra[i].x;
            sm.As[buf][ac + 1][r] = ra[i].y;
            sm.As[buf][ac + 2][r] = ra[i].z;
            sm.As[buf][ac + 3][r] = ra[i].w;
        }
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i)
            *reinterpret_cast<float4*>(&sm.Bs[buf][br + i * B_STEP][bc]) = rb[i];
    };

    int buf = (k_begin / BK) % 2;
    load(k_begin);
    store(buf);
    __syncthreads();
    for (int k0 = k_begin; k0 < k_end; k0 += BK) {
        const bool more = k0 + BK < k_end;
        if (more) load(k0 + BK);  // in flight during the FMAs below
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int s = 0; s < RM; ++s)
                *reinterpret_cast<float4*>(&a[4 * s]) = *reinterpret_cast<const float4*>(&sm.As[buf][k][wm + s * LM * 4 + lm]);
#pragma unroll
            for (int s = 0; s < RN; ++s)
                *reinterpret_cast<float4*>(&b[4 * s]) = *reinterpret_cast<const float4*>(&sm.Bs[buf][k][wn + s * LN * 4 + ln]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        if (more) store(buf ^ 1);  // the other buffer: last read before the previous barrier
        __syncthreads();           // also: the shared tiles are free for the next range's first store
        buf ^= 1;
    }
}

__device__ __forceinline__ void store_tile(const float (&acc)[TM][TN], float* __restrict__ C, int M, int N,
                                           int bm, int bn) {
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
    const int lm = (lane / LN) * 4, ln = (lane % LN) * 4;
    const bool vec_bc = (N % 4) == 0;
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

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
streamk_matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
               float* __restrict__ ws, int* flags, int M, int N, int K) {
    __shared__ __align__(16) Smem sm;
    {
        const Plan plan(M, N, K);
        if ((int)blockIdx.x < plan.dp) {  // a whole tile: tuned_matmul
            int bm, bn;
            tile_origin(blockIdx.x, plan.tiles_m, plan.tiles_n, bm, bn);
            float acc[TM][TN] = {};
            mac_range(acc, sm, A, B, M, N, K, bm, bn, 0, K);
            store_tile(acc, C, M, N, bm, bn);
            return;
        }
    }

    // A stream-K worker (or a spare block, which finds no work). Its schedule lives in shared memory
    // and thread 0 steps it, so that none of it holds a register through the FMA loop (values
    // computed before the loop would be kept in registers, and at 255 a few more spill).
    // sched: [0] next iteration + 1 (walking down); the unit: [2] tile, [3] kb, [4] ke,
    // [5] worker w, [6] first worker of the tile, or -1 if this unit does not end the tile (it
    // publishes a partial sum).
    __shared__ int sched[7];
    __shared__ Plan plan_s;
    const int t = threadIdx.x;
    if (t == 0) {
        const Plan plan(M, N, K);
        const int w = (int)blockIdx.x - plan.dp;  // worker number, 0 .. SLOTS-1 (end(w) is 0 for a spare)
        sched[0] = w >= 0 ? plan.end(w) : 0;
        sched[5] = max(w, 0);
        plan_s = plan;
    }
    while (true) {
        __syncthreads();  // everyone is done with the previous unit's sched[2..6]
        if (t == 0) {
            const Plan plan = plan_s;
            const int w = (int)blockIdx.x - plan.dp;
            const int my_start = w >= 0 ? plan.start(w) : 0, pos = sched[0];
            if (pos > my_start) {  // the worker's range, from its end
                const int rel = (pos - 1) / plan.ipt, tb = rel * plan.ipt, kb = max(my_start, tb) - tb;
                sched[0] = tb + kb;
                sched[2] = plan.dp + rel;
                sched[3] = kb;
                sched[4] = pos - tb;
                sched[6] = pos - tb < plan.ipt ? -1 : plan.owner(tb);
            } else {
                sched[2] = -1;  // done
            }
        }
        __syncthreads();
        if (sched[2] < 0) break;
        {
            int bm, bn;
            tile_origin(sched[2], plan_s.tiles_m, plan_s.tiles_n, bm, bn);
            float acc[TM][TN] = {};
            mac_range(acc, sm, A, B, M, N, K, bm, bn, sched[3] * BK, sched[4] * BK);

            // The unit is re-read from shared memory rather than kept in registers through the loop.
            if (sched[6] < 0) {
                // Not this tile's last k-slice: publish the partial sums for the worker that has it.
                const int w = sched[5];
                float4* part = reinterpret_cast<float4*>(ws) + (size_t)w * PART4 * THREADS + fresh_tid();
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int s = 0; s < RN; ++s)
                        __stcg(part + (i * RN + s) * THREADS,
                               make_float4(acc[i][4 * s], acc[i][4 * s + 1], acc[i][4 * s + 2], acc[i][4 * s + 3]));
                __threadfence();
                __syncthreads();
                if (t == 0) atomicExch(&flags[w], 1);
                continue;
            }
            if (sched[6] < sched[5]) {
                // This worker has the tile's last k-slice; workers first .. w-1 computed those before kb.
                const int first = sched[6], w = sched[5];
                if (t == 0) {
                    for (int c = first; c < w; ++c) {
                        while (*reinterpret_cast<volatile int*>(&flags[c]) == 0) __nanosleep(64);
                        flags[c] = 0;  // consumed; nothing else reads it in this launch
                    }
                    __threadfence();
                }
                __syncthreads();
                for (int c = first; c < w; ++c) {
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
            tile_origin(sched[2], plan_s.tiles_m, plan_s.tiles_n, bm, bn);
            store_tile(acc, C, M, N, bm, bn);
        }
    }
}
