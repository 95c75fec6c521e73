"""A cuda-python program: block_sum.cu compiled with NVRTC (-lineinfo) and launched through the driver API.

    kprof sanitize --tool racecheck -- python examples/cuda_python_sum.py           # the race
    kprof sanitize --tool racecheck -- python examples/cuda_python_sum.py --fixed   # the clean control
    kprof sanitize --tool racecheck -- python examples/cuda_python_sum.py --launches 3   # one finding, 3 launches
"""

import ctypes
import sys
from pathlib import Path

import numpy as np
from cuda.bindings import driver, nvrtc

SOURCE = Path(__file__).with_name("block_sum.cu")
FIXED = "--fixed" in sys.argv
LAUNCHES = int(sys.argv[sys.argv.index("--launches") + 1]) if "--launches" in sys.argv else 1


def check(result):
    err, *values = result
    if int(err) != 0:
        raise RuntimeError(f"CUDA call failed: {err}")
    return values[0] if len(values) == 1 else values


def compile_ptx(arch: str, source: bytes, name: bytes) -> bytes:
    prog = check(nvrtc.nvrtcCreateProgram(source, name, 0, [], []))
    opts = [f"--gpu-architecture={arch}".encode(), b"-lineinfo", f"-DBARRIER={int(FIXED)}".encode()]
    err = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]
    if int(err) != 0:
        log = b" " * check(nvrtc.nvrtcGetProgramLogSize(prog))
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise RuntimeError(log.decode())
    ptx = b" " * check(nvrtc.nvrtcGetPTXSize(prog))
    check(nvrtc.nvrtcGetPTX(prog, ptx))
    return ptx


def main(source: bytes | None = None, name: bytes | None = None) -> None:
    """Compile ``source`` (default: block_sum.cu's text) as the NVRTC program ``name`` (default: its path)
    and run it; the kernel is block_sum(x, out, n), one block of 256 threads per 256 elements."""
    check(driver.cuInit(0))
    dev = check(driver.cuDeviceGet(0))
    major = check(driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    minor = check(driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
    ctx = check(driver.cuDevicePrimaryCtxRetain(dev))
    check(driver.cuCtxSetCurrent(ctx))
    ptx = compile_ptx(f"compute_{major}{minor}", source or SOURCE.read_bytes(), name or str(SOURCE).encode())
    module = check(driver.cuModuleLoadData(ptx))
    kernel = check(driver.cuModuleGetFunction(module, b"block_sum"))
    n = 4096
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    d_x, d_out = check(driver.cuMemAlloc(x.nbytes)), check(driver.cuMemAlloc(4))
    check(driver.cuMemcpyHtoD(d_x, x.ctypes.data, x.nbytes))
    args = [ctypes.c_uint64(int(d_x)), ctypes.c_uint64(int(d_out)), ctypes.c_int(n)]
    ptrs = (ctypes.c_void_p * 3)(*[ctypes.addressof(a) for a in args])
    for _ in range(LAUNCHES):  # the same launch site each time: sanitizer records that differ only in their launch
        check(driver.cuMemsetD32(d_out, 0, 1))
        check(driver.cuLaunchKernel(kernel, n // 256, 1, 1, 256, 1, 1, 0, 0, ctypes.addressof(ptrs), 0))
    out = np.zeros(1, np.float32)
    check(driver.cuMemcpyDtoH(out.ctypes.data, d_out, 4))
    print(f"sum {out[0]:.4f}, expected {x.sum():.4f}")
    for ptr in (d_x, d_out):
        check(driver.cuMemFree(ptr))
    check(driver.cuModuleUnload(module))
    check(driver.cuDevicePrimaryCtxRelease(dev))


if __name__ == "__main__":
    main()
