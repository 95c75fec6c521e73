"""Python baselines for kprof bench, without a GPU: where they may be named, how they are checked
before anything runs, how a report names them. (The child's side: tests/child/test_runner.py.)"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from helpers import child

from kprof import spec as spec_mod
from kprof import stats
from kprof.commands import pipeline
from kprof.errors import SpecError, UsageError
from kprof.measure import bench, points
from kprof.results import render_bench, render_build
from kprof.spec import baseline as baseline_mod
from kprof.spec import catalog, pyref, sweep

SPEC = ("sizes: {N: 64}\nargs:\n  - {name: a, buffer: float32, shape: [N], role: in}\n"
        "  - {name: c, buffer: float32, shape: [N], role: out}\n  - {name: n, scalar: int32, "
        "value: N}\nlaunch: {grid: [1], block: [64]}\nreference: {c: a}\n")


def _points(spec, option):
    return pipeline.bench_points([spec], sweep.parse([], "--size"), sweep.parse([], "--param"),
                                 option)


def test_a_spec_may_name_a_python_baseline_next_to_it(tmp_path):
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "base.py").write_text("def copy(a, N):\n    return a.clone()\n")
    (tmp_path / "k.yaml").write_text(SPEC + "baseline: base.py:copy\n")
    spec = spec_mod.load(tmp_path / "k.yaml")
    assert pyref.is_stored(spec.baseline) and spec.baseline.endswith("base.py:copy")
    assert render_bench.baseline_label(spec.baseline) == "base.py:copy"
    (tmp_path / "k.yaml").write_text(SPEC + "baseline: base.py:absent\n")
    with pytest.raises(SpecError, match="baseline: base.py defines no top-level function absent"):
        spec_mod.load(tmp_path / "k.yaml")
    (tmp_path / "base.py").write_text("def copy(a, out):\n    return a\n")
    (tmp_path / "k.yaml").write_text(SPEC + "baseline: base.py:copy\n")
    with pytest.raises(SpecError, match="asks for 'out', which is not an input, size or scalar"):
        spec_mod.load(tmp_path / "k.yaml")


def test_baseline_option_takes_a_file_here_or_a_module(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text("def add(a, b):\n    return a + b\n")
    spec = catalog.load("vector_add")
    (point,) = _points(spec, "mine.py:add")
    b = point.baseline
    assert (b.kind == "python" and b.stored().endswith("mine.py:add") and b.spec is None
            and b.label == "mine.py:add")
    with pytest.raises(UsageError, match="--baseline nope.py:add: nope.py does not exist"):
        _points(spec, "nope.py:add")
    with pytest.raises(UsageError, match="asks for 'z'"):
        (tmp_path / "bad.py").write_text("def add(a, z):\n    return a\n")
        _points(spec, "bad.py:add")


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None,
                    reason="PyTorch is installed here")
@pytest.mark.parametrize("option", ["kprof.baselines.torch_ops:add", "torch", "torch.compile"])
def test_the_shipped_torch_baselines_need_pytorch_and_say_so(option):
    with pytest.raises(UsageError,
                       match=r"vector_add: baseline torch_ops.py:add(_compiled)? needs PyTorch, "
                             r"which is "
                             r"not installed here \(pip install 'kprof\[torch\]'\)"):
        _points(catalog.load("vector_add"), option)


def test_a_spec_names_its_framework_baselines(tmp_path, monkeypatch):
    """``baselines:`` gives short names for --baseline; each spec of a run takes its own."""
    # no PyTorch needed to resolve
    monkeypatch.setattr(baseline_mod, "python_ref", lambda spec, b: b)
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "base.py").write_text("def copy(a):\n    return a.clone()\n\n\ndef copy2(a):\n    "
                                      "return a + 0\n")
    (tmp_path / "k.yaml").write_text(SPEC + "baselines:\n  mine: base.py:copy\n  lib.v2: "
                                            "base.py:copy2\n")
    spec = spec_mod.load(tmp_path / "k.yaml")
    assert [n for n, _ in spec.baselines] == ["mine", "lib.v2"]
    (point,) = _points(spec, "mine")
    assert point.baseline.kind == "python" and point.baseline.stored().endswith("base.py:copy")
    assert point.baseline.label == "mine"  # the spec's name for it, labelled once
    (point,) = _points(spec, "mine,lib_v2")  # '_' and '-' spell '.'
    assert ([b.stored().rsplit("/", 1)[-1] for b in point.baselines] == ["base.py:copy", "base.py:copy2"])
    assert [b.label for b in point.baselines] == ["mine", "lib.v2"]
    with pytest.raises(UsageError,
                       match=r"'other': not a kernel spec kprof can find; use auto, none, "
                             r"cublas_sgemm, "
                             r"k's own \(mine, lib.v2\)"):
        _points(spec, "other")
    points = pipeline.bench_points([catalog.load("vector_add_vec4"),
                                    catalog.load("reduce_sum_vec4")],
                                   sweep.parse([], "--size"), sweep.parse([], "--param"), "torch")
    assert [p.baseline.label for p in points] == ["torch", "torch"]  # each spec's own "torch"
    assert [p.baseline.ref.label() for p in points] == ["torch_ops.py:add", "torch_ops.py:total"]


@pytest.mark.parametrize("yaml_text, problem", [
    ("baselines: [torch]\n", "baselines: must be a mapping NAME: baseline"),
    ("baselines: {Torch: base.py:copy}\n", "baselines.Torch: a name is lowercase letters"),
    ("baselines: {auto: base.py:copy}\n", "baselines.auto: a name is lowercase letters"),
    ("baselines:\n  mine: base.py:absent\n",
     "baselines.mine: base.py defines no top-level function absent"),
    ("baselines:\n  mine:\n", "baselines.mine: is empty"),
    ("baselines:\n  mine: 3\n", "baselines.mine: 3 must be cublas_sgemm"),
])
def test_a_bad_named_baseline_is_refused_at_load(tmp_path, yaml_text, problem):
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "base.py").write_text("def copy(a):\n    return a.clone()\n")
    (tmp_path / "k.yaml").write_text(SPEC + yaml_text)
    with pytest.raises(SpecError, match=re.escape(problem)):
        spec_mod.load(tmp_path / "k.yaml")


def test_every_shipped_spec_with_a_pytorch_op_names_it():
    """The ladder's specs carry their PyTorch baselines by name: kprof bench KERNEL --baseline
    torch."""
    for entry in catalog.entries():
        if entry.group != "kernel" or entry.name.endswith(("_unfused", "_ref")) or entry.name in (
                "histogram", "exclusive_scan", "gather_rows", "prefix_max"):
            continue
        spec = catalog.load(entry.name)
        names = dict(spec.baselines)
        assert "torch" in names and pyref.Ref.from_stored(names["torch"]).path.name == "torch_ops.py", entry.name


def test_every_shipped_torch_baseline_fits_its_specs_arguments():
    """Read without importing torch: each baseline's parameters are names its spec has."""
    pairs = {"vector_add_vec4": ["add", "add_compiled"],
             "reduce_sum_vec4": ["total", "total_compiled"],
             "rmsnorm_onepass": ["rms_norm", "rms_norm_compiled"],
             "softmax_online": ["softmax", "softmax_compiled"],
             "streamk_matmul": ["mm"],
             "linear_bias_relu": ["linear_bias_relu", "linear_bias_relu_lt",
                                  "linear_bias_relu_compiled"],
             "flash_attention": ["sdpa", "sdpa_flash", "sdpa_cudnn", "sdpa_efficient"],
             "flash_attention_causal": ["sdpa", "sdpa_flash", "sdpa_cudnn", "sdpa_efficient"]}
    for name, funcs in pairs.items():
        spec = catalog.load(name)
        known = spec_mod.input_names(spec.args) | set(spec.size_names) | set(spec.numeric_defines())
        for fn in funcs:
            ref = pyref.check(f"kprof.baselines.torch_ops:{fn}", spec.path.parent, known)
            assert ref.path.name == "torch_ops.py" and ref.func == fn


