"""The checker protocol and its one registry (kprof.tools.sanitizers.checker,
kprof.tools.sanitizers.checkers): what every command that runs checks iterates, and what a new
checker (one class, one registry line) reaches."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from kprof.commands import cli
from kprof.errors import UsageError
from kprof.findings import Finding
from kprof.tools.sanitizers import checkers
from kprof.tools.sanitizers.checker import Checker, Needs, Program, Settings, SuiteChild
from kprof.tools.sanitizers.toolrun import ToolResult


def _with(**needs: bool) -> list[str]:
    """The registry's names, in its order, of the checkers whose needs are these."""
    return [c.name for c in checkers.REGISTRY
            if all(getattr(c.needs, k) == v for k, v in needs.items())]


def test_every_list_of_checkers_is_the_registry_filtered_by_what_each_needs():
    """The lists every command iterates come from the registry and each checker's needs, in its
    order: a new checker is one class and one line, and no list here names it."""
    assert (checkers.names() == tuple(c.name for c in checkers.REGISTRY)
            and len(set(checkers.names())) == len(checkers.REGISTRY))
    assert list(checkers.spec_names()) == _with(for_specs=True)
    assert list(checkers.sanitizers()) == _with(sanitizer=True)
    assert list(checkers.for_tests()) == [c.name for c in checkers.REGISTRY
                                          if not c.needs.not_for_tests]
    assert list(checkers.alone()) == _with(alone=True)
    assert all(isinstance(c, Checker) for c in checkers.REGISTRY)


def test_the_shipped_checkers_need_what_their_runs_need():
    """What each shipped checker is: the four compute-sanitizer tools, memcheck's first finding
    stopping the child, the values detector alone on the GPU and only when named for a program, the
    nan watcher for programs only."""
    need = {c.name: c.needs for c in checkers.REGISTRY}
    assert {"memcheck", "racecheck", "initcheck", "synccheck"} <= set(_with(sanitizer=True))
    assert need["memcheck"].stops and need["values"].alone and not need["values"].in_all_programs
    assert not need["nan"].for_specs and need["nan"].not_for_tests and need["values"].not_for_tests


@pytest.mark.parametrize("tools, kw, want", [
    ("all", {}, lambda: _with(for_specs=True)),
    ("all", {"program": True}, lambda: _with(in_all_programs=True)),  # values only when named
    (["values"], {"program": True}, lambda: ["values"]),
    (["nan"], {"program": True}, lambda: ["nan"]),
    ("all", {"tests": True}, lambda: list(checkers.for_tests())),
    (["racecheck", "memcheck"], {"tests": True}, lambda: ["racecheck", "memcheck"]),
])  # fmt: skip
def test_choose_resolves_all_per_target(tools, kw, want):
    assert checkers.choose(tools, **kw) == want()


@pytest.mark.parametrize("tools, kw, says", [
    (["valuez"], {}, f"unknown tool 'valuez': use one of {', '.join(checkers.names())} or all"),
    (["nan"], {}, "--tool nan checks programs only (kprof sanitize --tool nan -- python train.py)"),
    (["nan"], {"tests": True}, "the nan checker watches a whole program once"),
    (["values"], {"tests": True},
     "runs kprof's own launches of a spec, or a whole program again and again"),
    ([], {"tests": True}, f"name at least one tool: {', '.join(checkers.for_tests())} or all"),
])  # fmt: skip
def test_choose_refuses_in_one_line(tools, kw, says):
    with pytest.raises(UsageError, match="^[^\n]*$") as info:
        checkers.choose(tools, **kw)
    assert says in str(info.value)


def test_order_puts_the_named_first_and_keeps_every_other():
    rest = tuple(n for n in checkers.spec_names() if n not in ("values", "memcheck"))
    assert checkers.order(("values", "memcheck")) == ("values", "memcheck", *rest)
    with pytest.raises(UsageError):
        checkers.order(("nope",))


def test_explain_marks_the_findings_of_an_effects_checker_under_the_memory_error_that_caused_them():
    oob = Finding("memcheck", "out-of-bounds-write", "k", "k.cu", 9, thread=None, block=None,
                  count=1, message="past C", buffer="C")
    race = Finding("values", "race", "k", None, None, thread=None, block=None, count=1,
                   message="differs", buffer="C")
    other = Finding("values", "race", "k", None, None, thread=None, block=None, count=1,
                    message="differs", buffer="D")
    out = checkers.explain([ToolResult("memcheck", "findings", [oob], 1.0),
                            ToolResult("values", "findings", [race, other], 1.0)])
    assert "memcheck out-of-bounds-write" in out[1].findings[0].extra.explained_by
    assert out[1].findings[1].extra.explained_by is None and out[0].findings == [oob]


_CANARY_NEEDS = Needs(sanitizer=False, alone=True, in_all_programs=False,
                      not_for_tests="the canary is not for tests")


@dataclass(frozen=True)
class _Canary:
    """A checker of a test's own: what a new checker is (a class with these members), added by one
    line."""

    name: str = "canary"
    summary: str = "a test's own checker"
    needs: Needs = _CANARY_NEEDS

    def check_job(self, job, settings):
        return ToolResult(self.name, "clean", [], 0.0, f"timeout {settings.timeout:g}")

    def check_jobs(self, jobs, settings):
        return [self.check_job(j, settings) for j in jobs]

    def check_program(self, program, settings):
        return ToolResult(self.name, "clean", [], 0.0, " ".join(program.cmd))

    def check_suite_child(self, argv, child):
        from kprof import proc

        SUITE_CHILDREN.append(argv)
        # no tool: the tests run plain
        return proc.run(argv, env=child.env, cwd=child.cwd, watch=child.watch), ""


