"""Where a kernel's cost sits, line by line, from what Nsight Compute measured on each source line.

A cause names the line where its own measured cost is largest (:func:`place`): excess L2 sectors for
uncoalesced accesses, excess shared-memory wavefronts for bank conflicts, divergent branches (else
the lanes left idle) for divergence, barrier stall samples for a barrier, local-memory sectors for
local memory, stall samples on the lines whose instructions are of a kind (FP64 math, global
atomics, loads) for the rest. The PTX may say which lines could be at fault; only a measurement
picks one, and the line says its share of that cost and of the kernel's stall samples. Where the
profile has no Source page, :func:`unmeasured` says so: no line is guessed. :func:`hot` is the
Source page's view in a few rows: the lines with most stall samples and their reasons.
:func:`concentration` answers "where does this unit's work sit" for a limiter no rule explained.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kprof.diagnosis.model import Line
from kprof.tools.nsight.sourcepage import LineCounters, SourceLines

# What the SASS opcodes of a line say it does (the first word of the opcode)
FP64_OPS = ("DFMA", "DADD", "DMUL", "DSETP", "DMNMX", "F2F.F64", "F2F.F32.F64", "I2F.F64",
            "F2I.F64", "DRSQRT")
ATOMIC_OPS = ("ATOM", "ATOMG", "RED", "REDG")
GLOBAL_LOAD_OPS = ("LDG",)
LOCAL_OPS = ("LDL", "STL")
SHARED_OPS = ("LDS", "STS", "LDSM", "ATOMS")
FP32_OPS = ("FFMA", "FADD", "FMUL", "FMNMX", "FSETP", "MUFU")
TENSOR_OPS = ("HMMA", "HGMMA", "IMMA", "DMMA", "WGMMA")
MEMORY_OPS = ("LDG", "STG", "LDS", "STS", "LDL", "STL", "LD", "ST", "ATOM", "ATOMG", "RED", "REDG",
              "LDGSTS", "LDSM")
INT_OPS = ("IMAD", "IADD3", "LOP3", "SHF", "LEA", "ISETP", "IABS", "IMNMX", "SEL", "PRMT", "POPC",
           "FLO", "BREV")


def does(x: LineCounters, ops: tuple[str, ...]) -> bool:
    """Whether any of the line's instructions is one of ``ops`` (``LDG`` matches ``LDG.E.128``)."""
    return any(op == o or op.startswith(o + ".") for op in x.sass for o in ops)


@dataclass(frozen=True)
class Placed:
    """A line picked by a measured cost: the line, its share of that cost, its share of the kernel's
    stall samples."""

    at: LineCounters
    share: float  # of the cost summed over the kernel's lines
    samples: float | None  # of the kernel's stall samples (None: the page had none)


def place(page: SourceLines | None, metric: str, *,
          where: Callable[[LineCounters], bool] | None = None,
          prefer: Callable[[LineCounters], bool] | None = None) -> Placed | None:
    """The line with most of ``metric`` (a :meth:`LineCounters.count` name) among those ``where``
    allows; None where the page lacks the counter or no line has any. ``prefer``: where one of those
    lines has some of it, the line is picked among them (the share stays of the whole: a divergent
    branch the PTX shows the lanes disagree on, before the branches inside the paths it starts)."""
    if page is None or not (page.has(metric)
                            or (metric.startswith("stall:") and page.has("samples"))):
        return None
    pool = [x for x in page.lines if where is None or where(x)]
    total = sum(x.count(metric) for x in page.lines if where is None or where(x))
    if not pool or total <= 0:
        return None
    preferred = [x for x in pool if x.count(metric) > 0 and prefer(x)] if prefer is not None else []
    # a tie (a local array's stores and loads): where warps wait
    best = max(preferred or pool, key=lambda x: (x.count(metric), x.samples))
    if best.count(metric) <= 0:
        return None
    all_samples = page.total("samples") if page.has("samples") else 0.0
    return Placed(best, best.count(metric) / total,
                  best.samples / all_samples if all_samples else None)


def line_of(p: Placed, what: str, cost: str) -> Line:
    """The cause's :class:`~kprof.diagnosis.model.Line`: what is on it and its measured share."""
    bits = [f"{p.share:.0%} of the kernel's {cost}"]
    if p.samples is not None:
        bits.append(f"{p.samples:.0%} of its stall samples")
    return Line(p.at.file, p.at.line, f"{what} (measured: {', '.join(bits)})")


