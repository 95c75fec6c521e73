// A one-dimensional tensor map (the driver refuses one encoded with no strides): each block loads TILE
// floats of x into shared memory with one TMA copy and scales them. Run by scripts/gpu-check.sh newchecks.
struct __align__(64) TensorMap { unsigned long long words[16]; };  // CUtensorMap, opaque

__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

static_assert(BOX <= TILE, "the tensor map's box must fit the shared-memory tile it lands in");

extern "C" __global__ void tma_scale(const float* __restrict__ x, const __grid_constant__ TensorMap tx,
                                     float* __restrict__ y) {
    extern __shared__ __align__(128) unsigned char smem[];  // [mbarrier, 128 bytes][tile: TILE floats]
    float* tile = reinterpret_cast<float*>(smem + 128);
    const unsigned b = smem_addr(smem);
    const int base = blockIdx.x * TILE;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(b) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("{\n\t.reg .b64 state;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n\t}\n"
                     ::"r"(b), "r"(BOX * 4) : "memory");
        asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2}], [%3];\n"
                     ::"r"(smem_addr(tile)), "l"(&tx), "r"(base), "r"(b) : "memory");
    }
    asm volatile("{\n\t.reg .pred done;\n\tWAIT:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n\t"
                 "@!done bra WAIT;\n\t}\n" ::"r"(b) : "memory");  // phase 0 complete: the box has landed
    y[base + threadIdx.x] = 2.0f * tile[threadIdx.x];
}
