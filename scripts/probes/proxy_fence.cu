// Which shapes of a missing fence.proxy.async does compute-sanitizer's racecheck report (2026.4's
// --racecheck-fence-proxy-async)? Each VARIANT is one way generic writes to shared memory meet a bulk
// asynchronous copy with no proxy fence between; FENCED=1 adds the fence. Built and run by
// scripts/gpu-check.sh newchecks under each compute-sanitizer: the answer picks the shape of the
// corpus case missing_proxy_fence.
//   1: every thread writes its element, __syncthreads(), thread 0 stores the tile (cp.async.bulk, shared to global)
//   2: thread 0 writes the whole tile, then stores it itself (no barrier)
//   3: every thread writes its element, __syncthreads(), thread 0 loads global into the same tile (global to shared)
//   4: as 1, the store by every thread's own cp.async.bulk of its 16-byte quarter of a 64-byte row (4 threads a row)
#include <cstdio>
#include <cuda_runtime.h>

__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

__device__ __forceinline__ void fence() {
#if FENCED
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void store(float* dst, const float* tile, int bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst), "r"(smem_addr(tile)), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

__global__ void probe(const float* x, float* y) {
    __shared__ __align__(128) float tile[256];
    const int base = blockIdx.x * 256;
#if VARIANT == 2
    if (threadIdx.x == 0) {
        for (int i = 0; i < 256; ++i) tile[i] = 2.0f * x[base + i];
        fence();
        store(y + base, tile, 1024);
    }
#elif VARIANT == 3
    __shared__ __align__(8) unsigned long long bar;
    const unsigned b = smem_addr(&bar);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(b) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    tile[threadIdx.x] = -1.0f;
    fence();
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("{\n\t.reg .b64 state;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n\t}\n" ::"r"(b), "r"(1024) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                     ::"r"(smem_addr(tile)), "l"(x + base), "r"(1024), "r"(b) : "memory");
    }
    asm volatile("{\n\t.reg .pred done;\n\tWAIT:\n\tmbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n\t@!done bra WAIT;\n\t}\n" ::"r"(b) : "memory");
    y[base + threadIdx.x] = 2.0f * tile[threadIdx.x];
#else
    tile[threadIdx.x] = 2.0f * x[base + threadIdx.x];
    fence();
    __syncthreads();
#if VARIANT == 4
    if (threadIdx.x % 4 == 0) store(y + base + threadIdx.x, tile + threadIdx.x, 16);
#else
    if (threadIdx.x == 0) store(y + base, tile, 1024);
#endif
#endif
}

int main() {
    const int n = 8192;
    float *x, *y;
    cudaMalloc(&x, n * 4);
    cudaMalloc(&y, n * 4);
    float h[n];
    for (int i = 0; i < n; ++i) h[i] = (float)i;
    cudaMemcpy(x, h, n * 4, cudaMemcpyHostToDevice);
    probe<<<n / 256, 256>>>(x, y);
    cudaError_t e = cudaDeviceSynchronize();
    cudaMemcpy(h, y, n * 4, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += h[i] != 2.0f * i;
    printf("variant %d fenced %d: %s, %d wrong\n", VARIANT, FENCED, cudaGetErrorString(e), bad);
    return bad != 0 || e != cudaSuccess;
}
