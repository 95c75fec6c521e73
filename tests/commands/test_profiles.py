"""kprof profile NAME... as one API call (kprof.commands.profiles.profile_specs): every input
checked before the GPU, the GPU before ncu, then each spec profiled and diagnosed; the command
prints what the call returns."""

from __future__ import annotations

import pytest

import kprof
from kprof.commands import api, cli, profiles
from kprof.diagnosis import stage
from kprof.errors import NcuError, NoGPUError, UsageError


def test_the_inputs_are_checked_before_the_gpu(monkeypatch):
    monkeypatch.setattr(api, "require_gpu",
                        lambda tool: pytest.fail("the GPU was asked for before the inputs were "
                                                 "checked"))
    with pytest.raises(UsageError):
        profiles.profile_specs(["tiled_matmul"], sizes={"Q": 3})
    with pytest.raises(UsageError):
        profiles.profile_specs(["tiled_matmul"], tries=["PER"])
    with pytest.raises(TypeError, match="kprof.profile_specs"):
        kprof.profile_specs("tiled_matmul", sizes=[1])


def test_no_gpu_is_one_line_before_anything_is_built(monkeypatch, capsys):
    from kprof.build import build
    from kprof.child import device

    monkeypatch.setattr(device, "probe", lambda: "no CUDA driver: cuInit -> libcuda not found")
    monkeypatch.setattr(build, "build", lambda *a, **k: pytest.fail("built before the GPU check"))
    with pytest.raises(NoGPUError):
        profiles.profile_specs(["tiled_matmul", "vector_add"])
    assert cli.main(["profile", "tiled_matmul"]) == 5


@pytest.mark.nvcc
def test_each_spec_is_profiled_and_diagnosed_and_one_ncu_failure_leaves_the_others(monkeypatch, as_if_a_gpu):
    """Two specs; ncu fails on the first: the second is still profiled and diagnosed, and the
    failure kept."""
    from kprof.measure import profiling

    seen, said = [], []

    def fake_profile(prepared, settings):
        seen.append(prepared.resolved.spec.name)
        if prepared.resolved.spec.name == "vector_add":
            raise NcuError("ncu failed", reason="test")
        p = profiling.fallback(prepared.resolved.spec.name, prepared.resolved.sizes, 1e-4, 32, 256,
                               0, dynamic_smem=0, arch="sm_90", spec_flops=None, spec_bytes=None,
                               reason="fake device")
        return [p]

    monkeypatch.setattr(stage, "profile_one", fake_profile)
    monkeypatch.setattr(stage, "diagnose_one", lambda prepared, got,
                        **kw: ("diagnosis of", prepared.resolved.spec.name))
    monkeypatch.setattr(api, "require_gpu", lambda tool: None)
    run = profiles.profile_specs(["vector_add", "tiled_matmul"], sizes={"N": 4096, "M": 128},
                                 progress=said.append)
    assert seen == ["vector_add", "tiled_matmul"] and not run.ok
    assert [name for name, _ in run.errors] == ["vector_add"] and len(run.profiles) == 1
    assert run.diagnoses == [("diagnosis of", "tiled_matmul")]
    assert any(line.startswith("profiling tiled_matmul") for line in said)


