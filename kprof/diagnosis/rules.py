"""The causes kprof looks for, one :class:`Rule` each, in one registry (:data:`RULES`).

A rule reads :class:`~kprof.diagnosis.facts.Facts` and returns a
:class:`~kprof.diagnosis.model.Cause`
or None. Its estimate has a stated basis and is capped by the roof's headroom. A rule that needs
counters it does not have returns None and says so through :meth:`Rule.blind`. Adding a cause is
adding a class here (or in :mod:`kprof.diagnosis.rules_memory`, the rules of memory) and an entry in
RULES; ``kprof cases --perf`` proves each on a seeded kernel.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

from kprof.diagnosis import lines, ptxscan
from kprof.diagnosis.facts import FAST_FP64, LATENCY_BELOW, Facts, profile_units
from kprof.diagnosis.model import Cause, Gain, Line
from kprof.diagnosis.rulekit import (
    amdahl,
    cap,
    first_measured,
    headroom_text,
    launch_line,
    measured,
    on,
    ptx_line,
    ptx_lines,
    src_line,
    static,
)
from kprof.diagnosis.rules_memory import Atomics, BankConflicts, LocalMemory, NoReuse, ScalarLoads, Uncoalesced


class Rule(Protocol):
    id: str

    def check(self, f: Facts) -> Cause | None: ...

    def blind(self, f: Facts) -> str | None:
        """What this rule cannot see on these facts (no counters, no PTX), else None."""
        ...


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
        est = cap(slots / f.blocks, f)
        return Cause(self.id, f"the grid is too small: {f.blocks} blocks for {f.sm_count} SMs",
                     (("blocks", str(f.blocks)), ("SMs", str(f.sm_count)),
                      ("blocks the GPU holds at once", f"{slots} ({occ.blocks_per_sm} an SM)")),
                     f"launch at least {f.sm_count} blocks (a grid-stride loop keeps the work the "
                     f"same), ideally a multiple of {slots}",
                     Gain(est,
                          f"the idle block slots ({slots} / {f.blocks}), capped at "
                          f"{headroom_text(f)}"),
                     line=launch_line(f, "the launch's grid"))


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
                     f"give the grid a whole number of waves (a multiple of {slots} blocks) or "
                     "many more, smaller blocks so the last wave is a small share",
                     Gain(cap(est, f),
                          f"the waves' rounding ({whole} waves' time for {waves:.2f} waves of "
                          f"work), capped at {headroom_text(f)}"), line=launch_line(f, "the launch's grid"))


# Where the busiest unit is under this share of its peak, more warps still gain (1 / busy, at least
# 1.25x), even past the latency-bound line (an H100's 25%-occupancy kernel with L2 at 66%)
OCCUPANCY_BUSY_BELOW = 0.8
# a limit that leaves more than this of the warps is no cause (at most 1.33x more warps)
OCCUPANCY_BELOW = 0.75


class _Occupancy:
    id = ""
    limiter = ""

    def blind(self, f: Facts) -> str | None:
        return None

    def _latency_bound(self, f: Facts) -> tuple[bool, str, float | None]:
        """Whether no unit is near its limit (more warps would hide latency), why, and the busiest
        unit's share of its peak (None where unknown)."""
        p = f.profile
        if f.counters:
            known = profile_units(p)
            name, busy = max(known.items(), key=lambda kv: kv[1]) if known else ("?", 0.0)
            top = max(p.stalls.shares, key=lambda r: p.stalls.shares[r]) if p.stalls.shares else "?"
            return busy < LATENCY_BELOW, f"no unit above {busy:.0%} busy ({name}); top stall {top}", busy or None
        mem = f.memory_fraction()
        return (mem is not None and mem < 0.5), f"memory at {mem:.0%} of its roof" if mem is not None else "?", mem

    def check(self, f: Facts) -> Cause | None:
        occ = f.occupancy()
        if occ is None or occ.occupancy > OCCUPANCY_BELOW or occ.limiter != self.limiter:
            return None
        lifted = f.occupancy(registers=32) if self.limiter == "registers" else f.occupancy(shared=0)
        if lifted is None or lifted.occupancy <= occ.occupancy:
            return None
        bound, why, busy = self._latency_bound(f)
        if not bound and (busy is None or busy > OCCUPANCY_BUSY_BELOW):
            return None  # a unit near its limit: more warps would wait for it
        # More warps in flight hide latency until the busiest unit saturates: the gain is the lesser
        # of the warps' ratio and that unit's headroom (a chain of L2 gathers at 94% of L2's peak
        # gains 1.05x from four times the warps, measured on an H200)
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
        return Cause(self.id,
                     f"occupancy limited by registers: {f.registers} a thread allow "
                     f"{occ.describe()}",
                     (("registers", str(f.registers)), ("occupancy", f"{occ.occupancy:.0%}"),
                      ("latency-bound", why)),
                     f"cap the registers (__launch_bounds__({f.threads_per_block}, "
                     f"{max(2, 2 * occ.blocks_per_sm)}) on the kernel) or keep fewer values live "
                     "across the loop",
                     Gain(cap(k, f),
                          f"warps in flight ({lifted.occupancy:.0%} / {occ.occupancy:.0%} "
                          "occupancy) for a latency-bound kernel, up to the busiest unit's limit, "
                          f"capped at {headroom_text(f)}"),
                     line=src_line(f, f.entry_line(), "the kernel: __launch_bounds__ goes here"),
                     also=_waits(f))


