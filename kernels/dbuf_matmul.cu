// dbuf_matmul: warptile_matmul with the global loads overlapped with the arithmetic.
// - Two shared-memory buffers: while the block computes on one k-slice, each thread has already
//   issued the global loads of the next slice into registers, and stores them into the other
//   buffer after its FMAs. The load latency hides behind BK * TM * TN FMAs, and there is one
//   __syncthreads() per slice instead of two.
// - Grouped block order: consecutive blocks walk down GROUP block-rows before moving right, so
//   the blocks resident at one time share their A and B panels in L2 (GROUP 1: plain row order).
// Warp tiles, 16-byte loads and bounds are as in warptile_matmul.
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
#ifndef GROUP
#define GROUP 8
#endif
#ifndef MINB
#define MINB 1  // blocks per SM asked of the compiler: 2 caps registers at 128, and this kernel then spills
#endif
#ifndef ATRANS
#define ATRANS 0  // 1: each thread loads 4x4 blocks of A and stores them transposed as 16-byte stores
#endif
#ifndef BASYNC
#define BASYNC 0  // 1: the B slice goes to shared memory by cp.async (no registers in between)
#endif
#ifndef FRAG2
#define FRAG2 0  // 1: shared-memory fragments loaded one k step ahead, behind a compiler fence
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
static_assert(!ATRANS || (A_LOADS % 4 == 0 && THREADS % (8 * (BK / 4)) == 0),
              "ATRANS: whole 4x4 blocks of A per thread");
static_assert(A_LOADS * 4 * THREADS == BM * BK && B_LOADS * 4 * THREADS == BK * BN,
              "each thread loads a whole number of float4s of each tile");

// One float4 of a row-major matrix, or its in-bounds part padded with zeros.
__device__ __forceinline__ float4 load4(const float* __restrict__ p, bool row_ok, int c, int cols, bool vec) {
    if (vec && row_ok && c + 3 < cols) return *reinterpret_cast<const float4*>(p);
    float4 v;
    v.x = (row_ok && c < cols) ? p[0] : 0.0f;
    v.y = (row_ok && c + 1 < cols) ? p[1] : 0.0f;
    v.z = (row_ok && c + 2 < cols) ? p[2] : 0.0f;
    v.w = (row_ok && c + 3 < cols) ? p[3] : 0.0f;
    return v;
}

