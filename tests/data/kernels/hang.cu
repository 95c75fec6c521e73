// Spins until a flag nobody sets: the runner must be killed at its timeout.
extern "C" __global__ void hang(const float* flag, float* out, long long n) {
    volatile const float* f = flag;
    while (f[0] == 0.0f) { }
    out[threadIdx.x] = 1.0f;
}
