// y = x, a tile at a time through TMA: one thread asks the tensor memory accelerator for the block's
// BR x BC box of x (cp.async.bulk.tensor, by the tensor map kprof encodes and passes by value), which
// lands in shared memory and completes on an mbarrier; every thread waits on it, then copies the tile
// out within the matrix (the box past its edge arrives as zeros). What the launcher's tensor-map
// argument is tested with (tests/child/test_runner.py on a fake device, tests/test_gpu.py on sm_90).
#ifndef BR
#define BR 8
#endif
#ifndef BC
#define BC 32
#endif

struct __align__(64) TensorMap { unsigned long long words[16]; };  // CUtensorMap, opaque

__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// x comes too (a kernel takes every argument of its spec, in order) but is read through tx only.
extern "C" __global__ void tma_tile(const float* __restrict__ x, const __grid_constant__ TensorMap tx,
                                    float* __restrict__ y, int rows, int cols) {
    __shared__ __align__(128) float tile[BR * BC];
    __shared__ __align__(8) unsigned long long bar;
    const unsigned b = smem_addr(&bar);
    const int c0 = blockIdx.x * BC, r0 = blockIdx.y * BR;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(b));
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // the init, seen by the copy engine
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("{\n\t.reg .b64 state;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n\t}\n"
                     ::"r"(b), "r"(BR * BC * 4) : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                     ::"r"(smem_addr(tile)), "l"(reinterpret_cast<unsigned long long>(&tx)), "r"(c0), "r"(r0), "r"(b)
                     : "memory");  // coordinates innermost first: column, then row
    }
    asm volatile("{\n\t.reg .pred done;\n\tWAIT:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n\t"
                 "@!done bra WAIT;\n\t}\n" ::"r"(b) : "memory");  // phase 0 complete: the box has landed
    for (int i = threadIdx.x; i < BR * BC; i += blockDim.x) {
        const int r = r0 + i / BC, c = c0 + i % BC;
        if (r < rows && c < cols) y[(size_t)r * cols + c] = tile[i];
    }
}
