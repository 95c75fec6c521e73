"""kprof list's and kprof doctor's text: wrapped to the width asked, a kernel that needs a newer GPU
marked, the commands that cannot run grouped by what they lack."""

from pathlib import Path

from kprof.results import render_build
from kprof.spec.catalog import Listing
from kprof.tools.machine.doctor import Check, Readiness


def test_a_long_description_wraps_under_itself_and_an_unsupported_kernel_is_marked():
    rows = [Listing("wgmma_matmul", "kernel", Path("k.yaml"), "a tensor-core matmul " * 10,
                    unsupported="needs sm_90a"),
            Listing("vector_add", "kernel", Path("v.yaml"), "c = a + b")]
    text = render_build.list_table(rows, width=80)
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "[needs sm_90a] a tensor-core matmul" in text and len(text.splitlines()) > 3
    assert render_build.list_table([]).startswith("no kernels found")


def test_doctor_groups_the_commands_that_lack_the_same_checks():
    checks = [Check("GPU", False, "no CUDA driver", "install the NVIDIA driver", ("run", "bench")),
              Check("nvcc", True, "13.0")]
    ready = [Readiness("run", ("GPU",), 5), Readiness("bench", ("GPU",), 5),
             Readiness("build", (), 0)]
    text = render_build.doctor_table(checks, ready, width=100)
    assert "MISSING  GPU" in text and "fix: install the NVIDIA driver" in text
    assert "kprof run, kprof bench: cannot run here (exit 5): missing GPU" in text
    assert "kprof build: ready" in text and "fix: " not in text.split("nvcc", 1)[1]


def test_a_spec_of_several_kernels_shows_a_row_for_each():
    """kprof build of a multi-step spec: every kernel it launches, with its own registers and shared
    memory."""
    from kprof.build.build import BuildResult, ResourceUsage
    from kprof.spec import catalog

    spec = catalog.load("rmsnorm_unfused")
    usage = {e: ResourceUsage(registers=10 + k, shared_static=128 * k)
             for k, e in enumerate(spec.entries)}
    text = render_build.build_table([(spec,
                                      BuildResult(spec.name, Path("x.cubin"), "sm_90", usage, True,
                                                  log="", argv=()))])
    rows = [line for line in text.splitlines() if line.startswith("rmsnorm_unfused:")]
    assert ([r.split()[0] for r in rows] == [f"rmsnorm_unfused:{e}" for e in spec.entries]
            and len(rows) > 1)
    assert rows[1].split()[2:4] == ["11", "128"]
