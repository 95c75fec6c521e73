// A buffer the program marks read-only with NVTX's memory permissions (nvtxMemPermissionsAssign), then
// writes from a kernel: memcheck reports the write as "not writable", not as out of bounds.
//
//   nvcc -g -lineinfo -o nvtx_readonly examples/nvtx_readonly.cu
//   kprof sanitize --tool memcheck -- ./nvtx_readonly        # invalid-access (not writable), line below
//   nvcc -g -lineinfo -DFIXED -o nvtx_readonly examples/nvtx_readonly.cu   # no permission set: clean
#include <cstdio>
#include <nvtx3/nvToolsExtMem.h>
#include <nvtx3/nvToolsExtMemCudaRt.h>

__global__ void bump(unsigned* counter) {
    counter[0] += 1u;  // BUG: counter is read-only from the permission below on
}

static void read_only(nvtxDomainHandle_t domain, void* ptr) {
    nvtxMemPermissionsAssignRegionDesc_t region = {};
    region.flags = NVTX_MEM_PERMISSIONS_REGION_FLAGS_READ;
    region.regionRefType = NVTX_MEM_REGION_REF_TYPE_POINTER;
    region.region.pointer = ptr;
    nvtxMemPermissionsAssignBatch_t batch = {};
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof(batch);
    batch.permissions = nvtxMemCudaGetProcessWidePermissions(domain);
    batch.regionCount = 1;
    batch.regionElementSize = sizeof(region);
    batch.regionElements = &region;
    nvtxMemPermissionsAssign(domain, &batch);
}

int main() {
    nvtxDomainHandle_t domain = nvtxDomainCreateA("nvtx_readonly");
    unsigned* counter;
    cudaMalloc(&counter, sizeof(unsigned));
    cudaMemset(counter, 0, sizeof(unsigned));
#ifndef FIXED
    read_only(domain, counter);
#endif
    bump<<<1, 1>>>(counter);  // LAUNCH
    cudaError_t err = cudaDeviceSynchronize();
    std::printf("%s\n", cudaGetErrorString(err));
    cudaFree(counter);
    return err == cudaSuccess ? 0 : 1;
}
