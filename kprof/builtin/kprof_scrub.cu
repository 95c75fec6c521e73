// Fills the shared memory of the block with a 32-bit pattern. Launched by the values detector
// before each run, with all the shared memory a block may have, so that a kernel reading shared
// memory it never wrote sees a pattern that changes between runs. volatile keeps the stores.
extern "C" __global__ void kprof_scrub(unsigned int pattern, unsigned int words) {
    extern __shared__ unsigned int smem[];
    volatile unsigned int* s = smem;
    for (unsigned int i = threadIdx.x; i < words; i += blockDim.x) s[i] = pattern;
}
