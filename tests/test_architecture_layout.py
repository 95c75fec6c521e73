"""The house rules of where things are said, checked on the source: the tests laid out like the
package, a module with its test file, and docs/architecture.md naming only what is where it says and
saying what the code does."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from house import GRAPH, MODULES, PKG, STAGES, _parsed, _sources

from kprof.tools.sanitizers import checkers

# The modules that had no test file of their own when the tests took the package's layout, each with
# the test file that covers it. A module not listed here needs tests/<stage>/test_<module>.py (or,
# at the top of kprof/, tests/test_<module>.py): a new module comes with its test file.
COVERED_ELSEWHERE = {
    "__main__": "commands/test_cli.py", "annotate": "tools/programs/test_program.py",
    "errors": "test_architecture_records.py", "outputs": "test_inputs.py",
    "findings": "tools/programs/test_program.py", "inputs": "test_hostile.py",
    "parallel": "corpus/test_cases.py", "stats": "measure/test_bench.py",
    "telemetry": "measure/test_bench.py",
    "units": "measure/test_bench.py", "version": "test_architecture_records.py",
    "spec.catalog": "spec/test_loader.py", "spec.expected": "spec/test_loader.py",
    "spec.safeexpr": "test_fuzz.py",
    "spec.schema": "spec/test_loader.py", "spec.sweep": "measure/test_bench.py",
    "build.cusource": "build/test_shake.py", "build.nvrtc": "build/test_build.py",
    "launch.job": "child/test_runner.py",
    "child.cublas": "child/test_gpu_kernels.py", "child.device": "test_op.py",
    "child.framework": "child/test_runner.py",
    "child.hostdata": "child/test_runner.py", "child.timing": "child/test_runner.py",
    "child.workspace": "child/test_runner.py",
    "tools.programs.addr2line": "tools/programs/test_hostframes.py",
    "tools.programs.allocators": "tools/programs/test_program.py",
    "tools.sanitizers.checker": "tools/sanitizers/test_checkers.py",
    "demangle": "tools/programs/test_program.py", "tools.machine.doctor": "commands/test_cli.py",
    "tools.programs.exitcode": "tools/programs/test_program.py",
    "tools.programs.launchcount": "tools/programs/test_program.py",
    "tools.nsight.ncu": "measure/test_profiling.py",
    "tools.suites.pytest_child": "tools/suites/test_suite.py",
    "tools.sanitizers.toolrun": "tools/programs/test_program.py",
    "tools.sanitizers.values": "launch/test_batch.py",
    "diagnosis.facts": "diagnosis/test_gather.py",
    "diagnosis.program": "diagnosis/test_program_ranking.py",
    "diagnosis.rulekit": "diagnosis/test_rules.py",
    "diagnosis.rules_memory": "diagnosis/test_rules.py",
    "corpus.mutation": "corpus/test_mutants.py",
    "results.benchrun": "measure/test_bench.py", "results.plot": "measure/test_bench.py",
    "results.render": "measure/test_bench.py", "results.reports": "measure/test_bench.py",
    "commands.api": "corpus/test_cases.py", "commands.commands": "commands/test_cli.py",
    "commands.streams": "commands/test_cli.py",
    "commands.corpora": "corpus/test_cases.py", "commands.options": "test_architecture_records.py",
    "commands.pipeline": "measure/test_bench.py", "commands.scaffold": "test_hostile.py",
}  # fmt: skip

TESTS = Path(__file__).resolve().parent

# test files at the top of tests/: the house rules, the front doors, what crosses every stage, the
# scripts
TOP_TESTS = {"test_architecture_layers", "test_architecture_sizes", "test_architecture_records",
             "test_architecture_registries", "test_architecture_layout", "test_import", "test_fuzz",
             "test_hostile", "test_hardening", "test_op", "test_gpu_op",
             "test_proc", "test_pytest_plugin", "test_gpu_check", "test_gpu_summary_script",
             "test_tolerances_script",
             "test_inputs", "test_packaging", "test_exit_codes_script", "test_smoke_script",
             "test_interrupts_script", "test_conftest", "test_public_corpus_script"}

# test files in a stage's folder that are not named for one module, and why they are there
STAGE_EXTRAS = {
    "child/test_gpu_kernels.py",  # every shipped kernel through the child on a GPU
    "launch/test_batch.py",  # several jobs in one child: the launch's batch and each checker's
    # a user's program: allocators, exit code, launch site
    "tools/programs/test_program.py", "tools/programs/test_gpu_programs.py",
    # the tools' reports on users' programs, recorded on a GPU
    "tools/programs/test_recorded_programs.py",
    "results/test_results_index.py",  # docs/results/README.md, the one index of measured numbers
    # diagnosis/program.py's, named apart from tools/programs/test_program.py
    "diagnosis/test_program_ranking.py",
}


def _module_names() -> dict[str, str]:
    """Every module kprof has a test file for, by its dotted name (spec.loader; errors): stage
    folders' fronts (__init__.py) and the folders loaded into programs left out."""
    return {name: name for name, path in MODULES.items() if path.name != "__init__.py"}


