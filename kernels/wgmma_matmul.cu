// C (M x N, float32) = A (M x K) @ Bt^T (Bt: N x K), bfloat16 both, row-major, on Hopper's tensor cores:
// wgmma.mma_async reading both operands from shared memory, which TMA fills (128-byte swizzle, the tensor
// maps kprof encodes and passes by value) through a ring of STAGES slices, each completing on its own
// mbarrier. Warp specialization: warpgroup 0 is the producer (one thread issues the TMA loads as slots
// free up), warpgroups 1 and 2 the consumers (each the m64 half of a BM x BN = 128 x 256 tile, four
// m64n256k16 steps a 64-deep slice, 128 float32 accumulators a thread). Persistent: gridDim.x blocks
// (SMS, one per SM) walk the tiles in groups of GROUP tile rows (L2 reuse); the ring runs on across
// tiles, so the producer loads the next tile's slices while the consumers store the last one. CLUSTER 2:
// two CTAs of a cluster take adjacent tiles of a column, and each loads half of B's tile into both (TMA
// multicast), so a slot is free only when the consumers of both have read it.
// The tile past M, N or K arrives as zeros; C is stored within M x N. K must make rows of 16 bytes
// (a multiple of 8): kprof refuses other sizes at resolve time, as TMA would.
#ifndef BM
#define BM 128  // two consumer warpgroups of 64 rows
#endif
#ifndef BN
#define BN 256  // wgmma's widest N
#endif
#ifndef BK
#define BK 64  // 64 bfloat16: one 128-byte swizzled row
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef PIPE
#define PIPE 1  // wgmma groups left in flight while the next slice's are issued: 1 frees a slot one slice later
#endif
#ifndef GROUP
#define GROUP 8  // tile rows a group walks before the next column of tiles
#endif
#ifndef CLUSTER
#define CLUSTER 1  // CTAs a cluster: CLUSTER adjacent tiles of a column share B's tile, each loading 1 / CLUSTER of it for all (TMA multicast)
#endif
#define CONSUMERS (BM / 64)

struct __align__(64) TensorMap { unsigned long long words[16]; };  // CUtensorMap, opaque

__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// A K-major operand in shared memory, 128-byte swizzle: the start address >> 4, the leading byte offset
// (16 bytes, unused by a swizzled K-major layout), the stride byte offset (1024: eight 128-byte rows), mode 1.
__device__ __forceinline__ unsigned long long desc_sw128(unsigned a) {
    return ((a & 0x3FFFF) >> 4) | ((16ull >> 4) << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
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

__device__ __forceinline__ void tma_load_2d(unsigned dst, const TensorMap* map, int inner, int outer, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(inner), "r"(outer), "r"(bar)
                 : "memory");
}

__device__ __forceinline__ void wgmma_256(float (&d)[128], unsigned long long da, unsigned long long db) {
    asm volatile("{\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, 1, 1, 1, 0, 0;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(da), "l"(db));
}

#if CLUSTER > 1
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}

// Every thread of the cluster: what each did before (a barrier's init, its last reads), seen by all after.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// An arrival on the barrier at the same place in the shared memory of the cluster's CTA `rank`.
__device__ __forceinline__ void bar_arrive_at(unsigned bar, unsigned rank) {
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(bar), "r"(rank));
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}

// The box, written at `dst` in every CTA of `mask`, completing on each one's barrier at `bar`.
__device__ __forceinline__ void tma_load_2d_multicast(unsigned dst, const TensorMap* map, int inner, int outer, unsigned bar,
                                                      unsigned short mask) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n"
                 ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(inner), "r"(outer), "r"(bar), "h"(mask)
                 : "memory");
}
#endif

// Tile `t` of the grouped order: GROUP tile rows at a time, column by column within the group (a tile
// row here is a cluster's: CLUSTER x BM rows, rank r's BM of them from BM r).
__device__ __forceinline__ void tile_origin(int t, int tiles_m, int tiles_n, int rank, int& m0, int& n0) {
    const int per_group = GROUP * tiles_n, first = (t / per_group) * GROUP;
    const int rows = min(tiles_m - first, GROUP), r = t % per_group;
    m0 = ((first + r % rows) * CLUSTER + rank) * BM;
    n0 = (r / rows) * BN;
}

extern "C" __global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
#if CLUSTER > 1
__cluster_dims__(CLUSTER, 1, 1)
#endif
wgmma_matmul(
    const unsigned short* A, const unsigned short* Bt, const __grid_constant__ TensorMap tA,
    const __grid_constant__ TensorMap tB, float* __restrict__ C, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ unsigned char smem_raw[];
    // The ring, aligned to 1,024 bytes (the 128-byte swizzle's period), then the barriers
    const unsigned base = (smem_addr(smem_raw) + 1023) & ~1023u;
    const unsigned ring_a = base, ring_b = base + STAGES * BM * BK * 2;
    const unsigned full = ring_b + STAGES * BN * BK * 2, empty = full + 8 * STAGES;
    const int wg = threadIdx.x / 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            bar_init(full + 8 * s, 1);  // the producer's arrival, and the slice's bytes
            bar_init(empty + 8 * s, CONSUMERS * CLUSTER);  // one arrival from each consumer warpgroup of the cluster
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // the inits, seen by the copy engine
    }
