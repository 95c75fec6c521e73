"""The causes kprof looks for, one :class:`Rule` each, in one registry (:data:`RULES`).

A rule reads :class:`~kprof.diagnosis.facts.Facts` and returns a :class:`~kprof.diagnosis.model.Cause`
or None. Its estimate has a stated basis and is capped by the roof's headroom. A rule that needs
counters it does not have returns None and says so through :meth:`Rule.blind`. Adding a cause is
adding a class here and an entry in RULES; ``kprof cases --perf`` proves each on a seeded kernel.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

from kprof.diagnosis import ptxscan
from kprof.diagnosis.facts import FAST_FP64, LATENCY_BELOW, Facts, profile_units
from kprof.diagnosis.model import Cause, Gain, Line


class Rule(Protocol):
    id: str

    def check(self, f: Facts) -> Cause | None: ...

    def blind(self, f: Facts) -> str | None:
        """What this rule cannot see on these facts (no counters, no PTX), else None."""
        ...


def _cap(estimate: float | None, f: Facts) -> float | None:
    head = f.headroom()
    if estimate is None:
        return None
    return min(estimate, head) if head else estimate


def _amdahl(share: float, speedup: float) -> float:
    """The whole's speedup when ``share`` of its time gets ``speedup`` times faster."""
    share = min(max(share, 0.0), 1.0)
    return 1.0 / ((1.0 - share) + share / max(speedup, 1e-9))


def _ptx_line(f: Facts, pred: Callable[[ptxscan.Instr], bool], why: str) -> Line | None:
    if f.entry is None:
        return None
    hit = f.entry.hottest(pred)
    if hit is None:
        return None
    return Line(hit[0], hit[1], why)


def _src(f: Facts, line: int, why: str) -> Line | None:
    return Line(str(f.source), line, why) if line and f.source else None


def _launch(f: Facts, why: str) -> Line | None:
    return Line(str(f.spec_path), f.launch_line, why) if f.spec_path and f.launch_line else None


def _head(f: Facts) -> str:
    h = f.headroom()
    return f"the roof's headroom ({h:.2f}x)" if h else "no roof (the spec has no work formula)"


class Uncoalesced:
    id = "uncoalesced"

    def blind(self, f: Facts) -> str | None:
        if f.counters:
            return None
        return "coalescing of accesses whose addresses depend on data (no PTX to follow)" if f.entry is None else None

    @staticmethod
    def strided(f: Facts) -> tuple[Line, int | str, int] | None:
        """The global access whose lanes are furthest apart (a run-time stride, or a sector or more),
        from the PTX's address arithmetic: (its line, the stride, the access's width)."""
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
        """Whether the PTX shows no strided access but a load whose address depends on data (an index it
        loaded: ``j = next[j]``): the sectors a request fills are then the data's, not the code's layout, and
        making the lanes touch consecutive addresses is not a change the code can make."""
        if f.entry is None:
            return False
        return any(coef == ptxscan.UNKNOWN and i.op.startswith("ld.global") for i, coef in ptxscan.lane_strides(f.entry))

    @staticmethod
    def widest(f: Facts, prefix: str) -> int:
        """The widest global load (``ld.global``) or store (``st.global``) a lane makes in the PTX, in bytes;
        4 where there is no PTX. Consecutive lanes moving w bytes each fill w 32-byte sectors a request."""
        if f.entry is None:
            return 4
        return max((ptxscan.width(i) for i in f.entry.instrs if i.op.startswith(prefix)), default=4)

    def check(self, f: Facts) -> Cause | None:
        p = f.profile
        found = self.strided(f)
        width = found[2] if found else 4
        ideal = float(width)  # 32-byte sectors a warp of consecutive width-byte lanes needs: 32 x width / 32
        if f.counters:
            # each direction against its own ideal: an 8-byte store of an MMA fragment fills 8 sectors a request
            # and is coalesced (wgmma_matmul's epilogue was read as 2x uncoalesced against a 4-byte ideal)
            sides = [(x, float(found[2] if found else self.widest(f, prefix)))
                     for x, prefix in ((p.global_load_sectors_per_request, "ld.global"),
                                       (p.global_store_sectors_per_request, "st.global")) if x]
            if not sides or (found is None and self.gather(f)):
                return None
            worst, ideal = max(sides, key=lambda s: s[0] / s[1])
            width = int(ideal)
            if worst / ideal < 1.5:
                return None
            excess = worst / ideal
            ev: tuple[tuple[str, str], ...] = (("sectors/request", f"{worst:.1f} (ideal {ideal:g} for {width}-byte lanes)"),)
            basis = f"the excess sectors ({excess:.1f}x the ideal)"
            line = found[0] if found else _ptx_line(f, ptxscan.is_global_access, "the global access in the deepest loop")
        else:
            if found is None:
                return None
            excess = 32.0 / width  # every lane its own sector
            stride = f"{abs(found[1])} B" if isinstance(found[1], int) else "a run-time value"
            ev = (("bytes between neighbouring lanes' addresses (the PTX's arithmetic on threadIdx.x)", stride),)
            basis = f"a sector a lane: {excess:.0f}x the sectors consecutive lanes need"
            line = found[0]
        return Cause(self.id, "uncoalesced global memory access: each warp request touches more 32-byte "
                     "sectors than its data fills", ev,
                     "make consecutive threads (threadIdx.x) touch consecutive addresses, e.g. swap the "
                     "index the lanes walk, or stage the tile through shared memory",
                     Gain(_cap(excess, f), f"{basis}, capped at {_head(f)}"), line)


