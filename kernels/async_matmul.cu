// async_matmul: dbuf_matmul with the copies to shared memory done by the hardware (cp.async, sm_80+).
// - STAGES slices are in flight: global memory is copied straight into shared memory with no
//   registers in between, so the copy buffers (ra, rb) and their stores leave the loop.
// - cp.async cannot transpose, so the A slice goes in as 4-byte copies, one per element, into its
//   transposed place. Without care, the 32 lanes of a warp would write 4 rows x 8 k of A into
//   4 banks (8-way conflicts). Two cures, chosen by SWIZZLE: 0 pads each k row of the A slice by
//   4 floats (row k starts 4k banks further on); 1 XORs the m index with a multiple of 4 chosen
//   by k (float4 reads stay contiguous), with no padding but an XOR per address in the FMA loop.
//   B goes in as 16-byte copies.
// - Out-of-bounds elements are copied with a source size of 0, which writes zeros.
// Warp tiles, grouped block order and bounds are as in dbuf_matmul.
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
#define MINB 2
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef SWIZZLE
#define SWIZZLE 0
#endif
#if SWIZZLE
#define AS_ROW BM
#else
#define AS_ROW (BM + 4)
#endif
#define STAGE_FLOATS (BK * (AS_ROW + BN))
#define TM (4 * RM)
#define TN (4 * RN)
#define LM (WM / TM)
#define LN (WN / TN)
#define THREADS ((BM / WM) * (BN / WN) * 32)
#define A_LOADS (BM * BK / THREADS)
#define B_LOADS (BK * BN / 4 / THREADS)
static_assert(LM * LN == 32, "a warp tile is 32 lanes of TM x TN");
static_assert(BM % WM == 0 && BN % WN == 0 && BK % 4 == 0, "warp tiles divide the block tile");
static_assert(A_LOADS * THREADS == BM * BK && B_LOADS * 4 * THREADS == BK * BN,
              "each thread copies a whole number of A elements and B float4s of each slice");
static_assert(BK <= 8 * 4 && 32 % BK == 0 && STAGES >= 2, "the swizzle spreads a warp's BK columns of A over 32 banks");

// Where element (k, m) of the transposed A slice lives.
__device__ __forceinline__ int a_at(int k, int m) {
#if SWIZZLE
    return k * AS_ROW + (m ^ ((k * (32 / BK)) & 28));  // k picks the multiple of 4 XORed into m
#else
    return k * AS_ROW + m;  // padded rows
#endif
}

__device__ __forceinline__ void cp_async4(float* dst, const float* src, bool ok) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(ok ? 4 : 0));
}

__device__ __forceinline__ void cp_async16(float* dst, const float* src, int bytes) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(bytes));
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
async_matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
             int M, int N, int K) {
    extern __shared__ __align__(16) float smem[];  // STAGES x (As[BK][AS_ROW], Bs[BK][BN])
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
    const int lm = (lane / LN) * 4, ln = (lane % LN) * 4;

    const int lin = blockIdx.y * gridDim.x + blockIdx.x;
    const int per_group = GROUP * gridDim.x;
    const int first_m = (lin / per_group) * GROUP;
    const int group_m = min((int)gridDim.y - first_m, GROUP);
    const int bm = (first_m + (lin % per_group) % group_m) * BM;
    const int bn = ((lin % per_group) / group_m) * BN;

    const bool vec_bc = (N % 4) == 0;
    // A: consecutive lanes copy consecutive k of one row (coalesced), rows ar + i * A_STEP.
    constexpr int A_STEP = THREADS / BK, B_STEP = THREADS / (BN / 4);
    const int ar = t / BK, ak = t % BK;
    const int br = t / (BN / 4), bc = (t % (BN / 4)) * 4;
    float acc[TM][TN] = {};
    float a[TM], b[TN];

    auto issue = [&](int slice) {
        float* As = smem + (slice % STAGES) * STAGE_FLOATS;
        float* Bs = As + BK * AS_ROW;
        const int k0 = slice * BK;
#pragma unroll
        for (int i = 0; i < A_LOADS; ++i) {
            const int r = ar + i * A_STEP, gr = bm + r, gk = k0 + ak;
            const bool ok = gr < M && gk < K;
            cp_async4(&As[a_at(ak, r)], ok ? A + (size_t)gr * K + gk : A, ok);
        }
#pragma unroll
        for (int i = 0; i < B_LOADS; ++i) {
            const int r = br + i * B_STEP, gk = k0 + r, gc = bn + bc;
            float* dst = &Bs[r * BN + bc];
            if (vec_bc || gk >= K || gc >= N) {  // whole float4, or nothing in bounds: one copy
                const bool ok = gk < K && gc < N;
                cp_async16(dst, ok ? B + (size_t)gk * N + gc : B, ok ? 16 : 0);
            } else {  // N % 4 != 0: element by element (the float4 would be misaligned)
#pragma unroll
                for (int j = 0; j < 4; ++j) cp_async4(dst + j, B + (size_t)gk * N + gc + j, gc + j < N);
            }
        }
    };

    const int slices = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < slices) issue(s);
        asm volatile("cp.async.commit_group;\n" ::);
    }
    for (int s = 0; s < slices; ++s) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2));  // slice s has landed
        __syncthreads();  // ... for every thread, and slice s - 1 is no longer being read
        if (s + STAGES - 1 < slices) issue(s + STAGES - 1);
        asm volatile("cp.async.commit_group;\n" ::);
        const float* As = smem + (s % STAGES) * STAGE_FLOATS;
        const float* Bs = As + BK * AS_ROW;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int q = 0; q < RM; ++q)
                *reinterpret_cast<float4*>(&a[4 * q]) =
                    *reinterpret_cast<const float4*>(&As[a_at(k, wm + q * LM * 4 + lm)]);
#pragma unroll
            for (int q = 0; q < RN; ++q)
                *reinterpret_cast<float4*>(&b[4 * q]) = *reinterpret_cast<const float4*>(&Bs[k * BN + wn + q * LN * 4 + ln]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
    }
    asm volatile("cp.async.wait_group 0;\n" ::);
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
