// Hopper's asynchronous bulk copy: one thread starts a copy of the block's 256 floats into shared
// memory (cp.async.bulk), which completes on an mbarrier; every thread must wait on that barrier's
// phase before it reads the tile, as this fixed twin does.
__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

extern "C" __global__ void bulk_scale(const float* __restrict__ x, float* __restrict__ y, int n) {
    __shared__ __align__(128) float tile[256];
    __shared__ __align__(8) unsigned long long bar;
    const unsigned b = smem_addr(&bar);
    const int base = blockIdx.x * 256;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(b));
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // the init, seen by the copy engine
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("{\n\t.reg .b64 state;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n\t}\n"
                     ::"r"(b), "r"(256 * 4) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                     ::"r"(smem_addr(tile)), "l"(x + base), "r"(256 * 4), "r"(b) : "memory");
    }
    asm volatile("{\n\t.reg .pred done;\n\tWAIT:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n\t"
                 "@!done bra WAIT;\n\t}\n" ::"r"(b) : "memory");  // phase 0 complete: the copy has landed
    const float v = tile[threadIdx.x];
    if (base + threadIdx.x < n) y[base + threadIdx.x] = 2.0f * v;
}
