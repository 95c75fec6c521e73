"""kprof's occupancy model against the driver's own answer
(cuOccupancyMaxActiveBlocksPerMultiprocessor) for every kernel at several block sizes, on a real
GPU. No ncu: these tests run beside the others, not in the profiler tests' one worker (on an H200 at
405e353 they were 145 s of that worker's 346 s)."""

import pytest

from kprof.build import build, occupancy
from kprof.spec import catalog

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", [e.name for e in catalog.entries() if e.group == "kernel"])
def test_occupancy_agrees_with_the_driver(name):
    from kprof.child.device import Device

    spec = catalog.load(name)
    resolved = spec.resolve()
    built = build.build(spec)
    usage = built.usage_of(spec.entry)
    dev = Device()
    try:
        func = dev.function(dev.load_module(built.cubin.read_bytes()), spec.entry)
        lim = occupancy.limits_for(dev.info().arch)
        for block in sorted({resolved.threads_per_block, 64, 128, 256, 512}):
            if block > dev.function_attribute(func, "MAX_THREADS_PER_BLOCK"):
                continue
            ours = occupancy.compute(lim, block, usage.registers, usage.shared_static,
                                     resolved.shared_mem, opt_in=False)
            assert ours.blocks_per_sm == dev.occupancy(func, block, resolved.shared_mem), (name, block)
    finally:
        dev.close()
