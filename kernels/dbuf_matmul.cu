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

// One float4 of a row-major matrix, or its in-bounds part padded with zeros.
__device__ __forceinline__ float4 load4(const float* __restrict__ p, bool row_ok, int c, int cols, bool vec) {
    if (vec && row_ok && c < cols) return *reinterpret_cast<const float4*>(p);  // vec: cols, c multiples of 4
    float4 v;
    v.x = (row_ok && c < cols) ? p[0] : 0.0f;
    v.y = (row_ok && c + 1 < cols) ? p[1] : 0.0f;
    v.z = (row_ok && c + 2 < cols) ? p[2] : 0.0f;
    v.w = (row_ok && c + 3 < cols) ? p[3] : 0.0f;
    return v;
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

    load(0);
    store(0);
    __syncthreads();
    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool more = k0 + BK < K;
        if (more) load(k0 + BK);  // in flight during the FMAs below
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
