"""End to end on a real GPU: every ladder kernel verified at its default size, its sanitize size
and its awkward sizes; faults, hangs and wrong answers reported, never crashing kprof."""

import pytest

from kprof import errors
from kprof import spec as spec_mod
from kprof.build import toolchain
from kprof.commands import cli, pipeline
from kprof.errors import TargetError, UsageError
from kprof.launch import launch
from kprof.launch.job import RunMode
from kprof.spec import catalog

pytestmark = pytest.mark.gpu


def _sizes_of(spec):
    """(preset, sizes, label) of every size a kernel is verified at: its default, its sanitize size,
    and each awkward size its spec checks."""
    out = [("default", {}, (), "default"), ("sanitize", {}, (), "sanitize")]
    for check in spec.checks:
        out.append(("default", dict(check.sizes), check.fills, check.label))
    return out


# One test per kernel, its sizes verified one after another in one child
# (kprof.launch.launch.run_kernels): the same verdicts as one child per size, without a child's
# start (interpreter, CUDA context, module) per size; on an H200 at 405e353 the 355 tests of this
# file, one child each, took 1,925 s of test time.
@pytest.mark.parametrize("name", [e.name for e in catalog.entries() if e.group == "kernel"])
def test_ladder_kernel_verifies_at_every_size(name):
    spec = catalog.load(name)
    cases = [(label, pipeline.prepare(spec, sizes, preset=preset, fills=fills))
             for preset, sizes, fills, label in _sizes_of(spec)]
    results = launch.run_kernels([prepared.job(RunMode(time=True)) for _, prepared in cases])
    wrong = []
    for (label, prepared), result in zip(cases, results):
        resolved, built = prepared.resolved, prepared.built
        if not result.ok:
            wrong.append(f"{label}: {[c.message for c in result.checks]}")
            continue
        assert result.checks and all(c.nonfinite == 0 for c in result.checks), label
        assert result.time_ms and result.time_ms > 0, label
        assert result.nvtx, "the nvtx package must be importable in the runner"
        assert len(result.allocations) == len(resolved.buffers), label
        assert result.registers == built.usage_of(spec.entry).registers, label
    assert not wrong, f"{name} fails at " + "; ".join(wrong)


# The variants the frameworks comparison sweeps (scripts/gpu-check.sh, docs/fused.md): each verified
# at every size its spec checks, so a sweep never times a variant that is wrong at an awkward size.
VARIANTS = [(name, params) for name in ("rmsnorm_onepass", "softmax_online")
            # the default is VEC 1, FIT 1
            for params in ({"VEC": "0"}, {"FIT": "0"}, {"FIT": "0", "VEC": "0"},
                           # one warp per row of 1,024 columns
                           {"PER": "32", "BLOCK": "256", "VEC": "1"},
                           {"PER": "16", "BLOCK": "512", "VEC": "1"},
                           # a warp per row, 8 rows to a block
                           {"PER": "32", "BLOCK": "256", "WROWS": "8"},
                           {"WROWS": "8", "VEC": "0"})]
VARIANTS += [("vector_add_vec4", {"UNROLL": "4", "CACHE": "1", "BLOCKS": "2112"})]
VARIANTS += [("rmsnorm_bf16", {"BLOCK": b, "VPT": v, "WROWS": r})
             for b, v, r in (("1024", "1", "8"), ("512", "2", "8"), ("128", "8", "4"))]
# a block per short row; e1ca086
VARIANTS += [("rmsnorm_bf16", p) for p in ({"WROWS": "0"}, {"FIT": "0", "BLOCK": "256"})]
# registers capped: 40 spills (kprof build --param)
VARIANTS += [("rmsnorm_bf16", {"MAXREG": r}) for r in ("40", "48")]