class BankConflicts:
    id = "bank-conflicts"

    def blind(self, f: Facts) -> str | None:
        return None if f.counters else "shared-memory bank conflicts (need counters)"

    def check(self, f: Facts) -> Cause | None:
        p = f.profile
        if not f.counters or not p.conflicts_per_request or p.conflicts_per_request < 0.5:
            return None
        k = 1.0 + p.conflicts_per_request
        share = sum(p.stall_shares.get(r, 0.0) for r in ("mio_throttle", "short_scoreboard", "barrier"))
        est = _cap(_amdahl(share, k), f)
        line = _ptx_line(f, lambda i: i.op.startswith("ld.shared"), "the shared-memory load") or \
            _ptx_line(f, ptxscan.is_shared, "the shared-memory access")
        decl = f.source_line(r"__shared__")
        also = (x,) if (x := _src(f, decl, "declares the shared array: pad its rows by one element")) else ()
        return Cause(self.id, "shared-memory bank conflicts: lanes of a warp hit the same bank",
                     (("conflicts/request", f"{p.conflicts_per_request:.2f}"),
                      ("shared-memory stalls", f"{share:.0%} of stalls")),
                     "pad the shared array (e.g. [32][33]) or swizzle its index so a warp's lanes use different banks",
                     Gain(est, f"Amdahl: {share:.0%} of stalls wait on shared memory, each access {k:.1f}x "
                          f"the wavefronts it needs; capped at {_head(f)}"), line, also)


class SmallGrid:
    id = "small-grid"

    def blind(self, f: Facts) -> str | None:
        return None if f.sm_count else "the SM count (unknown for this GPU)"

    def check(self, f: Facts) -> Cause | None:
        occ = f.occupancy()
        if not f.sm_count or occ is None or f.launches > 1:
            return None
        slots = f.sm_count * occ.blocks_per_sm
        if f.blocks >= f.sm_count or f.blocks >= slots * 0.5:
            return None
        est = _cap(slots / f.blocks, f)
        return Cause(self.id, f"the grid is too small: {f.blocks} blocks for {f.sm_count} SMs",
                     (("blocks", str(f.blocks)), ("SMs", str(f.sm_count)),
                      ("blocks the GPU holds at once", f"{slots} ({occ.blocks_per_sm} an SM)")),
                     f"launch at least {f.sm_count} blocks (a grid-stride loop keeps the work the same), "
                     f"ideally a multiple of {slots}",
                     Gain(est, f"the idle block slots ({slots} / {f.blocks}), capped at {_head(f)}"),
                     _launch(f, "the launch's grid"))


