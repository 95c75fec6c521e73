// Causal attention, one thread per query row (float32, the online softmax over the keys): query i must
// see keys 0 .. i. The mask stops one key late, so every query but the last also sees the next one.
// No sanitizer sees a value that is wrong but in bounds.
#ifndef D
#define D 16
#endif
extern "C" __global__ void causal_attention(const float* Q, const float* K, const float* V, float* O, int S, int causal) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= S) return;
    float m = -INFINITY, l = 0.0f, acc[D];
    for (int d = 0; d < D; ++d) acc[d] = 0.0f;
    for (int key = 0; key < S; ++key) {
        if (causal && key > row + 1) break;  // BUG: key > row: query i sees keys 0 .. i only
        float s = 0.0f;
        for (int d = 0; d < D; ++d) s += Q[row * D + d] * K[key * D + d];
        s *= rsqrtf((float)D);
        const float m2 = fmaxf(m, s), a = __expf(m - m2), p = __expf(s - m2);
        l = l * a + p;
        for (int d = 0; d < D; ++d) acc[d] = acc[d] * a + p * V[key * D + d];
        m = m2;
    }
    for (int d = 0; d < D; ++d) O[row * D + d] = acc[d] / l;
}
