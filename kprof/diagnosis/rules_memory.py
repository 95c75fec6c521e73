"""The rules of memory: uncoalesced accesses, shared-memory bank conflicts, local memory, scalar
loads, no reuse of what was loaded, and contended global atomics. Each a
:class:`kprof.diagnosis.rules.Rule`, listed in its
registry (:data:`kprof.diagnosis.rules.RULES`)."""

from __future__ import annotations

from kprof.diagnosis import lines, ptxscan
from kprof.diagnosis.facts import Facts
from kprof.diagnosis.model import Cause, Gain, Line
from kprof.diagnosis.rulekit import (
    amdahl,
    cap,
    first_measured,
    headroom_text,
    measured,
    on,
    ptx_line,
    src_line,
    static,
)
from kprof.tools.nsight.sourcepage import LineCounters


class Uncoalesced:
    id = "uncoalesced"

    def blind(self, f: Facts) -> str | None:
        if f.counters:
            return None
        return "coalescing of accesses whose addresses depend on data (no PTX to follow)" if f.entry is None else None

    @staticmethod
    def strided(f: Facts) -> tuple[Line, int | str, int] | None:
        """The global access whose lanes are furthest apart (a run-time stride, or a sector or
        more), from the PTX's address arithmetic: (its line, the stride, the access's width)."""
        if f.entry is None:
            return None
        worst = None
        for i, coef in ptxscan.lane_strides(f.entry):
            far = coef == ptxscan.VAR or (isinstance(coef, int) and abs(coef) >= 32)
            if far and (worst is None or i.loops > worst[0].loops):
                worst = (i, coef)
        if worst is None:
            return None
        i, coef = worst
        what = f"{abs(coef)} bytes" if isinstance(coef, int) else "a run-time value"
        return Line(i.file, i.line, f"lanes of a warp {what} apart ({i.op})"), coef, ptxscan.width(i)

    @staticmethod
    def gather(f: Facts) -> bool:
        """Whether the PTX shows no strided access but a load whose address depends on data (an
        index it loaded: ``j = next[j]``): the sectors a request fills are then the data's, not the
        code's layout, and making the lanes touch consecutive addresses is not a change the code can
        make."""
        if f.entry is None:
            return False
        return any(coef == ptxscan.UNKNOWN and i.op.startswith("ld.global")
                   for i, coef in ptxscan.lane_strides(f.entry))

    @staticmethod
    def widest(f: Facts, prefix: str) -> int:
        """The widest global load (``ld.global``) or store (``st.global``) a lane makes in the PTX,
        in bytes; 4 where there is no PTX. Consecutive lanes moving w bytes each fill w 32-byte
        sectors a request."""
        if f.entry is None:
            return 4
        return max((ptxscan.width(i) for i in f.entry.instrs if i.op.startswith(prefix)), default=4)

    def check(self, f: Facts) -> Cause | None:
        p = f.profile
        found = self.strided(f)
        width = found[2] if found else 4
        # 32-byte sectors a warp of consecutive width-byte lanes needs: 32 x width / 32
        ideal = float(width)
        if f.counters:
            # each direction against its own ideal: an 8-byte store of an MMA fragment fills 8
            # sectors a request and is coalesced (wgmma_matmul's epilogue was read as 2x uncoalesced
            # against a 4-byte ideal)
            sides = [(x, float(found[2] if found else self.widest(f, prefix)))
                     for x, prefix in ((p.memory.global_load_sectors_per_request, "ld.global"),
                                       (p.memory.global_store_sectors_per_request, "st.global")) if x]
            if not sides or (found is None and self.gather(f)):
                return None
            worst, ideal = max(sides, key=lambda s: s[0] / s[1])
            width = int(ideal)
            if worst / ideal < 1.5:
                return None
            excess = worst / ideal
            ev: tuple[tuple[str, str], ...] = (("sectors/request",
                                                f"{worst:.1f} (ideal {ideal:g} "
                                                f"for {width}-byte lanes)"),)
            basis = f"the excess sectors ({excess:.1f}x the ideal)"
            line = measured(f, "global_excess",
                            "global accesses that fill more 32-byte sectors than their data",
                            "excess L2 sectors")
        else:
            if found is None:
                return None
            excess = 32.0 / width  # every lane its own sector
            stride = f"{abs(found[1])} B" if isinstance(found[1], int) else "a run-time value"
            ev = (("bytes between neighbouring lanes' addresses (the PTX's arithmetic on "
                   "threadIdx.x)", stride),)
            basis = f"a sector a lane: {excess:.0f}x the sectors consecutive lanes need"
            line = static(found[0])
        return Cause(self.id,
                     "uncoalesced global memory access: each warp request touches more 32-byte "
                     "sectors than its data fills", ev,
                     "make consecutive threads (threadIdx.x) touch consecutive addresses, e.g. "
                     "swap the index the lanes walk, or stage the tile through shared memory",
                     Gain(cap(excess, f), f"{basis}, capped at {headroom_text(f)}"), line=line)


