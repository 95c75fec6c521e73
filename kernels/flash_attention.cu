// flash_attention: O = softmax(Q K^T / sqrt(HD)) V for each of BH heads, in one pass (FlashAttention-2's
// forward). Q, K, V (BH x S x HD) are bfloat16, row-major (their bits as unsigned short); O is bfloat16, as FlashAttention writes it.
//
// A block takes BQ query rows (64 or 128: 4 or 8 warps of 16) and walks the keys in tiles of 64 through shared memory
// (cp.async, zeros past S; two stages: the next tile's K and V are on their way while this one is used). Each warp computes its 16 x 64 scores on tensor cores (mma.sync m16n8k16,
// Q's fragments read once with ldmatrix, K's with ldmatrix as they lie: row-major K is the column-major
// operand), masks them (past S; with CAUSAL 1, keys after the query), and folds them into a running
// maximum and sum per row (the online softmax, base 2). The probabilities go back to tensor cores as
// they sit in the accumulators: a 16 x 8 accumulator pair is a 16 x 16 bfloat16 A fragment, so P V
// needs no trip through shared memory (V's fragments by ldmatrix .trans). O is divided by the row's sum
// at the end. With CAUSAL 1, a block stops at the tile of its last query row.
#ifndef HD
#define HD 128
#endif
#ifndef CAUSAL
#define CAUSAL 0   // 1: query i sees keys 0 .. i (a block stops at the tile of its last query)
#endif
#ifndef BQ
#define BQ 64      // query rows of a block: 16 a warp (64 or 128)
#endif
#define BKV 64     // keys of a tile
#define THREADS (BQ / 16 * 32)
#define LD (HD + 8)  // a row of a tile in shared memory, elements: 16 bytes of padding keep ldmatrix's rows in other banks

static_assert(HD % 16 == 0 && HD <= 256, "HD: a multiple of 16, at most 256");
static_assert(BQ % 16 == 0 && BQ <= 256, "BQ: a multiple of 16 (a warp's rows), at most 256");

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool full) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(full ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }

__device__ __forceinline__ void cp_async_wait_one() { asm volatile("cp.async.wait_group 1;\n" ::); }

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

// Two floats as a bfloat16 pair, rounded to nearest even: lo in the low half.
__device__ __forceinline__ unsigned pack_bf16(float lo, float hi) {
    unsigned d;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}

