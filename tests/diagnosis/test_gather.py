"""The facts of a diagnosis (kprof/diagnosis/gather.py, facts.py): the profiled kernel's own lines
in a file of several, a header's inlined lines at the user's call, one fused launch timed by its own
GPU time."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest
from diagnosed import H200, prepared_of, profile_of

from kprof.commands import pipeline
from kprof.diagnosis import diagnose, gather, ptxscan
from kprof.spec import catalog

SEVERAL = """// several kernels in one file, as libraries write them
extern "C" __global__ void other(long long* x, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] / 7;  // another kernel's division
}

template <int STRIDE>
__device__ long long pick(long long i) { return i * STRIDE; }

extern "C" __global__ void
mine(const long long* x, long long* y, long long n, long long m) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = x[pick<1>(i)] % m;  // the profiled kernel's remainder
    }
}
"""


@pytest.mark.nvcc
def test_a_line_found_in_the_source_is_the_profiled_kernels_never_another_kernels(tmp_path):
    """In a file of several kernels, a cause whose line comes from the source (the compiler gave it
    none) was named at line 14 of the file, another kernel's `/`: the search is kept to the profiled
    kernel's own function."""
    from kprof.diagnosis import facts as facts_mod

    (tmp_path / "several.cu").write_text(SEVERAL)
    (tmp_path / "several.yaml").write_text(
        "entry: mine\nsizes: {N: 1024}\nargs:\n  - {name: x, buffer: int64, shape: [N], role: in}\n"
        "  - {name: y, buffer: int64, shape: [N], role: out}\n  - {name: n, scalar: int64, value: "
        "N}\n  - {name: m, scalar: int64, value: 5}\nlaunch: {grid: [ceil(N / 256)], block: "
        "[256]}\nreference: {y: x}\n")  # not run here
    prepared = pipeline.prepare(catalog.load(str(tmp_path / "several.yaml")), None, arch="sm_90")
    from kprof.build import build

    f = gather.facts_for(prepared, profile_of(prepared, 1e-5), counters=False,
                         ptx=build.ptx(prepared.resolved.spec, "sm_90"),
                         timed=SimpleNamespace(device=H200, time_ms=None), seconds=1e-5)
    assert f.entry_line() == 10 and facts_mod.function_span(f.code.lines, 10) == (10, 16)
    assert f.source_line(r"[^/*]/[^/*=]|%") == 14  # not line 4, the other kernel's division
    # nothing in the kernel: no line rather than someone else's
    assert f.source_line(r"__shared__") == 0
    assert facts_mod.bare_name("void ns::mine<float, (int)1>(float *, int)") == "mine"
    d = diagnose(f)
    lines = [c.line.line for c in d.causes if c.line and c.line.line]
    # mine's lines or its inlined pick's (8)
    assert lines and not [line for line in lines if 2 <= line <= 5], lines


def test_a_headers_inlined_lines_lead_to_the_users_call():
    ptx = """
.visible .entry k(.param .u64 k_param_0)
{
	.loc	1 6 9
	ld.global.u32 	%r1, [%rd1];
	.loc	2 107 3, function_name $L__info_string0, inlined_at 1 6 9
	atom.global.add.u32 	%r5, [%rd19], 1;
	.loc	3 20 1, function_name $L__info_string1, inlined_at 2 107 3
	add.s32 %r6, %r5, 1;
	.loc	1 9 1, function_name $L__info_string2, inlined_at 1 12 3
	ret;
}
	.file	1 "/src/k.cu"
	.file	2 "/usr/local/cuda-13.0/include/device_atomic_functions.hpp"
	.file	3 "/usr/local/cuda-13.0/include/deeper.h"
"""
    sites = ptxscan.inline_sites(ptx)
    assert (sites[("/usr/local/cuda-13.0/include/device_atomic_functions.hpp", 107)] == {("/src/k.cu", 6)})
    # followed out through 107
    assert sites[("/usr/local/cuda-13.0/include/deeper.h", 20)] == {("/src/k.cu", 6)}
    assert ("/src/k.cu", 9) not in sites  # inlined within its own file: the user's line already


@pytest.mark.nvcc
def test_one_fused_launch_is_timed_by_a_launchs_own_gpu_time_where_cupti_gave_it(ptx_compiler):
    """32 short launches: the fused launch's time is the median launch's own GPU time in the timed
    call (CUPTI), not ncu's duration of a launch profiled alone (its caches flushed: twice as long
    on the H200)."""
    from kprof.build import build

    prepared = prepared_of("launch_overhead")
    p = replace(profile_of(prepared, 2.53e-6), source="ncu", duration_s=2.53e-6)
    timed = SimpleNamespace(device=H200, time_ms=None)

    def first(**kw):
        facts = gather.facts_for(prepared, p, counters=True,
                                 ptx=build.ptx(prepared.resolved.spec, "sm_90"), timed=timed,
                                 seconds=63.1e-6, **kw)
        return next(c for c in diagnose(facts).causes if c.rule == "launch-overhead")

    alone = first()
    assert (alone.gain.estimate == pytest.approx(63.1 / 2.53, rel=1e-3)
            and "ncu's duration" in alone.gain.basis)
    own = first(kernel_seconds=(1.19e-6,) * 16 + (1.22e-6,) * 17)
    assert (own.gain.estimate == pytest.approx(63.1 / 1.22, rel=1e-3)
            and "CUPTI, 33 launches" in own.gain.basis)
    assert ("a launch's own GPU time", "1.22 us (the rest: gaps between launches)") in own.evidence
