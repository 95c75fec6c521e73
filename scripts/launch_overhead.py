"""Host time per launch: a bare cuda.bindings launch loop against kprof's device layer.

    python3 scripts/launch_overhead.py [LAUNCHES]

Both loops launch the same tiny kernel (vector_add, N=1024) back to back without waiting, so the
wall time per launch is the host's cost of submitting it; the GPU work is far shorter.
"""

from __future__ import annotations

import ctypes
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cuda.bindings import driver as drv  # noqa: E402

from kprof import build, catalog  # noqa: E402
from kprof.device import Device  # noqa: E402


def per_launch(fn, launches: int, dev: Device) -> float:
    fn()
    dev.synchronize()
    t0 = time.perf_counter()
    for _ in range(launches):
        fn()
    t1 = time.perf_counter()
    dev.synchronize()
    return (t1 - t0) / launches


def main(launches: int) -> int:
    spec = catalog.load("vector_add")
    built = build.build(spec)
    dev = Device()
    func = dev.function(dev.load_module(built.cubin.read_bytes()), spec.entry)
    n = 1024
    a, b, c = (dev.alloc(4 * n) for _ in range(3))

    bare_args = ((drv.CUdeviceptr(a), drv.CUdeviceptr(b), drv.CUdeviceptr(c), n), (None, None, None, ctypes.c_longlong))

    def bare() -> None:
        drv.cuLaunchKernel(func, 4, 1, 1, 256, 1, 1, 0, 0, bare_args, 0)

    def kprof_launch() -> None:
        dev.launch(func, (4, 1, 1), (256, 1, 1), 0, [("ptr", a), ("ptr", b), ("ptr", c), ("int64", n)])

    try:
        import nvtx
    except ImportError:
        nvtx = None

    def kprof_nvtx() -> None:
        nvtx.push_range("vector_add", domain="kprof")
        kprof_launch()
        nvtx.pop_range(domain="kprof")

    rows = [("bare cuda.bindings cuLaunchKernel (tuple arguments)", bare),
            ("kprof Device.launch (ctypes-packed arguments)", kprof_launch)]
    if nvtx is not None:
        rows.append(("kprof Device.launch inside an NVTX push/pop range (what the runner does)", kprof_nvtx))
    print(f"host time per launch, median of 5 loops of {launches} launches (vector_add N={n})")
    for label, fn in rows:
        times = [per_launch(fn, launches, dev) for _ in range(5)]
        print(f"  {statistics.median(times) * 1e6:7.2f} us  (min {min(times) * 1e6:.2f}, max {max(times) * 1e6:.2f})  {label}")
    dev.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
