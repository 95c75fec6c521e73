// Each thread sums the positions of its 32 neighbours (a neighbour list, as in molecular dynamics).
// A position is four adjacent floats (x, y, z, w), read as four 4-byte loads: four requests a
// neighbour where one 16-byte load does it. The 1 MiB of positions stays in L2, so the requests,
// not DRAM, bound the kernel.
extern "C" __global__ void scalar_loads(const float* pos, const int* nbr, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float sx = 0.0f, sy = 0.0f, sz = 0.0f, sw = 0.0f;
#pragma unroll 4
    for (int k = 0; k < 32; ++k) {
        int j = nbr[(size_t)k * n + i];
        float x = pos[4 * j], y = pos[4 * j + 1], z = pos[4 * j + 2], w = pos[4 * j + 3];  // PERF: four 4-byte loads
        sx += x;
        sy += y;
        sz += z;
        sw += w;
    }
    out[i] = sx + 2.0f * sy + 3.0f * sz + 4.0f * sw;
}
