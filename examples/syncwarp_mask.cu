// A plain C++ program whose kernel calls __syncwarp with a mask that leaves out lanes that reach it
// (lanes 16 to 31 call it with mask 0x0000ffff, which does not name them): synccheck's "Invalid arguments".
// __syncwarp is inlined from CUDA's own header, so the tool's line is the header's unless the inline
// frames are followed back to the call below:
//
//   nvcc -g -lineinfo -o syncwarp_mask examples/syncwarp_mask.cu
//   kprof sanitize --tool synccheck -- ./syncwarp_mask      # the finding at line 16, the call
//   nvcc -g -lineinfo -DFIXED -o syncwarp_mask examples/syncwarp_mask.cu   # the clean control
#include <cstdio>

__global__ void half_mask(int* out) {
    int lane = threadIdx.x % 32;
#ifdef FIXED
    __syncwarp(0xffffffffu);
#else
    __syncwarp(0x0000ffffu);  // BUG: lanes 16 to 31 are not in the mask they pass
#endif
    out[threadIdx.x] = lane;
}

int main() {
    int* out;
    cudaMalloc(&out, 32 * sizeof(int));
    half_mask<<<1, 32>>>(out);  // LAUNCH
    cudaError_t err = cudaDeviceSynchronize();
    cudaFree(out);
    std::printf("%s\n", cudaGetErrorString(err));
    return err == cudaSuccess ? 0 : 1;
}