# Each variant at its default row length (or, for a vector, many grid-stride passes and a ragged
# tail) with fewer rows than the default: the code paths of the full size (the row loop, the vector
# and fitting paths, several blocks per grid) in a thirty-second of its verification, which took 21
# to 24 s a variant at 32768 x 8192. The default variant is verified at the full default size above.
SHORT = {"R": 1024, "N": (1 << 26) + 3}


def _variant_cases():
    out = []
    for name, params in VARIANTS:
        label = ",".join(f"{k}{v}" for k, v in params.items())
        out.append(pytest.param(name, params, id=f"{name}[{label}]"))
    return out


@pytest.mark.parametrize("name, params", _variant_cases())
def test_swept_variants_verify_at_every_checked_size(name, params):
    """Each variant at the short size and every size its spec checks, in one child."""
    spec = catalog.load(name)
    short = {k: v for k, v in SHORT.items() if k in spec.preset()}
    every = [(short, ()), *[(dict(c.sizes), c.fills) for c in spec.checks]]
    results = launch.run_kernels([pipeline.prepare(spec, sizes, params=params, fills=fills).job(RunMode())
                                  for sizes, fills in every])
    wrong = [f"{sizes or 'default'}: {[c.message for c in r.checks]}"
             for (sizes, _), r in zip(every, results) if not r.ok]
    assert not wrong, f"{name} {params} fails at " + "; ".join(wrong)


