"""The performance corpus (kprof/corpus/perfcases.py): the judge, the expectations, kprof cases
--perf on a
fake device, an interrupt."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from diagnosed import H200, profile_of

from kprof import spec as spec_mod
from kprof.commands import pipeline
from kprof.corpus import perfcases
from kprof.diagnosis.model import Cause, Diagnosis, Gain, Line
from kprof.spec import catalog


def test_judge_and_the_corpus():
    corpus = {c.name: c for c in perfcases.load_all(catalog.group("perf"))}
    case = corpus["copy_uncoalesced"]
    cause = Cause("uncoalesced", "t", (), "c", Gain(7.0, "b"), line=Line(str(case.spec.source), 6))
    d = Diagnosis("copy_uncoalesced", "counters", "DRAM", {}, 10.0, seconds=1e-4, causes=[cause])
    r = perfcases.judge(case, d, 6.4, control=False, launch_line=11, entry_line=3)
    assert r.ok and r.cause_right and r.line_right and r.estimate_right
    assert not perfcases.judge(case, d, 3.0, control=False, launch_line=11, entry_line=3).estimate_right  # 2.3x off
    control = corpus["fp64_memory"]
    fp64 = Cause("fp64", "t", (), "c", Gain(1.5, "b"))
    assert not perfcases.judge(control,
                               Diagnosis("fp64_memory", "counters", "DRAM", {}, 1.0, seconds=1e-4, causes=[fp64]), 1.0,
                               control=True, launch_line=0, entry_line=0).ok
    assert perfcases.judge(control,
                           Diagnosis("fp64_memory", "counters", "DRAM", {}, 1.0, seconds=1e-4, causes=[]), 1.0,
                           control=True, launch_line=0, entry_line=0).ok
    assert perfcases.control_here(control, 0.5) and not perfcases.control_here(control, 1 / 64)


def test_perf_case_expectations_are_checked(tmp_path):
    from kprof.errors import SpecError

    src = Path(catalog.load("copy_uncoalesced").path)
    for field_text, match in (("{cause: nonsense}", "not a diagnosis rule"),
                              ("{cause: uncoalesced, line: top}", "line"),
                              ("{cause: uncoalesced, unless: always}", "known conditions"),
                              ("{cause: uncoalesced, colour: red}", "unknown field")):
        text = src.read_text().replace(src.read_text().splitlines()[2], f"expect: {field_text}")
        (tmp_path / "copy_uncoalesced.yaml").write_text(text)
        for f in ("copy_uncoalesced.cu", "copy_uncoalesced_fixed.cu"):
            (tmp_path / f).write_text((src.parent / f).read_text())
        with pytest.raises(SpecError, match=match):
            perfcases.load_case(spec_mod.load(tmp_path / "copy_uncoalesced.yaml"))


def test_cases_perf_list(capsys):
    from kprof.commands import cli

    assert cli.main(["cases", "--perf", "--list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) >= 15 and {"name": "tail_wave", "cause": "tail-wave", "line": "launch"}.items() <= \
        next(r for r in rows if r["name"] == "tail_wave").items()
    assert cli.main(["cases", "--perf", "--bench"]) == 2


@pytest.mark.nvcc
def test_cases_perf_end_to_end_on_a_fake_device(ptx_compiler, monkeypatch, data_dir):
    """kprof cases --perf's orchestration: bench (the case and its twin), ncu (here a fake with the
    counters a GPU gives an uncoalesced copy), one timed run, the tries, the judge, ncu's rules
    beside it."""
    from kprof.commands import api, corpora
    from kprof.diagnosis import stage
    from kprof.tools.nsight import ncu

    real_prepare = pipeline.prepare
    monkeypatch.setattr(pipeline, "prepare", lambda spec, sizes, arch=None,
                        **k: real_prepare(spec, sizes, arch="sm_90"))
    monkeypatch.setattr(api, "require_gpu", lambda tool: None)
    times = {"copy_uncoalesced": 347e-6, "copy_uncoalesced_fixed": 54.4e-6, "tail_wave": 1.0e-3,
             "tail_wave_fixed": 0.56e-3}

    def bench(names, params=(), **kw):
        if params:  # a try: PER=8 (the original), then the values tried
            define, values = params[0].split("=")
            return SimpleNamespace(points=[SimpleNamespace(kernel=names[0], status="ok",
                                                           params={define: v},
                                                           summary=SimpleNamespace(median=1.0e-3 * int(v) / 8 + 0.5e-3), message="")
                                           for v in values.split(",")], interrupted=False)
        return SimpleNamespace(points=[SimpleNamespace(kernel=n, status="ok", params={},
                                                       summary=SimpleNamespace(median=times[n]),
                                                       message="", call_kernels=((n, times[n]),)) for n in names],
                               interrupted=False)

    def profile(prepared, settings):
        report_dir = settings.report_dir
        if report_dir is not None:  # ncu's full set leaves its report there
            (report_dir / f"{prepared.resolved.spec.name}.ncu-rep").write_bytes(b"")
        p = profile_of(prepared, times[prepared.resolved.spec.name],
                       global_load_sectors_per_request=32.0,
                     global_store_sectors_per_request=32.0,
                     page={6: {"samples": 90, "global_excess": 7000}})
        if prepared.resolved.spec.name == "tail_wave":
            p = p.with_metrics(global_load_sectors_per_request=4.0,
                               global_store_sectors_per_request=4.0)
        return [p]

    monkeypatch.setattr(api, "run_bench", bench)
    monkeypatch.setattr(stage, "profile_one", profile)
    monkeypatch.setattr(stage, "_timed", lambda prepared,
                        timeout: SimpleNamespace(device=H200, time_ms=None))
    monkeypatch.setattr(ncu, "rules_of", lambda report: ncu.parse_rules(
        (data_dir / "ncu" / "tiled_matmul.ncu_details.txt").read_text()))
    corpus = [c for c in perfcases.load_all(catalog.group("perf"))
              if c.name in ("copy_uncoalesced", "tail_wave")]
    results = corpora.run_perf_cases(corpus)
    by = {r.case: r for r in results}
    copy = by["copy_uncoalesced"]
    assert copy.ok and copy.first == "uncoalesced" and copy.line == "copy_uncoalesced.cu:6"
    assert (copy.measured == pytest.approx(347 / 54.4) and copy.estimate == 8.0
            and copy.estimate_right)
    # the largest global estimate
    assert copy.ncu_rule == "LaunchConfiguration" and copy.ncu_right is False
    assert (copy.ncu_rules[0]["rule"] == "LaunchConfiguration"
            and copy.ncu_rules[-1]["type"] == "local")
    tail = by["tail_wave"]
    assert tail.first == "tail-wave" and tail.line_right and tail.tried == "PER=1"
    # the original's time over PER=1's, one run
    assert tail.try_gain == pytest.approx(1.5e-3 / 0.625e-3)
    t = perfcases.tally(results)
    assert t["cause_right"] == 2 and t["confirmed_by_try"] == 1 and t["ncu_judged"] == 2
    from kprof.results import render_profile

    assert ("Nsight Compute's largest estimate names the right cause on 0 of 2" in render_profile.perf_cases_table(results, t))
    json.dumps([r.to_dict() for r in results])


def test_an_interrupt_ends_the_perf_corpus_with_the_cases_judged_and_says_so(monkeypatch):
    """A SIGTERM inside a case's bench was taken by that bench alone: the corpus went on profiling
    for minutes and a job's time limit killed it with nothing written (on an H200). The interrupt
    now ends the corpus."""
    from kprof.corpus import perfcases

    calls = []

    def run_case(case, *, bench, diagnosed):
        calls.append(case)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return f"judged {case}"

    monkeypatch.setattr(perfcases, "run_case", run_case)
    stopped = []
    out = perfcases.run_all(["a", "b", "c"], bench=None, diagnosed=None,
                            interrupted=lambda: stopped.append(1))
    assert out == ["judged a"] and stopped == [1] and calls == ["a", "b"]