class BankConflicts:
    id = "bank-conflicts"

    def blind(self, f: Facts) -> str | None:
        return None if f.counters else "shared-memory bank conflicts (need counters)"

    def check(self, f: Facts) -> Cause | None:
        p = f.profile
        if not f.counters or not p.shared.conflicts_per_request or p.shared.conflicts_per_request < 0.5:
            return None
        k = 1.0 + p.shared.conflicts_per_request
        share = sum(p.stalls.shares.get(r, 0.0)
                    for r in ("mio_throttle", "short_scoreboard", "barrier"))
        est = cap(amdahl(share, k), f)
        line = measured(f, "shared_excess", "shared-memory accesses whose lanes share a bank",
                        "excess shared-memory wavefronts")
        decl = f.source_line(r"__shared__")
        also = (x,) if (x := src_line(f, decl, "declares the shared array: pad its rows by one "
                                               "element")) else ()
        return Cause(self.id, "shared-memory bank conflicts: lanes of a warp hit the same bank",
                     (("conflicts/request", f"{p.shared.conflicts_per_request:.2f}"),
                      ("shared-memory stalls", f"{share:.0%} of stalls")),
                     "pad the shared array (e.g. [32][33]) or swizzle its index so a warp's lanes "
                     "use different banks",
                     Gain(est,
                          f"Amdahl: {share:.0%} of stalls wait on shared memory, each access "
                          f"{k:.1f}x the wavefronts it needs; capped at {headroom_text(f)}"), line=line, also=also)


class LocalMemory:
    id = "local-memory"

    def blind(self, f: Facts) -> str | None:
        return None

    def check(self, f: Facts) -> Cause | None:
        p = f.profile
        what = "local memory: an array indexed at run time, or a spill"
        proposed = ptx_line(f, ptxscan.is_local, what)
        if proposed is None and not f.spill_bytes and not p.memory.local_bytes:
            return None
        if f.counters and p.memory.local_bytes == 0 and not f.spill_bytes:
            # measured: no local traffic (ptxas kept the PTX's local array in registers)
            return None
        line = first_measured(measured(f, "local_sectors", what, "local-memory sectors",
                                       proposed=proposed),
                              measured(f, "executed", what, "local-memory instructions executed",
                                       where=lambda x: lines.does(x, lines.LOCAL_OPS),
                                       proposed=proposed))
        est, basis = None, "needs counters (the local traffic's share)"
        if f.counters and p.memory.local_bytes and p.memory.l1_bytes:
            share = min(p.memory.local_bytes / p.memory.l1_bytes, 0.95)
            est, basis = cap(amdahl(share, 1e9), f), (f"Amdahl: local memory is {share:.0%} of the "
                                                      "L1 traffic, "
                                                        "gone if it stays in registers; capped at "
                                                        f"{headroom_text(f)}")
        ev = [("spills (ptxas)", f"{f.spill_bytes} B")]
        if p.memory.local_bytes is not None:
            ev.append(("local traffic", f"{p.memory.local_bytes / 1e6:.1f} MB"))
        return Cause(self.id, "per-thread data in local memory (off-chip, through L1)", tuple(ev),
                     "index per-thread arrays with compile-time constants (unrolled loops) or "
                     "restructure so the values stay in registers",
                     Gain(est, basis), line=line)


class Atomics:
    id = "atomics"

    def blind(self, f: Facts) -> str | None:
        return None

    def check(self, f: Facts) -> Cause | None:
        p = f.profile
        proposed = ptx_line(f, ptxscan.is_global_atomic, "the global atomic")
        if proposed is None:
            return None
        atomic = lambda x: lines.does(x, lines.ATOMIC_OPS)  # noqa: E731
        line = first_measured(measured(f, "samples", "the global atomic",
                                       "stall samples on lines with atomics",
                                       where=atomic, proposed=proposed),
                              measured(f, "executed", "the global atomic",
                                       "atomic lines' instructions executed",
                                       where=atomic, proposed=proposed))
        in_loop = f.entry is not None and any(ptxscan.is_global_atomic(i) and i.loops
                                              for i in f.entry.instrs)
        ev = [("global atomics in a loop", "yes" if in_loop else "no")]
        if f.counters and p.memory.atomics is not None and p.memory.global_accesses:
            share = p.memory.atomics / p.memory.global_accesses
            ev.append(("atomics / global accesses", f"{share:.0%}"))
            if share < 0.2:
                return None
        elif not in_loop:
            return None
        # Privatised per block, the atomics on one address no longer queue at one L2 slice for the
        # whole GPU but at each SM's shared memory, side by side: the contention divided by the SMs
        # that run blocks at once. (On an H200, a46d1a2 and a7d11e2: 132 SMs, the 64-bin histogram's
        # fix measured 163.7x and 165.2x, the roof 328x: shared-memory atomics serialise too.)
        spread = min(f.sm_count, f.blocks) if f.sm_count and f.blocks else None
        est = cap(float(spread), f) if spread else f.headroom()
        basis = (f"the atomics on each address spread from one L2 slice over the {spread} SMs that "
                 f"run blocks at once (SMs, or blocks if fewer), capped at {headroom_text(f)}; "
                 "shared-memory atomics on few addresses serialise too" if spread else
                 "the roof: the kernel's bytes read at kprof peak's ceiling, with no atomic waits "
                 f"({headroom_text(f)})"
                 if est else "no roof (the spec has no work formula) and no SM count")
        return Cause(self.id,
                     "global atomics on every element: atomics on few addresses serialise in L2",
                     tuple(ev),
                     "accumulate per block in shared memory (or per warp in registers) and add "
                     "each block's result to global memory once",
                     Gain(est, basis), line=line)


