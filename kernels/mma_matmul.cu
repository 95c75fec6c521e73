// mma_matmul: C = A @ B on tensor cores, the first step past the FP32 ladder. A (M x K) and B (K x N)
// are bfloat16, row-major (their bits as unsigned short); C (M x N) is float32, accumulated in float32.
//
// What it adds to async_matmul: warp-level mma.sync (m16n8k16, bfloat16 in, float32 accumulate), the
// fragments read from shared memory with ldmatrix (B transposed on the way, .trans), a warp tile of
// WM x WN made of (WM / 16) x (WN / 8) fragments, and STAGES slices of BK in flight through cp.async.
// Rows of shared memory are padded by 8 elements (16 bytes), so the eight rows one ldmatrix reads fall
// in different banks.
//
// Any size: where K and N are multiples of 8 and both inputs 16-byte aligned, each 16-byte chunk of a
// slice is one cp.async (zero-filled past M or K); otherwise each element is loaded on its own, zero
// past the edges. C is written element by element within bounds.
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef GROUP
#define GROUP 1  // rows of tiles the blocks walk before the next column of tiles (L2 reuse); 1: row by row
#endif
#ifndef MINB
#define MINB 0  // blocks an SM that __launch_bounds__ asks registers for; 0: none asked (ptxas's own choice)
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define APAD (BK + 8)  // a row of an A slice in shared memory, elements
#define BPAD (BN + 8)  // a row of a B slice
#define MI (WM / 16)   // fragments of a warp tile along M
#define NI (WN / 8)    // and along N
#define KSTEPS (BK / 16)  // k-steps of 16 a slice: an even number, so slice after slice starts with fragment set 0

