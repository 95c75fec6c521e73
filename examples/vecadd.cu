// A plain C++ program whose kernel reads a and b and writes c one element past their end (i <= n):
//
//   nvcc -g -lineinfo -o vecadd examples/vecadd.cu          # -g: host line information, for the launch site
//   kprof sanitize --tool memcheck -- ./vecadd               # the read, and where launch() launched it
//   nvcc -g -lineinfo -DFIXED -o vecadd examples/vecadd.cu   # the clean control
#include <cstdio>

__global__ void vecadd(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef FIXED
    if (i < n) c[i] = a[i] + b[i];
#else
    if (i <= n) c[i] = a[i] + b[i];  // BUG: i == n reads a[n] (memcheck stops there) and writes c[n]
#endif
}

static void launch(const float* a, const float* b, float* c, int n) {
    vecadd<<<(n + 255) / 256, 256>>>(a, b, c, n);  // LAUNCH
}

int main() {
    const int n = 1000;
    float *a, *b, *c;
    cudaMalloc(&a, n * sizeof(float));
    cudaMalloc(&b, n * sizeof(float));
    cudaMalloc(&c, n * sizeof(float));
    cudaMemset(a, 0, n * sizeof(float));
    cudaMemset(b, 0, n * sizeof(float));
    launch(a, b, c, n);
    cudaError_t err = cudaDeviceSynchronize();
    std::printf("%s\n", cudaGetErrorString(err));
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return err == cudaSuccess ? 0 : 1;
}
