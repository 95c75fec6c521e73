// y = x + 32 as 32 launches of a kernel that adds 1 to 16,384 floats: each launch does about a
// microsecond of work, less than launching it costs, so the GPU mostly waits for the next launch.
extern "C" __global__ void start(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + (FUSED ? 32.0f : 1.0f);
}

extern "C" __global__ void add_one(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += 1.0f;  // PERF: a launch for one add a element
}
