"""The seeded-bug corpus without a GPU: every case is well formed; the matcher is strict."""

import json

import pytest

from kprof import spec as spec_mod
from kprof.commands import cli
from kprof.corpus import cases
from kprof.errors import SpecError
from kprof.findings import Access, Finding
from kprof.spec import catalog
from kprof.tools.sanitizers import checkers

CORPUS = cases.load_all(catalog.group("case"))


def test_at_least_twenty_cases_covering_every_tool():
    assert len(CORPUS) >= 20
    assert {c.expect.tool for c in CORPUS} == set(checkers.spec_names())


@pytest.mark.parametrize("case", CORPUS, ids=lambda c: c.name)
def test_case_is_well_formed(case):
    source = case.spec.source.read_text().splitlines()
    assert "// BUG" in source[case.expect.line - 1]
    twin = case.spec.twin.read_text()
    assert "// BUG" not in twin and twin != case.spec.source.read_text()
    assert case.spec.twin_spec().name == f"{case.name}_fixed"
    assert catalog.load(f"{case.name}_fixed").source == case.spec.twin


def finding(case, **kw):
    base = dict(tool=case.expect.tool, kind=case.expect.kind, kernel=case.spec.entry,
                file=str(case.spec.source),
                line=case.expect.line, thread=None, block=None, count=1, message="m",
                buffer=case.expect.buffer)
    base.update(kw)
    return Finding(**base)


def test_matcher_is_strict():
    case = next(c for c in CORPUS if c.name == "tiled_matmul_no_bounds")
    assert cases.matches(case, finding(case))
    assert not cases.matches(case, finding(case, line=case.expect.line + 1))
    assert not cases.matches(case, finding(case, kind="out-of-bounds-read"))
    assert not cases.matches(case, finding(case, tool="initcheck"))
    assert not cases.matches(case, finding(case, buffer="A"))
    assert not cases.matches(case, finding(case, kernel="other"))


def test_a_finding_without_a_line_matches_on_kind_tool_and_buffer_and_one_with_a_line_must_have_the_bugs():
    case = next(c for c in CORPUS if c.name == "unwritten_output")  # values: no source line
    assert cases.matches(case, finding(case, line=None))
    assert not cases.matches(case, finding(case, line=case.expect.line + 3)), "a values finding with a line must match it"


def test_the_matrix_counts_caught_cases_known_misses_and_twins_clean_under_every_tool():
    from kprof.results import render_sanitize
    from kprof.tools.sanitizers.toolrun import ToolResult

    def result(case, caught, twin_statuses):
        bug = ToolResult(case.expect.tool, "findings" if caught else "clean",
                         [finding(case)] if caught else [], 1.0)
        twins = tuple(ToolResult(t, s, [], 0.5) for t, s in twin_statuses.items())
        return cases.CaseResult(case, bug, twins)

    clean = dict.fromkeys(checkers.spec_names(), "clean")
    known = next(c for c in CORPUS if not c.expect.caught)
    others = [c for c in CORPUS if c.expect.caught][:3]
    results = [result(others[0], True, clean), result(others[1], True, clean),
               result(known, False, clean),
               result(others[2], False, dict(clean, racecheck="findings"))]
    assert cases.tally(results) == ("2 caught, 1 known miss, 3 of 4 twins clean under all "
                                    f"{len(clean)} tools; MISSED: {others[2].name}")
    text = render_sanitize.cases_matrix(results)
    assert "known miss" in text and "NO (racecheck: findings)" in text
    assert (results[2].ok and not results[3].ok
            and results[3].to_dict()["twin_status"]["racecheck"] == "findings")


def test_a_case_a_newer_sanitizer_checks_is_counted_apart_under_an_older_one_and_a_miss_under_its_own():
    from kprof.results import render_sanitize
    from kprof.tools.sanitizers.toolrun import ToolResult

    newer = [c for c in CORPUS if c.expect.since]
    assert {c.name for c in newer} >= {"missing_proxy_fence", "mbarrier_double_init"}
    assert all(c.expect.since == "2026.4" and c.expect.tool != "values" for c in newer)
    case = next(c for c in newer if c.name == "missing_proxy_fence")
    clean = tuple(ToolResult(t, "clean", [], 0.5, version="2025.3.1")
                  for t in checkers.spec_names())

    def under(version, caught=False):
        bug = ToolResult(case.expect.tool, "findings" if caught else "clean",
                         [finding(case)] if caught else [], 1.0, version=version)
        return cases.CaseResult(case, bug, clean)

    old, new, unknown = under("2025.3.1"), under("2026.4.0"), under("")
    # a tool that does not say its version counts as the older
    assert old.unseen and old.ok and unknown.unseen
    assert not new.unseen and not new.ok  # the version that checks it and missed it: a miss
    assert under("2025.3.1", caught=True).ok and not under("2025.3.1", caught=True).unseen
    assert cases.tally([old]) == ("0 caught, 0 known misses, 1 of 1 twins clean under all 5 tools; "
                                  "1 need compute-sanitizer 2026.4 (this is 2025.3.1): "
                                  "missing_proxy_fence")
    assert cases.tally([new]).endswith("MISSED: missing_proxy_fence")
    assert "needs 2026.4 (2025.3.1 ran)" in render_sanitize.cases_matrix([old])
    row = old.to_dict()
    assert ((row["since"], row["unseen"], row["version"], row["ok"]) == ("2026.4", True, "2025.3.1", True))


