"""The toolchain without a GPU: the compiler's argv, architectures that exist and those retired, the
compiler that builds an architecture and what to install when none does."""

from pathlib import Path

import pytest

from kprof import proc
from kprof.build import toolchain
from kprof.errors import ToolNotFoundError, UsageError


def test_argv():
    argv = toolchain.build_argv("/x/nvcc", Path("/k/a.cu"), Path("/c/a.cubin"), "sm_90",
                            (("TILE", "32"),), ("-Xptxas=-O3",))
    assert argv == ["/x/nvcc", "-cubin", "-arch=sm_90", "-lineinfo", "--resource-usage",
                    "-std=c++17",
                    "-DKPROF_BUILD=1", "-DTILE=32", "-Xptxas=-O3", "-o", "/c/a.cubin", "/k/a.cu"]


@pytest.mark.parametrize("arch", ["sm90", "compute_90", "90", "sm_9", "sm_90; rm -rf /"])
def test_bad_arch(arch):
    with pytest.raises(UsageError, match="sm_XY"):
        toolchain.check_arch(arch)


def test_missing_nvcc_says_how_to_install(monkeypatch):
    monkeypatch.setenv("KPROF_NVCC", "/nonexistent/nvcc")
    with pytest.raises(ToolNotFoundError, match="nvcc"):
        proc.find_tool("nvcc")


def test_an_architecture_only_cuda_12_builds_names_that_extra_alone():
    """README's table: on the CUDA 13 line, sm_61 and sm_70 do not build (exit 3) and the one line
    names the [cuda12] extra, not both."""
    assert toolchain.compiler_hint("sm_61") == "pip install 'kprof[cuda12]' (NVRTC 12.9 builds it)"
    assert ("cuda13" not in toolchain.compiler_hint("sm_70")
            and "cuda13" in toolchain.compiler_hint("sm_90"))
    readme = (Path(__file__).resolve().parent.parent.parent / "README.md").read_text()
    assert "(`--arch sm_61` or `sm_70`: exit 3, naming `[cuda12]`)" in readme