def unmeasured(why: str) -> Line:
    """No line, said: the cause's cost was not measured per line (no Source page, or no counter for
    it)."""
    return Line("", 0, f"line not measured ({why})")


def top_reasons(x: LineCounters, k: int = 2) -> list[tuple[str, float]]:
    """The line's largest stall reasons, each a share of its samples ("selected", an issuing warp,
    left out)."""
    total = sum(x.stalls.values())
    ranked = sorted(((r, v) for r, v in x.stalls.items() if r != "selected" and v),
                    key=lambda rv: -rv[1])
    return [(r, v / total) for r, v in ranked[:k]] if total else []


@dataclass(frozen=True)
class Hot:
    """One of the kernel's hottest lines: its share of the stall samples and its top reasons."""

    file: str
    line: int
    text: str
    share: float
    reasons: tuple[tuple[str, float], ...]

    def to_dict(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "text": self.text, "share": self.share,
                "reasons": [list(r) for r in self.reasons]}


def hot(page: SourceLines | None, n: int = 5, *, at_least: float = 0.02) -> list[Hot]:
    """The ``n`` lines with most stall samples (each at least ``at_least`` of them), as the Source
    page sorts them."""
    if page is None or not page.has("samples"):
        return []
    total = page.total("samples")
    if not total:
        return []
    ranked = sorted(page.lines, key=lambda x: -x.samples)
    return [Hot(x.file, x.line, x.text.strip(), x.samples / total, tuple(top_reasons(x)))
            for x in ranked[:n] if x.samples / total >= at_least]


# A limiter's unit -> (the lines that do its work, by which measured count, what the lines do, what
# relieves it)
UNITS: dict[str, tuple[Callable[[LineCounters], bool] | None, str, str, str]] = {
    "shared pipe": (lambda x: does(x, SHARED_OPS), "shared_wavefronts", "shared-memory accesses",
                    "fewer shared-memory accesses per result: keep reused values in registers (a "
                    "register tile), load wider (ld.shared.v4), or pad or swizzle so each access "
                    "takes one wavefront"),
    "L1/shared": (lambda x: does(x, MEMORY_OPS), "executed", "loads and stores through L1",
                  "fewer L1 requests per result: wider accesses (16 bytes a "
                  "lane), reuse in registers"),
    "LSU": (lambda x: does(x, MEMORY_OPS), "executed", "load and store instructions",
            "fewer memory instructions: vector loads (float4), values kept in "
            "registers instead of reloaded"),
    "DRAM": (None, "global_sectors", "global memory traffic",
             "fewer bytes from DRAM: fuse with the kernels before or after it, keep tiles reused "
             "in shared memory, narrower types"),
    "L2": (None, "global_sectors", "global memory traffic (L2 sectors)",
           "fewer L2 sectors: coalesced and wider accesses, reuse through "
           "shared memory, fewer atomics"),
    "FP32 pipe": (lambda x: does(x, FP32_OPS), "executed", "FP32 math",
                  "fewer FP32 instructions per result (hoist invariant math out of loops, fast "
                  "intrinsics such as __expf), or tensor cores for matrix math"),
    "FP64 pipe": (lambda x: does(x, FP64_OPS), "executed", "FP64 math",
                  "float math where the precision allows"),
    "tensor pipe": (lambda x: does(x, TENSOR_OPS), "executed", "tensor-core instructions",
                    "it is doing useful math: keep the tensor pipe fed (deeper pipelining of the "
                    "loads, larger tiles)"),
    "ALU": (lambda x: does(x, INT_OPS), "executed", "integer and logic instructions",
            "less index arithmetic: hoist it out of loops, 32-bit indices, shifts for powers of two"),
    "issue": (None, "executed", "instructions",
              "fewer instructions per result: hoist invariant work out of loops, unroll, vector "
              "loads, less index math"),
}
LATENCY = ("stall samples",
           "more work in flight per warp (independent loads, unrolled loops) or more warps "
           "(occupancy), so the waits overlap")


def concentration(page: SourceLines | None, unit: str) -> tuple[Placed, str, str] | None:
    """Where ``unit``'s work sits (a limiter's name from the diagnosis; ``latency`` for none): the
    line with most of it, what it does there and what usually relieves it; None where the page
    cannot say."""
    if unit in UNITS:
        where, metric, what, relief = UNITS[unit]
        # the unit's own count missing: its lines by stall samples
        if (p := place(page, metric, where=where)) is None:
            p = place(page, "samples", where=where)
        return (p, what, relief) if p is not None else None
    p = place(page, "samples")
    return (p, LATENCY[0], LATENCY[1]) if p is not None else None
