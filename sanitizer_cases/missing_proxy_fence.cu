// Hopper's bulk asynchronous copy with a padded tile: the threads zero the block's tile of 256 floats,
// so that a partial last tile reads zeros past the end, and one thread then copies the block's
// elements over it (cp.async.bulk, completing on an mbarrier). The copy writes through the asynchronous
// proxy, the threads through the generic proxy; a barrier orders threads, not proxies, so each thread
// must fence its write (fence.proxy.async.shared::cta) before the barrier that precedes the copy.
// Here none does.
__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

extern "C" __global__ void bulk_load_padded(const float* __restrict__ x, float* __restrict__ y, int n) {
    __shared__ __align__(128) float tile[256];
    __shared__ __align__(8) unsigned long long bar;
    const unsigned b = smem_addr(&bar);
    const int base = blockIdx.x * 256;
    const int count = min(256, n - base);  // n is a multiple of 4: the copy's bytes a multiple of 16
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(b) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    tile[threadIdx.x] = 0.0f;  // BUG: no fence.proxy.async.shared::cta after it: the copy below may land first
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("{\n\t.reg .b64 state;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n\t}\n"
                     ::"r"(b), "r"(count * 4) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                     ::"r"(smem_addr(tile)), "l"(x + base), "r"(count * 4), "r"(b) : "memory");
    }
    asm volatile("{\n\t.reg .pred done;\n\tWAIT:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n\t"
                 "@!done bra WAIT;\n\t}\n" ::"r"(b) : "memory");  // phase 0 complete: the copy has landed
    if (threadIdx.x < count) y[base + threadIdx.x] = 2.0f * tile[threadIdx.x];
}