#if CLUSTER > 1
    cluster_sync();  // every CTA's barriers ready before any other CTA's copies or arrivals reach them
    const int rank = cluster_rank();
#else
    __syncthreads();
    const int rank = 0;
#endif
    const int tiles_m = (M + BM * CLUSTER - 1) / (BM * CLUSTER), tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
    const int slices = (K + BK - 1) / BK, first = blockIdx.x / CLUSTER, step = gridDim.x / CLUSTER;
    if (wg == 0) {  // the producer: one thread keeps the ring full
        if (threadIdx.x == 0) {
            int it = 0;
            for (int t = first; t < tiles; t += step) {
                int m0, n0;
                tile_origin(t, tiles_m, tiles_n, rank, m0, n0);
                for (int k = 0; k < slices; ++k, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) bar_wait(empty + 8 * s, (it / STAGES - 1) & 1);  // every consumer is done with it
                    bar_expect(full + 8 * s, (BM + BN) * BK * 2);
                    tma_load_2d(ring_a + s * BM * BK * 2, &tA, k * BK, m0, full + 8 * s);  // innermost first: k, then the row
#if CLUSTER > 1
                    tma_load_2d_multicast(ring_b + s * BN * BK * 2 + rank * (BN / CLUSTER) * BK * 2, &tB, k * BK,
                                          n0 + rank * (BN / CLUSTER), full + 8 * s, (1 << CLUSTER) - 1);
#else
                    tma_load_2d(ring_b + s * BN * BK * 2, &tB, k * BK, n0, full + 8 * s);
#endif
                }
            }
        }
    } else {
        // A consumer: rows 64 (wg - 1) .. of each tile; a slot it has read is released to every CTA of the cluster
        const int half = (wg - 1) * 64;
        const int warp = (threadIdx.x % 128) / 32, g = (threadIdx.x % 32) / 4, q = threadIdx.x % 4;
        const auto release = [&](unsigned bar) {  // one arrival a warpgroup on the barrier of each CTA of the cluster
#if CLUSTER > 1
            if (threadIdx.x % 128 < CLUSTER) bar_arrive_at(bar, threadIdx.x % 128);
#else
            if (threadIdx.x % 128 == 0) bar_arrive(bar);
#endif
        };
        int it = 0;
        for (int t = first; t < tiles; t += step) {
            int m0, n0;
            tile_origin(t, tiles_m, tiles_n, rank, m0, n0);
            float d[128];
#pragma unroll
            for (int i = 0; i < 128; ++i) d[i] = 0.0f;
            for (int k = 0; k < slices; ++k, ++it) {
                const int s = it % STAGES;
                bar_wait(full + 8 * s, (it / STAGES) & 1);  // the slice has landed
                const unsigned a = ring_a + s * BM * BK * 2 + half * BK * 2, b = ring_b + s * BN * BK * 2;
                asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)  // 16 of K a step: 32 bytes into each swizzled row
                    wgmma_256(d, desc_sw128(a + kk * 32), desc_sw128(b + kk * 32));
                asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#if PIPE
                asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");  // the slice before this one is read
                if (k > 0) release(empty + 8 * ((it - 1) % STAGES));
#else
                asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
                release(empty + 8 * s);  // this warpgroup has read the slot
#endif
            }
#if PIPE
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");  // the accumulators are final
            release(empty + 8 * ((it - 1) % STAGES));  // K >= 1: a tile has a slice at least
#endif
            // The accumulators as mma.sync's m16n8 fragments side by side: warp w holds rows 16w .. 16w + 15
            const int row0 = m0 + half + warp * 16 + g;
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
                const int col = n0 + j * 8 + 2 * q;
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int row = row0 + 8 * h;
                    if (row >= M) continue;
                    float* out = C + (size_t)row * N + col;
                    if ((N & 1) == 0 && col < N) {  // col and N even: col + 1 < N too, 8-byte aligned
                        *reinterpret_cast<float2*>(out) = make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
                    } else {
                        if (col < N) out[0] = d[4 * j + 2 * h];
                        if (col + 1 < N) out[1] = d[4 * j + 2 * h + 1];
                    }
                }
            }
        }
    }
#if CLUSTER > 1
    cluster_sync();  // no CTA leaves while another's copies or arrivals may still reach its shared memory
#endif
#endif
}