// cp.async of one float4 of a row-major matrix into shared memory, zero-filled outside the matrix
// (safe: a valid address for the copies that read nothing).
__device__ __forceinline__ void copy4(float* dst, const float* p, const float* safe, bool row_ok, int c, int cols, bool vec) {
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    if (vec) {  // cols % 4 == 0: a float4 is wholly inside or wholly outside
        const bool in = row_ok && c < cols;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(in ? p : safe), "r"(in ? 16 : 0));
    } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const bool in = row_ok && c + j < cols;
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d + 4 * j), "l"(in ? p + j : safe), "r"(in ? 4 : 0));
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
dbuf_matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
            int M, int N, int K) {
    __shared__ __align__(16) float As[2][BK][BM + PAD];
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
    const int lm = (lane / LN) * 4, ln = (lane % LN) * 4;

    // Grouped order: block ids run down GROUP block-rows, then right.
    const int lin = blockIdx.y * gridDim.x + blockIdx.x;
    const int per_group = GROUP * gridDim.x;
    const int first_m = (lin / per_group) * GROUP;
    const int group_m = min((int)gridDim.y - first_m, GROUP);
    const int bm = (first_m + (lin % per_group) % group_m) * BM;
    const int bn = ((lin % per_group) / group_m) * BN;

    const bool vec_a = (K % 4) == 0, vec_bc = (N % 4) == 0;
    // This thread's float4s of each slice: A rows ar + i * A_STEP at columns k0 + ac; B rows
    // k0 + br + i * B_STEP at columns bn + bc. Pointers advance by one slice per iteration.
    constexpr int A_STEP = THREADS / (BK / 4), B_STEP = THREADS / (BN / 4);
    const int ar = t / (BK / 4), ac = (t % (BK / 4)) * 4;
    const int br = t / (BN / 4), bc = (t % (BN / 4)) * 4;
    const float* pa = A + (size_t)(bm + ar) * K + ac;
    const float* pb = B + (size_t)br * N + bn + bc;
    float acc[TM][TN] = {};
    float a[TM], b[TN];
    float4 ra[A_LOADS], rb[BASYNC ? 1 : B_LOADS];

    // ATRANS: 4x4 block b = t + j * THREADS covers rows 4 * mq .. + 3 and columns 4 * kq .. + 3 of the
    // slice; 8 consecutive lanes take 8 consecutive mq at one kq, so their 16-byte stores of a
    // transposed row fill 128 contiguous bytes of As (no bank conflict), and the lanes at the
    // BK / 4 values of kq read whole sectors of each row of A.
    constexpr int KQ = BK / 4;
    const int tq = (t % 8) + 8 * (t / (8 * KQ)), tk = (t / 8) % KQ;  // block b = t: mq, kq
    const float* pa4 = A + (size_t)(bm + 4 * tq) * K + 4 * tk;
    auto load = [&](int k0, int nbuf) {  // nbuf: the buffer the B slice goes to when BASYNC
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            if (ATRANS) {  // block j = i / 4 (mq advances by THREADS / KQ per block), row 4 * mq + i % 4
                const int j = i / 4, r = 4 * (tq + j * (THREADS / KQ)) + i % 4;
                ra[i] = load4(pa4 + (size_t)(4 * j * (THREADS / KQ) + i % 4) * K, bm + r < M, k0 + 4 * tk, K, vec_a);
            } else {
                ra[i] = load4(pa + (size_t)i * A_STEP * K, bm + ar + i * A_STEP < M, k0 + ac, K, vec_a);
            }
        }
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
            if (BASYNC) {
                copy4(&Bs[nbuf][br + i * B_STEP][bc], pb + (size_t)i * B_STEP * N, B, k0 + br + i * B_STEP < K, bn + bc, N, vec_bc);
            } else {
                rb[BASYNC ? 0 : i] = load4(pb + (size_t)i * B_STEP * N, k0 + br + i * B_STEP < K, bn + bc, N, vec_bc);
            }
        }
        if (BASYNC) asm volatile("cp.async.commit_group;\n" ::);
        pa += BK;
        pa4 += BK;
        pb += (size_t)BK * N;
    };
    auto store = [&](int buf) {
        if (ATRANS) {
#pragma unroll
            for (int j = 0; j < A_LOADS / 4; ++j) {
                const int m = 4 * (tq + j * (THREADS / KQ)), k = 4 * tk;
                const float4* v = &ra[4 * j];
                *reinterpret_cast<float4*>(&As[buf][k][m]) = make_float4(v[0].x, v[1].x, v[2].x, v[3].x);
                *reinterpret_cast<float4*>(&As[buf][k + 1][m]) = make_float4(v[0].y, v[1].y, v[2].y, v[3].y);
                *reinterpret_cast<float4*>(&As[buf][k + 2][m]) = make_float4(v[0].z, v[1].z, v[2].z, v[3].z);
                *reinterpret_cast<float4*>(&As[buf][k + 3][m]) = make_float4(v[0].w, v[1].w, v[2].w, v[3].w);
            }
        }
#pragma unroll
        for (int i = 0; i < (ATRANS ? 0 : A_LOADS); ++i) {
            const int r = ar + i * A_STEP;
            As[buf][ac][r] = ra[i].x;
            As[buf][ac + 1][r] = ra[i].y;
            As[buf][ac + 2][r] = ra[i].z;
            As[buf][ac + 3][r] = ra[i].w;
        }
#pragma unroll
        for (int i = 0; i < (BASYNC ? 0 : B_LOADS); ++i)
            *reinterpret_cast<float4*>(&Bs[buf][br + i * B_STEP][bc]) = rb[i];
        if (BASYNC) asm volatile("cp.async.wait_group 0;\n" ::);  // this thread's copies landed; the barrier shares them
    };

    load(0, 0);
    store(0);
    __syncthreads();
    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (more) load(k0 + BK, buf ^ 1);  // in flight during the FMAs below
        if (FRAG2) {  // fragments of step k + 1 loaded before the FMAs of step k, behind a compiler fence
            float fa[2][TM], fb[2][TN];
            auto frag = [&](int k, int f) {
#pragma unroll
                for (int s = 0; s < RM; ++s)
                    *reinterpret_cast<float4*>(&fa[f][4 * s]) = *reinterpret_cast<const float4*>(&As[buf][k][wm + s * LM * 4 + lm]);
#pragma unroll
                for (int s = 0; s < RN; ++s)
                    *reinterpret_cast<float4*>(&fb[f][4 * s]) = *reinterpret_cast<const float4*>(&Bs[buf][k][wn + s * LN * 4 + ln]);
            };
            frag(0, 0);
#pragma unroll
            for (int k = 0; k < BK; ++k) {
                if (k + 1 < BK) frag(k + 1, (k + 1) & 1);
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] += fa[k & 1][i] * fb[k & 1][j];
                asm volatile("" ::: "memory");
            }
        } else {
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
        }
        if (more) store(buf ^ 1);  // the other buffer: last read before the previous barrier
        __syncthreads();
        buf ^= 1;
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