SUITE_CHILDREN: list = []


@pytest.fixture
def canary(monkeypatch):
    monkeypatch.setattr(checkers, "REGISTRY", (*checkers.REGISTRY, _Canary()))
    return checkers.get("canary")


def test_a_new_checker_is_one_registry_line_that_every_user_of_the_registry_sees(canary, capsys):
    """The choices and ``all``, the corpus's plan (a checker that needs the GPU alone gets its own
    task), kprof mutants' checks after the verdict, and kprof sanitize --list-tools."""
    from kprof.corpus import cases, mutants
    from kprof.spec import catalog

    assert isinstance(canary, Checker)
    assert (checkers.choose("all")[-1] == "canary"
            and "canary" not in checkers.choose("all", program=True))
    assert checkers.choose(["canary"], program=True) == ["canary"]
    with pytest.raises(UsageError, match="the canary is not for tests; for tests use memcheck"):
        checkers.choose(["canary"], tests=True)
    corpus = cases.load_all([catalog.load("off_by_one")])
    _, alone = cases.plan(corpus)
    assert [(t.tool, t.what) for t in alone] == [("values", "alone"), ("canary", "alone")]
    assert mutants.tools()[-1] == "canary"
    assert (checkers.run_program("canary", Program(("python", "x.py")), Settings()).message == "python x.py")
    assert ([r.message for r in checkers.run_many(["job"], "canary", Settings(timeout=7))] == ["timeout 7"])
    assert cli.main(["sanitize", "--list-tools", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows][-1] == "canary" and rows[-1]["needs"]["alone"] is True


def test_list_tools_names_each_checker_and_how_it_runs(capsys):
    assert cli.main(["sanitize", "--list-tools"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["TOOL", "FINDS", "RUNS"]
    assert ("values" in out
            and "kprof's own (no sanitizer), the GPU to itself, not for pytest tests" in out)
    assert "memcheck" in out and "out-of-bounds" in out


def test_a_case_must_expect_a_registered_checker(tmp_path):
    """A corpus case's expect.tool is checked against the registry, in one line naming the
    choices."""
    from kprof.corpus import cases
    from kprof.errors import SpecError
    from kprof.spec import catalog

    spec = catalog.load("off_by_one")
    from dataclasses import replace

    bad = replace(spec, expect={**spec.expect, "tool": "valgrind"})
    with pytest.raises(SpecError,
                       match="'valgrind' must be one of memcheck, racecheck, "
                             "initcheck, synccheck, values"):
        cases.load_case(bad)


def test_the_program_run_goes_through_each_checkers_own_program_check(monkeypatch):
    """kprof sanitize -- CMD: every chosen checker's check_program, the launch count beside the
    sanitizers'."""
    from kprof.commands import api
    from kprof.tools.programs import launchcount

    seen = []

    def fake(name, program, settings):
        seen.append((name, program.pools_off, settings.padding))
        return ToolResult(name, "clean", [], 0.0)

    monkeypatch.setattr(api, "require_gpu", lambda tool: None)
    monkeypatch.setattr(checkers, "run_program", fake)
    monkeypatch.setattr(launchcount, "count", lambda cmd, **kw: None)
    report = api.sanitize(["python3", "-c", "pass"], ["memcheck", "values"], padding=64, jobs=1)
    assert sorted(seen) == [("memcheck", True, 64), ("values", True, 64)] and report.clean


def test_a_new_checker_reaches_a_suites_children_through_the_registry(monkeypatch, tmp_path):
    """pytest --kprof-sanitize asked compute-sanitizer by name for every child (issue 70): a checker
    of the registry that can check tests is handed each pytest child, and its tests get their
    verdicts from it."""
    import os
    import sys

    from kprof import proc
    from kprof.tools.suites import suite, suiteverdict

    monkeypatch.setattr(checkers, "REGISTRY",
                        (*checkers.REGISTRY, _Canary(name="canary2", needs=Needs(sanitizer=False))))
    (tmp_path / "test_x.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    assert 1 + "
                                        "1 == 2\n")
    tests = [suiteverdict.Test(f"test_x.py::test_{n}", str(tmp_path / "test_x.py"), f"test_{n}")
             for n in "ab"]
    SUITE_CHILDREN.clear()
    verdicts = suite.run_tool(tests, "canary2", timeout=60,
                              env=dict(proc.child_env(), PYTHONPATH=os.pathsep.join(sys.path)),
                              cwd=tmp_path)
    assert (len(SUITE_CHILDREN) == 1
            and "kprof.tools.suites.pytest_child" in " ".join(SUITE_CHILDREN[0]))
    assert {n: [r.status for r in v.results] for n, v in verdicts.items()} == {
        "test_x.py::test_a": ["clean"], "test_x.py::test_b": ["clean"]}


def test_the_values_detector_says_why_it_checks_no_suite():
    with pytest.raises(UsageError, match="--kprof-sanitize=values: the values detector runs"):
        checkers.get("values").check_suite_child(["python"], SuiteChild({}, "."))