def test_a_python_baseline_is_not_timed_in_hot_mode(tmp_path, monkeypatch):
    from kprof.build import build

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text("def add(a, b):\n    return a + b\n")
    (point,) = _points(catalog.load("vector_add"), "mine.py:add")
    monkeypatch.setattr(pipeline, "prepare", lambda *a, **k: pipeline.Prepared(
        catalog.load("vector_add").resolve(), build.BuildResult.__new__(build.BuildResult)))
    mode = pipeline.TimingMode("hot", bench.rule_from(0.01, 0.1, 1.0), "spin.cubin", "flush.cubin")
    with pytest.raises(UsageError, match="a Python baseline is timed in cold or warm mode"):
        pipeline.bench_plan(point, mode, "sm_90")


OP = ("python: ops.py:add\nsizes: {N: 64}\nargs:\n  - {name: a, buffer: float32, shape: [N], role: "
      "in}\n  - {name: c, buffer: float32, shape: [N], role: out}\nreference: {c: a}\n")


def test_a_python_operation_is_a_spec_without_a_kernel(tmp_path):
    from kprof import op
    from kprof.build import build
    from kprof.launch.childresult import Operation

    (tmp_path / "ops.py").write_text("def add(a, N):\n    return a\n")
    (tmp_path / "k.yaml").write_text(OP)
    spec = spec_mod.load(tmp_path / "k.yaml")
    assert spec.python.endswith("ops.py:add") and spec.source == (tmp_path / "ops.py").resolve()
    built = build.build(spec, "sm_90")
    assert built.cubin == spec.source and built.usage_of("add").registers == 0 and built.cached
    assert "python (nothing to build)" in render_build.build_table([(spec, built)])
    from kprof.launch.childresult import ChildResult, DeviceInfo, OutputCheck

    result = ChildResult(status="ok", kernel="k", sizes={"N": 64},
                         checks=(OutputCheck(name="c", ok=True, message="ok"),),
                         device=DeviceInfo(name="GPU"), nvtx=True,
                         operation=Operation("torch", "ops.py:add", None))
    text = render_build.run_report(result, spec.resolve(), built)
    assert ("a Python operation: ops.py:add, your code, run in kprof's runner on its buffers as "
            "torch tensors" in text)
    with pytest.raises(UsageError, match="is a Python operation already"):
        op.Op(spec, built.cubin, functions=lambda *a: None, launch=lambda *a: None)