class TailWave:
    id = "tail-wave"

    def blind(self, f: Facts) -> str | None:
        return None

    def check(self, f: Facts) -> Cause | None:
        occ = f.occupancy()
        if not f.sm_count or occ is None or f.launches > 1 or not occ.blocks_per_sm:
            return None
        slots = f.sm_count * occ.blocks_per_sm
        waves = f.blocks / slots
        if waves < 1.0 or waves > 8:
            return None
        whole = math.ceil(waves)
        est = whole / waves
        if est < 1.2:
            return None
        return Cause(self.id, f"a tail wave: {waves:.3f} waves of blocks, so the last wave runs "
                     f"{(waves - math.floor(waves)) * slots:.0f} blocks on {slots} slots",
                     (("waves", f"{waves:.3f}"), ("blocks", str(f.blocks)), ("slots", f"{slots}")),
                     f"give the grid a whole number of waves (a multiple of {slots} blocks) or many more, "
                     "smaller blocks so the last wave is a small share",
                     Gain(_cap(est, f), f"the waves' rounding ({whole} waves' time for {waves:.2f} waves of work), "
                          f"capped at {_head(f)}"), _launch(f, "the launch's grid"))


class _Occupancy:
    id = ""
    limiter = ""

    def blind(self, f: Facts) -> str | None:
        return None

    def _latency_bound(self, f: Facts) -> tuple[bool, str, float | None]:
        """Whether no unit is near its limit (more warps would hide latency), why, and the busiest unit's
        share of its peak (None where unknown)."""
        p = f.profile
        if f.counters:
            known = profile_units(p)
            name, busy = max(known.items(), key=lambda kv: kv[1]) if known else ("?", 0.0)
            top = max(p.stall_shares, key=lambda r: p.stall_shares[r]) if p.stall_shares else "?"
            return busy < LATENCY_BELOW, f"no unit above {busy:.0%} busy ({name}); top stall {top}", busy or None
        mem = f.memory_fraction()
        return (mem is not None and mem < 0.5), f"memory at {mem:.0%} of its roof" if mem is not None else "?", mem

    def check(self, f: Facts) -> Cause | None:
        occ = f.occupancy()
        if occ is None or occ.occupancy > 0.5 or occ.limiter != self.limiter:
            return None
        lifted = f.occupancy(registers=32) if self.limiter == "registers" else f.occupancy(shared=0)
        if lifted is None or lifted.occupancy <= occ.occupancy:
            return None
        bound, why, busy = self._latency_bound(f)
        if not bound:
            return None
        # More warps in flight hide latency until the busiest unit saturates: the gain is the lesser of
        # the warps' ratio and that unit's headroom (a chain of L2 gathers at 94% of L2's peak gains 1.05x
        # from four times the warps, measured on an H200)
        k = lifted.occupancy / occ.occupancy
        if busy:
            k = min(k, 1.0 / busy)
        return self._cause(f, occ, lifted, k, why)

    def _cause(self, f: Facts, occ: object, lifted: object, k: float, why: str) -> Cause:
        raise NotImplementedError


class OccupancyRegisters(_Occupancy):
    id = "occupancy-registers"
    limiter = "registers"

    def _cause(self, f: Facts, occ: Any, lifted: Any, k: float, why: str) -> Cause:
        return Cause(self.id, f"occupancy limited by registers: {f.registers} a thread allow {occ.describe()}",
                     (("registers", str(f.registers)), ("occupancy", f"{occ.occupancy:.0%}"), ("latency-bound", why)),
                     f"cap the registers (__launch_bounds__({f.threads_per_block}, "
                     f"{max(2, 2 * occ.blocks_per_sm)}) on the kernel) or keep fewer values live across the loop",
                     Gain(_cap(k, f), f"warps in flight ({lifted.occupancy:.0%} / {occ.occupancy:.0%} occupancy) "
                          f"for a latency-bound kernel, up to the busiest unit's limit, capped at {_head(f)}"),
                     _src(f, f.entry_line(), "the kernel: __launch_bounds__ goes here"))


