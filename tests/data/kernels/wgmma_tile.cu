// C (M x N, float32) = A (M x K) @ Bt^T (Bt: N x K), bfloat16 both, row-major: each block one 64 x 256 tile
// of C, one warpgroup; K in slices of 64 through TMA with the 128-byte swizzle (the tensor maps kprof
// encodes and passes by value), completing on an mbarrier, then four wgmma.mma_async m64n256k16 reading
// both operands from shared memory by descriptor. The tile past M, N or K arrives as zeros; C is stored
// within M x N. What the 128-byte swizzle of a tensor-map argument is tested with on Hopper
// (tests/test_gpu.py): the layout the wgmma matmul step builds on. K must make rows of 16 bytes (a
// multiple of 8): kprof refuses other sizes, as TMA would.
#define BM 64
#define BN 256
#define BK 64  // 64 bfloat16: one 128-byte swizzled row

struct __align__(64) TensorMap { unsigned long long words[16]; };  // CUtensorMap, opaque

__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// A K-major operand in shared memory, 128-byte swizzle: the start address >> 4, the leading byte offset
// (16 bytes, unused by a swizzled K-major layout), the stride byte offset (1024: eight 128-byte rows), mode 1.
__device__ __forceinline__ unsigned long long desc_sw128(const void* p) {
    const unsigned long long a = smem_addr(p);
    return ((a & 0x3FFFF) >> 4) | ((16ull >> 4) << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void tma_load_2d(void* dst, const TensorMap* map, int inner, int outer, unsigned bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(smem_addr(dst)), "l"(reinterpret_cast<unsigned long long>(map)), "r"(inner), "r"(outer), "r"(bar)
                 : "memory");
}

__device__ __forceinline__ void wgmma_256(float (&d)[128], unsigned long long da, unsigned long long db) {
    asm volatile("{\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, 1, 1, 1, 0, 0;\n"
                 "}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(da), "l"(db));
}

extern "C" __global__ void __launch_bounds__(128) wgmma_tile(
    const unsigned short* A, const unsigned short* Bt, const __grid_constant__ TensorMap tA,
    const __grid_constant__ TensorMap tB, float* __restrict__ C, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    __shared__ __align__(1024) unsigned short sA[BM * BK];
    __shared__ __align__(1024) unsigned short sB[BN * BK];
    __shared__ __align__(8) unsigned long long bar;
    const unsigned b = smem_addr(&bar);
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(b));
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;
    for (int k0 = 0, it = 0; k0 < K; k0 += BK, ++it) {
        if (threadIdx.x == 0) {
            asm volatile("{\n\t.reg .b64 state;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n\t}\n"
                         ::"r"(b), "r"((BM + BN) * BK * 2) : "memory");
            tma_load_2d(sA, &tA, k0, m0, b);  // coordinates innermost first: k, then the row
            tma_load_2d(sB, &tB, k0, n0, b);
        }
        asm volatile("{\n\t.reg .pred done;\n\tWAIT:\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
                     "@!done bra WAIT;\n\t}\n" ::"r"(b), "r"(it & 1) : "memory");  // this slice has landed
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)  // 16 of K a step: 32 bytes into each swizzled row
            wgmma_256(d, desc_sw128(sA + kk * 16), desc_sw128(sB + kk * 16));
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        __syncthreads();  // every warp has read the slice before thread 0 loads the next into it
    }
    // The accumulators as mma.sync's m16n8 fragments, side by side: warp w holds rows 16w .. 16w + 15
    const int warp = threadIdx.x / 32, g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int row = m0 + warp * 16 + g + (e >> 1) * 8, col = n0 + j * 8 + 2 * t + (e & 1);
            if (row < M && col < N) C[(size_t)row * N + col] = d[4 * j + e];
        }
    }
#endif
}