@pytest.mark.nvcc
def test_kprof_profile_of_a_spec_takes_the_commands_options_and_diagnoses_nothing(monkeypatch, as_if_a_gpu, tmp_path):
    """kprof.profile(NAME, params=..., baseline=..., report_dir=...): the spec at its params and
    each baseline beside it, the report folder made and handed to ncu, the profiles alone (no
    diagnosis, no tries); an ncu failure raises it, as kprof.profile always did."""
    from kprof.measure import profiling

    seen = []

    def fake_profile(prepared, settings):
        seen.append((prepared.resolved.spec.name, settings.params, settings.report_dir))
        return [profiling.fallback(prepared.resolved.spec.name, prepared.resolved.sizes, 1e-4, 32,
                                   256, 0, dynamic_smem=0,
                                   arch="sm_90", spec_flops=None, spec_bytes=None,
                                   reason="fake device")]

    monkeypatch.setattr(stage, "profile_one", fake_profile)
    monkeypatch.setattr(stage, "diagnose_one", lambda *a,
                        **k: pytest.fail("kprof.profile diagnosed"))
    monkeypatch.setattr(api, "require_gpu", lambda tool: None)
    got = kprof.profile("tiled_matmul", params={"TILE": "16"}, sizes={"M": 128, "N": 128, "K": 128},
                        report_dir=tmp_path / "reports")
    # the folder is checked now and made when ncu writes its first report (issue 79): none here
    assert [p.kernel for p in got] == ["tiled_matmul"] and not (tmp_path / "reports").exists()
    assert seen == [("tiled_matmul", {"TILE": "16"}, tmp_path / "reports")]
    seen.clear()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text("def norm(x, w, eps):\n    return x\n")
    got = kprof.profile("rmsnorm_onepass", baseline="mine.py:norm", sizes={"R": 64, "C": 256})
    assert len(got) == 2 and [name for name, _, _ in seen] == ["rmsnorm_onepass", got[1].kernel], seen
    monkeypatch.setattr(stage, "profile_one", lambda prepared,
                        settings: (_ for _ in ()).throw(NcuError("ncu failed", reason="t")))
    with pytest.raises(NcuError, match="ncu failed"):
        kprof.profile("tiled_matmul")


def test_kprof_profile_says_which_options_belong_to_a_spec_and_which_to_a_program():
    with pytest.raises(UsageError, match="pick a program's launches"):
        kprof.profile("tiled_matmul", kernel="scale")
    with pytest.raises(UsageError, match="params and baseline apply to a spec"):
        kprof.profile(["python", "train.py"], params={"TILE": "16"})
    with pytest.raises(UsageError, match="params and baseline apply to a spec"):
        kprof.profile(["python", "train.py"], baseline="torch")


@pytest.mark.nvcc
def test_kprof_diagnose_takes_params_as_the_command_does(monkeypatch, as_if_a_gpu):
    """kprof.diagnose(NAME, params=...): the spec built with them and profiled with them (they were
    dropped)."""
    seen = {}

    def fake_profile(prepared, settings):
        seen.update(params=settings.params, defines=dict(prepared.resolved.spec.defines))
        return []

    monkeypatch.setattr(stage, "profile_one", fake_profile)
    monkeypatch.setattr(stage, "diagnose_one", lambda prepared, got, **kw: "diagnosed")
    assert (kprof.diagnose("tiled_matmul", params={"TILE": "16"}, sizes={"M": 64, "N": 64, "K": 64}) == "diagnosed")
    assert seen["params"] == {"TILE": "16"} and seen["defines"]["TILE"] == "16", seen


def test_a_report_name_kprof_may_not_write_is_one_line_before_the_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr(api, "require_gpu", lambda tool: pytest.fail("the GPU was asked for first"))
    (tmp_path / "tiled_matmul.ncu-rep").mkdir()
    (tmp_path / "train.ncu-rep").mkdir()
    with pytest.raises(UsageError, match=r"--save-report: .*tiled_matmul.ncu-rep is a folder"):
        profiles.profile_specs(["tiled_matmul"], report_dir=tmp_path)
    with pytest.raises(UsageError, match=r"--save-report: .*train.ncu-rep is a folder"):
        kprof.profile(["python", "train.py"], report_dir=tmp_path)


def test_the_profiles_are_printed_before_the_plot_is_written(monkeypatch, tmp_path, capsys):
    """A plot whose write fails (a full disk) loses none of what was measured: the table is out
    first."""
    pytest.importorskip("matplotlib")
    from kprof.errors import OutputError
    from kprof.measure import profiling
    from kprof.results import plot

    got = profiling.fallback("tiled_matmul", {"M": 64}, 1e-4, 32, 256, 0, dynamic_smem=0,
                             arch="sm_90", spec_flops=None, spec_bytes=None, reason="fake device")
    monkeypatch.setattr(profiles, "profile_specs", lambda *a,
                        **k: stage.SpecProfiles(profiles=[got]))

    def full_disk(profiles_, path):
        raise OutputError(f"--plot {path}: No space left on device")

    monkeypatch.setattr(plot, "roofline", full_disk)
    code = cli.main(["profile", "tiled_matmul", "--plot", str(tmp_path / "roof.png")])
    out, err = capsys.readouterr()
    assert code == 7 and "tiled_matmul" in out and "No space left on device" in err
