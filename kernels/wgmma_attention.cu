// wgmma_attention: O = softmax(Q K^T / sqrt(HD)) V for each of BH heads, in one pass, on Hopper's
// tensor cores (FlashAttention-3's design without its ping-pong). Q, K, V (BH x S x HD) are bfloat16,
// row-major (their bits as unsigned short); O is bfloat16, as FlashAttention writes it (rounded once, at the end).
//
// A block takes BQ query rows (64 a consumer warpgroup) and walks the keys in tiles of BKV. Warpgroup 0
// is the producer: one thread loads Q once, then each tile's K and V with TMA (three-dimensional tensor
// maps over BH x S x HD, so a box past S arrives as zeros and never reads the next head; 128-byte
// swizzle, HD / 64 boxes a tile) into a ring of STAGES slots, K and V each completing on its own
// mbarrier, so the scores of a tile can start while its V is still on its way. It gives most of its
// registers to the consumers (setmaxnreg). Each consumer warpgroup computes its 64 x BKV scores with
// wgmma reading Q and K from shared memory, masks them (past S; with CAUSAL 1, keys after the query),
// folds them into a running maximum and sum per row (the online softmax, base 2), and adds P V with
// wgmma taking P from registers as it lies in the accumulators (a 64 x 16 slice of accumulators is
// the register A operand) and V from shared memory as it lies (N-major: its rows are keys). The P V
// of a tile and the scores of the next are issued back to back; a slot is released once the wgmma
// reading it has completed. O is divided by the row's sum at the end. With CAUSAL 1, a block stops at
// the tile of its last query row, and the blocks with most tiles start first.
#ifndef HD
#define HD 128
#endif
#ifndef CAUSAL
#define CAUSAL 0  // 1: query i sees keys 0 .. i
#endif
#ifndef BQ
#define BQ 128  // query rows of a block: 64 a consumer warpgroup (64, 128 or 192)
#endif
#ifndef BKV
#define BKV 128  // keys of a tile: the N of the scores' wgmma (64 or 128)
#endif
#ifndef STAGES
#define STAGES 2  // slots of the K and V ring
#endif
#define CONSUMERS (BQ / 64)
// Registers a thread after setmaxnreg: the producer needs few; the consumers share the rest of the 64 K
// (a multiple of 8, at most 240 with two consumers, 160 with three). One consumer keeps what it has.
#define PRODUCER_REGS 24
#define CONSUMER_REGS (CONSUMERS == 2 ? 240 : 160)
#define BOXES (HD / 64)  // 64 bfloat16 a swizzled 128-byte row: a tile's HD comes in HD / 64 boxes

static_assert(HD == 64 || HD == 128, "HD: 64 or 128");
static_assert(BQ == 64 || BQ == 128 || BQ == 192, "BQ: 64, 128 or 192 (one to three consumer warpgroups)");
static_assert(BKV == 64 || BKV == 128, "BKV: 64 or 128 (the scores' wgmma is written out for those N)");

struct __align__(64) TensorMap { unsigned long long words[16]; };  // CUtensorMap, opaque

__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// An operand in shared memory with the 128-byte swizzle: the start address >> 4, the leading byte
// offset, the stride byte offset (eight 128-byte rows: 1,024), mode 1. K-major (Q, K): the leading
// offset is unused. N-major (V): it is the step from one 64-column box to the next.
__device__ __forceinline__ unsigned long long desc_sw128(unsigned a, unsigned leading = 16) {
    return ((a & 0x3FFFF) >> 4) | ((unsigned long long)((leading & 0x3FFFF) >> 4) << 16) | ((1024ull >> 4) << 32) |
           (1ull << 62);
}

__device__ __forceinline__ void bar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}

