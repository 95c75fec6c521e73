// Hopper's bulk asynchronous store: the threads of a block write a tile of 256 floats to shared
// memory, and one thread copies the tile to global memory with cp.async.bulk. The copy reads shared
// memory through the asynchronous proxy; the threads' writes went through the generic proxy. A
// barrier orders threads, not proxies: each writer must make its writes visible to the asynchronous
// proxy with fence.proxy.async.shared::cta before the barrier. Here no thread does.
__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

extern "C" __global__ void bulk_store(const float* __restrict__ x, float* __restrict__ y) {
    __shared__ __align__(128) float tile[256];
    const int base = blockIdx.x * 256;
    tile[threadIdx.x] = 2.0f * x[base + threadIdx.x];
    __syncthreads();  // BUG: no fence.proxy.async.shared::cta before it: the copy below may miss the writes
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n"
                     ::"l"(y + base), "r"(smem_addr(tile)), "r"(256 * 4) : "memory");
        asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");  // the tile read before the block ends
    }
}
