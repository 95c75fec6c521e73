// Batched C = A @ B on tensor cores, one warp per 16 x 16 by 16 x 8 product (mma.sync m16n8k16,
// bfloat16 in, float32 accumulate), the fragments read from shared memory with ldmatrix. B is
// row-major (k by n), but mma.sync wants its fragment as k pairs of one column: a row-major B must be
// read with ldmatrix .trans. Read without it, every product uses B transposed.
__device__ __forceinline__ unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

extern "C" __global__ void mma_tiles(const unsigned short* A, const unsigned short* B, float* C, int T) {
    __shared__ __align__(16) unsigned short As[16 * 16];
    __shared__ __align__(16) unsigned short Bs[16 * 8];
    const int tile = blockIdx.x, lane = threadIdx.x;
    if (tile >= T) return;
    for (int i = lane; i < 16 * 16; i += 32) As[i] = A[tile * 256 + i];
    for (int i = lane; i < 16 * 8; i += 32) Bs[i] = B[tile * 128 + i];
    __syncwarp();
    unsigned a[4], b[2];
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "r"(smem_addr(&As[(lane % 16) * 16 + (lane / 16) * 8])));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"  // BUG: .trans for a row-major B
                 : "=r"(b[0]), "=r"(b[1]) : "r"(smem_addr(&Bs[(lane % 16) * 8])));
    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    const int g = lane / 4, t = lane % 4;
    float* out = C + tile * 128;
    out[g * 8 + 2 * t] = c[0];
    out[g * 8 + 2 * t + 1] = c[1];
    out[(g + 8) * 8 + 2 * t] = c[2];
    out[(g + 8) * 8 + 2 * t + 1] = c[3];
}