@pytest.mark.parametrize("extra, message", [
    ("source: k.cu\n",
     r"source: a Python operation \(python: FILE.py:FUNCTION\) has no source, entry, launch or "
     r"steps"),
    ("launch: {grid: [1], block: [1]}\n", "launch: a Python operation"),
])
def test_a_python_operation_refuses_kernel_fields(tmp_path, extra, message):
    (tmp_path / "ops.py").write_text("def add(a):\n    return a\n")
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "k.yaml").write_text(OP + extra)
    with pytest.raises(SpecError, match=message):
        spec_mod.load(tmp_path / "k.yaml")


def test_a_python_operation_must_name_a_function_it_can_find(tmp_path):
    (tmp_path / "ops.py").write_text("def other(a):\n    return a\n")
    (tmp_path / "k.yaml").write_text(OP)
    with pytest.raises(SpecError, match="python: ops.py defines no top-level function add"):
        spec_mod.load(tmp_path / "k.yaml")
    (tmp_path / "k.yaml").write_text(OP.replace("ops.py:add", "not a function"))
    with pytest.raises(SpecError, match="python: 'not a function' must name a function"):
        spec_mod.load(tmp_path / "k.yaml")


def test_several_baselines_are_timed_in_the_same_run_and_reported(tmp_path, monkeypatch):
    """--baseline auto,mine.py:norm: the spec's own baseline first, then the Python one, each
    against the same kernel timing (fake timings: kernel 1 ms, rmsnorm_unfused 6 ms, the callable 2
    ms)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text("def norm(x, w, eps):\n    return x\n")
    spec = catalog.load("rmsnorm_onepass")
    (point,) = pipeline.bench_points([spec], sweep.parse(["R=64", "C=256"], "--size"),
                                     sweep.parse([], "--param"), "auto,mine.py:norm")
    first, mine = point.baselines
    assert (first.kind, first.name, first.spec.name) == ("spec", "rmsnorm_unfused",
                                                         "rmsnorm_unfused")
    assert (mine.kind, mine.label) == ("python", "mine.py:norm")

    from dataclasses import dataclass, field
    from types import SimpleNamespace

    @dataclass(frozen=True)
    class FakeJob:
        name: str
        mode: object = field(default_factory=lambda: pipeline.TimingMode("cold", bench.rule_from(0.01, 0.1, 1.0),
                                                                          "s", "f"))

        @property
        def target(self):
            return SimpleNamespace(name=self.name)

    def fake_time(job, timeout):
        seconds = {"kernel": 1e-3, "unfused": 6e-3, "python": 2e-3}[job.name]
        return child(status="ok", samples=[seconds] * 5, stop="noise", timer="cupti",
                     kernels_per_call=3 if job.name == "python" else 1, baseline_framework="torch")

    monkeypatch.setattr(bench, "time_job", fake_time)
    resolved = spec.resolve({"R": 64, "C": 256})
    plan = bench.PointPlan(resolved, {}, FakeJob("kernel"),
                           ((first, FakeJob("unfused")), (mine, FakeJob("python"))))
    result = bench.run_point(plan, None, timeout=10)
    assert (result.first.of_baseline == pytest.approx(6.0)
            and len(result.to_dict()["more_baselines"]) == 1)
    more = result.to_dict()["more_baselines"][0]
    assert more["of_baseline"] == pytest.approx(2.0) and more["baseline_kernels"] == 3
    text = render_bench.bench_table([result], None, None)
    assert "6.00x faster than rmsnorm_unfused" in text
    assert ("2.00x faster than mine.py:norm (median 2,000.0 us, 3 kernel(s) per call, torch inputs)" in text)


def test_profile_takes_the_specs_baselines_as_python_operations(monkeypatch):
    """kprof profile KERNEL --baseline torch.compile: the baseline runs as a Python operation on the
    kernel's buffers at its sizes (what it launches is profiled in kprof's NVTX range beside the
    kernel)."""
    # no PyTorch needed to resolve
    monkeypatch.setattr(baseline_mod, "python_ref", lambda spec, b: b)
    kernel = pipeline.resolve(catalog.load("rmsnorm_onepass"), {"R": 64, "C": 1024},
                              params={"VEC": "1"})
    # torch_compile spells torch.compile
    ops = pipeline.profiled_baselines(kernel, "torch,torch_compile")
    assert [o.spec.name for o in ops] == ["rmsnorm_onepass__torch",
                                          "rmsnorm_onepass__torch_compile"]
    for op in ops:
        assert op.spec.python and pyref.Ref.from_stored(op.spec.python).path.name == "torch_ops.py"
        assert op.sizes == kernel.sizes and op.bytes == kernel.bytes and op.flops == kernel.flops
        assert [b.arg.name for b in op.buffers] == [b.arg.name for b in kernel.buffers]
    with pytest.raises(UsageError,
                       match=r"--baseline auto: give a name from the spec's baselines "
                             r"\(rmsnorm_onepass "
                             r"names torch, torch.compile\)"):
        pipeline.profiled_baselines(kernel, "auto")


def test_profile_cli_profiles_each_baseline_beside_its_kernel(monkeypatch, capsys):
    from kprof.commands import api, cli
    from kprof.diagnosis import stage

    # no GPU and no ncu here: the profile is a stand-in
    monkeypatch.setattr(api, "require_gpu", lambda tool: None)
    monkeypatch.setattr(baseline_mod, "python_ref", lambda spec, b: b)
    monkeypatch.setattr(pipeline, "built", lambda r, arch=None: pipeline.Prepared(r, None))
    seen = []
    monkeypatch.setattr(stage, "profile_one", lambda prepared,
                        settings: seen.append(prepared.resolved.spec.name) or [])
    assert (cli.main(["profile", "softmax_online", "--size", "R=64", "C=1024", "--baseline", "torch.compile", "--json"]) == 0)
    assert seen == ["softmax_online", "softmax_online__torch_compile"]


def test_a_baseline_is_verified_with_slack_and_the_kernel_at_its_tolerance(tmp_path, monkeypatch):
    """The spec's tolerance is the tightest kprof's kernel passes; a library summing in another
    order gets BASELINE_SLACK times it (a baseline computing something else is still off by the size
    of the values)."""
    from kprof.build import build

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text("def f(x, W, b):\n    return x @ W + b\n")

    def fake_prepare(spec, sizes=None, **kw):
        built = build.BuildResult(spec.name, Path("k.cubin"), "sm_90", {}, True, log="", argv=())
        return pipeline.Prepared(pipeline.resolve(spec, sizes), built)

    monkeypatch.setattr(pipeline, "prepare", fake_prepare)
    mode = pipeline.TimingMode("cold", bench.rule_from(0.01, 0.1, 1.0), "spin.cubin", "flush.cubin")
    spec = catalog.load("linear_bias_relu")
    (point,) = pipeline.bench_points([spec], sweep.parse(["B=64", "K=4096", "N=4096"], "--size"),
                                     sweep.parse([], "--param"), "auto,mine.py:f")
    plan = pipeline.bench_plan(point, mode, "sm_90")
    kernel, unfused, mine = plan.job.target, plan.baselines[0][1].target, plan.baselines[1][1].target
    own = spec.resolve({"B": 64, "K": 4096, "N": 4096})
    assert kernel.rtol == own.rtol and kernel.atol == pytest.approx(own.atol)
    assert (mine.rtol == pipeline.BASELINE_SLACK * kernel.rtol
            and mine.atol == pytest.approx(10 * kernel.atol))
    other = catalog.load("linear_bias_relu_unfused").resolve({"B": 64, "K": 4096, "N": 4096})
    assert unfused.rtol == pytest.approx(10 * other.rtol)


def test_a_report_names_a_baseline_as_it_was_asked_for(monkeypatch):
    """--baseline torch_compile: the table says torch.compile, not the stored path of the
    callable."""
    monkeypatch.setattr(baseline_mod, "python_ref", lambda spec, b: b)
    (point,) = _points(catalog.load("rmsnorm_onepass"), "auto,torch_compile")
    unfused, compiled = point.baselines
    assert (compiled.label, unfused.label) == ("torch.compile", "rmsnorm_unfused")
    result = points.PointResult.from_dict({"kernel": "rmsnorm_onepass", "sizes": {"R": 8},
                                           "params": {}, "mode": "cold",
        "status": "ok", "summary": stats.summarize([2e-6]).to_dict(),
        "baseline": "rmsnorm_unfused", "of_baseline": 3.0, "baseline_name": "rmsnorm_unfused",
        "more_baselines": [{
            "baseline": compiled.stored(), "baseline_name": "torch.compile", "of_baseline": 0.5,
            "baseline_summary": stats.summarize([1e-6]).to_dict()}]})  # as a bench JSON has it
    text = render_bench.bench_table([result], None, None)
    assert ("3.00x faster than rmsnorm_unfused" in text
            and "2.00x slower than torch.compile (median 1.0 us" in text)
    assert "torch_ops.py" not in text and compiled.ref.label() == "torch_ops.py:rms_norm_compiled"
    # a JSON point without its name
    assert render_bench.baseline_label(compiled.stored()) == "torch_ops.py:rms_norm_compiled"


def test_a_baseline_knows_its_kind_its_label_and_what_the_json_keeps(tmp_path):
    from kprof.spec import baseline

    lib = baseline.library("cublas_sgemm")
    assert (lib.kind, lib.label, lib.stored()) == ("library", "cublas_sgemm", "cublas_sgemm")
    stored = pyref.PREFIX + str(tmp_path / "mine.py") + ":norm"
    py = baseline.python(stored, "torch.compile")
    assert (py.kind, py.label, py.stored(), py.ref.label()) == ("python", "torch.compile", stored,
                                                                "mine.py:norm")
    assert baseline.python(stored).label == "mine.py:norm"
    spec = baseline.of_spec(catalog.load("rmsnorm_unfused"))
    assert (spec.kind, spec.label, spec.stored()) == ("spec", "rmsnorm_unfused", "rmsnorm_unfused")
    assert ([baseline.kind_of(t) for t in ("cublas_sgemm", stored, "rmsnorm_unfused")] == ["library", "python", "spec"])
    assert ((baseline.label_of(stored), baseline.label_of(stored, "torch"), baseline.label_of(None)) == ("mine.py:norm", "torch", "-"))
    with pytest.raises(ValueError, match="not a Python callable"):
        _ = lib.ref
    with pytest.raises(ValueError, match="not a library routine"):
        baseline.library("cublas_hgemm")
    with pytest.raises(ValueError, match="baseline kind"):
        baseline.Baseline("module", "x", "x")


def test_a_timing_job_times_a_library_routine_or_a_python_baseline_not_both():
    rule = bench.rule_from(0.01, 0.1, 1.0)
    with pytest.raises(ValueError, match="not both"):
        pipeline.TimingMode("cold", rule, "s", "f", library="cublas_sgemm",
                            python=pyref.PREFIX + "/x.py:f")