// One arrival that also expects `bytes` of asynchronous copies to complete on the barrier.
__device__ __forceinline__ void bar_expect(unsigned bar, unsigned bytes) {
    asm volatile("{\n\t.reg .b64 state;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n\t}\n"
                 ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void bar_arrive(unsigned bar) {
    asm volatile("{\n\t.reg .b64 state;\n\tmbarrier.arrive.shared::cta.b64 state, [%0];\n\t}\n" ::"r"(bar) : "memory");
}

// Until the barrier's phase of this parity has completed.
__device__ __forceinline__ void bar_wait(unsigned bar, unsigned parity) {
    unsigned done = 0;
    while (!done)
        asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}\n"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
}

// The box at (column, row, head) of a three-dimensional tensor map: coordinates innermost first.
__device__ __forceinline__ void tma_load_3d(unsigned dst, const TensorMap* map, int col, int row, int head, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
                 ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(col), "r"(row), "r"(head), "r"(bar)
                 : "memory");
}

// The values in these registers as the asynchronous wgmma left them: the compiler neither moves a use
// above the wait before this point nor gives the registers to anything else while a wgmma reads them.
template <int N>
__device__ __forceinline__ void hold(float (&r)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

template <int N>
__device__ __forceinline__ void hold(unsigned (&r)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

#define WGMMA_REGS8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])

// d (64 x N, float32, m16n8 fragments side by side) = A B + (accumulate ? d : 0), A and B both in
// shared memory, K-major (the scores: Q K^T).
template <int N>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], unsigned long long da, unsigned long long db, int accumulate);

// d (64 x N) += A B, A from registers (four bfloat16 pairs a thread: a 64 x 16 slice of P), B in shared
// memory N-major (V as it lies: keys are its rows).
template <int N>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const unsigned* a, unsigned long long db);

// The operand lists are long; written out once for each N used.
template <>
__device__ __forceinline__ void wgmma_ss<128>(float (&d)[64], unsigned long long da, unsigned long long db, int accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
                 "%64, %65, p, 1, 1, 0, 0;\n}\n"
                 : WGMMA_REGS8(0), WGMMA_REGS8(8), WGMMA_REGS8(16), WGMMA_REGS8(24), WGMMA_REGS8(32), WGMMA_REGS8(40),
                   WGMMA_REGS8(48), WGMMA_REGS8(56)
                 : "l"(da), "l"(db), "r"(accumulate));
}

template <>
__device__ __forceinline__ void wgmma_ss<64>(float (&d)[32], unsigned long long da, unsigned long long db, int accumulate) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
                 "%32, %33, p, 1, 1, 0, 0;\n}\n"
                 : WGMMA_REGS8(0), WGMMA_REGS8(8), WGMMA_REGS8(16), WGMMA_REGS8(24)
                 : "l"(da), "l"(db), "r"(accumulate));
}