class OccupancyShared(_Occupancy):
    id = "occupancy-shared"
    limiter = "shared memory"

    def _cause(self, f: Facts, occ: Any, lifted: Any, k: float, why: str) -> Cause:
        return Cause(self.id, f"occupancy limited by shared memory: {f.shared_static + f.shared_dynamic:,} bytes a "
                     f"block allow {occ.describe()}",
                     (("shared memory a block", f"{f.shared_static + f.shared_dynamic:,} B"),
                      ("occupancy", f"{occ.occupancy:.0%}"), ("latency-bound", why)),
                     "declare only the shared memory the block uses (or share one buffer between phases)",
                     Gain(_cap(k, f), f"warps in flight ({lifted.occupancy:.0%} / {occ.occupancy:.0%} occupancy) "
                          f"for a latency-bound kernel, up to the busiest unit's limit, capped at {_head(f)}"),
                     _src(f, f.source_line(r"__shared__"), "the shared-memory declaration"))


class LocalMemory:
    id = "local-memory"

    def blind(self, f: Facts) -> str | None:
        return None

    def check(self, f: Facts) -> Cause | None:
        p = f.profile
        line = _ptx_line(f, ptxscan.is_local, "local memory: an array indexed at run time, or a spill")
        if line is None and not f.spill_bytes and not p.local_bytes:
            return None
        est, basis = None, "needs counters (the local traffic's share)"
        if f.counters and p.local_bytes and p.l1_bytes:
            share = min(p.local_bytes / p.l1_bytes, 0.95)
            est, basis = _cap(_amdahl(share, 1e9), f), (f"Amdahl: local memory is {share:.0%} of the L1 traffic, "
                                                        f"gone if it stays in registers; capped at {_head(f)}")
        ev = [("spills (ptxas)", f"{f.spill_bytes} B")]
        if p.local_bytes is not None:
            ev.append(("local traffic", f"{p.local_bytes / 1e6:.1f} MB"))
        return Cause(self.id, "per-thread data in local memory (off-chip, through L1)", tuple(ev),
                     "index per-thread arrays with compile-time constants (unrolled loops) or restructure "
                     "so the values stay in registers",
                     Gain(est, basis), line)


class Divergence:
    id = "divergence"

    def blind(self, f: Facts) -> str | None:
        return None if f.counters else "divergence whose condition depends on data (threads active per instruction need counters)"

    def check(self, f: Facts) -> Cause | None:
        p = f.profile
        branch = ptxscan.branch_around_loop(f.entry) if f.entry else None
        line = Line(branch[0], branch[1], "the branch the lanes disagree on") if branch else None
        if not f.counters:
            lane = ptxscan.lane_branch(f.entry) if f.entry else None
            if lane is None or f.entry is None:
                return None
            at = next((a for a, _t, c in f.entry.branches if c and (f.entry.instrs[a].file, f.entry.instrs[a].line) == lane),
                      None)
            costs = ptxscan.path_costs(f.entry, at) if at is not None else None
            est = _cap((costs[0] + costs[1]) / max(costs), f) if costs else None
            return Cause(self.id, "warp divergence: a branch into two paths of work whose condition differs "
                         "between the lanes of a warp, so each warp runs both",
                         (("condition", "varies with the lane (from the PTX's arithmetic on threadIdx.x)"),) +
                         ((("instructions a step of each path", f"{costs[0]} and {costs[1]}"),) if costs else ()),
                         "make the branch depend on the warp (threadIdx.x / 32), not the lane: group the work so "
                         "a warp's lanes take one path",
                         Gain(est, f"both paths run one after the other: ({costs[0]} + {costs[1]}) / {max(costs)} "
                              f"instructions a step, capped at {_head(f)}" if costs else
                              "needs counters (threads active per instruction)"),
                         Line(lane[0], lane[1], "the branch the lanes disagree on"))
        if not f.counters or p.thread_efficiency is None or p.thread_efficiency > 0.7:
            return None
        est = _cap(1.0 / p.thread_efficiency, f)
        return Cause(self.id, f"warp divergence: {p.thread_efficiency:.0%} of a warp's lanes active per instruction",
                     (("threads active per instruction", f"{32 * p.thread_efficiency:.1f} of 32"),),
                     "make the lanes of a warp take the same path: group the work so a branch depends on the "
                     "warp (threadIdx.x / 32), not the lane",
                     Gain(est, f"the idle lanes (1 / {p.thread_efficiency:.2f}), capped at {_head(f)}"), line)