def test_race_matches_either_access_line():
    case = next(c for c in CORPUS if c.name == "missing_sync_war")
    other = Access(str(case.spec.source), case.expect.line, "write")
    assert cases.matches(case, finding(case, line=12, other=other))


def test_cases_list_json_needs_no_gpu(capsys):
    assert cli.main(["cases", "--list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == len(CORPUS)
    row = next(r for r in rows if r["name"] == "stencil_halo")
    assert ((row["tool"], row["kind"], row["buffer"], row["caught"]) == ("memcheck", "out-of-bounds-read", "x", True))
    assert cli.main(["cases", "--list"]) == 0
    assert "stencil_halo" in capsys.readouterr().out


def write_case(tmp_path, expect, bug_lines=1, twin=True):
    (tmp_path / "c.cu").write_text("extern \"C\" __global__ void c(float* a) {\n" + "  a[0] = 1; // BUG\n" * bug_lines + "}\n")
    (tmp_path / "c_fixed.cu").write_text("extern \"C\" __global__ void c(float* a) { a[0] = 1; }\n")
    text = ("args: [{name: a, buffer: float32, shape: [1], role: out}]\nlaunch: {grid: [1], block: "
            "[1]}\nreference: {a: 1}\n" + ("twin: c_fixed.cu\n" if twin else "") + f"expect: {json.dumps(expect)}\n")
    (tmp_path / "c.yaml").write_text(text)
    return spec_mod.load(tmp_path / "c.yaml")


@pytest.mark.parametrize(
    "expect, kwargs, message",
    [
        ({"tool": "helgrind", "kind": "leak"}, {}, "expect.tool"),
        ({"tool": "memcheck", "kind": "oops"}, {}, "expect.kind"),
        ({"tool": "memcheck", "kind": "leak", "colour": 1}, {}, "expect.colour"),
        ({"tool": "memcheck", "kind": "leak"}, {"bug_lines": 2}, "exactly one line with // BUG"),
        ({"tool": "memcheck", "kind": "leak"}, {"twin": False}, "twin"),
        ({"tool": "memcheck", "kind": "leak", "caught": False}, {}, "caught: false needs why"),
        ({"tool": "memcheck", "kind": "leak", "buffer": "zz"}, {}, "expect.buffer"),
        ({"tool": "memcheck", "kind": "leak", "since": 2026.4}, {}, "expect.since"),
        ({"tool": "memcheck", "kind": "leak", "since": "soon"}, {}, "expect.since"),
        ({"tool": "values", "kind": "wrong-result", "since": "2026.4"}, {}, "kprof's own detector"),
    ],
)
def test_invalid_cases(tmp_path, expect, kwargs, message):
    with pytest.raises(SpecError, match=message):
        cases.load_case(write_case(tmp_path, expect, **kwargs))


def test_the_corpus_runs_in_few_children_and_the_values_runs_alone_after(monkeypatch, capsys):
    """kprof cases runs each tool over every twin in one child, each buggy kernel under its tool
    alone, side by side; then the values detector's runs (it scrubs shared memory before each; every
    values bug and every twin) in one child, after everything else and alone."""
    import threading
    import time

    from kprof.commands import api, pipeline
    from kprof.tools.sanitizers import checkers
    from kprof.tools.sanitizers.toolrun import ToolResult

    lock = threading.Lock()
    running: list[str] = []
    # (tool, its jobs, what else was running)
    log: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []

    def fake_run_many(jobs, tool, settings):
        with lock:
            log.append((tool, tuple(jobs), tuple(running)))
            running.append(tool)
        time.sleep(0.002)
        with lock:
            running.remove(tool)
        return [ToolResult(tool, "clean", [], 0.0) for _ in jobs]

    monkeypatch.setattr(api, "require_gpu", lambda tool: None)
    monkeypatch.setattr(pipeline, "scrubber", lambda arch: (None, ""))
    monkeypatch.setattr(pipeline, "case_jobs", lambda case,
                        arch: (f"{case.name}:bug", f"{case.name}:twin"))
    monkeypatch.setattr(checkers, "run_many", fake_run_many)
    names = ["off_by_one", "missing_sync_raw", "global_race", "uninit_shared_read"]
    code = cli.main(["cases", *names, "--jobs", "4", "--json"])
    rows = json.loads(capsys.readouterr().out)
    # nothing found: the bugs count as missed
    assert [r["name"] for r in rows] == names and code == 1
    assert all(set(r["twin_status"].values()) == {"clean"}
               and len(r["twin_status"]) == len(checkers.spec_names()) for r in rows)
    twins = tuple(f"{n}:twin" for n in names)
    values = ("off_by_one:twin", "missing_sync_raw:twin", "global_race:bug", "global_race:twin",
              "uninit_shared_read:bug", "uninit_shared_read:twin")
    assert sorted((tool, jobs) for tool, jobs, _ in log) == sorted(
        [(t, twins) for t in checkers.spec_names() if t != "values"] +
        [("memcheck", ("off_by_one:bug",)), ("racecheck", ("missing_sync_raw:bug",)),
         ("values", values)])
    assert log[-1][:1] == ("values",) and log[-1][2] == ()  # last, and alone


@pytest.mark.parametrize("width, parts",
                         [(1, 1), (4, 1), (8, 2), (12, 3), (1000, len(catalog.group("case")))])
def test_the_plan_splits_each_tools_twins_to_fill_the_gpus_slots(width, parts):
    corpus = cases.load_all(catalog.group("case"))
    shared, alone = cases.plan(corpus, width)
    sanitizers = [n for n in checkers.spec_names() if not checkers.get(n).needs.alone]
    twins = [t for t in shared if t.what == "twins"]
    assert shared[:len(twins)] == twins  # the longest first
    for tool in sanitizers:  # every twin exactly once under every sanitizer, in `parts` children
        mine = [t for t in twins if t.tool == tool]
        assert (len(mine) == parts
                and [c.name for t in mine for c in t.cases] == [c.name for c in corpus])
    bugs = [t for t in shared if t.what == "bug"]
    assert sorted(t.cases[0].name for t in bugs) == sorted(c.name for c in corpus
                                                           if c.expect.tool != "values")
    assert [(t.what, t.tool, t.cases) for t in alone] == [("alone", "values", tuple(corpus))]


def test_kprof_run_cases_is_the_api_function_the_command_prints(monkeypatch):
    """kprof.run_cases() from Python: one CaseResult per case, the progress made from the number of
    children, stepped as each ends and closed; the CLI prints the same results."""
    import kprof
    from kprof.commands import api, pipeline
    from kprof.tools.sanitizers import checkers
    from kprof.tools.sanitizers.toolrun import ToolResult

    monkeypatch.setattr(api, "require_gpu", lambda tool: None)
    monkeypatch.setattr(pipeline, "scrubber", lambda arch: (None, ""))
    monkeypatch.setattr(pipeline, "case_jobs", lambda case,
                        arch: (f"{case.name}:bug", f"{case.name}:twin"))
    monkeypatch.setattr(checkers, "run_many", lambda jobs, tool,
                        settings: [ToolResult(tool, "clean", [], 0.0) for _ in jobs])
    made = []

    class Steps:
        def __init__(self, total):
            self.total, self.lines, self.closed = total, [], False
            made.append(self)

        def step(self, text):
            self.lines.append(text)

        def close(self):
            self.closed = True

    results = kprof.run_cases(["off_by_one", "global_race"], jobs=2, progress=Steps)
    assert ([r.case.name for r in results] == ["off_by_one", "global_race"]
            and not any(r.ok for r in results))
    (steps,) = made
    assert (steps.closed and len(steps.lines) == steps.total
            and steps.lines[-1].startswith("values alone (2)"))


def test_children_run_side_by_side_share_the_hosts_threads(monkeypatch):
    """kprof's children at once (mutants, cases, the tools of one run) each get the CPUs over their
    number for BLAS and the verdict, unless the user set it; the variables go after."""
    import os

    from kprof import parallel

    for name in parallel.THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the user's
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    seen = parallel.map_jobs(lambda i: (os.environ.get("OPENBLAS_NUM_THREADS"),
                                        os.environ.get("OMP_NUM_THREADS")),
                             range(8), 4)
    assert seen == [("4", "3")] * 8
    assert "OPENBLAS_NUM_THREADS" not in os.environ and os.environ["OMP_NUM_THREADS"] == "3"


def test_the_cases_a_gpu_is_too_old_for_are_named_and_left_out():
    """kprof cases on an sm_80 GPU leaves out the Hopper cases (sm_90: bulk copies, TMA), on a
    Turing one the ldmatrix case too, each with its reason; an H200 runs them all."""
    from kprof.commands import corpora

    assert corpora.cases_beyond("sm_90") == []
    hopper = {"missing_mbarrier_wait", "missing_proxy_fence", "mbarrier_double_init",
              "tma_box_overflow"}
    assert {n for n, _ in corpora.cases_beyond("sm_80")} == hopper
    beyond = dict(corpora.cases_beyond("sm_75"))
    assert set(beyond) == hopper | {"ldmatrix_wrong_layout"}
    assert ("needs sm_80 or newer (mma.sync on bfloat16 and ldmatrix)" in beyond["ldmatrix_wrong_layout"])


def test_naming_a_twin_or_a_kernel_as_a_case_says_which_case_to_name(capsys):
    assert cli.main(["cases", "off_by_one_fixed", "--list"]) == 2
    assert ("off_by_one_fixed is the fixed twin of case off_by_one: kprof cases off_by_one runs "
            "both" in capsys.readouterr().err)
    assert cli.main(["cases", "vector_add", "--list"]) == 2
    assert "vector_add is not a sanitizer case" in capsys.readouterr().err