class OccupancyShared(_Occupancy):
    id = "occupancy-shared"
    limiter = "shared memory"

    def _cause(self, f: Facts, occ: Any, lifted: Any, k: float, why: str) -> Cause:
        return Cause(self.id,
                     f"occupancy limited by shared memory: {f.shared_static + f.shared_dynamic:,} "
                     f"bytes a block allow {occ.describe()}",
                     (("shared memory a block", f"{f.shared_static + f.shared_dynamic:,} B"),
                      ("occupancy", f"{occ.occupancy:.0%}"), ("latency-bound", why)),
                     "declare only the shared memory the block uses (or share "
                     "one buffer between phases)",
                     Gain(cap(k, f),
                          f"warps in flight ({lifted.occupancy:.0%} / {occ.occupancy:.0%} "
                          "occupancy) for a latency-bound kernel, up to the busiest unit's limit, "
                          f"capped at {headroom_text(f)}"),
                     line=self._where(f), also=_waits(f))

    @staticmethod
    def _where(f: Facts) -> Line | None:
        """Where the block's shared memory is asked for: the launch's dynamic shared memory where it
        is most of it, else the source's declaration."""
        if f.shared_dynamic and f.shared_dynamic >= f.shared_static:
            return launch_line(f,
                               "the launch's dynamic shared memory "
                               f"({f.shared_dynamic:,} B a block)")
        return src_line(f, f.source_line(r"__shared__"), "the shared-memory declaration")