def test_cli_run_tiled_matmul(capsys):
    code = cli.main(["run", "tiled_matmul", "--size", "M=127", "N=131", "K=97"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "C: PASS" in out and "time:" in out and "FLOP/s" in out


def _data_job(data_dir, name, sizes=None):
    return pipeline.prepare(spec_mod.load(data_dir / "kernels" / f"{name}.yaml"), sizes).job(RunMode())


def test_fault_is_reported_and_kprof_survives(data_dir):
    with pytest.raises(TargetError, match="CUDA_ERROR_ILLEGAL_ADDRESS.*kprof sanitize fault"):
        launch.run_kernel(_data_job(data_dir, "fault"))
    assert (launch.run_kernel(pipeline.prepare(catalog.load("vector_add"), {"N": 1000}).job(RunMode())).ok)


def test_a_tensor_map_argument_moves_tiles_through_tma(data_dir):
    """tests/data/kernels/tma_tile: y = x a box at a time through cp.async.bulk.tensor and the
    tensor map kprof encodes in the child (cuTensorMapEncodeTiled) and passes by value, at ragged
    sizes (the box past the edge arrives as zeros and is not stored), clean under every tool at its
    sanitize size."""
    from kprof.tools.sanitizers import checkers
    from kprof.tools.sanitizers.checker import Settings

    spec = spec_mod.load(data_dir / "kernels" / "tma_tile.yaml")
    if why := spec.unsupported_on(toolchain.detect_arch()):
        pytest.skip(why)
    jobs = [pipeline.prepare(spec, sizes).job(RunMode())
            for sizes in [{}] + [dict(c.sizes) for c in spec.checks]]
    results = launch.run_kernels(jobs)
    assert all(r.ok for r in results), [r.checks for r in results]
    for tool in ("memcheck", "racecheck", "initcheck", "synccheck"):
        (found,) = checkers.run_all(jobs[0], [tool], Settings(timeout=120))
        assert found.status == "clean", (tool, found.findings)


def test_wgmma_reads_tiles_tma_wrote_with_the_128_byte_swizzle(data_dir):
    """tests/data/kernels/wgmma_tile: C = A @ transpose(Bt) through two swizzled tensor maps and
    wgmma.mma_async by descriptor (sm_90a), at its sizes and the awkward ones its spec checks."""
    spec = spec_mod.load(data_dir / "kernels" / "wgmma_tile.yaml")
    if why := spec.unsupported_on(toolchain.detect_arch()):
        pytest.skip(why)
    every = [({}, "default"), ({}, "sanitize")] + [(dict(c.sizes), "default") for c in spec.checks]
    results = launch.run_kernels([pipeline.prepare(spec, sizes, preset=p).job(RunMode())
                                  for sizes, p in every])
    assert all(r.ok for r in results), [r.checks for r in results]


# The tensor-core kernels' variants that their defines do not run: wgmma_matmul with clusters of two
# (B's tile multicast by TMA, slots released to both CTAs) and with no wgmma group left in flight;
# the attention kernels at head dimension 64, with one and three consumer warpgroups, with tiles of
# 64 keys; mma_matmul's other block and warp tiles, 64-deep slices, four slots, the grouped tile
# order.
TENSOR_VARIANTS = [("wgmma_matmul", {"CLUSTER": "2"}), ("wgmma_matmul", {"PIPE": "0"})]
TENSOR_VARIANTS += [(name, params) for name in ("wgmma_attention", "wgmma_attention_causal")
                    for params in ({"HD": "64"}, {"BQ": "64"}, {"BQ": "192", "HD": "64"},
                                   {"BKV": "64", "STAGES": "3"})]
TENSOR_VARIANTS += [("mma_matmul", params) for params in (
    {"GROUP": "8"}, {"BN": "128", "WN": "32"},
    {"BM": "256", "BN": "128", "BK": "64", "STAGES": "4"},
    {"WM": "32", "BN": "128"}, {"BK": "64", "STAGES": "2"})]


@pytest.mark.parametrize("name, params",
                         [pytest.param(n, p, id=f"{n}[{','.join(f'{k}{v}' for k, v in p.items())}]")
                          for n, p in TENSOR_VARIANTS])
def test_tensor_core_variants_verify_at_every_checked_size(name, params):
    """Each variant at its sanitize size and every size its spec checks, in one child."""
    spec = catalog.load(name)
    if why := spec.unsupported_on(toolchain.detect_arch()):
        pytest.skip(why)
    every = [(spec.preset("sanitize"), ())] + [(dict(c.sizes), c.fills) for c in spec.checks]
    results = launch.run_kernels([pipeline.prepare(spec, sizes, params=params, fills=fills).job(RunMode())
                                  for sizes, fills in every])
    wrong = [f"{sizes}: {[c.message for c in r.checks]}" for (sizes, _), r in zip(every, results)
             if not r.ok]
    assert not wrong, f"{name} {params} fails at " + "; ".join(wrong)


def test_hang_is_killed_at_the_timeout(data_dir):
    with pytest.raises(TargetError, match="did not finish within 8 s"):
        launch.run_kernel(_data_job(data_dir, "hang"), timeout=8)


def test_unwritten_output_fails_verification(data_dir):
    result = launch.run_kernel(_data_job(data_dir, "half_write"))
    assert not result.ok
    assert result.checks[0].nonfinite == 500 and "first at c[500]" in result.checks[0].message


def test_a_write_past_the_end_fails_the_verdict_without_a_tool(data_dir):
    """c[n] written (the bound off by one), every real element right: the guard zone after c sees
    it."""
    result = launch.run_kernel(_data_job(data_dir, "one_past"))
    assert not result.ok
    c, bounds = result.checks
    assert c.ok and not bounds.ok and "4 bytes past its end (c[1000])" in bounds.message, result.checks


def test_wrong_answer_fails_with_exit_1(data_dir, capsys):
    code = cli.main(["run", str(data_dir / "kernels" / "wrong.yaml")])
    out, _ = capsys.readouterr()
    assert code == errors.EXIT_FAILED and "c: FAIL" in out and "verification FAILED" in out


def test_sizes_beyond_device_memory_are_refused_before_allocating():
    job = pipeline.prepare(catalog.load("vector_add"), {"N": 2**40}).job(RunMode())
    with pytest.raises(UsageError, match="GiB of device memory"):
        launch.run_kernel(job)


def test_build_targets_the_gpu_present():
    assert toolchain.detect_arch().startswith("sm_")
    from kprof.child import device

    dev = device.Device()
    try:
        assert toolchain.detect_arch() == dev.info().arch
    finally:
        dev.close()
