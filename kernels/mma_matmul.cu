// mma_matmul: C = A @ B on tensor cores, the first step past the FP32 ladder. A (M x K) and B (K x N)
// are bfloat16, row-major (their bits as unsigned short); C (M x N) is float32, accumulated in float32.
//
// What it adds to async_matmul: warp-level mma.sync (m16n8k16, bfloat16 in, float32 accumulate), the
// fragments read from shared memory with ldmatrix (B transposed on the way, .trans), a warp tile of
// WM x WN made of (WM / 16) x (WN / 8) fragments, and STAGES slices of BK in flight through cp.async.
// Rows of shared memory are padded by 8 elements (16 bytes), so the eight rows one ldmatrix reads fall
// in different banks.
//
// The main loop keeps two sets of fragments: the next k-step's are read (ldmatrix) before this one's
// mma are issued, across slices too, so a warp's mma never wait on the ldmatrix just before them. Each
// thread's 16-byte chunks of a slice are fixed (the same column, rows THREADS / (width / 8) apart), so
// their addresses are worked out once and moved on by one slice each time.
//
// Any size: where K and N are multiples of 8 and both inputs 16-byte aligned, each 16-byte chunk of a
// slice is one cp.async (zero-filled past M or K); otherwise each element is loaded on its own, zero
// past the edges. C is written within bounds, two floats at a time where N is even.
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 256
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef MINB  // blocks an SM asked of __launch_bounds__; 0: none asked
#define MINB 0
#endif
#ifndef GROUP  // tile rows a group walks column by column (L2 reuse of B); 1: row by row
#define GROUP 1
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define APAD (BK + 8)  // a row of an A slice in shared memory, elements
#define BPAD (BN + 8)  // a row of a B slice
#define A_SLOT (BM * APAD)  // one slot of A slices in shared memory, elements
#define B_SLOT (BK * BPAD)  // and of B
#define MI (WM / 16)   // fragments of a warp tile along M
#define NI (WN / 8)    // and along N
#define KS (BK / 16)   // k-steps a slice
#define A_CHUNKS (BM * BK / 8 / THREADS)  // 16-byte chunks of a slice each thread loads, of A
#define B_CHUNKS (BK * BN / 8 / THREADS)  // and of B

static_assert(BK % 32 == 0 && WM % 16 == 0 && WN % 16 == 0, "BK a multiple of 32, WM and WN of 16");
static_assert(BM % WM == 0 && BN % WN == 0, "whole warp tiles a block");
static_assert((BM * BK / 8) % THREADS == 0 && (BK * BN / 8) % THREADS == 0, "whole 16-byte chunks per thread");
static_assert(THREADS % (BK / 8) == 0 && THREADS % (BN / 8) == 0, "a thread's chunks in one column");

