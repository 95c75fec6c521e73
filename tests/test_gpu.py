"""End to end on a real GPU: every ladder kernel verified at its default size, its sanitize size
and its awkward sizes; faults, hangs and wrong answers reported, never crashing kprof."""

import pytest

from kprof import build, catalog, cli, errors, launch, spec as spec_mod
from kprof.errors import TargetError, UsageError

pytestmark = pytest.mark.gpu


def _cases():
    out = []
    for entry in catalog.entries():
        if entry.group != "kernel":
            continue
        spec = spec_mod.load(entry.path)
        out.append(pytest.param(entry.name, "default", {}, id=f"{entry.name}-default"))
        out.append(pytest.param(entry.name, "sanitize", {}, id=f"{entry.name}-sanitize"))
        for check in spec.checks:
            label = "-".join(f"{k}{v}" for k, v in check)
            out.append(pytest.param(entry.name, "default", dict(check), id=f"{entry.name}-{label}"))
    return out


@pytest.mark.parametrize("name, preset, sizes", _cases())
def test_ladder_kernel_verifies(name, preset, sizes):
    spec = catalog.load(name)
    resolved = spec.resolve(sizes, preset=preset)
    built = build.build(spec)
    result = launch.run_kernel(spec, built, resolved.sizes, preset=preset, time=True)
    assert result.ok, [c["message"] for c in result.checks]
    assert result.checks and all(c["nonfinite"] == 0 for c in result.checks)
    assert result.time_ms and result.time_ms > 0
    assert result.nvtx, "the nvtx package must be importable in the runner"
    assert len(result.allocations) == len(resolved.buffers)
    assert result.registers == built.usage_of(spec.entry).registers


def test_cli_run_tiled_matmul(capsys):
    code = cli.main(["run", "tiled_matmul", "--size", "M=127", "N=131", "K=97"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "C: PASS" in out and "time:" in out and "FLOP/s" in out


def _data_spec(data_dir, name):
    spec = spec_mod.load(data_dir / "kernels" / f"{name}.yaml")
    return spec, build.build(spec)


def test_fault_is_reported_and_kprof_survives(data_dir):
    spec, built = _data_spec(data_dir, "fault")
    with pytest.raises(TargetError, match="CUDA_ERROR_ILLEGAL_ADDRESS.*kprof sanitize fault"):
        launch.run_kernel(spec, built, spec.preset(), time=False)
    ok_spec = catalog.load("vector_add")
    assert launch.run_kernel(ok_spec, build.build(ok_spec), {"N": 1000}, time=False).ok


def test_hang_is_killed_at_the_timeout(data_dir):
    spec, built = _data_spec(data_dir, "hang")
    with pytest.raises(TargetError, match="did not finish within 8 s"):
        launch.run_kernel(spec, built, spec.preset(), time=False, timeout=8)


def test_unwritten_output_fails_verification(data_dir):
    spec, built = _data_spec(data_dir, "half_write")
    result = launch.run_kernel(spec, built, spec.preset(), time=False)
    assert not result.ok
    assert result.checks[0]["nonfinite"] == 500 and "first at c[500]" in result.checks[0]["message"]


def test_wrong_answer_fails_with_exit_1(data_dir, capsys):
    code = cli.main(["run", str(data_dir / "kernels" / "wrong.yaml")])
    out, _ = capsys.readouterr()
    assert code == errors.EXIT_FAILED and "c: FAIL" in out and "verification FAILED" in out


def test_sizes_beyond_device_memory_are_refused_before_allocating():
    spec = catalog.load("vector_add")
    with pytest.raises(UsageError, match="GiB of device memory"):
        launch.run_kernel(spec, build.build(spec), {"N": 2**40}, time=False)


def test_build_targets_the_gpu_present():
    assert build.detect_arch().startswith("sm_")
    from kprof import device

    dev = device.Device()
    try:
        assert build.detect_arch() == dev.info().arch
    finally:
        dev.close()