def test_the_tests_are_laid_out_like_the_package():
    """tests/<stage>/test_<module>.py: each folder of tests/ is a stage of kprof's, each file in it
    is named for a module of that stage (test_gpu_<module>.py for its GPU tests, marked gpu), and
    the top holds only the house rules, the front doors and what crosses every stage."""
    folders = {d.name for d in TESTS.iterdir() if d.is_dir()
               and d.name not in ("data", "__pycache__")}
    assert folders <= set(STAGES), folders - set(STAGES)
    top = {p.stem for p in TESTS.glob("test_*.py")}
    assert top <= TOP_TESTS, f"test files at the top of tests/ that belong in a stage's folder: {sorted(top - TOP_TESTS)}"
    modules = _module_names()
    stray = []
    for path in sorted(p for p in TESTS.glob("*/**/test_*.py")
                       if "data" not in p.relative_to(TESTS).parts):
        rel = str(path.relative_to(TESTS))
        # tools/sanitizers/ holds tools.sanitizers' tests
        folder = ".".join(path.parent.relative_to(TESTS).parts)
        module = f"{folder}.{path.stem.removeprefix('test_').removeprefix('gpu_')}"
        if module not in modules and rel not in STAGE_EXTRAS:
            stray.append(rel)
        if path.stem.startswith("test_gpu_"):
            assert "pytest.mark.gpu" in path.read_text(), f"{rel}: a GPU test file whose tests are not marked gpu"
    assert not stray, f"test files not named for a module of their stage: {stray}"


def test_a_module_comes_with_its_test_file():
    missing = []
    for name in _module_names():
        stage, _, mod = name.rpartition(".")
        own = TESTS / stage.replace(".", "/") / f"test_{mod}.py" if stage else TESTS / f"test_{mod}.py"
        if not own.is_file() and name not in COVERED_ELSEWHERE:
            missing.append(f"kprof/{name.replace('.', '/')}.py -> {own.relative_to(TESTS.parent)}")
    assert not missing, f"modules without a test file: {missing}"
    gone = [f"{m}: {t}" for m, t in COVERED_ELSEWHERE.items() if m not in _module_names()
            or not (TESTS / t).is_file()]
    assert not gone, f"COVERED_ELSEWHERE names a module or test file that is not there: {gone}"


DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"


def _defines(path: Path, name: str) -> bool:
    """Whether the module at ``path`` defines ``name`` (a function, a class, or a method of one) at
    any depth."""
    tree = _parsed(path)
    return any(isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
               and n.name == name for n in ast.walk(tree))


def test_the_architecture_page_names_only_modules_and_functions_that_are_where_it_says():
    """docs/architecture.md's walk-through had run_all in compute_sanitizer and cmd_sanitize doing
    the lookup after both had moved: every kprof/... path it names exists, every `kprof/x.py`
    `name()` it pairs is defined in that module, and every `module.name()` it writes is defined in
    the module of that name."""
    text = DOC.read_text()
    missing = [m for m in re.findall(r"`(kprof/[\w/]+\.py)`", text)
               if not (PKG.parent / m).is_file()]
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"
    wrong = [f"{m} {n}()" for m, n in re.findall(r"`(kprof/[\w/]+\.py)`\**\s+`(\w+)\(\)`", text)
             if not _defines(PKG.parent / m, n)]
    by_stem: dict[str, list[Path]] = {}
    for path in _sources():
        by_stem.setdefault(path.stem, []).append(path)
    for module, name in re.findall(r"`(\w+)\.(\w+)\(\)`", text):
        if module in by_stem and not any(_defines(p, name) for p in by_stem[module]):
            wrong.append(f"{module}.{name}()")
    assert not wrong, f"docs/architecture.md names functions that are not where it says: {wrong}"


def test_the_architecture_page_says_what_the_code_does():
    """Four of docs/architecture.md's statements had stopped being true (issue 78): each is held
    here against the code. Every module is in its tree of modules; the modules it names as the only
    callers of the catalog and the build are those that import them; a compute-sanitizer tool is a
    registry row and its name in TOOLS; render.py holds only the shared layout (it imports no kind
    of result); cmd_sanitize raises only for a command line's own mistakes (a kernel and a program,
    or neither)."""
    text = DOC.read_text()
    tree = text[text.index("```\nkprof/"):text.index("```", text.index("```\nkprof/") + 3)]
    listed = set(re.findall(r"(\w+)\.py", tree))
    unlisted = sorted(str(p.relative_to(PKG)) for p in _sources() if p.stem not in listed)
    assert not unlisted, f"modules docs/architecture.md's tree of modules leaves out: {unlisted}"

    row = next(line for line in text.splitlines()
               if line.startswith("| commands | `kprof/commands/pipeline.py`"))
    said = {f"commands.{m}" for m in re.findall(r"[`/](\w+)\.py`", row)}
    callers = {name for name, deps in GRAPH.items() if {"spec.catalog", "build.build"} & deps
               and name not in ("tools.machine.doctor", "spec.catalog", "build.build")}
    assert callers <= said, f"callers of the catalog or the build the page does not name: {callers - said}"

    from kprof.tools.sanitizers import compute_sanitizer

    rows = tuple(c.name for c in checkers.REGISTRY
                 if isinstance(c, compute_sanitizer.SanitizerTool))
    assert rows == compute_sanitizer.TOOLS and "compute_sanitizer.TOOLS" in text

    kinds = {m for m in GRAPH["results.render"] if not m.startswith(("units", "stats"))}
    assert not kinds, f"render.py, the shared layout, imports {kinds}"

    fn = next(n for n in ast.parse((PKG / "commands" / "commands.py").read_text()).body
              if isinstance(n, ast.FunctionDef) and n.name == "cmd_sanitize")
    raised = [ast.unparse(n.exc) for n in ast.walk(fn) if isinstance(n, ast.Raise)
              and n.exc is not None]
    assert len(raised) == 2 and all(r.startswith("UsageError(") for r in raised), raised
    assert "cmd_sanitize` refuses what only a command line can get wrong" in text
