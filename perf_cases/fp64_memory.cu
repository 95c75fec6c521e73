// Sixteen steps of float math with double constants on each element of a 256 MiB copy: FP64 work,
// but little of it per byte. A GPU with few FP64 units (GeForce: 1/64 of FP32) is bound by them;
// one with many (H100, H200: 1/2) is bound by memory, and float constants gain nothing there.
extern "C" __global__ void fp64_memory(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v = x[i];
#pragma unroll
    for (int s = 0; s < 16; ++s) v = v * 0.999 + 0.001;  // PERF: FP64 math, 16 DFMA an element
    y[i] = (float)v;
}