static_assert(BK % 32 == 0 && WM % 16 == 0 && WN % 16 == 0, "BK: a multiple of 32; WM, WN: multiples of 16");
static_assert((BM * BK / 8) % THREADS == 0 && (BK * BN / 8) % THREADS == 0, "whole 16-byte chunks per thread");

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool full) {
    // src-size 0 writes 16 zero bytes and reads nothing: the chunks past M or K
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(full ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// A ROWS x COLS tile at (r0, c0) of a row-major rows x cols matrix into dst (rows LD elements apart):
// 16-byte chunks, each a cp.async (zero-filled past the matrix) with ``vec``, else 8 elements one by one.
template <int ROWS, int COLS, int LD>
__device__ __forceinline__ void load_tile(unsigned short* dst, const unsigned short* src, int rows, int cols, int r0,
                                          int c0, bool vec) {
#pragma unroll
    for (int c = threadIdx.x; c < ROWS * COLS / 8; c += THREADS) {
        const int r = c / (COLS / 8), cc = (c % (COLS / 8)) * 8;
        const int row = r0 + r, col = c0 + cc;
        unsigned short* d = dst + r * LD + cc;
        if (vec) {
            const bool in = row < rows && col < cols;
            cp_async16(d, in ? src + (size_t)row * cols + col : src, in);
        } else {
#pragma unroll
            for (int e = 0; e < 8; ++e)
                d[e] = (row < rows && col + e < cols) ? src[(size_t)row * cols + col + e] : (unsigned short)0;
        }
    }
}

// Slice kt of A (BM x BK) and of B (BK x BN) into the stage buffers As, Bs.
__device__ __forceinline__ void load_slice(unsigned short* As, unsigned short* Bs, const unsigned short* A,
                                           const unsigned short* B, int M, int N, int K, int bm, int bn, int kt,
                                           bool vec) {
    load_tile<BM, BK, APAD>(As, A, M, K, bm, kt * BK, vec);
    load_tile<BK, BN, BPAD>(Bs, B, K, N, kt * BK, bn, vec);
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const unsigned short* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const unsigned short* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

#if MINB
#define BOUNDS __launch_bounds__(THREADS, MINB)
#else
#define BOUNDS __launch_bounds__(THREADS)  // not (THREADS, 1): that lets ptxas take up to 255 registers (194, not 166, at WN 64)
#endif
extern "C" __global__ void BOUNDS mma_matmul(const unsigned short* __restrict__ A,
                                                                 const unsigned short* __restrict__ B,
                                                                 float* __restrict__ C, int M, int N, int K) {
    extern __shared__ __align__(16) unsigned short smem[];
    unsigned short* As = smem;                        // STAGES x BM x APAD
    unsigned short* Bs = smem + STAGES * BM * APAD;   // STAGES x BK x BPAD

    // The block's tile: GROUP rows of tiles at a time, column by column within the group
    const int id = blockIdx.y * gridDim.x + blockIdx.x, per_group = GROUP * gridDim.x, first = (id / per_group) * GROUP;
    const int rows = min((int)gridDim.y - first, GROUP), r = id % per_group;
    const int bm = (first + r % rows) * BM, bn = (r / rows) * BN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;  // the warp's tile in the block's
    const bool vec = (K % 8 == 0) && (N % 8 == 0) &&
                     ((reinterpret_cast<size_t>(A) | reinterpret_cast<size_t>(B)) & 15) == 0;

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

    // A k-step's fragments: A's by ldmatrix (rows 0-15 of a fragment by lanes 0-15, its k 8-15 by lanes
    // 16-31), B's by ldmatrix .trans, two n8 fragments a load (k 0-7, k 8-15 of each). Two sets: the next
    // k-step's are loaded while this one's mma run, so no mma waits for the load before it.
    unsigned a[2][MI][4], b[2][NI][2];
    const auto load_fragments = [&](int set, const unsigned short* as, const unsigned short* bs, int kk) {
#pragma unroll
        for (int i = 0; i < MI; ++i) ldmatrix_x4(a[set][i], as + (wm + i * 16 + lane % 16) * APAD + kk + (lane / 16) * 8);
#pragma unroll
        for (int j = 0; j < NI; j += 2) {
            unsigned r[4];
            ldmatrix_x4_trans(r, bs + (kk + lane % 8 + ((lane / 8) % 2) * 8) * BPAD + wn + j * 8 + (lane / 16) * 8);
            b[set][j][0] = r[0];
            b[set][j][1] = r[1];
            b[set][j + 1][0] = r[2];
            b[set][j + 1][1] = r[3];
        }
    };

    const int slices = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < slices) load_slice(As + s * BM * APAD, Bs + s * BK * BPAD, A, B, M, N, K, bm, bn, s, vec);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();  // slice 0 has landed (the element-wise path stored it already)
    __syncthreads();              // ... for every thread
    load_fragments(0, As, Bs, 0);
    for (int kt = 0; kt < slices; ++kt) {
        const unsigned short* as = As + (kt % STAGES) * BM * APAD;
        const unsigned short* bs = Bs + (kt % STAGES) * BK * BPAD;
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ++ks) {
            if (ks == KSTEPS - 1) {
                cp_async_wait<STAGES - 2>();  // slice kt + 1 has landed
                __syncthreads();  // ... for every thread; and every warp has read its last fragments of slice kt - 1
            }
            if (ks < KSTEPS - 1)  // the next k-step's fragments: this slice's next, or the next slice's first
                load_fragments((ks + 1) % 2, as, bs, (ks + 1) * 16);
            else if (kt + 1 < slices)
                load_fragments(0, As + ((kt + 1) % STAGES) * BM * APAD, Bs + ((kt + 1) % STAGES) * BK * BPAD, 0);
            if (ks == 0) {  // slice kt + STAGES - 1 into the stage slice kt - 1 left, which no warp reads any more
                const int next = kt + STAGES - 1;
                if (next < slices)
                    load_slice(As + (next % STAGES) * BM * APAD, Bs + (next % STAGES) * BK * BPAD, A, B, M, N, K, bm, bn,
                               next, vec);
                cp_async_commit();
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NI; ++j) mma_bf16(acc[i][j], a[ks % 2][i], b[ks % 2][j][0], b[ks % 2][j][1]);
        }
    }
    cp_async_wait<0>();

    const int g = lane / 4, t = lane % 4;  // a fragment's row within 8, and its column pair
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {  // rows g and g + 8 of the fragment
                const int row = bm + wm + i * 16 + g + h * 8;
                const int col = bn + wn + j * 8 + 2 * t;
                if (row >= M) continue;
                float* out = C + (size_t)row * N + col;
                if ((N & 1) == 0 && col < N) {  // col and N even: col + 1 < N too, 8-byte aligned
                    *reinterpret_cast<float2*>(out) = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                } else {
                    if (col < N) out[0] = acc[i][j][2 * h];
                    if (col + 1 < N) out[1] = acc[i][j][2 * h + 1];
                }
            }
}
