// Writes far outside its buffer: the launch faults with CUDA_ERROR_ILLEGAL_ADDRESS.
extern "C" __global__ void fault(float* out, long long n) {
    out[threadIdx.x + (1LL << 40)] = 1.0f;
}