class ScalarLoads:
    id = "scalar-loads"

    def blind(self, f: Facts) -> str | None:
        return None

    def check(self, f: Facts) -> Cause | None:
        if f.entry is None:
            return None
        hit = ptxscan.adjacent_scalar_loads(f.entry)
        if hit is None:
            return None
        p = f.profile
        share = p.memory.l1_throughput if f.counters else None
        est, basis = None, "needs counters (the L1 pipe's share)"
        if share:
            est = amdahl(share, 4.0)
            basis = (f"Amdahl: the L1/LSU pipe is {share:.0%} busy and 16-byte accesses need a "
                     f"quarter of the instructions")
            # a vector load moves the same sectors through L2 and DRAM: the gain stops where the
            # busier of the two saturates (a neighbour-list gather with L2 83% busy gained 1.23x on
            # an H200)
            below = max((x for x in (p.memory.l2_throughput, p.memory.dram_fraction) if x),
                        default=None)
            if below and 1.0 / below < est:
                est = 1.0 / below
                basis += f", up to L2's and DRAM's limit (the busier at {below:.0%}: the same bytes still cross it)"
            est = cap(est, f)
            basis += f"; capped at {headroom_text(f)}"
        return Cause(self.id, "adjacent 4-byte loads one 16-byte (vector) load could do",
                     (("adjacent scalar loads on one line", "yes"),)
                     + ((("L1 throughput", f"{share:.0%}"),) if share else ()),
                     "load float4 (or float2) through a reinterpret_cast of an aligned pointer",
                     Gain(est, basis), line=first_measured(
                         measured(f, "executed", "the scalar loads",
                                  "instructions executed on lines of adjacent scalar "
                                  "loads", where=_scalar_loads,
                                  proposed=Line(hit[0], hit[1], "the scalar loads")),
                         measured(f, "executed", "the scalar loads",
                                  "instructions executed on that line",
                                  where=on({hit}),
                                  proposed=Line(hit[0], hit[1], "the scalar loads"))))


class NoReuse:
    id = "no-reuse"
    # a register-blocked tiled CUDA-core matmul reaches about half the FP32 peak (kprof's
    # regblock_matmul: 40% of the measured FMA peak on an H200); a shared-memory tile with a few
    # outputs a thread, 16%
    TILED_FP32_SHARE = 0.5

    def blind(self, f: Facts) -> str | None:
        return None

    def check(self, f: Facts) -> Cause | None:
        if f.entry is None or not f.spec_flops or not f.spec_bytes or f.math != "fp32":
            return None
        if f.spec_flops / f.spec_bytes < 8 or f.entry.count(ptxscan.is_shared):
            return None
        loop = [i for i in f.entry.instrs if i.loops]
        loads = sum(1 for i in loop if i.op.startswith("ld.global"))
        fmas = sum(1 for i in loop if i.op.startswith("fma.") and ".f32" in i.op)
        if not fmas or loads / fmas < 1:
            return None
        head = f.headroom()
        est = cap(head * self.TILED_FP32_SHARE if head else None, f)
        if est is None or est < 1.1:
            return None
        return Cause(self.id,
                     "a high-intensity kernel that reads every operand from "
                     "global memory (no reuse)",
                     (("work intensity", f"{f.spec_flops / f.spec_bytes:.0f} FLOP/B"),
                      ("global loads per FMA in the loop", f"{loads / fmas:.1f}")),
                     "stage tiles of A and B in shared memory and give each thread a small tile of "
                     "the output in registers (e.g. 8 x 8), so each loaded value serves many FMAs",
                     Gain(est,
                          f"the FP32 roof's headroom ({head:.1f}x) times the share of FP32 peak a "
                          "register-blocked tiled CUDA-core matmul reaches "
                          f"({self.TILED_FP32_SHARE:.0%}; a shared-memory tile alone reaches less)"),
                     line=measured(f, "global_sectors", "the loads in the inner loop",
                                   "L2 sectors of global loads",
                                   where=lambda x: lines.does(x, lines.GLOBAL_LOAD_OPS),
                                   proposed=ptx_line(f,
                                                     lambda i: i.op.startswith("ld.global")
                                                     and i.loops > 0,
                                                     "the loads in the inner loop")))



def _scalar_loads(x: LineCounters) -> bool:
    """A measured line with two or more 4-byte global loads (``LDG.E``, not ``.64`` or ``.128``)."""
    return sum(1 for op in x.sass if op.startswith("LDG") and not op.endswith((".64", ".128"))) >= 2