class Atomics:
    id = "atomics"

    def blind(self, f: Facts) -> str | None:
        return None

    def check(self, f: Facts) -> Cause | None:
        p = f.profile
        line = _ptx_line(f, ptxscan.is_global_atomic, "the global atomic")
        if line is None:
            return None
        in_loop = f.entry is not None and any(ptxscan.is_global_atomic(i) and i.loops for i in f.entry.instrs)
        ev = [("global atomics in a loop", "yes" if in_loop else "no")]
        if f.counters and p.atomics is not None and p.global_accesses:
            share = p.atomics / p.global_accesses
            ev.append(("atomics / global accesses", f"{share:.0%}"))
            if share < 0.2:
                return None
        elif not in_loop:
            return None
        # Privatised per block, the atomics on one address no longer queue at one L2 slice for the whole GPU but
        # at each SM's shared memory, side by side: the contention divided by the SMs that run blocks at once.
        # (On an H200, a46d1a2 and a7d11e2: 132 SMs, the 64-bin histogram's fix measured 163.7x and 165.2x, the
        # roof 328x: shared-memory atomics serialise too.)
        spread = min(f.sm_count, f.blocks) if f.sm_count and f.blocks else None
        est = _cap(float(spread), f) if spread else f.headroom()
        basis = (f"the atomics on each address spread from one L2 slice over the {spread} SMs that run blocks at once "
                 f"(SMs, or blocks if fewer), capped at {_head(f)}; shared-memory atomics on few addresses "
                 "serialise too" if spread else
                 f"the roof: the kernel's bytes read at kprof peak's ceiling, with no atomic waits ({_head(f)})"
                 if est else "no roof (the spec has no work formula) and no SM count")
        return Cause(self.id, "global atomics on every element: atomics on few addresses serialise in L2",
                     tuple(ev),
                     "accumulate per block in shared memory (or per warp in registers) and add each block's "
                     "result to global memory once",
                     Gain(est, basis), line)


class Fp64:
    id = "fp64"

    def blind(self, f: Facts) -> str | None:
        return None if f.entry is not None else "FP64 instructions (no PTX)"

    def check(self, f: Facts) -> Cause | None:
        if f.entry is None:
            return None
        line = _ptx_line(f, ptxscan.is_fp64, "FP64 arithmetic or conversions")
        if line is None:
            return None
        ratio = f.fp64_ratio()
        ev = [("FP64:FP32 rate", f"1:{1 / ratio:.0f}" if ratio else "unknown")]
        ests: list[tuple[float, str]] = []
        # latency: a loop-carried chain whose steps convert to double and back
        looped = [i for i in f.entry.instrs if i.loops and ptxscan.is_fp64(i)]
        if looped:
            depth = max(i.loops for i in looped)
            inner = [i for i in f.entry.instrs if i.loops == depth]
            f64 = [i for i in inner if ptxscan.is_fp64(i)]
            math_ops = [i for i in f64 if not i.op.startswith("cvt")]
            if math_ops:
                k = len(f64) / len(math_ops)
                if k > 1.0:
                    ev.append(("conversions per FP64 op in the loop", f"{len(f64) - len(math_ops)} / {len(math_ops)}"))
                    ests.append((k, f"the loop's dependent chain: {len(f64)} FP64 instructions a step where float "
                                    f"math needs {len(math_ops)}"))
        if ratio is not None and ratio < FAST_FP64:
            busy = f.profile.fp64_pipe
            mem = f.memory_fraction()
            if (busy is not None and busy > 0.5) or (busy is None and (mem is None or mem < 0.5)):
                ests.append((1 / ratio / 2, f"this GPU's FP64 rate (1:{1 / ratio:.0f} of FP32), half of it "
                                             "as the FP64 pipe's share"))
                if busy is not None:
                    ev.append(("FP64 pipe", f"{busy:.0%}"))
        if not ests:
            return None
        best, basis = max(ests)
        est = _cap(best, f)
        if est is None or est < 1.1:
            return None
        return Cause(self.id, "FP64 math in float code (a double constant or function promotes it)", tuple(ev),
                     "write float constants (0.5f) and float functions (sinf, expf), or keep the double math "
                     "out of the loop",
                     Gain(est, f"{basis}; capped at {_head(f)}"), line)


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
        share = p.l1_throughput if f.counters else None
        est, basis = None, "needs counters (the L1 pipe's share)"
        if share:
            est = _amdahl(share, 4.0)
            basis = (f"Amdahl: the L1/LSU pipe is {share:.0%} busy and 16-byte accesses need a quarter of the "
                     f"instructions")
            # a vector load moves the same sectors through L2 and DRAM: the gain stops where the busier of
            # the two saturates (a neighbour-list gather with L2 83% busy gained 1.23x on an H200)
            below = max((x for x in (p.l2_throughput, p.dram_fraction) if x), default=None)
            if below and 1.0 / below < est:
                est = 1.0 / below
                basis += f", up to L2's and DRAM's limit (the busier at {below:.0%}: the same bytes still cross it)"
            est = _cap(est, f)
            basis += f"; capped at {_head(f)}"
        return Cause(self.id, "adjacent 4-byte loads one 16-byte (vector) load could do",
                     (("adjacent scalar loads on one line", "yes"),) + ((("L1 throughput", f"{share:.0%}"),) if share else ()),
                     "load float4 (or float2) through a reinterpret_cast of an aligned pointer",
                     Gain(est, basis), Line(hit[0], hit[1], "the scalar loads"))