class Divergence:
    id = "divergence"

    def blind(self, f: Facts) -> str | None:
        return None if f.counters else ("divergence whose condition depends on data (threads active per "
                                        "instruction need counters)")

    def check(self, f: Facts) -> Cause | None:
        p = f.profile
        branch = ptxscan.branch_around_loop(f.entry) if f.entry else None
        proposed = Line(branch[0], branch[1], "the branch the lanes disagree on") if branch else None
        # with counters: where the divergence starts (a lane-varying branch), not the paths it
        # starts
        lanes = ptxscan.lane_branches(f.entry) if f.entry and f.counters else set()
        line = first_measured(measured(f, "divergent", "the branch the lanes of a warp disagree on",
                                       "divergent branches",
                                       proposed=proposed, prefer=on(lanes) if lanes else None),
                              measured(f, "lost_lanes",
                                       "instructions run with lanes of the warp idle", "idle lanes",
                                       proposed=proposed))
        if not f.counters:
            lane = ptxscan.lane_branch(f.entry) if f.entry else None
            if lane is None or f.entry is None:
                return None
            at = next((a for a, _t, c in f.entry.branches if c
                       and (f.entry.instrs[a].file, f.entry.instrs[a].line) == lane),
                      None)
            costs = ptxscan.path_costs(f.entry, at) if at is not None else None
            est = cap((costs[0] + costs[1]) / max(costs), f) if costs else None
            return Cause(self.id,
                         "warp divergence: a branch into two paths of work whose condition differs "
                         "between the lanes of a warp, so each warp runs both",
                         (("condition", "varies with the lane (from the PTX's arithmetic on "
                                        "threadIdx.x)"),) +
                         ((("instructions a step of each path", f"{costs[0]} and {costs[1]}"),)
                          if costs else ()),
                         "make the branch depend on the warp (threadIdx.x / 32), not the lane: "
                         "group the work so a warp's lanes take one path",
                         Gain(est,
                              f"both paths run one after the other: ({costs[0]} + {costs[1]}) / "
                              f"{max(costs)} instructions a step, capped at {headroom_text(f)}"
                              if costs else "needs counters (threads active per instruction)"),
                         line=static(Line(lane[0], lane[1], "the branch the lanes disagree on")))
        active = p.compute.thread_efficiency
        if not f.counters or active is None or active > 0.7:
            return None
        est = cap(1.0 / active, f)
        return Cause(self.id,
                     f"warp divergence: {active:.0%} of a warp's lanes active per instruction",
                     (("threads active per instruction", f"{32 * active:.1f} of 32"),),
                     "make the lanes of a warp take the same path: group the work so a branch "
                     "depends on the warp (threadIdx.x / 32), not the lane",
                     Gain(est, f"the idle lanes (1 / {active:.2f}), capped at {headroom_text(f)}"),
                     line=line)


class Fp64:
    id = "fp64"

    def blind(self, f: Facts) -> str | None:
        return None if f.entry is not None else "FP64 instructions (no PTX)"

    def check(self, f: Facts) -> Cause | None:
        if f.entry is None:
            return None
        proposed = ptx_line(f, ptxscan.is_fp64, "FP64 arithmetic or conversions")
        if proposed is None:
            return None
        line = measured(f, "executed", "FP64 arithmetic or conversions",
                        "FP64 instructions executed",
                        where=lambda x: lines.does(x, lines.FP64_OPS), proposed=proposed)
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
                    ev.append(("conversions per FP64 op in the loop",
                               f"{len(f64) - len(math_ops)} / {len(math_ops)}"))
                    ests.append((k,
                                 f"the loop's dependent chain: {len(f64)} FP64 instructions a step "
                                 f"where float math needs {len(math_ops)}"))
        if ratio is not None and ratio < FAST_FP64:
            busy = f.profile.compute.fp64_pipe
            mem = f.memory_fraction()
            if (busy is not None and busy > 0.5) or (busy is None and (mem is None or mem < 0.5)):
                ests.append((1 / ratio / 2,
                             f"this GPU's FP64 rate (1:{1 / ratio:.0f} of FP32), half of it "
                              "as the FP64 pipe's share"))
                if busy is not None:
                    ev.append(("FP64 pipe", f"{busy:.0%}"))
        if not ests:
            return None
        best, basis = max(ests)
        est = cap(best, f)
        if est is None or est < 1.1:
            return None
        return Cause(self.id, "FP64 math in float code (a double constant or function promotes it)",
                     tuple(ev),
                     "write float constants (0.5f) and float functions (sinf, expf), or keep the "
                     "double math out of the loop",
                     Gain(est, f"{basis}; capped at {headroom_text(f)}"), line=line)


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
        share = p.stalls.shares.get("barrier") if f.counters else None
        if f.counters and (share is None or share < 0.25):
            return None
        if not f.counters and shared_in_loop:
            # a barrier guarding shared memory in a loop is the usual tiling: no advice without
            # counters
            return None
        est = cap(amdahl(share, 1e9), f) if share else None
        b = in_loop[0]
        return Cause(self.id, "a barrier inside a hot loop" + ("" if shared_in_loop else
                                                               ", with no shared memory read in "
                                                               "the loop to wait for"),
                     (("barrier stalls",
                       f"{share:.0%} of stalls" if share is not None else "not counted"),
                      ("shared memory in the loop", "yes" if shared_in_loop else "no")),
                     "remove the barrier if no thread reads another's data in the loop, or move it "
                     "out of the loop",
                     Gain(est,
                          f"Amdahl: {share:.0%} of stalls wait at the barrier; capped at "
                          f"{headroom_text(f)}" if share
                          else "needs counters (the barrier stalls' share)"),
                     line=measured(f, "stall:barrier", "__syncthreads()", "barrier stall samples",
                                   proposed=Line(b.file, b.line, "__syncthreads()")))


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
        proposed = ptx_line(f, ptxscan.is_div64, "64-bit division or remainder")
        candidates = {c for c in ptx_lines(f, ptxscan.is_div64) if c[1]}
        # the compiler gave the division no line: find it in the source
        if proposed is None or not proposed.line:
            at = f.source_line(r"[^/*]/[^/*=]|%")
            proposed = src_line(f, at, "64-bit division or remainder (found in the source)")
            candidates = {(proposed.file, proposed.line)} if proposed else set()
        what = "64-bit division or remainder"
        line = first_measured(measured(f, "samples", what, "stall samples on its division lines",
                                       where=on(candidates), proposed=proposed),
                              measured(f, "executed", what,
                                       "instructions executed on its division lines",
                                       where=on(candidates), proposed=proposed))
        if line is not None and not line.line and f.counters:
            line = _division_moved(f, candidates, what) or line
        issue = f.profile.compute.issue_active
        if f.counters and issue is not None:
            # a 64-bit division is a software routine, a few dozen instructions; a 32-bit one a
            # handful
            share = min(0.9, issue)
            est = cap(amdahl(share, 2.0), f)
            basis = (f"Amdahl: instruction issue is {share:.0%} busy, and 32-bit division needs "
                     "about half the instructions of the 64-bit routine; capped at "
                     f"{headroom_text(f)}")
        else:
            est, basis = None, "needs counters (the issue slots' share)"
        return Cause(self.id,
                     f"64-bit integer division or remainder ({n} in the kernel) in index math",
                     (("64-bit div/rem", str(n)),) + ((("issue active", f"{issue:.0%}"),) if issue
                                                      else ()),
                     "compute indices in 32 bits (unsigned) when they fit, or hoist the division "
                     "out (precompute, or use a fast divider by an invariant)", Gain(est, basis),
                     line=line)


