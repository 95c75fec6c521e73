"""The cheat corpus of kprof bench (bench_cases/, kprof cases --bench) without a GPU: the corpus is
whole (at least seven cheats, each a baseline of the honest spec with a function in ops.py and flags
that exist), and the judging of one bench point's baselines (caught, missed, a false alarm)."""

from __future__ import annotations

import ast
import json

import pytest

from kprof import spec as spec_mod
from kprof.commands import api, cli, corpora
from kprof.corpus import benchcases
from kprof.errors import SpecError
from kprof.measure import points
from kprof.spec import catalog


def test_the_corpus_has_seven_cheats_each_a_baseline_with_its_function_and_flags():
    corpus = benchcases.load(catalog.BENCH_CASES_DIR)
    spec = spec_mod.load(corpus.spec)
    names = [c.name for c in corpus.cheats]
    assert len(names) >= 7 and len(set(names)) == len(names)
    assert set(names) <= {n for n, _ in spec.baselines}
    functions = {n.name for n in ast.parse((catalog.BENCH_CASES_DIR / "ops.py").read_text()).body
                 if isinstance(n, ast.FunctionDef)}
    assert {"double", *names} <= functions
    assert all(set(c.catch) <= set(benchcases.CATCHES) for c in corpus.cheats)


def test_cases_bench_list_needs_no_gpu(capsys):
    assert cli.main(["cases", "--bench", "--list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in rows} >= {"replay", "side_stream", "stale_empty", "shrink_input"}


def _point(flags_by_cheat, honest=(), failed=()):
    baselines = tuple(points.BaselineResult(f"ops.py:{n}", n, baseline_integrity=tuple(f))
                      for n, f in flags_by_cheat.items())
    warnings = tuple(f"baseline {n} failed verification: c: 3 of 1,000 elements exceed"
                     for n in failed)
    return points.PointResult("double", {"N": 1000}, {}, "cold", "ok", baselines=baselines,
                              integrity=tuple(honest),
                             warnings=warnings)


def test_each_cheat_is_caught_by_one_of_its_flags_or_its_verdict(monkeypatch, capsys):
    corpus = benchcases.load(catalog.BENCH_CASES_DIR)
    flags = {c.name: [f"{c.catch[0]}: seen"] for c in corpus.cheats if c.catch[0] != "verdict"}
    flags["side_stream"] = []  # failed its verdict instead
    flags["replay"] = ["timer: not one of its catches"]  # a flag, but not one that catches a replay
    point = _point(flags, failed=["side_stream"])

    class Report:
        points = [point]

    monkeypatch.setattr(api, "run_bench", lambda *a, **k: Report())
    report = corpora.run_bench_cases()
    got = {r.cheat.name: r.caught for r in report.results}
    assert got.pop("replay") is False and all(got.values()), got
    assert not report.ok
    assert cli.main(["cases", "--bench"]) == 1
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines() if line.split()
            and line.split()[0] in flags}
    assert (rows["replay"] == "MISSED" and rows["side_stream"] == "caught"
            and list(rows.values()).count("MISSED") == 1)
    assert (f"{len(corpus.cheats) - 1} of {len(corpus.cheats)} cheats caught; the honest "
            "operation: no flag" in out)


def test_a_flag_on_the_honest_operation_is_a_false_alarm(monkeypatch, capsys):
    corpus = benchcases.load(catalog.BENCH_CASES_DIR)
    point = _point({c.name: [f"{c.catch[0]}: seen"] for c in corpus.cheats},
                   honest=["other-stream: ..."])

    class Report:
        points = [point]

    monkeypatch.setattr(api, "run_bench", lambda *a, **k: Report())
    assert cli.main(["cases", "--bench", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert (data["honest_flags"] == ["other-stream: ..."]
            and all(c["caught"] for c in data["cheats"]) and not data["ok"])


def test_a_run_stopped_before_its_point_is_an_interruption_not_an_internal_error(monkeypatch, capsys):
    """kprof cases --bench stopped (SIGTERM at a deadline, Ctrl-C) before its one point was
    measured: exit 130 with one line (it ended in exit 70, a ValueError, on an H200)."""
    class Report:
        points: list = []
        interrupted = True

    monkeypatch.setattr(api, "run_bench", lambda *a, **k: Report())
    assert cli.main(["cases", "--bench"]) == 130
    assert "internal error" not in capsys.readouterr().err


@pytest.mark.parametrize("text, message", [
    ("spec: double.yaml\n", "needs 'spec: FILE.yaml' and 'cheats:"),
    ("spec: double.yaml\ncheats:\n  - {name: x}\n", "cheats[0]: needs a name and an exploit"),
    ("spec: double.yaml\ncheats:\n  - {name: x, exploit: y, catch: [fast]}\n",
     "cheats[0].catch: list flags among"),
    ("spec: [\n", "not valid YAML"),
])
def test_a_bad_corpus_is_one_line_naming_the_field(tmp_path, text, message):
    (tmp_path / "cases.yaml").write_text(text)
    with pytest.raises(SpecError, match=message.replace("[", r"\[").replace("(", r"\(")):
        benchcases.load(tmp_path)