class Barrier:
    id = "barrier"

    def blind(self, f: Facts) -> str | None:
        return None if f.counters else "how long warps wait at barriers (needs counters)"

    def check(self, f: Facts) -> Cause | None:
        if f.entry is None:
            return None
        in_loop = [i for i in f.entry.instrs if ptxscan.is_barrier(i) and i.loops]
        if not in_loop:
            return None
        depth = max(i.loops for i in in_loop)
        shared_in_loop = any(ptxscan.is_shared(i) and i.loops >= depth for i in f.entry.instrs)
        p = f.profile
        share = p.stall_shares.get("barrier") if f.counters else None
        if f.counters and (share is None or share < 0.25):
            return None
        if not f.counters and shared_in_loop:
            return None  # a barrier guarding shared memory in a loop is the usual tiling: no advice without counters
        est = _cap(_amdahl(share, 1e9), f) if share else None
        b = in_loop[0]
        return Cause(self.id, "a barrier inside a hot loop" + ("" if shared_in_loop else
                                                               ", with no shared memory read in the loop to wait for"),
                     (("barrier stalls", f"{share:.0%} of stalls" if share is not None else "not counted"),
                      ("shared memory in the loop", "yes" if shared_in_loop else "no")),
                     "remove the barrier if no thread reads another's data in the loop, or move it out of the loop",
                     Gain(est, f"Amdahl: {share:.0%} of stalls wait at the barrier; capped at {_head(f)}" if share
                          else "needs counters (the barrier stalls' share)"), Line(b.file, b.line, "__syncthreads()"))


class Int64Division:
    id = "int64-division"

    def blind(self, f: Facts) -> str | None:
        return None

    def check(self, f: Facts) -> Cause | None:
        if f.entry is None or not f.entry.count(ptxscan.is_div64):
            return None
        has_loops = any(i.loops for i in f.entry.instrs)
        if has_loops and not any(ptxscan.is_div64(i) and i.loops for i in f.entry.instrs):
            return None  # once a thread, outside its loop (a trip count): not the kernel's cost
        n = f.entry.count(ptxscan.is_div64)
        line = _ptx_line(f, ptxscan.is_div64, "64-bit division or remainder")
        if line is None or not line.line:  # the compiler gave the division no line: find it in the source
            at = f.source_line(r"[^/*]/[^/*=]|%")
            line = _src(f, at, "64-bit division or remainder (found in the source)")
        p = f.profile
        if f.counters and p.issue_active is not None:
            # a 64-bit division is a software routine, a few dozen instructions; a 32-bit one a handful
            share = min(0.9, p.issue_active)
            est = _cap(_amdahl(share, 2.0), f)
            basis = (f"Amdahl: instruction issue is {share:.0%} busy, and 32-bit division needs about half the "
                     f"instructions of the 64-bit routine; capped at {_head(f)}")
        else:
            est, basis = None, "needs counters (the issue slots' share)"
        return Cause(self.id, f"64-bit integer division or remainder ({n} in the kernel) in index math",
                     (("64-bit div/rem", str(n)),) + ((("issue active", f"{p.issue_active:.0%}"),) if p.issue_active else ()),
                     "compute indices in 32 bits (unsigned) when they fit, or hoist the division out "
                     "(precompute, or use a fast divider by an invariant)", Gain(est, basis), line)