# The SASS of a division by a run-time value: the reciprocal estimate, or the call to the 64-bit
# routine
DIVISION_SASS = ("MUFU.RCP", "CALL.REL.NOINC", "I2F.U32.RP")


def _division_moved(f: Facts, candidates: set[tuple[str, int]], what: str) -> Line | None:
    """The division's line where Nsight Compute counted its instructions on a neighbouring line
    (ptxas merged their line entries: the routine under ``if (i >= n) return;``): the measured line
    whose SASS does the division, and the PTX's division line nearest it, named with where the
    counters were."""
    page = f.profile.lines
    if page is None or not candidates:
        return None
    p = lines.place(page, "executed",
                    where=lambda x: any(op.startswith(DIVISION_SASS) for op in x.sass))
    if p is None:
        return None
    near = min(candidates, key=lambda c: abs(c[1] - p.at.line))
    if abs(near[1] - p.at.line) > 3:
        return None
    return Line(near[0], near[1],
                f"{what} (measured: its instructions were counted on line {p.at.line}, "
                f"{p.share:.0%} of the kernel's instructions executed on division code"
                + (f", {p.samples:.0%} of its stall samples" if p.samples is not None else "") + ")")


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
        # a launch's own GPU time, timed in the same call: what one fused launch takes at least
        if own:
            kernel = own[len(own) // 2]
            how = f"the median launch's own GPU time in the timed call (CUPTI, {len(own)} launches)"
        # ncu's duration of one launch: a launch profiled alone, with its caches flushed, is longer
        else:
            kernel = f.profile.duration_s or each / 4
            how = "ncu's duration of one launch (no CUPTI time of each launch)"
        one = max(f.time_at_roof() or 0.0, kernel)
        est = f.seconds / max(one, 1e-9)
        evidence = [("launches", str(f.launches)), ("time a launch", f"{each * 1e6:.2f} us")]
        if own:
            evidence.append(("a launch's own GPU time",
                             f"{kernel * 1e6:.2f} us (the rest: gaps between launches)"))
        return Cause(self.id,
                     f"{f.launches} launches of {each * 1e6:.1f} us each: launching "
                     "costs as much as the work",
                     tuple(evidence),
                     "fuse the launches into one kernel, or capture them in a CUDA graph "
                     "(cudaGraphLaunch)",
                     Gain(est,
                          "all the work in one launch as long as one of these kernels "
                          f"({one * 1e6:.2f} us: the longer of the work at the roof and {how})"),
                     line=launch_line(f, "the spec's steps"))


def _waits(f: Facts) -> tuple[Line, ...]:
    """The line where warps were sampled waiting most (measured): where the latency more warps would
    hide sits."""
    p = lines.place(f.profile.lines, "samples") if f.counters else None
    if p is None:
        return ()
    reasons = ", ".join(f"{r} {v:.0%}" for r, v in lines.top_reasons(p.at))
    return (lines.line_of(p, "warps wait here most" + (f" ({reasons})" if reasons else ""),
                          "stall samples"),)


class Unexplained:
    """No rule found a cause, yet the kernel is far from its roof: say where the limiting unit's
    work (or, for a latency-bound kernel, its waiting) was measured, what those lines do, and what
    usually relieves that unit.
    :func:`kprof.diagnosis.diagnose` asks it only when the rules found nothing."""

    id = "limiter-lines"
    HEADROOM = 1.5  # further from the roof than this and a kernel is never left without a cause

    def blind(self, f: Facts) -> str | None:
        return None

    def check(self, f: Facts, unit: str, busy: float | None) -> Cause | None:
        head = f.headroom()
        if head is not None and head <= self.HEADROOM:
            return None
        # no roof: only a kernel that waits is advised
        if head is None and (busy is None or busy >= LATENCY_BELOW):
            return None
        found = lines.concentration(f.profile.lines if f.counters else None, unit)
        limit = f"{head:.2f}x from its roof" if head else "no roof (the spec has no work formula)"
        share = f"{busy:.0%} of its peak" if busy is not None else "busiest of the units kprof saw"
        evidence: list[tuple[str, str]] = [("limiter",
                                            f"{unit} ({share})" if unit != "latency"
                                            else "latency: no unit "
                                            f"above {LATENCY_BELOW:.0%}"), ("headroom", limit)]
        if found is None:
            why = ("no counters" if not f.counters else "the profile has no Source page"
                   if f.profile.lines is None else "no line of the kernel has it counted")
            relief = lines.UNITS[unit][3] if unit in lines.UNITS else lines.LATENCY[1]
            return Cause(self.id,
                         "no cause worth 10% found, and the kernel is "
                         f"{limit}: the limiter is {unit}",
                         tuple(evidence), relief,
                         Gain(None, "not estimated: no rule of kprof's explains it"),
                         line=lines.unmeasured(why))
        placed, what, relief = found
        top = lines.top_reasons(placed.at)
        if top:
            evidence.append(("top stalls on the line", ", ".join(f"{r} {v:.0%}" for r, v in top)))
        line = lines.line_of(placed, what,
                             lines.UNITS[unit][1].replace("_", " ") if unit in lines.UNITS
                             else "stall samples")
        return Cause(self.id,
                     f"no cause worth 10% found, and the kernel is {limit}: the line where its "
                     f"{what} was measured most",
                     tuple(evidence), relief,
                     Gain(None,
                          "not estimated: no rule of kprof's names the change; "
                          "the roof bounds any gain"
                          + (f" at {head:.2f}x" if head else "")), line=line)


FALLBACK = Unexplained()


RULES: tuple[Rule, ...] = (
    Uncoalesced(), BankConflicts(), SmallGrid(), TailWave(), OccupancyRegisters(),
    OccupancyShared(), LocalMemory(),
    Divergence(), Atomics(), Fp64(), ScalarLoads(), Barrier(), Int64Division(), NoReuse(),
    LaunchOverhead(),
)  # fmt: skip
RULE_IDS = tuple(r.id for r in RULES)
