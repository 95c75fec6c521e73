"""The nan checker (kprof.tools.sanitizers.nan): the watcher's log read back, the finding it makes,
the program's run classified (with a stand-in program that writes the log itself), and the watcher
(kprof.hooks.nan_watch) in a real PyTorch program on the CPU where torch is installed.

The logs under tests/data/programs/nan/ are the watcher's own output for the three programs beside
them, run with torch 2.13 on the CPU (KPROF_NAN_DEVICES=all), their paths replaced by
/home/user/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kprof.tools.sanitizers import checkers, nan
from kprof.tools.sanitizers.checker import Program, Settings

HOOKS = Path(nan.__file__).resolve().parents[2] / "hooks"


def _log(data_dir, name):
    return nan.parse((data_dir / "programs" / "nan" / f"{name}.jsonl").read_text())


def test_a_log_of_zero_is_found_at_its_line_with_its_first_element(data_dir):
    log = _log(data_dir, "log_of_zero")
    first = log.first
    assert log.watching == ("torch",) and log.processes == log.ended == 1 and log.ops == 10
    assert (first.op, first.site, first.output, first.bad, first.total) == (
        "aten.log.default", "/home/user/log_of_zero.py:11", "out", 32, 32)
    assert first.inputs_finite and first.first_index == (0, 0) and first.first_value == "-inf"
    f = nan.finding(first)
    assert (f.tool, f.kind, f.kernel, f.file, f.line) == ("nan", "non-finite", "aten.log.default",
                                                          "/home/user/log_of_zero.py", 11)
    assert ("turned finite inputs into 32 non-finite elements" in f.message
            and "out[0, 0] = -inf" in f.detail)


def test_a_backward_ops_inf_names_the_forward_op_it_belongs_to(data_dir):
    first = _log(data_dir, "sqrt_backward").first
    assert (first.op == "aten.div.Tensor" and first.backward_of == "SqrtBackward0"
            and first.first_value == "inf")
    assert "(in the backward of SqrtBackward0)" in nan.finding(first).message


def test_a_division_by_an_underflowed_norm_is_the_division(data_dir):
    first = _log(data_dir, "norm_underflow").first
    assert (first.op, first.site, first.bad) == ("aten.div.Tensor",
                                                 "/home/user/norm_underflow.py:5", 128)


def test_inputs_already_non_finite_say_where_kprof_did_not_watch():
    line = {"event": "first", "framework": "torch", "op": "aten.add.Tensor", "site": "t.py:3",
            "output": "out",
            "bad": 2, "total": 4, "first_index": [1], "first_value": "nan", "inputs_finite": False,
            "nonfinite_inputs": ["self"], "rank": 1,
            "test": "tests/test_model.py::test_step (call)"}
    log = nan.parse("not json\n" + json.dumps(line) + "\n" + json.dumps({**line, "op": "later"}) + "\n[1, 2]\n")
    f = nan.finding(log.first)
    assert log.first.op == "aten.add.Tensor" and f.kind == "non-finite-input" and f.rank == 1
    assert "inputs (self) already held NaN or Inf" in f.message
    assert (log.first.test == "tests/test_model.py::test_step"
            and f.detail.endswith("in the test tests/test_model.py::test_step"))


def test_notes_say_what_was_watched_and_what_was_not():
    log = nan.parse("\n".join(json.dumps(x) for x in (
        {"event": "start"}, {"event": "start"}, {"event": "watching", "what": "torch"},
        {"event": "unwatched", "what": "the kernels of torch.compile graphs"},
        {"event": "summary", "ops": 5, "launches": 2, "cupy": True},
        {"event": "error", "where": "x", "error": "E"})))
    notes = nan.notes_of(log)
    assert notes[0] == "watched 5 PyTorch operations and 2 kernel launches (torch) in 2 process(es)"
    assert "torch.compile" in notes[1] and "CuPy's kernels" in notes[1]
    assert ("1 process(es) ended without the watcher's summary" in notes[2]
            and notes[3].endswith("x: E"))


STAND_IN = """
import json, os, sys
lines = {lines!r}
with open(os.environ["KPROF_NAN_LOG"], "a") as f:
    for x in lines:
        f.write(json.dumps(x) + "\\n")