template <>
__device__ __forceinline__ void wgmma_rs<128>(float (&d)[64], const unsigned* a, unsigned long long db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
                 "{%64, %65, %66, %67}, %68, 1, 1, 1, 1;\n"
                 : WGMMA_REGS8(0), WGMMA_REGS8(8), WGMMA_REGS8(16), WGMMA_REGS8(24), WGMMA_REGS8(32), WGMMA_REGS8(40),
                   WGMMA_REGS8(48), WGMMA_REGS8(56)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

template <>
__device__ __forceinline__ void wgmma_rs<64>(float (&d)[32], const unsigned* a, unsigned long long db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
                 "{%32, %33, %34, %35}, %36, 1, 1, 1, 1;\n"
                 : WGMMA_REGS8(0), WGMMA_REGS8(8), WGMMA_REGS8(16), WGMMA_REGS8(24)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

__device__ __forceinline__ float ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// Two floats as a bfloat16 pair, rounded to nearest even: lo in the low half.
__device__ __forceinline__ unsigned pack_bf16(float lo, float hi) {
    unsigned d;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}

extern "C" __global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1) wgmma_attention(
    const unsigned short* Q, const unsigned short* K, const unsigned short* V, const __grid_constant__ TensorMap tQ,
    const __grid_constant__ TensorMap tK, const __grid_constant__ TensorMap tV, unsigned short* __restrict__ O, int S) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ unsigned char smem_raw[];
    // Q, the K ring, the V ring, aligned to 1,024 bytes (the 128-byte swizzle's period), then the barriers
    const unsigned base = (smem_addr(smem_raw) + 1023) & ~1023u;
    const unsigned q_s = base, k_s = q_s + BQ * HD * 2, v_s = k_s + STAGES * BKV * HD * 2;
    const unsigned q_full = v_s + STAGES * BKV * HD * 2, k_full = q_full + 8, v_full = k_full + 8 * STAGES,
                   k_empty = v_full + 8 * STAGES, v_empty = k_empty + 8 * STAGES;
    const int wg = threadIdx.x / 128;
    if (threadIdx.x == 0) {
        bar_init(q_full, 1);
        for (int s = 0; s < STAGES; ++s) {
            bar_init(k_full + 8 * s, 1);  // the producer's arrival, and the tile's bytes
            bar_init(v_full + 8 * s, 1);
            bar_init(k_empty + 8 * s, CONSUMERS);  // one arrival from each consumer warpgroup
            bar_init(v_empty + 8 * s, CONSUMERS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // the inits, seen by the copy engine
    }
    __syncthreads();
    const int tile = CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;  // causal: the longest rows first
    const int q0 = tile * BQ, head = blockIdx.y;
    const int last = CAUSAL ? min(S - 1, q0 + BQ - 1) : S - 1;  // the last key any row of the block sees
    const int tiles = last / BKV + 1;
    if (wg == 0) {  // the producer
#if CONSUMERS > 1
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS));
#endif
        if (threadIdx.x == 0) {
            bar_expect(q_full, BQ * HD * 2);
            for (int b = 0; b < BOXES; ++b) tma_load_3d(q_s + b * BQ * 128, &tQ, b * 64, q0, head, q_full);
            for (int j = 0; j < tiles; ++j) {
                const int s = j % STAGES, parity = (j / STAGES - 1) & 1;
                if (j >= STAGES) bar_wait(k_empty + 8 * s, parity);  // every consumer's scores of tile j - STAGES done
                bar_expect(k_full + 8 * s, BKV * HD * 2);
                for (int b = 0; b < BOXES; ++b)
                    tma_load_3d(k_s + (s * BOXES + b) * BKV * 128, &tK, b * 64, j * BKV, head, k_full + 8 * s);
                if (j >= STAGES) bar_wait(v_empty + 8 * s, parity);
                bar_expect(v_full + 8 * s, BKV * HD * 2);
                for (int b = 0; b < BOXES; ++b)
                    tma_load_3d(v_s + (s * BOXES + b) * BKV * 128, &tV, b * 64, j * BKV, head, v_full + 8 * s);
            }
        }
    } else {
#if CONSUMERS > 1
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
#endif
        const int r0 = (wg - 1) * 64;  // this warpgroup's rows of the block
        const int warp = (threadIdx.x % 128) / 32, g = (threadIdx.x % 32) / 4, q = threadIdx.x % 4;
        const float scale2 = 1.4426950408889634f * rsqrtf((float)HD);  // 1 / sqrt(HD), in base 2
        const bool leader = threadIdx.x % 128 == 0;
        float o[HD / 2];
#pragma unroll
        for (int i = 0; i < HD / 2; ++i) o[i] = 0.0f;
        float m[2] = {-INFINITY, -INFINITY};  // rows g and g + 8 of the warp's 16: the running maximum (raw scores)
        float l[2] = {0.0f, 0.0f};            // and this thread's part of the running sum
        unsigned p[BKV / 4] = {};  // P as bfloat16 pairs, four a 16-key slice: the A operand of P V, read by a wgmma still running at the loop's end
        bar_wait(q_full, 0);
        for (int j = 0; j < tiles; ++j) {
            const int s = j % STAGES, parity = (j / STAGES) & 1, k0 = j * BKV;
            float sc[BKV / 2];
            bar_wait(k_full + 8 * s, parity);
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int kk = 0; kk < HD / 16; ++kk)  // 16 of HD a step: 32 bytes into the swizzled rows of its box
                wgmma_ss<BKV>(sc, desc_sw128(q_s + (kk / 4) * BQ * 128 + r0 * 128 + (kk % 4) * 32),
                              desc_sw128(k_s + (s * BOXES + kk / 4) * BKV * 128 + (kk % 4) * 32), kk > 0);
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");  // these scores, and the last tile's P V
            hold(sc);
            hold(o);
            hold(p);
            if (leader) {
                bar_arrive(k_empty + 8 * s);
                if (j > 0) bar_arrive(v_empty + 8 * ((j - 1) % STAGES));
            }
            // Past S, and with CAUSAL keys after the row, score -inf: only tiles that have such keys test them
            if (k0 + BKV > S || (CAUSAL && k0 + BKV - 1 > q0 + r0)) {  // kprof-mutants: equivalent: a bound moved by one tests one more tile, whose keys are all below S and at or before every row: nothing is masked
#pragma unroll
                for (int i = 0; i < BKV / 2; ++i) {
                    const int key = k0 + (i / 4) * 8 + 2 * q + (i & 1), row = q0 + r0 + warp * 16 + g + ((i / 2) & 1) * 8;
                    if (key >= S || (CAUSAL && key > row)) sc[i] = -INFINITY;
                }
            }
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float mx = m[h];
#pragma unroll
                for (int i = 0; i < BKV / 8; ++i) mx = fmaxf(mx, fmaxf(sc[4 * i + 2 * h], sc[4 * i + 2 * h + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));  // the row's four threads
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                const float alpha = ex2((m[h] - mx) * scale2);  // the first tile: exp2(-inf) = 0; key 0 is in it for every row
                const float shift = mx * scale2;
                m[h] = mx;
                l[h] *= alpha;
#pragma unroll
                for (int i = 0; i < HD / 8; ++i) {
                    o[4 * i + 2 * h] *= alpha;
                    o[4 * i + 2 * h + 1] *= alpha;
                }
#pragma unroll
                for (int i = 0; i < BKV / 8; ++i) {
                    sc[4 * i + 2 * h] = ex2(fmaf(sc[4 * i + 2 * h], scale2, -shift));
                    sc[4 * i + 2 * h + 1] = ex2(fmaf(sc[4 * i + 2 * h + 1], scale2, -shift));
                    l[h] += sc[4 * i + 2 * h] + sc[4 * i + 2 * h + 1];
                }
            }
#pragma unroll
            for (int kc = 0; kc < BKV / 16; ++kc) {  // keys 16 kc ..: two m16n8 accumulators side by side are an A slice
                p[4 * kc] = pack_bf16(sc[8 * kc], sc[8 * kc + 1]);
                p[4 * kc + 1] = pack_bf16(sc[8 * kc + 2], sc[8 * kc + 3]);
                p[4 * kc + 2] = pack_bf16(sc[8 * kc + 4], sc[8 * kc + 5]);
                p[4 * kc + 3] = pack_bf16(sc[8 * kc + 6], sc[8 * kc + 7]);
            }
            bar_wait(v_full + 8 * s, parity);
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int kc = 0; kc < BKV / 16; ++kc)  // 16 keys a step: 16 rows of 128 bytes in every box
                wgmma_rs<HD>(o, p + 4 * kc, desc_sw128(v_s + s * BOXES * BKV * 128 + kc * 16 * 128, BKV * 128));
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");  // the last P V
        hold(o);
        hold(p);
        if (leader) bar_arrive(v_empty + 8 * ((tiles - 1) % STAGES));
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
            l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
            const int row = q0 + r0 + warp * 16 + g + h * 8;
            if (row < S) {
                const float inv = 1.0f / l[h];
                unsigned short* out = O + ((size_t)head * S + row) * HD + 2 * q;  // an even column: 4-byte aligned
#pragma unroll
                for (int i = 0; i < HD / 8; ++i)
                    *reinterpret_cast<unsigned*>(out + 8 * i) = pack_bf16(o[4 * i + 2 * h] * inv, o[4 * i + 2 * h + 1] * inv);
            }
        }
    }
#endif
}