class NoReuse:
    id = "no-reuse"
    # a register-blocked tiled CUDA-core matmul reaches about half the FP32 peak (kprof's regblock_matmul:
    # 40% of the measured FMA peak on an H200); a shared-memory tile with a few outputs a thread, 16%
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
        est = _cap(head * self.TILED_FP32_SHARE if head else None, f)
        if est is None or est < 1.1:
            return None
        return Cause(self.id, "a high-intensity kernel that reads every operand from global memory (no reuse)",
                     (("work intensity", f"{f.spec_flops / f.spec_bytes:.0f} FLOP/B"),
                      ("global loads per FMA in the loop", f"{loads / fmas:.1f}")),
                     "stage tiles of A and B in shared memory and give each thread a small tile of the output in "
                     "registers (e.g. 8 x 8), so each loaded value serves many FMAs",
                     Gain(est, f"the FP32 roof's headroom ({head:.1f}x) times the share of FP32 peak a register-"
                          f"blocked tiled CUDA-core matmul reaches ({self.TILED_FP32_SHARE:.0%}; a shared-memory "
                          f"tile alone reaches less)"),
                     _ptx_line(f, lambda i: i.op.startswith("ld.global") and i.loops > 0, "the loads in the inner loop"))


class LaunchOverhead:
    id = "launch-overhead"
    SHORT_S = 10e-6  # a launch that does less than this much work is mostly overhead

    def blind(self, f: Facts) -> str | None:
        return None

    def check(self, f: Facts) -> Cause | None:
        if f.launches < 4 or not f.seconds:
            return None
        each = f.seconds / f.launches
        if each > self.SHORT_S:
            return None
        own = sorted(f.kernel_seconds)
        if own:  # a launch's own GPU time, timed in the same call: what one fused launch takes at least
            kernel, how = own[len(own) // 2], f"the median launch's own GPU time in the timed call (CUPTI, {len(own)} launches)"
        else:  # ncu's duration of one launch: a launch profiled alone, with its caches flushed, is longer
            kernel, how = f.profile.duration_s or each / 4, "ncu's duration of one launch (no CUPTI time of each launch)"
        one = max(f.time_at_roof() or 0.0, kernel)
        est = f.seconds / max(one, 1e-9)
        evidence = [("launches", str(f.launches)), ("time a launch", f"{each * 1e6:.2f} us")]
        if own:
            evidence.append(("a launch's own GPU time", f"{kernel * 1e6:.2f} us (the rest: gaps between launches)"))
        return Cause(self.id, f"{f.launches} launches of {each * 1e6:.1f} us each: launching costs as much as the work",
                     tuple(evidence), "fuse the launches into one kernel, or capture them in a CUDA graph (cudaGraphLaunch)",
                     Gain(est, f"all the work in one launch as long as one of these kernels ({one * 1e6:.2f} us: the "
                          f"longer of the work at the roof and {how})"),
                     _launch(f, "the spec's steps"))


RULES: tuple[Rule, ...] = (
    Uncoalesced(), BankConflicts(), SmallGrid(), TailWave(), OccupancyRegisters(), OccupancyShared(), LocalMemory(),
    Divergence(), Atomics(), Fp64(), ScalarLoads(), Barrier(), Int64Division(), NoReuse(), LaunchOverhead(),
)  # fmt: skip
RULE_IDS = tuple(r.id for r in RULES)
