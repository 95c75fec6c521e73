// Float data, double constants: 0.999 and 0.001 are doubles, so every step converts v to double,
// runs a DFMA and converts back. A GPU with few FP64 units (GeForce: 1/64 of FP32) runs it
// tens of times slower; on any GPU the conversions and DFMA lengthen each step of the chain.
extern "C" __global__ void fp64_constants(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
#pragma unroll 1
    for (int s = 0; s < 64; ++s) v = v * 0.999 + 0.001;  // PERF: double constants make this FP64 math
    y[i] = v;
}
