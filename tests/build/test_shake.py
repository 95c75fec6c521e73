"""The warp-delay build (kprof.build.shake): where the pauses go, that every line keeps its number,
and that the warp-delay source of kernels of every kind builds (with nvcc or NVRTC, whichever is
here)."""

import re

import pytest

from kprof.build import build, cusource, shake, toolchain
from kprof.corpus import mutants
from kprof.spec import catalog

KERNEL = """// a comment with __syncthreads(); and __global__ void fake() { in it
#include "common.cuh"
extern "C" __global__ void __launch_bounds__(256) k(const int* x, int* y) {
    __shared__ int s[256];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    const char* text = "__syncthreads();";
    if (threadIdx.x == 0) __syncthreads ( ) ;
    y[threadIdx.x] = s[255 - threadIdx.x];
}
__global__ void declared_only(int* y);
template <int N> __global__ void t(float* y)
{
    y[N] = 0;
}
"""


def test_pauses_go_at_each_kernel_start_and_after_each_barrier_only():
    out = shake.shaken(KERNEL, "/src/k.cu")
    assert out.startswith(shake.HELPER) and '#line 1 "/src/k.cu"\n' in out
    body = out.split('#line 1 "/src/k.cu"\n', 1)[1]
    lines, original = body.split("\n"), KERNEL.split("\n")
    assert len(lines) == len(original), "every line keeps its number"
    changed = {i + 1: line for i, line in enumerate(lines) if line != original[i]}
    assert sorted(changed) == [3, 6, 8, 13], changed
    assert changed[3].endswith("{ kprof_shake();") and changed[13] == "{ kprof_shake();"
    assert changed[6].strip() == "__syncthreads(); kprof_shake();"
    assert changed[8].endswith("__syncthreads ( ) ; kprof_shake();")
    assert lines[0] == original[0] and lines[6] == original[6], "comments and strings untouched"
    for i, line in enumerate(lines):  # removing the pauses gives the original back, line by line
        assert line.replace(shake.CALL, "") == original[i]


def test_a_source_without_a_kernel_body_has_no_shaken_build():
    assert shake.shaken("__global__ void k(int* y);\n// __global__ void f() {}\n", "k.cu") is None
    assert (cusource.blank_comments('a /* b */ "c\\"d" \'e\' // f\ng') == 'a         "    " \' \'  '
                                                                          '   \ng')


def test_the_pause_is_a_few_microseconds_at_most_and_needs_sm70():
    assert re.search(r"__nanosleep\(h % (\d+)u\)", shake.HELPER).group(1) == str(shake.MAX_PAUSE_NS)
    assert shake.MAX_PAUSE_NS <= 10_000 and "__CUDA_ARCH__ >= 700" in shake.HELPER


def _no_compiler() -> str | None:
    from kprof.errors import KprofError

    try:
        toolchain.compiler_for("sm_90")
    except KprofError as exc:
        return str(exc)
    return None


@pytest.mark.skipif(_no_compiler() is not None,
                    reason="no compiler here builds sm_90 (nvcc or NVRTC)")
@pytest.mark.parametrize("name",
                         ["histogram", "tiled_matmul", "rmsnorm_unfused",
                          "reduction_missing_barrier"])
def test_the_warp_delay_build_builds_with_the_original_lines(name, tmp_path, monkeypatch):
    monkeypatch.setenv("KPROF_CACHE_DIR", str(tmp_path))
    spec = catalog.load(name)
    own, shaken = build.build(spec, "sm_90"), build.build(spec, "sm_90", shaken=True)
    assert shaken.spec_name == f"{spec.name}{shake.SUFFIX}" and shaken.cubin != own.cubin
    assert set(shaken.usage) == set(own.usage), "the same kernels"
    assert (all(u.spill_stores == 0 for u in shaken.usage.values())
            or not shaken.compiler.startswith("nvcc"))
    assert len(mutants.text_sections(shaken.cubin.read_bytes())[f".text.{spec.entry}"]) > len(
        mutants.text_sections(own.cubin.read_bytes())[f".text.{spec.entry}"]), "the pauses are in the machine code"
    assert build.build(spec, "sm_90", shaken=True).cached, "made once"
    assert spec.source.name in shaken.cubin.read_bytes().decode("latin-1"), "line info names the original file"
