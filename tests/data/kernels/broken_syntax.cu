extern "C" __global__ void broken_syntax(float* a) {
    a[threadIdx.x] = undefined_name + 1.0f;
}
