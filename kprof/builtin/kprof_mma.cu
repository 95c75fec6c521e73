// kprof peak's tensor-core ceiling through mma.sync: m16n8k16, bfloat16 in, float32 accumulate, on
// operands held in registers (no memory traffic), 8 independent accumulators per warp so the tensor
// pipe never waits on one. FLOPs = 2 * 16 * 8 * 16 per instruction per warp. On Hopper this is the rate
// mma.sync reaches, not the warpgroup MMA's (wgmma): what a kernel of mma.sync can aim for.
extern "C" __global__ void kprof_mma(float* out, int iters) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned t = threadIdx.x;
    const unsigned a0 = 0x3A833A83u ^ (t & 7u), a1 = 0x3A843A84u, a2 = 0x3A853A85u, a3 = 0x3A863A86u;  // ~1e-3
    const unsigned b0 = 0x3A873A87u ^ (t & 3u), b1 = 0x3A883A88u;
    float c[8][4] = {};
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                         "{%8, %9}, {%0, %1, %2, %3};\n"
                         : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                         : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
        }
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) s += (c[j][0] + c[j][1]) + (c[j][2] + c[j][3]);
    out[blockIdx.x * blockDim.x + t] = s;
#endif
}