// ROWS rows of HD from row r0 of a head (S rows) into dst, 16-byte chunks, zeros past S.
template <int ROWS>
__device__ __forceinline__ void load_rows(unsigned short* dst, const unsigned short* src, int r0, int S) {
#pragma unroll
    for (int c = threadIdx.x; c < ROWS * HD / 8; c += THREADS) {
        const int r = c / (HD / 8), cc = (c % (HD / 8)) * 8;
        const bool in = r0 + r < S;
        cp_async16(dst + r * LD + cc, in ? src + (size_t)(r0 + r) * HD + cc : src, in);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS) flash_attention(
    const unsigned short* __restrict__ Q, const unsigned short* __restrict__ K, const unsigned short* __restrict__ V,
    unsigned short* __restrict__ O, int S) {
    extern __shared__ __align__(16) unsigned short smem[];
    unsigned short* Qs = smem;  // BQ x LD, then two stages of K (BKV x LD) and V (BKV x LD)

    const int q0 = blockIdx.x * BQ;
    const size_t head = (size_t)blockIdx.y * S * HD;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const float scale2 = 1.4426950408889634f * rsqrtf((float)HD);  // 1 / sqrt(HD), in base 2

    load_rows<BQ>(Qs, Q + head, q0, S);
    load_rows<BKV>(Qs + BQ * LD, K + head, 0, S);  // the first tile: stage 0
    load_rows<BKV>(Qs + (BQ + BKV) * LD, V + head, 0, S);
    cp_async_commit();

    float o[HD / 8][4] = {};
    float m[2] = {-INFINITY, -INFINITY};  // rows g and g + 8 of the warp's 16: the running maximum
    float l[2] = {0.0f, 0.0f};            // and this thread's part of the running sum
    unsigned qf[HD / 16][4];

    const int last = CAUSAL ? min(S - 1, q0 + BQ - 1) : S - 1;  // the last key any row of the block sees
    for (int k0 = 0; k0 <= last; k0 += BKV) {
        const int stage = (k0 / BKV) & 1;
        const unsigned short* Ks = Qs + (BQ + 2 * stage * BKV) * LD;
        const unsigned short* Vs = Ks + BKV * LD;
        if (k0 + BKV <= last) {  // the next tile into the other stage, which the last iteration finished with
            unsigned short* next = Qs + (BQ + 2 * (stage ^ 1) * BKV) * LD;
            load_rows<BKV>(next, K + head, k0 + BKV, S);
            load_rows<BKV>(next + BKV * LD, V + head, k0 + BKV, S);
            cp_async_commit();
            cp_async_wait_one();  // every group but that newest one: this tile (and Q) has landed
        } else {
            cp_async_wait_all();
        }
        __syncthreads();  // ... for every thread's copies
        if (k0 == 0) {
#pragma unroll
            for (int kk = 0; kk < HD / 16; ++kk)  // rows 0-15 by lanes 0-15, their k 8-15 by lanes 16-31
                ldmatrix_x4(qf[kk], Qs + (warp * 16 + lane % 16) * LD + kk * 16 + (lane / 16) * 8);
        }
        float s[BKV / 8][4] = {};
#pragma unroll
        for (int kk = 0; kk < HD / 16; ++kk)
#pragma unroll
            for (int j = 0; j < BKV / 8; j += 2) {  // keys j*8.. and (j+1)*8..: HD 0-7 and 8-15 of this kk each
                unsigned r[4];
                ldmatrix_x4(r, Ks + (j * 8 + (lane / 16) * 8 + lane % 8) * LD + kk * 16 + ((lane / 8) % 2) * 8);
                mma_bf16(s[j], qf[kk], r[0], r[1]);
                mma_bf16(s[j + 1], qf[kk], r[2], r[3]);
            }
#pragma unroll
        for (int j = 0; j < BKV / 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int key = k0 + j * 8 + 2 * t + (e & 1), row = q0 + warp * 16 + g + (e >> 1) * 8;
                s[j][e] = (key >= S || (CAUSAL && key > row)) ? -INFINITY : s[j][e] * scale2;
            }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = m[h];
#pragma unroll
            for (int j = 0; j < BKV / 8; ++j) mx = fmaxf(mx, fmaxf(s[j][2 * h], s[j][2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));  // the row's four threads
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float alpha = exp2f(m[h] - mx);  // the first tile: exp2(-inf) = 0; key 0 is in it for every row
            m[h] = mx;
            l[h] *= alpha;
#pragma unroll
            for (int d = 0; d < HD / 8; ++d) {
                o[d][2 * h] *= alpha;
                o[d][2 * h + 1] *= alpha;
            }
#pragma unroll
            for (int j = 0; j < BKV / 8; ++j) {
                s[j][2 * h] = exp2f(s[j][2 * h] - mx);
                s[j][2 * h + 1] = exp2f(s[j][2 * h + 1] - mx);
                l[h] += s[j][2 * h] + s[j][2 * h + 1];
            }
        }
#pragma unroll
        for (int kc = 0; kc < BKV / 16; ++kc) {  // P's keys kc*16.. as an A fragment: two accumulators
            const unsigned a[4] = {pack_bf16(s[2 * kc][0], s[2 * kc][1]), pack_bf16(s[2 * kc][2], s[2 * kc][3]),
                                   pack_bf16(s[2 * kc + 1][0], s[2 * kc + 1][1]),
                                   pack_bf16(s[2 * kc + 1][2], s[2 * kc + 1][3])};
#pragma unroll
            for (int d = 0; d < HD / 8; d += 2) {  // V's columns d*8.. and (d+1)*8.., keys 0-7 and 8-15 of each
                unsigned r[4];
                ldmatrix_x4_trans(r, Vs + (kc * 16 + lane % 8 + ((lane / 8) % 2) * 8) * LD + d * 8 + (lane / 16) * 8);
                mma_bf16(o[d], a, r[0], r[1]);
                mma_bf16(o[d + 1], a, r[2], r[3]);
            }
        }
        __syncthreads();  // every warp is done with this stage before the next iteration loads into it
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
        const int row = q0 + warp * 16 + g + h * 8;
        if (row < S) {
            unsigned short* out = O + head + (size_t)row * HD + 2 * t;  // an even column: 4-byte aligned
#pragma unroll
            for (int d = 0; d < HD / 8; ++d)
                *reinterpret_cast<unsigned*>(out + d * 8) = pack_bf16(o[d][2 * h] / l[h], o[d][2 * h + 1] / l[h]);
        }
    }
}
