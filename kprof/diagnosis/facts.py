"""What one diagnosis knows about one kernel: its profile (with or without counters), its PTX lines,
its launch, its spec's work, the GPU's model and kprof peak's ceilings. The rules read only this.

:func:`headroom` is the roofline's answer to "how far could it go": the measured time over the time
the spec's work takes at the GPU's roofs (its bytes at kprof peak's measured ceiling, its FLOPs at
the FP32 or tensor peak). Every rule caps its estimate there: no change makes a kernel faster than
its roof.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from kprof.build import occupancy
from kprof.diagnosis import ptxscan
from kprof.measure.kernelprofile import KernelProfile

# FP64 results per clock per SM, from the CUDA C++ Programming Guide's table of arithmetic
# instruction throughput (64-bit floating-point add, multiply, multiply-add): 1/2 of FP32 on the
# data-centre parts, 1/32 to 1/64 on the others. None where kprof has no figure.
FP64_PER_SM_CLOCK = {
    "sm_61": 4, "sm_70": 32, "sm_75": 2, "sm_80": 32, "sm_86": 2, "sm_87": 2, "sm_89": 2,
    "sm_90": 64, "sm_100": 64, "sm_120": 2, "sm_121": 2,
}  # fmt: skip
FAST_FP64 = 1 / 4  # an FP64:FP32 ratio at or above this is "many FP64 units"
# no unit busier than this: the kernel waits (latency), it is not bound by a unit
LATENCY_BELOW = 0.6


def fp64_ratio_of(arch: str) -> float | None:
    """This architecture's FP64 rate over its FP32 rate (1/2 on H100 and H200, 1/64 on an RTX
    4090)."""
    base = arch.rstrip("af")
    per = FP64_PER_SM_CLOCK.get(base)
    try:
        return per / occupancy.limits_for(base).fp32_lanes if per else None
    except Exception:  # noqa: BLE001 - an architecture kprof has no table for
        return None


def bare_name(kernel: str) -> str:
    """A kernel's name as its source writes it, from what a profile calls it: ``void ns::k<float,
    4>(float *, int)``, ``k<(int)1>(float *)`` and ``k[lambda(float)(instance1)]`` are ``k``."""
    depth, out = 0, []
    for ch in kernel:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0 and ch in "([":
            break
        elif depth == 0:
            out.append(ch)
    words = "".join(out).split()
    return words[-1].split("::")[-1] if words else kernel


def kernel_line(source_lines: tuple[str, ...] | list[str], name: str, *,
                strict: bool = False) -> int:
    """The line declaring kernel ``name`` (``__global__ ... name(``, the name on the line or on one
    of the next two), else (unless ``strict``) the first ``__global__`` line, else 0."""
    first = 0
    name = bare_name(name)
    for k, text in enumerate(source_lines, 1):
        code = text.split("//", 1)[0]
        if "__global__" in code:
            head = " ".join(line.split("//", 1)[0] for line in source_lines[k - 1:k + 2])
            if re.search(rf"\b{re.escape(name)}\s*(?:<[^()]*>\s*)?\(", head):
                return k
            first = first or k
    return 0 if strict else first


def function_span(source_lines: tuple[str, ...] | list[str], start: int) -> tuple[int, int]:
    """The lines (first, last; 1-based) of the function declared at line ``start``: to its body's
    closing brace. The whole file where ``start`` is 0 (no kernel found)."""
    if start <= 0:
        return 1, len(source_lines)
    depth, opened = 0, False
    for k in range(start - 1, len(source_lines)):
        for ch in source_lines[k].split("//", 1)[0]:
            if ch == "{":
                depth, opened = depth + 1, True
            elif ch == "}":
                depth -= 1
        if opened and depth <= 0:
            return start, k + 1
    return start, len(source_lines)


@dataclass(frozen=True, kw_only=True)
class SourceFiles:
    """Where a cause's line is named: the kernel's source file and its lines, the kernel it profiled
    there, and the spec file with its ``launch:`` (or ``steps:``) line."""

    path: Path | None = None  # the kernel's .cu (None for a Python operation)
    lines: tuple[str, ...] = ()
    entry_name: str = ""  # the kernel the diagnosis reads (the spec's entry, or its last step's)
    spec_path: Path | None = None
    launch_line: int = 0


@dataclass(frozen=True)
class Facts:
    kernel: str
    arch: str
    profile: KernelProfile
    counters: bool  # the profile has Nsight Compute's counters
    seconds: float | None  # the kernel's (or the spec's launches') measured time
    sm_count: int | None
    blocks: int  # blocks in the grid (the first kernel step)
    threads_per_block: int
    launches: int  # kernel launches in one run of the spec
    spec_bytes: int | None
    spec_flops: int | None
    math: str  # "fp32" or "tensor"
    ceiling_bytes_per_s: float | None  # kprof peak's ceiling for the spec's mix, else the DRAM peak
    peak_flops: float | None
    sm_hz: float | None
    entry: ptxscan.Entry | None  # the kernel's PTX lines; None without PTX
    code: SourceFiles = field(default_factory=SourceFiles)
    shared_static: int = 0
    shared_dynamic: int = 0
    registers: int | None = None
    spill_bytes: int = 0
    notes: list[str] = field(default_factory=list)
    # each launch's own GPU time in one timed call (CUPTI; empty: not measured)
    kernel_seconds: tuple[float, ...] = ()

    @property
    def limits(self) -> occupancy.ArchLimits | None:
        try:
            return occupancy.limits_for(self.arch)
        except Exception:  # noqa: BLE001 - an architecture kprof has no table for: no occupancy model
            return None

    def occupancy(self, registers: int | None = None,
                  shared: int | None = None) -> occupancy.Occupancy | None:
        lim = self.limits
        if lim is None or not self.registers:
            return None
        try:
            return occupancy.compute(lim, self.threads_per_block, registers or self.registers,
                                     self.shared_static if shared is None else shared,
                                     self.shared_dynamic if shared is None else 0)
        except Exception:  # noqa: BLE001
            return None

    def fp64_ratio(self) -> float | None:
        return fp64_ratio_of(self.arch)

    def time_at_roof(self) -> float | None:
        parts = []
        if self.spec_bytes and self.ceiling_bytes_per_s:
            parts.append(self.spec_bytes / self.ceiling_bytes_per_s)
        if self.spec_flops and self.peak_flops:
            parts.append(self.spec_flops / self.peak_flops)
        return max(parts) if parts else None

    def headroom(self) -> float | None:
        roof = self.time_at_roof()
        return max(1.0, self.seconds / roof) if roof and self.seconds else None

    def memory_fraction(self) -> float | None:
        if self.spec_bytes and self.ceiling_bytes_per_s and self.seconds:
            return self.spec_bytes / self.seconds / self.ceiling_bytes_per_s
        return self.profile.memory.of_ceiling or self.profile.memory.dram_fraction

    def source_line(self, pattern: str, *, after: int = 0) -> int:
        """The first line matching ``pattern`` (a regular expression) in the profiled kernel's own
        function, from line ``after``; 0 where it has none. Never another kernel's line: a file of
        several kernels once had its int64 division named at another kernel's ``/``."""
        rx = re.compile(pattern)
        lines = self.code.lines
        if not (start := self.entry_line()):
            return 0  # the kernel is not found in its file: no line, never another kernel's
        first, last = function_span(lines, start)
        for k in range(max(first, after + 1), last + 1):
            code = lines[k - 1].split("//", 1)[0]
            if rx.search(code):
                return k
        return 0

    def entry_line(self) -> int:
        """The profiled kernel's declaration: by the name the profile gives it (demangled), else by
        the spec's entry (a profile without counters is named for the spec); 0 where neither is in
        the file (never another kernel's)."""
        from kprof.demangle import demangle

        for name in (self.profile.kernel, demangle(self.code.entry_name), self.code.entry_name):
            if name and (line := kernel_line(self.code.lines, name, strict=True)):
                return line
        return 0


def profile_units(p: KernelProfile) -> dict[str, float]:
    """The roofline's levels a profile measured, each a share of its peak (none without
    counters)."""
    m, c = p.memory, p.compute
    seen = {
        "DRAM": m.of_ceiling if m.of_ceiling is not None else m.dram_fraction,
        "L2": m.l2_throughput, "L1/shared": m.l1_throughput,
        "shared pipe": p.shared.shared_fraction,
        "FP32 pipe": c.fma_pipe, "FP64 pipe": c.fp64_pipe, "tensor pipe": c.tensor_pipe,
        "LSU": c.lsu_pipe, "ALU": c.alu_pipe, "issue": c.issue_active,
    }  # fmt: skip
    return {k: v for k, v in seen.items() if v is not None}
