// Hopper's bulk asynchronous copy, twice a block: each block scales two tiles of 256 floats, loading
// each into a shared-memory tile of its own with cp.async.bulk, which completes on an mbarrier. The block sets the
// barrier up again for the second tile; an mbarrier must be invalidated (mbarrier.inval) before it is
// initialised again. Here it is not.
__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

extern "C" __global__ void bulk_two_tiles(const float* __restrict__ x, float* __restrict__ y) {
    __shared__ __align__(128) float tile[2][256];  // a tile a stage, as a pipeline's ring has
    __shared__ __align__(8) unsigned long long bar;
    const unsigned b = smem_addr(&bar);
    for (int t = 0; t < 2; ++t) {
        const int base = (blockIdx.x * 2 + t) * 256;
        if (threadIdx.x == 0) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(b) : "memory");  // BUG: the second time with no mbarrier.inval before it
            asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            asm volatile("{\n\t.reg .b64 state;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n\t}\n"
                         ::"r"(b), "r"(256 * 4) : "memory");
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                         ::"r"(smem_addr(tile[t])), "l"(x + base), "r"(256 * 4), "r"(b) : "memory");
        }
        asm volatile("{\n\t.reg .pred done;\n\tWAIT:\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n\t"
                     "@!done bra WAIT;\n\t}\n" ::"r"(b) : "memory");  // phase 0 of this init: the tile has landed
        y[base + threadIdx.x] = 2.0f * tile[t][threadIdx.x];
        __syncthreads();  // every thread has left the wait before the barrier is set up again
    }
}