#if MINB > 0
#define BOUNDS __launch_bounds__(THREADS, MINB)
#else
#define BOUNDS __launch_bounds__(THREADS)
#endif

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool full) {
    // src-size 0 writes 16 zero bytes and reads nothing: the chunks past M or K
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(full ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// The element-wise path: a ROWS x COLS tile at (r0, c0) of a row-major rows x cols matrix into dst (rows
// LD elements apart), zero past the matrix.
template <int ROWS, int COLS, int LD>
__device__ __forceinline__ void load_tile_scalar(unsigned short* dst, const unsigned short* src, int rows, int cols,
                                                 int r0, int c0) {
#pragma unroll
    for (int c = threadIdx.x; c < ROWS * COLS / 8; c += THREADS) {
        const int r = c / (COLS / 8), cc = (c % (COLS / 8)) * 8;
        const int row = r0 + r, col = c0 + cc;
        unsigned short* d = dst + r * LD + cc;
#pragma unroll
        for (int e = 0; e < 8; ++e)
            d[e] = (row < rows && col + e < cols) ? src[(size_t)row * cols + col + e] : (unsigned short)0;
    }
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One k-step's fragments of the warp tile: A's MI 16 x 16 (rows 0-15 by lanes 0-15, k 8-15 by lanes
// 16-31) and B's NI 16 x 8, two a load (k 0-7 and 8-15 of each). a_base and b_base: this lane's
// addresses in the slice, k-step 0.
__device__ __forceinline__ void load_frags(unsigned (&a)[MI][4], unsigned (&b)[NI][2], unsigned a_base,
                                           unsigned b_base, int ks) {
#pragma unroll
    for (int i = 0; i < MI; ++i) ldmatrix_x4(a[i], a_base + (i * 16 * APAD + ks * 16) * 2);
#pragma unroll
    for (int j = 0; j < NI; j += 2) {
        unsigned r[4];
        ldmatrix_x4_trans(r, b_base + (ks * 16 * BPAD + j * 8) * 2);
        b[j][0] = r[0];
        b[j][1] = r[1];
        b[j + 1][0] = r[2];
        b[j + 1][1] = r[3];
    }
}

__device__ __forceinline__ void mma_tile(float (&acc)[MI][NI][4], const unsigned (&a)[MI][4],
                                         const unsigned (&b)[NI][2]) {
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) mma_bf16(acc[i][j], a[i], b[j][0], b[j][1]);
}

template <bool VEC>
__device__ __forceinline__ void matmul_tile(const unsigned short* __restrict__ A, const unsigned short* __restrict__ B,
                                            float* __restrict__ C, int M, int N, int K) {
    extern __shared__ __align__(16) unsigned short smem[];
    unsigned short* As = smem;                    // STAGES x BM x APAD
    unsigned short* Bs = smem + STAGES * A_SLOT;  // STAGES x BK x BPAD
    const unsigned as0 = smem_addr(As), bs0 = smem_addr(Bs);

#if GROUP > 1
    const int tiles_m = gridDim.y, tile = blockIdx.y * gridDim.x + blockIdx.x;  // the grid's own order
    const int first = tile / (GROUP * gridDim.x) * GROUP, rows = min(GROUP, tiles_m - first);
    const int in_group = tile % (GROUP * gridDim.x);
    const int bm = (first + in_group % rows) * BM, bn = in_group / rows * BN;
#else
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
#endif
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;  // the warp's tile in the block's

    // This thread's chunks (the 16-byte path): of A, rows a_r + c * A_STEP at column a_c of the slice;
    // of B, rows b_r + c * B_STEP at column b_c.
    constexpr int A_STEP = THREADS / (BK / 8), B_STEP = THREADS / (BN / 8);
    const int a_r = threadIdx.x / (BK / 8), a_c = (threadIdx.x % (BK / 8)) * 8;
    const int b_r = threadIdx.x / (BN / 8), b_c = (threadIdx.x % (BN / 8)) * 8;
    const unsigned short* a_src = A + (size_t)(bm + a_r) * K + a_c;  // slice 0; moves on by BK a slice
    const unsigned short* b_src = B + (size_t)b_r * N + bn + b_c;    // slice 0; moves on by BK rows
    const bool b_col_in = bn + b_c < N;

    auto load_slice = [&](int kt, int slot) {
        if (VEC) {
            const unsigned sa = as0 + (slot * A_SLOT + a_r * APAD + a_c) * 2;
            const bool a_col_in = kt * BK + a_c < K;
#pragma unroll
            for (int c = 0; c < A_CHUNKS; ++c) {
                const bool in = a_col_in && bm + a_r + c * A_STEP < M;
                cp_async16(sa + c * A_STEP * APAD * 2, in ? a_src + (size_t)c * A_STEP * K + kt * BK : A, in);
            }
            const unsigned sb = bs0 + (slot * B_SLOT + b_r * BPAD + b_c) * 2;
#pragma unroll
            for (int c = 0; c < B_CHUNKS; ++c) {
                const bool in = b_col_in && kt * BK + b_r + c * B_STEP < K;
                cp_async16(sb + c * B_STEP * BPAD * 2, in ? b_src + (size_t)(kt * BK + c * B_STEP) * N : B, in);
            }
        } else {
            load_tile_scalar<BM, BK, APAD>(As + slot * A_SLOT, A, M, K, bm, kt * BK);
            load_tile_scalar<BK, BN, BPAD>(Bs + slot * B_SLOT, B, K, N, kt * BK, bn);
        }
    };

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

    // This lane's ldmatrix addresses in slot 0, k-step 0.
    const unsigned a_lane = as0 + ((wm + lane % 16) * APAD + (lane / 16) * 8) * 2;
    const unsigned b_lane = bs0 + ((lane % 8 + ((lane / 8) % 2) * 8) * BPAD + wn + (lane / 16) * 8) * 2;

    const int slices = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {  // every slot filled before the first k-step
        if (s < slices) load_slice(s, s);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 1>();  // slice 0 has landed (the element-wise path stored it already)
    __syncthreads();              // ... for every thread

    unsigned a[2][MI][4], b[2][NI][2];  // this k-step's fragments and the next one's
    load_frags(a[0], b[0], a_lane, b_lane, 0);
    for (int kt = 0; kt < slices; ++kt) {
        const int slot = kt % STAGES;
#pragma unroll
        for (int ks = 0; ks < KS; ++ks) {
            if (ks < KS - 1) {
                load_frags(a[(ks + 1) % 2], b[(ks + 1) % 2], a_lane + slot * A_SLOT * 2,
                           b_lane + slot * B_SLOT * 2, ks + 1);
            } else {
                cp_async_wait<STAGES - 2>();  // slice kt + 1 has landed
                __syncthreads();              // ... for every thread; and every warp is done reading slice kt
                if (kt + STAGES < slices) load_slice(kt + STAGES, slot);
                cp_async_commit();
                if (kt + 1 < slices) {
                    const int nslot = (kt + 1) % STAGES;
                    load_frags(a[0], b[0], a_lane + nslot * A_SLOT * 2, b_lane + nslot * B_SLOT * 2, 0);
                }
            }
            mma_tile(acc, a[ks % 2], b[ks % 2]);
        }
    }
    cp_async_wait<0>();

    const int g = lane / 4, t = lane % 4;  // a fragment's row within 8, and its column pair
    const bool pairs = N % 2 == 0 && (reinterpret_cast<size_t>(C) & 7) == 0;  // float2 stores
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {  // rows g and g + 8 of the fragment
                const int row = bm + wm + i * 16 + g + h * 8;
                const int col = bn + wn + j * 8 + 2 * t;
                if (row < M) {
                    float* c = C + (size_t)row * N + col;
                    if (pairs && col < N) {  // col even: both columns in, 8-byte aligned
                        *reinterpret_cast<float2*>(c) = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                    } else {
                        if (col < N) c[0] = acc[i][j][2 * h];
                        if (col + 1 < N) c[1] = acc[i][j][2 * h + 1];
                    }
                }
            }
}

extern "C" __global__ void BOUNDS mma_matmul(const unsigned short* __restrict__ A, const unsigned short* __restrict__ B,
                                             float* __restrict__ C, int M, int N, int K) {
    const bool vec = (K % 8 == 0) && (N % 8 == 0) &&
                     ((reinterpret_cast<size_t>(A) | reinterpret_cast<size_t>(B)) & 15) == 0;
    if (vec)
        matmul_tile<true>(A, B, C, M, N, K);
    else
        matmul_tile<false>(A, B, C, M, N, K);
}
