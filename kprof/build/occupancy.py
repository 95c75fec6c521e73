"""Theoretical occupancy from a kernel's resource usage and an architecture's limits, no GPU.

The same arithmetic as CUDA's occupancy calculator (``cuda_occupancy.h``): warps per block,
registers allocated per warp in units of 256 and per SM sub-partition, shared memory per block
including the 1 KiB the system reserves from sm_80 on, rounded to 128 bytes (256 before sm_80),
against the largest shared-memory carveout, and the hardware caps on blocks and warps per SM, for
every architecture from sm_61 (Pascal) to sm_121 (Blackwell). It is tested against
``cuOccupancyMaxActiveBlocksPerMultiprocessor`` answers recorded on the H200
(``tests/data/ncu/occupancy_sm90.json``) and checked against the driver on the GPU.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

from kprof.errors import UsageError


@dataclass(frozen=True)
class ArchLimits:
    arch: str
    max_warps_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int
    max_regs_per_block: int
    _: KW_ONLY  # the rest by name
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
    fp32_lanes: int = 128  # FP32 FMA lanes per SM
    # dense 16-bit tensor-core FLOP per clock per SM (FP16 or BF16 in, FP32 accumulation), the
    # fastest part of the architecture's; None: no tensor cores, or no figure
    # (kprof.measure.ceilings says where from)
    tensor_flops: int | None = None

    @property
    def max_threads_per_sm(self) -> int:
        return self.max_warps_per_sm * self.warp_size


KB = 1024


def _arch(arch: str, warps: int, blocks: int, smem_sm_kb: int, smem_block_kb: int, fp32_lanes: int,
          *, sm_count: int | None = None, reserved: int = KB, smem_unit: int = 128,
          tensor: int | None = None) -> ArchLimits:
    return ArchLimits(arch, warps, blocks, 65536, 65536, max_regs_per_thread=255,
                      smem_per_sm=smem_sm_kb * KB,
                      max_smem_per_block=smem_block_kb * KB, reserved_smem_per_block=reserved,
                      sm_count=sm_count,
                      smem_alloc_unit=smem_unit,
                      default_smem_per_block=min(48 * KB, smem_block_kb * KB),
                      fp32_lanes=fp32_lanes, tensor_flops=tensor)


# From the CUDA C++ Programming Guide's tables of compute capabilities ("Technical Specifications
# per Compute Capability": resident warps and blocks per SM, shared memory per SM and per block, 64
# K registers per SM and per block, 255 per thread; "Arithmetic Instructions": FP32 lanes per SM)
# and CUDA 13.0's cuda_occupancy.h (allocation units: shared memory in 256 bytes before sm_80 and
# 128 after; no reserved shared memory per block before sm_80; 24 blocks per SM on sm_120 and
# sm_121). tests/build/test_occupancy.py holds the guide's numbers apart and checks every row. The
# SM count is the flagship part's (V100, A100, H100/H200, B200), for waves; None where the parts
# differ.
ARCHS: dict[str, ArchLimits] = {a.arch: a for a in (
    _arch("sm_61", 64, 32, 96, 48, 128, reserved=0, smem_unit=256),  # GTX 1080, P40
    _arch("sm_70", 64, 32, 96, 96, 64, sm_count=80, reserved=0, smem_unit=256, tensor=1024),  # V100
    _arch("sm_75", 32, 16, 64, 64, 64, reserved=0, smem_unit=256, tensor=1024),  # T4, RTX 20
    _arch("sm_80", 64, 32, 164, 163, 64, sm_count=108, tensor=2048),  # A100
    _arch("sm_86", 48, 16, 100, 99, 128, tensor=1024),  # RTX 30, A10, A40
    _arch("sm_87", 48, 16, 164, 163, 128),  # Jetson Orin
    _arch("sm_89", 48, 24, 100, 99, 128, tensor=1024),  # RTX 40, L4, L40
    _arch("sm_90", 64, 32, 228, 227, 128, sm_count=132, tensor=4096),  # H100, H200
    _arch("sm_100", 64, 32, 228, 227, 128, sm_count=148, tensor=8192),  # B200
    _arch("sm_103", 64, 32, 228, 227, 128, tensor=8192),  # B300
    _arch("sm_120", 48, 24, 100, 99, 128, tensor=1024),  # RTX 50, RTX PRO 6000 Blackwell
    _arch("sm_121", 48, 24, 100, 99, 128),  # DGX Spark
)}  # fmt: skip


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


def compute(lim: ArchLimits, block_size: int, registers: int, static_smem: int,
            dynamic_smem: int = 0, opt_in: bool | None = None) -> Occupancy:
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
        # no shared memory at all (possible before sm_80, which reserves none): no limit from it
        limits["shared memory"] = lim.smem_per_sm // per_block if per_block else lim.max_blocks_per_sm
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


def advice(lim: ArchLimits, occ: Occupancy, registers: int, static_smem: int,
           dynamic_smem: int = 0) -> str:
    """What would raise occupancy, in the resource that limits it."""
    if occ.occupancy >= 1.0:
        return "occupancy is already at the maximum"
    if occ.limiter == "registers":
        for regs in range(registers - 1, 7, -1):
            better = compute(lim, occ.block_size, regs, static_smem, dynamic_smem)
            if better.blocks_per_sm > occ.blocks_per_sm:
                return (f"{registers} registers per thread: at {regs} (e.g. __launch_bounds__ or "
                        f"-maxrregcount) occupancy would be {better.occupancy:.0%}")
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
        return (f"at most {lim.max_blocks_per_sm} blocks fit on an SM: blocks of {occ.block_size} "
                "threads are too small to fill it; use larger blocks")
    if occ.limiter == "warps":
        return "warps per SM are the limit: the hardware maximum for this block size"
    return "the block does not fit on an SM at all: reduce registers or shared memory per block"


def sweep(lim: ArchLimits, registers: int, static_smem: int, dynamic_smem: int = 0,
          max_block: int = 1024) -> list[Occupancy]:
    """Occupancy for every block size that is a multiple of the warp size."""
    return [compute(lim, b, registers, static_smem, dynamic_smem)
            for b in range(lim.warp_size, min(max_block, lim.max_threads_per_block) + 1,
                           lim.warp_size)]
