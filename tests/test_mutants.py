"""kprof mutants: how strong a spec's verdict is. Mutant generation and scoring without a GPU, building
with nvcc, and the whole command with a stand-in for the GPU's verdict."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kprof import api, catalog, cli, launch, mutants, proc
from kprof.launch import RunResult

ROOT = Path(__file__).resolve().parent.parent


def _source(name: str) -> str:
    return (ROOT / "kernels" / f"{name}.cu").read_text()


def test_a_matmul_gets_at_least_ten_mutants_each_one_change_of_one_code_line():
    text = _source("tiled_matmul")
    made = mutants.generate(text)
    assert len(made) >= 10 and len({m.source for m in made}) == len(made)
    assert {"<= for <", "missing barrier", "swapped indices", "overwrite for accumulate (= for +=)",
            "wrong initial value (0 -> 1)", "missing tail (bound - 1)"} <= {m.operator for m in made}
    lines = text.splitlines()
    for m in made:
        mutated = m.source.splitlines()
        assert len(mutated) == len(lines), m.id  # a report's line is still the source's
        changed = [i for i, (a, b) in enumerate(zip(lines, mutated)) if a != b]
        assert changed == [m.line - 1] and lines[m.line - 1] == m.before.rstrip("\n"), m.id
        assert not m.before.lstrip().startswith(("#", "//")), m.id  # code, not comments or the preprocessor
    barrier = next(m for m in made if m.operator == "missing barrier")
    assert "__syncthreads" not in barrier.after and "// the tile is complete" in barrier.after
    assert not any("k0 = TILE" in m.after for m in made), "a for header's increment would hang the kernel"


def test_the_reduction_and_softmax_operators_have_their_places():
    assert any(m.operator == "skipped reduction level (>>= 2)" for m in mutants.generate(_source("reduce_sum")))
    flushed = [m for m in mutants.generate(_source("softmax_online")) if m.operator == "flushed small value"]
    assert flushed and all("< 1e-6f ? 0.0f :" in m.after for m in flushed)
    assert len(mutants.generate(_source("softmax_online"), limit=7)) == 7


def test_a_verdict_kills_at_the_first_failing_size_and_the_score_counts_only_non_equivalent_mutants():
    assert mutants.judge([("sanitize", True, ""), ("M127-N131", False, "3 of 16,637 elements exceed")]) == (
        "killed", "M127-N131: 3 of 16,637 elements exceed")
    assert mutants.judge([("sanitize", True, ""), ("N1", True, "")])[0] == "survived"
    m = mutants.generate(_source("vector_add"))[0]
    results = [mutants.MutantResult(m, v) for v in ("killed", "killed", "survived", "equivalent", "not-built")]
    assert mutants.score(results) == (2, 3, 2 / 3) and mutants.score([]) == (0, 0, None)
    assert results[2].to_dict()["diff"].startswith(f"@@ line {m.line} ({m.operator})\n-")


def _cubin(folder: Path, text: str) -> bytes:
    folder.mkdir(parents=True)
    (folder / "k.cu").write_text(text)
    subprocess.run([str(proc.find_tool("nvcc")), "-cubin", "-arch=sm_90", "-lineinfo", "-o", str(folder / "k.cubin"),
                    str(folder / "k.cu")], check=True, capture_output=True, timeout=120)
    return (folder / "k.cubin").read_bytes()


@pytest.mark.nvcc
def test_a_mutant_with_the_originals_machine_code_is_equivalent(tmp_path):
    text = _source("tiled_matmul")
    same = _cubin(tmp_path / "a", text)
    moved = _cubin(tmp_path / "b", text)  # the same source elsewhere: other line information, same code
    assert same != moved and mutants.equivalent(same, moved)
    wrong = _cubin(tmp_path / "c", mutants.generate(text)[0].source)
    assert not mutants.equivalent(same, wrong) and mutants.text_sections(b"not an elf") is None


@pytest.mark.nvcc
def test_kprof_mutants_dry_run_lists_and_builds_every_mutant(capsys):
    assert cli.main(["mutants", "tiled_matmul", "--dry-run", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["dry_run"] and len(data["mutants"]) >= 10
    assert all(m["verdict"] in ("built", "equivalent") for m in data["mutants"]), data["mutants"]
    assert data["sizes"][0] == "sanitize" and len(data["sizes"]) == 1 + len(catalog.load("tiled_matmul").checks)


def _fake_result(job, ok: bool) -> RunResult:
    checks = [{"ok": ok, "message": "fine" if ok else "12 of 16,637 elements exceed 1e-05 x |ref|"}]
    return RunResult(job.target.name, job.target.sizes, ok, checks, None, {}, {}, None, [], True)


@pytest.mark.nvcc
def test_each_mutant_is_killed_or_survives_by_the_verdict_and_survivors_are_shown(monkeypatch, capsys):
    """The GPU's verdict stood in for: the spec's own kernel passes, a mutant missing a barrier passes
    (a survivor), one whose run faults is killed, every other fails its verdict."""
    from kprof.errors import TargetError

    monkeypatch.setattr(api, "require_gpu", lambda tool: None)

    def run_kernels(jobs, timeout):
        name = jobs[0].target.name
        source = Path(jobs[0].target.source).read_text()
        if name.endswith("__m1"):
            raise TargetError(f"{name}: CUDA_ERROR_ILLEGAL_ADDRESS")
        passes = name == "tiled_matmul" or "__syncthreads();  // everyone is done" not in source
        return [_fake_result(job, passes) for job in jobs]

    monkeypatch.setattr(launch, "run_kernels", run_kernels)
    report = api.run_mutants("tiled_matmul", limit=12)
    verdicts = {r.mutant.id: r.verdict for r in report.results}
    assert verdicts["M1"] == "killed" and "ILLEGAL_ADDRESS" in report.results[0].why
    survivors = [r for r in report.results if r.verdict == "survived"]
    assert [r.mutant.operator for r in survivors] == ["missing barrier"]
    killed, counted, share = report.score
    assert counted == 12 and killed == 11 and share == pytest.approx(11 / 12)
    assert cli.main(["mutants", "tiled_matmul", "--limit", "12"]) == 1  # a survivor: exit 1
    out = capsys.readouterr().out
    assert "score: 11 of 12 non-equivalent mutants killed (92%)" in out and "survived M" in out and "-        __syncthreads" in out
