"""Theoretical occupancy from a kernel's resource usage and an architecture's limits, no GPU.

The same arithmetic as CUDA's occupancy calculator (``cuda_occupancy.h``): warps per block,
registers allocated per warp in units of 256 and per SM sub-partition, shared memory per block
including the 1 KiB the system reserves, rounded to 128 bytes, against the largest shared-memory
carveout, and the hardware caps on blocks and warps per SM. It is tested against
``cuOccupancyMaxActiveBlocksPerMultiprocessor`` answers recorded on the H200
(``tests/data/ncu/occupancy_sm90.json``) and checked against the driver on the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from kprof.errors import UsageError


@dataclass(frozen=True)
class ArchLimits:
    arch: str
    max_warps_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int
    max_regs_per_block: int
    max_regs_per_thread: int
    smem_per_sm: int  # the largest carveout, bytes
    max_smem_per_block: int  # opt-in maximum, bytes
    reserved_smem_per_block: int
    sm_count: int | None = None  # of the flagship part, for waves; None when it varies
    reg_alloc_unit: int = 256  # registers, per warp
    smem_alloc_unit: int = 128  # bytes
    sub_partitions: int = 4
    warp_size: int = 32
    max_threads_per_block: int = 1024
    default_smem_per_block: int = 49152  # without the opt-in attribute


# From the CUDA C++ Programming Guide's table of compute-capability limits.
ARCHS: dict[str, ArchLimits] = {
    "sm_80": ArchLimits("sm_80", 64, 32, 65536, 65536, 255, 167936, 166912, 1024, 108),
    "sm_86": ArchLimits("sm_86", 48, 16, 65536, 65536, 255, 102400, 101376, 1024),
    "sm_89": ArchLimits("sm_89", 48, 24, 65536, 65536, 255, 102400, 101376, 1024),
    "sm_90": ArchLimits("sm_90", 64, 32, 65536, 65536, 255, 233472, 232448, 1024, 132),
}


def limits_for(arch: str) -> ArchLimits:
    base = arch.rstrip("af")
    if base not in ARCHS:
        raise UsageError(f"no occupancy limits for {arch}: kprof knows {', '.join(ARCHS)}")
    return ARCHS[base]


@dataclass(frozen=True)
class Occupancy:
    block_size: int
    blocks_per_sm: int
    warps_per_sm: int
    occupancy: float  # active warps / max warps, 0..1
    limiter: str  # "registers", "shared memory", "warps", "blocks", or "none fit"
    limits: dict[str, int]  # blocks per SM allowed by each resource

    def describe(self) -> str:
        return (f"{self.occupancy:.0%} ({self.warps_per_sm} warps, {self.blocks_per_sm} blocks of "
                f"{self.block_size} per SM), limited by {self.limiter}")


def _ceil_to(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def compute(lim: ArchLimits, block_size: int, registers: int, static_smem: int, dynamic_smem: int = 0,
            opt_in: bool | None = None) -> Occupancy:
    """Blocks and warps per SM for one launch configuration.

    ``opt_in``: whether the kernel set ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`` (kprof's
    runner does when a block needs more than 48 KiB); without it a block may have 48 KiB. None
    means "as kprof launches it".
    """
    if block_size < 1 or block_size > lim.max_threads_per_block:
        raise UsageError(f"block size {block_size} is outside 1..{lim.max_threads_per_block}")
    warps_per_block = -(-block_size // lim.warp_size)
    limits: dict[str, int] = {
        "blocks": lim.max_blocks_per_sm,
        "warps": lim.max_warps_per_sm // warps_per_block,
    }
    regs = max(registers, 1)
    regs_per_warp = _ceil_to(regs * lim.warp_size, lim.reg_alloc_unit)
    if regs > lim.max_regs_per_thread or regs_per_warp * warps_per_block > lim.max_regs_per_block:
        limits["registers"] = 0
    else:
        warps_per_partition = (lim.regs_per_sm // lim.sub_partitions) // regs_per_warp
        limits["registers"] = (warps_per_partition * lim.sub_partitions) // warps_per_block
    smem = static_smem + dynamic_smem
    if opt_in is None:
        opt_in = smem > lim.default_smem_per_block
    if smem > (lim.max_smem_per_block if opt_in else lim.default_smem_per_block):
        limits["shared memory"] = 0
    else:
        per_block = _ceil_to(smem + lim.reserved_smem_per_block, lim.smem_alloc_unit)
        limits["shared memory"] = lim.smem_per_sm // per_block
    blocks = min(limits.values())
    # Hardware caps first: when they bind, fewer registers or less shared memory would not help.
    order = ("warps", "blocks", "registers", "shared memory")
    warps = blocks * warps_per_block
    if blocks == 0:
        limiter = "none fit"
    elif warps == lim.max_warps_per_sm:
        limiter = "nothing (the maximum)"
    else:
        limiter = next(k for k in order if limits[k] == blocks)
    return Occupancy(block_size, blocks, warps, warps / lim.max_warps_per_sm, limiter, limits)


def advice(lim: ArchLimits, occ: Occupancy, registers: int, static_smem: int, dynamic_smem: int = 0) -> str:
    """What would raise occupancy, in the resource that limits it."""
    if occ.occupancy >= 1.0:
        return "occupancy is already at the maximum"
    if occ.limiter == "registers":
        for regs in range(registers - 1, 7, -1):
            better = compute(lim, occ.block_size, regs, static_smem, dynamic_smem)
            if better.blocks_per_sm > occ.blocks_per_sm:
                return (f"{registers} registers per thread: at {regs} (e.g. __launch_bounds__ or -maxrregcount) "
                        f"occupancy would be {better.occupancy:.0%}")
        return f"{registers} registers per thread limit it"
    if occ.limiter == "shared memory":
        smem = static_smem + dynamic_smem
        target = occ.blocks_per_sm + 1
        per_block = lim.smem_per_sm // target - lim.reserved_smem_per_block
        per_block -= per_block % lim.smem_alloc_unit
        better = compute(lim, occ.block_size, registers, 0, max(per_block, 0))
        return (f"{smem:,} bytes of shared memory per block: at {per_block:,} or less, "
                f"occupancy would be {better.occupancy:.0%}")
    if occ.limiter == "blocks":
        return (f"at most {lim.max_blocks_per_sm} blocks fit on an SM: blocks of {occ.block_size} threads are too "
                "small to fill it; use larger blocks")
    if occ.limiter == "warps":
        return "warps per SM are the limit: the hardware maximum for this block size"
    return "the block does not fit on an SM at all: reduce registers or shared memory per block"


def sweep(lim: ArchLimits, registers: int, static_smem: int, dynamic_smem: int = 0,
          max_block: int = 1024) -> list[Occupancy]:
    """Occupancy for every block size that is a multiple of the warp size."""
    return [compute(lim, b, registers, static_smem, dynamic_smem)
            for b in range(lim.warp_size, min(max_block, lim.max_threads_per_block) + 1, lim.warp_size)]
