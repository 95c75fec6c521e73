// Each thread runs 512 steps on its own value, with a __syncthreads() in every step though no
// thread reads another's data inside the loop: 32 warps wait for each other 512 times.
extern "C" __global__ void barrier_in_loop(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
#pragma unroll 1
    for (int s = 0; s < 512; ++s) {
        v = v * 0.999f + 0.001f;
        __syncthreads();  // PERF: a barrier every step, nothing shared to wait for
    }
    if (i < n) y[i] = v;
}
