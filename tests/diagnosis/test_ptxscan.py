"""The PTX line scan (kprof/diagnosis/ptxscan.py) on PTX nvcc writes for the performance corpus:
what each line does, lane strides, inlined lines."""

from __future__ import annotations

import pytest
from diagnosed import entry_of

from kprof.diagnosis import ptxscan
from kprof.spec import catalog


@pytest.mark.nvcc
def test_ptx_lines_name_what_each_line_does(ptx_compiler):
    assert entry_of("barrier_in_loop").hottest(ptxscan.is_barrier)[1] == 9
    assert entry_of("global_atomics").hottest(ptxscan.is_global_atomic)[1] == 6
    assert entry_of("fp64_constants").hottest(ptxscan.is_fp64)[1] == 9
    assert entry_of("register_spill").hottest(ptxscan.is_local)[1] == 10
    assert ptxscan.adjacent_scalar_loads(entry_of("scalar_loads"))[1] == 12
    assert ptxscan.adjacent_scalar_loads(entry_of("scalar_loads_fixed")) is None  # one float4
    # two loads of different arrays
    assert ptxscan.adjacent_scalar_loads(entry_of("int64_division")) is None
    assert ptxscan.branch_around_loop(entry_of("divergent_branch"))[1] == 7
    # a bounds check is not two paths
    assert ptxscan.branch_around_loop(entry_of("barrier_in_loop")) is None
    assert ptxscan.lane_branch(entry_of("divergent_branch"))[1] == 7
    # its condition does not vary in a warp
    assert ptxscan.lane_branch(entry_of("divergent_branch_fixed")) is None
    loop = [i for i in entry_of("barrier_in_loop").instrs if ptxscan.is_barrier(i)]
    assert loop and all(i.loops == 1 for i in loop)
    assert entry_of("fp64_constants_fixed").hottest(ptxscan.is_fp64) is None


@pytest.mark.nvcc
def test_lane_strides_follow_the_address_arithmetic(ptx_compiler):
    strides = lambda name: {(i.op.split(".")[0], i.line, c) for i, c in ptxscan.lane_strides(entry_of(name))}  # noqa: E731
    # row * n: n at run time
    assert strides("copy_uncoalesced") == {("ld", 6, ptxscan.VAR), ("st", 6, ptxscan.VAR)}
    assert strides("copy_uncoalesced_fixed") == {("ld", 4, 4), ("st", 4, 4)}
    # the neighbour list's index is coalesced; the positions it gives are a gather (the data's
    # layout)
    assert {("ld", 11, 4), ("ld", 12, ptxscan.UNKNOWN)} <= strides("scalar_loads")
    # A's element is the warp's (broadcast), B's coalesced
    assert {c for _, _, c in strides("matmul_no_reuse")} == {0, 4}
    assert ("ld", 9, ptxscan.UNKNOWN) in strides("int64_division")  # bias[r]: r from a division


@pytest.mark.nvcc
def test_the_ptx_scan_reads_every_shipped_kernel(ptx_compiler):
    """Every kernel, case and performance case kprof ships, scanned as kprof profile's diagnosis
    scans it: a lane-varying value that is not linear (x & 1 of a lane index) once met an add and
    crashed the profile of twelve of kprof's own kernels (rmsnorm_onepass, wgmma_matmul, ...) with
    an internal error."""
    from kprof.build import build

    coefs = set()
    for group in ("kernel", "perf", "case"):
        for c in catalog.group(group):
            spec = catalog.load(c.name)
            # from the session's cache where the build tests made it, with its PTX
            build.build(spec, "sm_90")
            for entry in ptxscan.scan(build.ptx(spec, "sm_90")).values():
                coefs |= {coef for _, coef in ptxscan.lane_strides(entry)}
                ptxscan.lane_branch(entry)
    assert all(isinstance(c, int) or c in (ptxscan.VAR, ptxscan.UNKNOWN, ptxscan.LANE) for c in coefs), coefs
    assert (ptxscan._add(ptxscan.LANE, 4) == ptxscan.LANE
            and ptxscan._mul(ptxscan.LANE, 0, None, 4) == ptxscan.LANE)


def test_ptx_scan_reads_inlined_lines_and_line_zero():
    ptx = """
.visible .entry k(
)
{
	.loc	1 5 0
	mov.u32 	%r1, %tid.x;
	.loc	2 40 3, function_name $L__info_string0, inlined_at 1 7 9
	div.s64 	%rd1, %rd2, %rd3;
	.loc	1 0 3
	rem.s64 	%rd4, %rd2, %rd3;
$L__BB0_1:
	.loc	1 9 5
	atom.global.add.u32 	%r2, [%rd5], 1;
	@%p1 bra 	$L__BB0_1;
	ret;
}
	.file	1 "/src/k.cu"
	.file	2 "/usr/include/helper.h"
"""
    e = ptxscan.scan(ptx)["k"]
    div = [i for i in e.instrs if ptxscan.is_div64(i)]
    assert (div[0].file, div[0].line) == ("/src/k.cu", 7)  # the kernel's own line, not the header's
    assert div[1].line == 0  # code of no one line says so
    atom = next(i for i in e.instrs if ptxscan.is_global_atomic(i))
    assert atom.line == 9 and atom.loops == 1
