"""The API behind kprof build, occupancy, history and compare (kprof/commands/offline.py), without a
GPU: each returns what its command prints, and the command prints exactly that."""

from __future__ import annotations

import json

import pytest

import kprof
from kprof.commands import cli, offline
from kprof.errors import UsageError


@pytest.mark.nvcc
def test_build_kernels_returns_what_kprof_build_prints(capsys):
    seen = []
    report = kprof.build_kernels(["vector_add"], params=["BLOCK=128,256"], arch="sm_90",
                                 progress=lambda name, how, s,
                                 total: seen.append((name, how, total)))
    assert isinstance(report, kprof.BuildReport) and report.arch == "sm_90" and not report.failed
    assert sorted(str(dict(s.defines)["BLOCK"]) for s, _ in report.built) == ["128", "256"]
    assert len(seen) == 2 and {t for _, _, t in seen} == {2}
    assert (cli.main(["build", "vector_add", "--param", "BLOCK=128,256", "--arch", "sm_90", "--json"]) == 0)
    printed = json.loads(capsys.readouterr().out)
    assert [(r["name"], r["defines"]["BLOCK"]) for r in printed] == [(r["name"], r["defines"]["BLOCK"])
                                                                     for r in json.loads(json.dumps(report.to_json()))]


def test_list_kernels_returns_what_kprof_list_prints(capsys, tmp_path, monkeypatch):
    """kprof.list_kernels(): each spec as a typed Listing, why one does not run on an older
    architecture, a spec that does not load listed with its error; kprof list --json prints the same
    rows."""
    (tmp_path / "broken.yaml").write_text("name: broken\n")
    monkeypatch.setenv("KPROF_PATH", str(tmp_path))
    rows = {r.name: r for r in kprof.list_kernels(arch="sm_75")}
    assert (isinstance(rows["async_matmul"], kprof.Listing)
            and rows["async_matmul"].group == "kernel")
    assert (rows["async_matmul"].unsupported == "needs sm_80: cp.async copies from global to "
                                                "shared memory")
    assert rows["tiled_matmul"].unsupported is None and rows["broken"].group == "user"
    assert rows["broken"].description.startswith("INVALID SPEC:")
    assert cli.main(["list", "--arch", "sm_75", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [r.to_dict()
                                                   for r in kprof.list_kernels(arch="sm_75")]
    assert cli.main(["list", "--arch", "sm_75"]) == 0
    text = capsys.readouterr().out
    assert "[needs sm_80: cp.async" in text and "INVALID SPEC" in text


def test_new_kernel_and_doctor_are_what_kprof_new_and_kprof_doctor_print(tmp_path, capsys):
    cu, spec = kprof.new_kernel("my_scale", tmp_path)
    assert ((cu, spec) == (tmp_path / "my_scale.cu", tmp_path / "my_scale.yaml") and cu.is_file()
            and spec.is_file())
    with pytest.raises(UsageError):
        kprof.new_kernel("my_scale", tmp_path)  # never over a file that is there
    checks = kprof.doctor()
    assert checks and all(isinstance(c, kprof.Check) for c in checks) and checks[0].name == "kprof"
    ready = offline.readiness(checks)
    assert cli.main(["doctor", "--json"]) == next((r.exit_code for r in ready if not r.ready), 0)
    assert [c["name"] for c in json.loads(capsys.readouterr().out)] == [c.name for c in checks]


def test_build_kernels_wants_names_or_all():
    with pytest.raises(UsageError, match="name the kernels to build, or give --all"):
        offline.build_kernels()
    with pytest.raises(UsageError, match="--param builds the kernels you name"):
        offline.build_kernels(all=True, params=["BLOCK=128"])


@pytest.mark.nvcc
def test_occupancy_of_returns_what_kprof_occupancy_prints(capsys):
    r = kprof.occupancy_of("vector_add", blocks=[128, 1024], arch="sm_90")
    assert (isinstance(r, kprof.OccupancyReport)
            and [o.block_size for o in r.launch] == [128, 1024] and r.sweep)
    assert (cli.main(["occupancy", "vector_add", "--block", "128", "--block", "1024", "--arch", "sm_90", "--json"]) == 0)
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(r.to_json()))


def test_history_and_compare_on_an_empty_store(tmp_path, monkeypatch):
    monkeypatch.setenv("KPROF_HISTORY", str(tmp_path / "h.sqlite"))
    assert kprof.bench_history("vector_add") == []
    with pytest.raises(UsageError, match="no bench runs yet"):
        kprof.compare_runs("last~1", "last")
