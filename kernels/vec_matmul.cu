// vec_matmul: regblock_matmul with 16-byte memory operations everywhere they fit.
// - Global loads: each thread loads float4s of A and B (LDG.128) instead of scalars.
// - The A slice is stored transposed (As[k][m]) with 4 floats of padding per row, so the four
//   scalar stores of a transposed float4 land in different banks.
// - The compute loop reads its TM values of A and TN values of B as float4s (LDS.128): a quarter
//   of the shared-memory instructions of regblock_matmul for the same FMAs.
// - Each thread writes its rows of C as float4s (STG.128).
// A float4 is used only where it is aligned and in bounds (K % 4 == 0 for A, N % 4 == 0 for B and
// C, and the four elements inside the matrix); anything else takes a scalar, bounds-checked path,
// so every size works.
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#define THREADS ((BM / TM) * (BN / TN))
#define PAD 4
#define A_LOADS (BM * BK / 4 / THREADS)
#define B_LOADS (BK * BN / 4 / THREADS)
static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "tiles are made of float4s");
static_assert(A_LOADS * 4 * THREADS == BM * BK && B_LOADS * 4 * THREADS == BK * BN,
              "each thread loads a whole number of float4s of each tile");

extern "C" __global__ void __launch_bounds__(THREADS)
vec_matmul(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
           int M, int N, int K) {
    __shared__ __align__(16) float As[BK][BM + PAD];
    __shared__ __align__(16) float Bs[BK][BN];
    const int t = threadIdx.x;
    const int ty = t / (BN / TN), tx = t % (BN / TN);
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
            for (int i = 0; i < TM; i += 4)
                *reinterpret_cast<float4*>(&a[i]) = *reinterpret_cast<const float4*>(&As[k][ty * TM + i]);
#pragma unroll
            for (int j = 0; j < TN; j += 4)
                *reinterpret_cast<float4*>(&b[j]) = *reinterpret_cast<const float4*>(&Bs[k][tx * TN + j]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = bm + ty * TM + i;
        if (row >= M) break;
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const int col = bn + tx * TN + j;
            float* out = C + (size_t)row * N + col;
            if (vec_bc && col < N) {  // N and col multiples of 4: the whole float4 is in the row
                *reinterpret_cast<float4*>(out) = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
            } else {
#pragma unroll
                for (int jj = 0; jj < 4; ++jj)
                    if (col + jj < N) out[jj] = acc[i][j + jj];
            }
        }
    }
}
