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

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define APAD (BK + 8)  // a row of an A slice in shared memory, elements
#define BPAD (BN + 8)  // a row of a B slice
#define MI (WM / 16)   // fragments of a warp tile along M
#define NI (WN / 8)    // and along N

static_assert(BK % 16 == 0 && WM % 16 == 0 && WN % 16 == 0, "BK, WM, WN: multiples of 16");
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

extern "C" __global__ void __launch_bounds__(THREADS) mma_matmul(const unsigned short* __restrict__ A,
                                                                 const unsigned short* __restrict__ B,
                                                                 float* __restrict__ C, int M, int N, int K) {
    extern __shared__ __align__(16) unsigned short smem[];
    unsigned short* As = smem;                        // STAGES x BM x APAD
    unsigned short* Bs = smem + STAGES * BM * APAD;   // STAGES x BK x BPAD

    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
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

    const int slices = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < slices) load_slice(As + s * BM * APAD, Bs + s * BK * BPAD, A, B, M, N, K, bm, bn, s, vec);
        cp_async_commit();
    }
    for (int kt = 0; kt < slices; ++kt) {
        cp_async_wait<STAGES - 2>();  // slice kt has landed (the element-wise path stored it already)
        __syncthreads();              // ... for every thread; and every warp is done with slice kt - 1
        const int next = kt + STAGES - 1;
        if (next < slices)
            load_slice(As + (next % STAGES) * BM * APAD, Bs + (next % STAGES) * BK * BPAD, A, B, M, N, K, bm, bn, next, vec);
        cp_async_commit();

        const unsigned short* as = As + (kt % STAGES) * BM * APAD;
        const unsigned short* bs = Bs + (kt % STAGES) * BK * BPAD;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned a[MI][4];
#pragma unroll
            for (int i = 0; i < MI; ++i)  // rows 0-15 of the fragment by lanes 0-15, its k 8-15 by lanes 16-31
                ldmatrix_x4(a[i], as + (wm + i * 16 + lane % 16) * APAD + kk + (lane / 16) * 8);
            unsigned b[NI][2];
#pragma unroll
            for (int j = 0; j < NI; j += 2) {  // two n8 fragments a load: k 0-7, k 8-15 of each
                unsigned r[4];
                ldmatrix_x4_trans(r, bs + (kk + lane % 8 + ((lane / 8) % 2) * 8) * BPAD + wn + j * 8 + (lane / 16) * 8);
                b[j][0] = r[0];
                b[j][1] = r[1];
                b[j + 1][0] = r[2];
                b[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < MI; ++i)
#pragma unroll
                for (int j = 0; j < NI; ++j) mma_bf16(acc[i][j], a[i], b[j][0], b[j][1]);
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
                if (row < M) {
                    if (col < N) C[(size_t)row * N + col] = acc[i][j][2 * h];
                    if (col + 1 < N) C[(size_t)row * N + col + 1] = acc[i][j][2 * h + 1];
                }
            }
}
