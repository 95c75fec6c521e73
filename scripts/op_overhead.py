"""Host time per call of a kprof.load op against a bare cuLaunchKernel of the same kernel, on a GPU.

    python scripts/op_overhead.py OUT.json [--calls N]

The kernel is rmsnorm_onepass at 1 x 1024 (a few microseconds of GPU work, so the GPU keeps up and
the host's cost is what is timed). Three ways, each on PyTorch's current stream, N calls each,
best of five rounds, in microseconds per call:
- bare: cuLaunchKernel through cuda.bindings with the arguments packed once beforehand;
- op(x, w, out=y): kprof's op writing into a given tensor;
- op(x, w): kprof's op allocating its output with the framework;
- torch.empty_like(x) then the bare launch, the new pointer written into the packed arguments: what
  the allocating call costs by hand, so the op's own share of it is told apart from the allocator's.
"""

from __future__ import annotations

import ctypes
import json
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    import torch
    from cuda.bindings import driver

    import kprof

    out = Path(argv[0])
    calls = int(argv[argv.index("--calls") + 1]) if "--calls" in argv else 20000
    rms = kprof.load("rmsnorm_onepass")
    x = torch.randn(1, 1024, device="cuda")
    w = torch.rand(1024, device="cuda") + 0.5
    y = torch.empty_like(x)
    rms(x, w, out=y)
    torch.cuda.synchronize()
    ((_, grid, block, smem, _),) = rms._plans[next(iter(rms._plans))].steps
    func = rms._functions[("rmsnorm_onepass", 0)]
    values = [ctypes.c_uint64(x.data_ptr()), ctypes.c_uint64(w.data_ptr()),
              ctypes.c_uint64(y.data_ptr()),
              ctypes.c_int32(1), ctypes.c_int32(1024), ctypes.c_float(1e-6)]
    packed = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    stream = torch.cuda.current_stream().cuda_stream

    def bare() -> None:
        driver.cuLaunchKernel(func, *grid, *block, smem, stream, ctypes.addressof(packed), 0)

    def bare_alloc() -> None:
        made = torch.empty_like(x)
        values[2].value = made.data_ptr()
        driver.cuLaunchKernel(func, *grid, *block, smem, stream, ctypes.addressof(packed), 0)

    ways = {"bare cuLaunchKernel": bare, "op(x, w, out=y)": lambda: rms(x, w, out=y),
            "op(x, w)": lambda: rms(x, w), "empty_like + bare": bare_alloc}
    result = {}
    for label, fn in ways.items():
        best = float("inf")
        for _ in range(5):
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            best = min(best, (time.perf_counter() - start) / calls)
            torch.cuda.synchronize()
        result[label] = best * 1e6
        print(f"{label:22} {best * 1e6:7.2f} us per call (best of 5 rounds of {calls})")
    result["added_by_op_out_us"] = result["op(x, w, out=y)"] - result["bare cuLaunchKernel"]
    result["added_by_op_alloc_us"] = result["op(x, w)"] - result["bare cuLaunchKernel"]
    result["added_by_op_alloc_over_empty_like_us"] = result["op(x, w)"] - result["empty_like + bare"]
    out.write_text(json.dumps({"calls": calls, "kernel": "rmsnorm_onepass R=1 C=1024",
                               "us_per_call": result}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