sys.exit({code})
"""


def _program(tmp_path, lines, code=0):
    script = tmp_path / "prog.py"
    script.write_text(STAND_IN.format(lines=lines, code=code))
    env = {k: v for k, v in os.environ.items() if k != "KPROF_NAN_LOG"}
    return Program((sys.executable, str(script)), env=env, cwd=str(tmp_path))


WATCHING = [{"event": "start"}, {"event": "watching", "what": "torch"}]
SUMMARY = {"event": "summary", "ops": 3, "launches": 0}
FIRST = {"event": "first", "framework": "torch", "op": "aten.exp.default", "site": "prog.py:9",
         "output": "out",
         "bad": 1, "total": 8, "first_index": [3], "first_value": "inf", "inputs_finite": True,
         "dtype": "bfloat16"}


@pytest.mark.parametrize("lines, code, status", [
    (WATCHING + [FIRST, SUMMARY], 0, "findings"),
    (WATCHING + [FIRST], 1, "findings"),  # found, then the program failed on it: the finding stands
    (WATCHING + [SUMMARY], 0, "clean"),
    (WATCHING + [SUMMARY], 3, "target-error"),
    # no torch, no Triton
    ([{"event": "start"}, {"event": "summary", "ops": 0, "launches": 0}], 0, "not-checked"),
])  # fmt: skip
def test_the_program_runs_once_and_its_log_decides(tmp_path, lines, code, status):
    r = checkers.run_program("nan", _program(tmp_path, lines, code), Settings(timeout=60))
    assert r.status == status, (r.message, r.log)
    if status == "findings":
        assert r.findings[0].launch == "prog.py:9" and r.findings[0].count == 1
    if status == "not-checked":
        assert "saw no PyTorch and no Triton" in r.message


def test_a_spec_is_no_target_for_it(tmp_path):
    from kprof.errors import UsageError

    with pytest.raises(UsageError, match="checks programs only"):
        checkers.choose(["nan"])
    assert "nan" not in checkers.choose("all") and "nan" not in checkers.choose("all", program=True)


@pytest.mark.parametrize("name, op, line", [("log_of_zero", "aten.log.default", 11),
                                            ("sqrt_backward", "aten.div.Tensor", 7),
                                            ("norm_underflow", "aten.div.Tensor", 5)])
def test_the_watcher_in_a_real_pytorch_program_on_the_cpu(data_dir, tmp_path, name, op, line):
    pytest.importorskip("torch")
    log = tmp_path / "nan.jsonl"
    env = {**os.environ, "KPROF_NAN_LOG": str(log), "KPROF_NAN_DEVICES": "all",
           "PYTHONPATH": str(HOOKS)}
    script = data_dir / "programs" / "nan" / f"{name}.py"
    subprocess.run([sys.executable, str(script)], env=env, cwd=tmp_path, capture_output=True,
                   timeout=300)
    first = nan.parse(log.read_text()).first
    assert (first is not None and (first.op, first.site) == (op, f"{script}:{line}")
            and first.inputs_finite)


@pytest.mark.parametrize("case, op, bug_line",
                         [("log_zero", "aten.log.default", "-torch.log(probs)"),
                          ("norm", "aten.div.Tensor", "x / x.norm("),
                          ("bf16_exp", "aten.exp.default", "torch.exp(logits)"),
                          ("clean", None, None)])
def test_the_seeded_examples_on_the_cpu(tmp_path, case, op, bug_line):
    """examples/nan_cases.py (the GPU run's cases, scripts/gpu-check.sh nan) on the CPU: each seeded
    bug found at the line that holds it, the clean case silent."""
    pytest.importorskip("torch")
    example = Path(__file__).resolve().parents[3] / "examples" / "nan_cases.py"
    log = tmp_path / "nan.jsonl"
    env = {**os.environ, "KPROF_NAN_LOG": str(log), "KPROF_NAN_DEVICES": "all",
           "PYTHONPATH": str(HOOKS)}
    subprocess.run([sys.executable, str(example), "--case", case, "--device", "cpu"], env=env,
                   cwd=tmp_path, capture_output=True, timeout=300, check=True)
    got = nan.parse(log.read_text())
    if op is None:
        assert got.first is None and got.watching == ("torch",) and got.ops > 10
        return
    line = next(k for k, text in enumerate(example.read_text().splitlines(), 1) if bug_line in text)
    assert (got.first.op, got.first.site) == (op, f"{example}:{line}") and got.first.inputs_finite
