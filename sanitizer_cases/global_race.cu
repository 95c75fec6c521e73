// Each block adds its partial sum to out[0] with a plain read-modify-write: blocks overwrite each
// other's updates, differently on every run. racecheck sees only shared memory: it cannot see this.
extern "C" __global__ void global_race(const float* x, float* out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = out[0] + s[0];  // BUG: not atomic across blocks
}
