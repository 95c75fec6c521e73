"""The house rules, checked on the source: no import cycle in kprof/, no function longer than about
80 lines, only the command layer looks kernels up or builds them, one owner module per external
tool, the child runner reads a typed job (no ``job.get`` with a default), every error class is in
errors.py, and no module below the package's front door imports from it (``from kprof import
__version__``)."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

import kprof

# the package under test: the source tree's, or the installed wheel's when CI runs the tests against it
PKG = Path(kprof.__file__).resolve().parent


DATA_FOLDERS = {"kernels", "sanitizer_cases", "perf_cases", "bench_cases"}  # inside kprof/ in an installed wheel
NOT_STAGES = {"hooks", "baselines", "builtin", "templates"} | DATA_FOLDERS  # loaded into programs, or data


def _sources() -> list[Path]:
    """kprof's own modules (not the data folders' Python: a bench case's operations, a kernel's reference)."""
    return [p for p in sorted(PKG.rglob("*.py")) if p.relative_to(PKG).parts[0] not in DATA_FOLDERS]



def _dotted(path: Path) -> str:
    """kprof/child/runner.py -> child.runner; a stage folder's __init__.py is the folder (spec)."""
    parts = path.relative_to(PKG).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# Every module is a node, in whichever stage folder it lives (kprof/spec/, kprof/tools/, kprof/child/, ...)
MODULES: dict[str, Path] = {_dotted(p): p for p in _sources()
                            if p != PKG / "__init__.py" and p.relative_to(PKG).parts[0] not in NOT_STAGES}


@functools.cache
def _parsed(path: Path) -> ast.Module:
    """A module's tree, parsed once for the whole file's tests (none of them changes a tree)."""
    return ast.parse(path.read_text())


def _trees(path: Path) -> list[ast.Module]:
    return [_parsed(path)]


MAX_LINES = 80
COMMAND_LAYER = {"commands.cli", "commands.commands", "commands.pipeline", "commands.api", "commands.corpora", "commands.offline", "commands.scaffold",
                 "commands.profiles", "commands.streams"}  # api: the same front door, from Python


def _nodes(tree: ast.AST):
    """Every node, leaving out ``if TYPE_CHECKING:`` blocks (imports for annotations only)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            continue
        yield node
        yield from _nodes(node)


def _imports(path: Path, typed: bool = False) -> set[str]:
    """The kprof modules a file imports, at module level or inside functions: ``from kprof.child import
    runner`` is child.runner, ``from kprof.spec import KernelSpec`` the spec folder's front (spec);
    ``typed``: the imports for annotations only too."""
    out: set[str] = set()
    tree = _parsed(path)
    for node in ast.walk(tree) if typed else _nodes(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "kprof":
                out.update(a.name for a in node.names if a.name in MODULES)
            elif node.module.startswith("kprof."):
                rest = node.module[len("kprof."):]
                out.update(f"{rest}.{a.name}" if f"{rest}.{a.name}" in MODULES else rest for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name[len("kprof."):] for a in node.names if a.name.startswith("kprof."))
    return out & set(MODULES)


GRAPH = {name: _imports(path) - {name} for name, path in MODULES.items()}


def test_no_import_cycle():
    """Tarjan's strongly connected components: every component has one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles in kprof/: {cycles}"


def test_no_long_function():
    long = []
    for path in MODULES.values():
        for node in (n for tree in _trees(path) for n in ast.walk(tree)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_LINES:
                    long.append(f"kprof/{path.relative_to(PKG)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "functions over 80 lines: " + ", ".join(long)


MAX_COMMAND_LINES = 40  # a cmd_NAME parses, calls its API function and prints (issue 70)


def test_every_command_function_is_short():
    long = [f"{n.name} ({n.end_lineno - n.lineno + 1} lines)" for path in MODULES.values()
            for n in ast.walk(_parsed(path)) if isinstance(n, ast.FunctionDef)
            and n.name.startswith("cmd_") and n.end_lineno - n.lineno + 1 >= MAX_COMMAND_LINES]
    assert not long, f"commands of {MAX_COMMAND_LINES} lines or more (the work goes in an API function): {long}"


TYPED_NAMES = re.compile(r"^(prepared|profiles?|report|timed)$")  # issue 70: what a stage hands on is typed


def test_no_any_for_a_prepared_spec_a_profile_or_a_report():
    """A parameter named for a prepared spec, a profile or a report, and an API function's result, is its type (or a
    protocol of it: kprof.launch.prepared.Prepared), never ``Any``."""
    loose = []
    for path in MODULES.values():
        for fn in (n for n in ast.walk(_parsed(path)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            for arg in fn.args.args + fn.args.kwonlyargs:
                if TYPED_NAMES.match(arg.arg) and arg.annotation is not None and "Any" in ast.unparse(arg.annotation):
                    loose.append(f"{path.relative_to(PKG)}:{fn.lineno} {fn.name}({arg.arg}: {ast.unparse(arg.annotation)})")
            if path.parent.name == "commands" and fn.name.startswith("run_") and fn.returns is not None and \
                    "Any" in ast.unparse(fn.returns):
                loose.append(f"{path.relative_to(PKG)}:{fn.lineno} {fn.name} -> {ast.unparse(fn.returns)}")
    assert not loose, f"Any where a prepared spec, a profile or a report is handed on: {loose}"


MAX_POSITIONAL = 6
# calls of functions that are not kprof's: the driver's, cuBLAS's and ctypes' C signatures take their arguments in order
FOREIGN_CALLS = {"drv.cuLaunchKernel", "drv.cuTensorMapEncodeTiled", "self.lib.cublasSgemm_v2", "_LAUNCH"}


def test_no_call_passes_more_than_six_arguments_by_position():
    """Past the sixth, an argument goes by its name (issue 70: a Finding took 13 in a row); a record of more than
    five fields takes the rest by name (``_: KW_ONLY``)."""
    long = []
    for path in MODULES.values():
        for n in ast.walk(_parsed(path)):
            if isinstance(n, ast.Call) and len(n.args) > MAX_POSITIONAL and ast.unparse(n.func) not in FOREIGN_CALLS \
                    and not any(isinstance(a, ast.Starred) for a in n.args):
                long.append(f"{path.relative_to(PKG)}:{n.lineno} {ast.unparse(n.func)} ({len(n.args)})")
    assert not long, f"calls with more than {MAX_POSITIONAL} positional arguments: {long}"


MAX_ROOM = 10  # modules a room of a stage's folder holds (issue 70: tools/ held 24, and 4,443 lines)


def test_the_tools_stage_is_rooms_of_at_most_ten_modules():
    """kprof/tools/: the sanitizers and their checkers, the user's program, the suites, Nsight Compute and the
    machine, each a folder of its own; no module at the stage's top; each room at most MAX_ROOM modules."""
    tools = PKG / "tools"
    assert sorted(p.name for p in tools.glob("*.py")) == ["__init__.py"], "a module at the top of kprof/tools/"
    rooms = {d.name: sorted(p.stem for p in d.glob("*.py") if p.name != "__init__.py") for d in tools.iterdir()
             if (d / "__init__.py").is_file()}
    assert set(rooms) == {"sanitizers", "programs", "suites", "nsight", "machine"}, sorted(rooms)
    big = {room: len(mods) for room, mods in rooms.items() if len(mods) > MAX_ROOM}
    assert not big, f"rooms of kprof/tools/ over {MAX_ROOM} modules: {big}"


def test_the_tools_rooms_import_one_way():
    """The rooms stand on floors: programs and nsight at the bottom, sanitizers on them, suites and the machine on
    top. No two rooms import each other (the user's program once imported coverage, checker and toolrun from the
    sanitizers while they imported 21 of its names): with annotations' imports counted too."""
    def room(name: str) -> str | None:
        parts = name.split(".")
        return parts[1] if parts[0] == "tools" and len(parts) > 2 else None

    ties = {(room(a), room(b)) for a, path in MODULES.items() for b in _imports(path, typed=True)
            if room(a) and room(b) and room(a) != room(b)}
    both = sorted((a, b) for a, b in ties if (b, a) in ties and a < b)
    assert not both, f"rooms of kprof/tools/ that import each other: {both}"


STATE_FIELDS = ("status", "mode", "verdict", "state", "kind")
# states whose words come from elsewhere, so no closed list is theirs: why each stays a str
OPEN_STATES = {
    ("findings.py", "Finding.kind"): "a tool's own kind of record (out-of-bounds-write, race-raw, ...), any tool's",
    ("corpus/cases.py", "Expect.kind"): "the finding kind a case expects: a Finding.kind",
    ("tools/nsight/ncu.py", "RuleResult.kind"): "Nsight Compute's rule types (OPT, INF, WRN, ...), its words",
    ("results/history.py", "HistoryRow.kind"): "what a row of the store is, as any kprof version wrote it",
    ("results/history.py", "HistoryRow.status"): "a point's status as any kprof version stored it",
    ("spec/schema.py", "Fill.kind"): "a fill rule's name, checked against FILLS where the spec is read",
}


def test_no_status_or_kind_is_a_bare_str():
    """A record's status, mode, verdict or kind is a Literal (or an enum) of what it can be (issue 70); those whose
    words come from elsewhere are in OPEN_STATES with why."""
    bare = []
    for path in MODULES.values():
        for cls in (n for n in ast.walk(_parsed(path)) if isinstance(n, ast.ClassDef)):
            for field in (f for f in cls.body if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name)):
                if field.target.id in STATE_FIELDS and ast.unparse(field.annotation) in ("str", "str | None"):
                    key = (str(path.relative_to(PKG)), f"{cls.name}.{field.target.id}")
                    if key not in OPEN_STATES:
                        bare.append(f"{key[0]} {key[1]}: {ast.unparse(field.annotation)}")
    assert not bare, f"states as a bare str: {bare}"


MAX_FIELDS = 25


def _records() -> list[tuple[str, ast.ClassDef]]:
    """kprof's records: every class under a ``@dataclass`` decorator, with its module's path."""
    return [(str(path.relative_to(PKG)), cls) for path in MODULES.values()
            for cls in ast.walk(_parsed(path)) if isinstance(cls, ast.ClassDef)
            and any("dataclass" in ast.unparse(d) for d in cls.decorator_list)]


def test_no_record_has_more_than_25_fields():
    """Issue 70: KernelProfile had 54 flat fields, PointResult 33; a wide record is split into typed parts that say
    what they hold (a profile's occupancy, memory, shared memory, compute, stalls; a point's rates and timer)."""
    wide = []
    for where, cls in _records():
        names = [f.target.id for f in cls.body if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name)
                 and f.target.id != "_" and "ClassVar" not in ast.unparse(f.annotation)]
        if len(names) > MAX_FIELDS:
            wide.append(f"{where} {cls.name}: {len(names)} fields")
    assert not wide, f"records over {MAX_FIELDS} fields: {wide}"


def _mirrors(expr: ast.expr) -> bool:
    """``self.part.field`` (or that or None, by a condition): a property that repeats a field of one of its fields."""
    if isinstance(expr, ast.IfExp):
        return _mirrors(expr.body) or _mirrors(expr.orelse)
    return (isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Attribute)
            and isinstance(expr.value.value, ast.Name) and expr.value.value.id == "self")


def test_no_record_mirrors_a_field_of_its_parts():
    """Issue 70: PointResult had 12 properties that returned its first baseline's fields under the point's name;
    a reader names the part (``point.first.of_baseline``), so each value has one name."""
    mirrors = []
    for where, cls in _records():
        for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)
                   and any(ast.unparse(d) == "property" for d in n.decorator_list)):
            body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None \
                    and _mirrors(body[0].value):
                mirrors.append(f"{where} {cls.name}.{fn.name}: {ast.unparse(body[0].value)}")
    assert not mirrors, f"properties that repeat a part's field: {mirrors}"


MAX_MODULE_LINES = 600
# the modules still over MAX_MODULE_LINES, each at most the lines it had when the limit came (issue 70): a split
# takes one off; none may grow, and none may join
STILL_LONG: dict[str, int] = {}


def test_no_module_grows_past_600_lines():
    over = {f"{path.relative_to(PKG)}": len(path.read_text().splitlines()) for path in MODULES.values()}
    over = {k: v for k, v in over.items() if v > MAX_MODULE_LINES}
    grown = {k: (v, STILL_LONG.get(k, MAX_MODULE_LINES)) for k, v in over.items() if v > STILL_LONG.get(k, MAX_MODULE_LINES)}
    assert not grown, f"modules over {MAX_MODULE_LINES} lines (lines, allowed): {grown}"
    assert set(STILL_LONG) <= set(over), f"split now, take them off STILL_LONG: {sorted(set(STILL_LONG) - set(over))}"


def test_the_renderer_is_no_hub():
    """results/render.py holds the text layout every renderer shares (widths, tables, progress); a record's text
    is rendered beside its kind in a module of its own (render_bench, render_sanitize, ...): at most 8 imports."""
    tree = ast.parse((PKG / "results" / "render.py").read_text())
    imported = {(n.module or "") if isinstance(n, ast.ImportFrom) else a.name for n in ast.walk(tree)
                if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    ours = sorted(m for m in imported if m.startswith("kprof"))
    assert len(ours) <= 8, f"render.py imports {len(ours)} of kprof's modules: {ours}"


@pytest.mark.parametrize("upstream", ["spec.catalog", "build.build"])
def test_only_the_command_layer_looks_up_or_builds_kernels(upstream):
    allowed = COMMAND_LAYER | {upstream, "tools.machine.doctor"}  # doctor reports on nvcc itself
    callers = sorted(name for name, deps in GRAPH.items() if upstream in deps and name not in allowed)
    assert not callers, f"{upstream} is imported below the command layer by: {callers}"


@pytest.mark.parametrize("tool, owner", [("compute-sanitizer", "compute_sanitizer"), ("ncu", "ncu"), ("nvcc", "toolchain")])
def test_one_owner_module_per_external_tool(tool, owner):
    """Each external tool is found (and so run) by one module, wherever its stage's folder puts it."""
    files = [f for f in _sources() if f.stem == owner]
    assert len(files) == 1, files
    finders = sorted(str(f.relative_to(PKG)) for f in _sources()
                     if f'find_tool("{tool}")' in f.read_text() and f != files[0])
    assert not finders, f"{tool} is found and run outside kprof/{files[0].relative_to(PKG)}: {finders}"


def test_only_the_device_layer_imports_cuda_bindings():
    """The driver through kprof/child/device.py only; NVRTC (a compiler, no context) through kprof/build/nvrtc.py only."""
    users = sorted(name for name, path in MODULES.items() if "cuda.bindings" in path.read_text()
                   and name not in ("child.device", "tools.machine.doctor", "build.nvrtc"))
    assert not users, f"cuda.bindings imported outside kprof/child/device.py: {users}"
    nvrtc_imports = {line.strip() for line in MODULES["build.nvrtc"].read_text().splitlines()
                     if line.strip().startswith(("from ", "import ")) and "cuda.bindings" in line}
    assert nvrtc_imports == {"from cuda.bindings import nvrtc", "from cuda.bindings import __version__ as bindings_version"}


@pytest.mark.parametrize("child", ["child.runner", "child.workspace", "child.timing"])
def test_the_child_reads_a_typed_job(child):
    text = MODULES[child].read_text()
    assert "job.get(" not in text and 'job["' not in text and "spec_mod.load" not in text


def test_every_error_class_is_in_errors_py():
    """One place for every error class kprof has (kprof/errors.py): its KprofErrors, each with its exit code,
    and the pure expression checkers' ValueErrors, which the spec loader turns into SpecErrors."""
    from kprof import errors

    kinds = {name for name, obj in vars(errors).items() if isinstance(obj, type) and issubclass(obj, BaseException)}
    kinds |= {"Exception", "BaseException", "ValueError", "RuntimeError", "TypeError", "KeyError", "OSError"}
    elsewhere = [f"{name}.py: {node.name}" for name, path in MODULES.items() if name != "errors"
                 for tree in _trees(path) for node in _nodes(tree) if isinstance(node, ast.ClassDef)
                 and any((isinstance(b, ast.Name) and b.id in kinds) or (isinstance(b, ast.Attribute) and b.attr in kinds)
                         for b in node.bases)]
    assert not elsewhere, elsewhere


def test_no_module_imports_the_package_front_door():
    """``kprof/__init__.py`` is the public front door; a module below it that imports from it
    (``from kprof import __version__``) climbs back up (the version lives in kprof/version.py)."""
    upward = [f"{name}.py" for name, path in MODULES.items()
              for tree in _trees(path) for node in _nodes(tree)
              if isinstance(node, ast.ImportFrom) and node.module == "kprof"
              and any(a.name in ("__version__", "sanitize", "profile", "load", "range") for a in node.names)]
    assert not upward, upward


def test_the_childs_result_is_read_in_one_typed_place():
    """kprof/launch/childresult.py reads the child's result file (its version checked) into typed fields; no other
    module of the parent opens the file or looks up the record's keys."""
    child_side = {"launch.childresult", "child.runner", "child.workspace", "child.timing", "child.framework"}  # what writes it
    patterns = ('.get("status")', '.get("phase"', '"job_seconds" in', "result_path.read_text", '["samples"]',
                '.get("samples")')
    found = [f"{name}.py: {p}" for name, path in MODULES.items() if name not in child_side
             for p in patterns if p in path.read_text()]
    assert not found, found
    text = (PKG / "launch" / "launch.py").read_text()
    assert "-> tuple[proc.Completed, ChildResult]" in text and "-> tuple[proc.Completed, list[ChildResult]]" in text


def test_every_command_takes_its_own_typed_options():
    """kprof/commands/options.py has one frozen options class per command; every cmd_* takes its class, every
    attribute a command reads of it is one of its fields, and every field is one the CLI's parser sets."""
    from dataclasses import fields

    from kprof.commands import cli, options

    tree = ast.parse((PKG / "commands" / "commands.py").read_text())
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for command, cls in options.BY_COMMAND.items():
        fn = funcs[f"cmd_{command}"]
        assert ast.unparse(fn.args.args[0].annotation) == cls.__name__, command
        names = {f.name for f in fields(cls)}
        helpers = [funcs[c.func.id] for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                   and c.func.id in funcs and any(isinstance(a, ast.Name) and a.id == "opts" for a in c.args)]
        read = {n.attr for f in [fn, *helpers] for n in ast.walk(f)
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "opts"}
        assert read <= names, (command, read - names)
        parser = cli._parser()
        first = {"new": ["x"], "run": ["k"], "occupancy": ["k"], "bench": ["k"], "compare": ["r1"], "mutants": ["k"]}.get(command, [])
        given = vars(parser.parse_args([command, *first]))
        assert names <= set(given) | {"program"}, (command, names - set(given))
    assert "argparse.Namespace" not in (PKG / "commands" / "commands.py").read_text()


def test_a_baseline_is_one_typed_value_parsed_once():
    """kprof/spec/baseline.py's Baseline (a library, a spec, a Python callable) is what the bench plan carries;
    no module but pyref.py spells the stored Python reference's prefix, and the only module that decodes a
    baseline string into its kind is baseline.py (the CLI's --baseline is parsed there too, in baseline.of_option)."""
    constants = [f"{name}.py" for name, path in MODULES.items() if name != "spec.pyref"
                 for tree in _trees(path) for node in ast.walk(tree)
                 if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("python:")]
    assert not constants, constants
    from dataclasses import fields

    from kprof.commands import pipeline
    from kprof.measure import bench, points
    from kprof.spec.baseline import Baseline

    plan = {f.name: f.type for f in fields(bench.PointPlan)}
    assert plan["baselines"] == "tuple[tuple[Baseline, Job], ...]" and not {"baseline", "more", "names"} & set(plan)
    assert {f.name: f.type for f in fields(pipeline.BenchPoint)}["baselines"] == "tuple[Baseline, ...]"
    decoders = [name for name, path in MODULES.items() if name not in ("spec.baseline", "spec.pyref", "spec.loader", "spec.schema")
                and "def baseline_name(baseline" in path.read_text()]
    assert not decoders and Baseline.__dataclass_params__.frozen
    assert points.PointResult.__dataclass_params__.frozen and points.BaselineResult.__dataclass_params__.frozen
    assert {f.name: f.type for f in fields(points.PointResult)}["baselines"] == "tuple[BaselineResult, ...]"
    assert not [f.name for f in fields(points.PointResult) if "baseline" in f.name and f.name != "baselines"]


def test_the_spec_stage_is_a_folder_of_schema_and_loader():
    """kprof/spec/: the schema (dataclasses, resolve) and the loader (YAML, validation), one way: the
    loader builds the schema's classes, the schema never imports the loader; the folder is one node of
    the graph above, with the edges of both."""
    assert {"spec.loader", "spec.schema"} <= GRAPH["spec"] and GRAPH["spec.schema"] <= {"spec.sizeexpr", "errors", "inputs"}
    assert {"spec.sizeexpr", "spec.reference", "inputs", "spec.schema"} <= GRAPH["spec.loader"]
    schema = (PKG / "spec" / "schema.py").read_text()
    assert "from kprof.spec.loader" not in schema and "import yaml" not in schema
    assert "from kprof.spec.schema import" in (PKG / "spec" / "loader.py").read_text()


def test_the_verdict_takes_its_rule_as_one_value():
    """verify.compare: the output's name, what the kernel wrote, the reference, one Criterion (rtol,
    atol, metric, dtype, the scale's text), and three keywords; host data is kprof/hostdata.py's."""
    import inspect

    from kprof.child import verify

    params = list(inspect.signature(verify.compare).parameters)
    assert params == ["name", "got", "expected", "rule", "poison_value", "scale", "frontier"]
    verdict = (PKG / "child" / "verify.py").read_text()
    assert "def make_input" not in verdict and "def poison(" not in verdict
    assert "def make_input" in (PKG / "child" / "hostdata.py").read_text()


def test_no_two_stage_folders_import_each_other():
    """Between the stage folders (kprof/child/, kprof/tools/, kprof/results/, kprof/spec/) and the modules
    beside them, imports go one way: no folder imports a module that imports back into it."""
    def group(name: str) -> str:
        return name.split(".")[0]

    ties = {(group(a), group(b)) for a, deps in GRAPH.items() for b in deps if group(a) != group(b)}
    both = sorted((a, b) for a, b in ties if (b, a) in ties and a < b)
    assert not both, both


# The stage folders, bottom to top: a folder imports only the folders before it (and the modules at the
# top of kprof/). spec -> build -> launch (the parent's side of the child) -> child -> tools (sanitize) and
# measure (bench, profile) -> diagnosis (why a kernel is slow) -> corpus (the checks of the checks) -> results
# -> commands (the front doors).
STAGES = ["spec", "build", "launch", "child", "tools", "measure", "diagnosis", "corpus", "results", "commands"]
# What stays at the top of kprof/: the front doors a user imports or runs (the package, python -m kprof, the
# pytest plugin's entry point, kprof.load, kprof.range) and the leaves every stage uses.
TOP = {"__main__", "pytest_plugin", "op", "annotate", "errors", "version", "inputs", "proc", "parallel",
       "telemetry", "units", "findings", "stats", "demangle"}


def test_the_tree_shows_the_pipeline():
    """Every module of kprof/ is in its stage's folder but the front doors and the shared leaves; each
    folder says what it owns (a module docstring); the folders import one way, down the pipeline."""
    folders = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()} - NOT_STAGES
    assert folders == set(STAGES), folders ^ set(STAGES)
    top = {p.stem for p in PKG.glob("*.py")} - {"__init__"}
    assert top == TOP, f"modules at the top of kprof/ that belong in a stage folder: {sorted(top - TOP)}"
    for folder in STAGES:
        assert ast.get_docstring(ast.parse((PKG / folder / "__init__.py").read_text())), folder
    upward = sorted(f"{a} -> {b}" for a, path in MODULES.items() for b in _imports(path, typed=True) - {a}  # a reader follows annotations too
                    if a.split(".")[0] in STAGES and b.split(".")[0] in STAGES
                    and STAGES.index(b.split(".")[0]) > STAGES.index(a.split(".")[0]))
    assert not upward, f"imports that climb back up the pipeline: {upward}"


CHECKER_NAMES = {"memcheck", "racecheck", "initcheck", "synccheck", "values"}
# where a checker is defined, registered or given its place: the registry, the two checker modules, and
# kprof mutants' preference of which checks run first
CHECKER_HOMES = {"tools.sanitizers.checkers", "tools.sanitizers.checker", "tools.sanitizers.compute_sanitizer", "tools.sanitizers.values", "corpus.mutants"}


def test_the_checkers_are_listed_in_one_registry():
    """No module but the checkers' own spells out a list of checkers (a tuple or list of two or more of their
    names) or tests a tool against the values detector's name (``tool == "values"``): what a checker needs is
    its ``needs``, and the lists come from kprof.tools.sanitizers.checkers, so a new checker is one file and one line."""
    found = []
    for name, path in MODULES.items():
        if name in CHECKER_HOMES:
            continue
        for node in ast.walk(_parsed(path)):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                names = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in CHECKER_NAMES]
                if len(names) >= 2:
                    found.append(f"{name}:{node.lineno} {names}")
            if isinstance(node, ast.Compare) and any(isinstance(c, ast.Constant) and c.value == "values"
                                                     for c in [node.left, *node.comparators]):
                found.append(f"{name}:{node.lineno} compares with 'values'")
    assert not found, found


# The modules that had no test file of their own when the tests took the package's layout, each with the
# test file that covers it. A module not listed here needs tests/<stage>/test_<module>.py (or, at the top of
# kprof/, tests/test_<module>.py): a new module comes with its test file.
COVERED_ELSEWHERE = {
    "__main__": "commands/test_cli.py", "annotate": "tools/programs/test_program.py", "errors": "test_architecture.py",
    "findings": "tools/programs/test_program.py", "inputs": "test_hostile.py",
    "parallel": "corpus/test_cases.py", "stats": "measure/test_bench.py", "telemetry": "measure/test_bench.py",
    "units": "measure/test_bench.py", "version": "test_architecture.py",
    "spec.catalog": "spec/test_loader.py", "spec.safeexpr": "test_fuzz.py", "spec.schema": "spec/test_loader.py",
    "spec.sweep": "measure/test_bench.py",
    "build.cusource": "build/test_shake.py", "build.nvrtc": "build/test_build.py",
    "launch.job": "child/test_runner.py",
    "child.cublas": "child/test_gpu_kernels.py", "child.device": "test_op.py", "child.framework": "child/test_runner.py",
    "child.hostdata": "child/test_runner.py", "child.timing": "child/test_runner.py", "child.workspace": "child/test_runner.py",
    "tools.programs.addr2line": "tools/programs/test_hostframes.py", "tools.programs.allocators": "tools/programs/test_program.py",
    "tools.sanitizers.checker": "tools/sanitizers/test_checkers.py", "demangle": "tools/programs/test_program.py", "tools.machine.doctor": "commands/test_cli.py",
    "tools.programs.exitcode": "tools/programs/test_program.py", "tools.programs.launchcount": "tools/programs/test_program.py",
    "tools.nsight.ncu": "measure/test_profiling.py", "tools.suites.pytest_child": "tools/suites/test_suite.py",
    "tools.sanitizers.toolrun": "tools/programs/test_program.py", "tools.sanitizers.values": "launch/test_batch.py",
    "diagnosis.facts": "diagnosis/test_stage.py", "diagnosis.gather": "diagnosis/test_stage.py",
    "diagnosis.model": "diagnosis/test_stage.py", "diagnosis.ncurules": "diagnosis/test_stage.py",
    "diagnosis.program": "diagnosis/test_stage.py", "diagnosis.ptxscan": "diagnosis/test_stage.py",
    "diagnosis.rules": "diagnosis/test_stage.py", "diagnosis.stage": "diagnosis/test_stage.py",
    "diagnosis.rulekit": "diagnosis/test_stage.py", "diagnosis.rules_memory": "diagnosis/test_stage.py",
    "diagnosis.tries": "diagnosis/test_stage.py",
    "corpus.mutation": "corpus/test_mutants.py", "corpus.perfcases": "diagnosis/test_stage.py",
    "results.benchrun": "measure/test_bench.py", "results.plot": "measure/test_bench.py",
    "results.render": "measure/test_bench.py", "results.reports": "measure/test_bench.py",
    "commands.api": "corpus/test_cases.py", "commands.commands": "commands/test_cli.py", "commands.streams": "commands/test_cli.py",
    "commands.corpora": "corpus/test_cases.py", "commands.options": "test_architecture.py",
    "commands.pipeline": "measure/test_bench.py", "commands.scaffold": "test_hostile.py",
}  # fmt: skip
TESTS = Path(__file__).resolve().parent
# test files at the top of tests/: the house rules, the front doors, what crosses every stage, the scripts
TOP_TESTS = {"test_architecture", "test_import", "test_fuzz", "test_hostile", "test_hardening", "test_op", "test_gpu_op",
             "test_proc", "test_pytest_plugin", "test_gpu_check", "test_gpu_summary_script", "test_tolerances_script",
             "test_inputs", "test_packaging", "test_exit_codes_script", "test_smoke_script",
             "test_interrupts_script", "test_conftest", "test_public_corpus_script"}
# test files in a stage's folder that are not named for one module, and why they are there
STAGE_EXTRAS = {
    "child/test_gpu_kernels.py",  # every shipped kernel through the child on a GPU
    "launch/test_batch.py",  # several jobs in one child: the launch's batch and each checker's
    "tools/programs/test_program.py", "tools/programs/test_gpu_programs.py",  # a user's program: allocators, exit code, launch site
    "tools/programs/test_recorded_programs.py",  # the tools' reports on users' programs, recorded on a GPU
    "results/test_results_index.py",  # docs/results/README.md, the one index of measured numbers
}


def _module_names() -> dict[str, str]:
    """Every module kprof has a test file for, by its dotted name (spec.loader; errors): stage folders'
    fronts (__init__.py) and the folders loaded into programs left out."""
    return {name: name for name, path in MODULES.items() if path.name != "__init__.py"}


def test_the_tests_are_laid_out_like_the_package():
    """tests/<stage>/test_<module>.py: each folder of tests/ is a stage of kprof's, each file in it is named for a
    module of that stage (test_gpu_<module>.py for its GPU tests, marked gpu), and the top holds only the house
    rules, the front doors and what crosses every stage."""
    folders = {d.name for d in TESTS.iterdir() if d.is_dir() and d.name not in ("data", "__pycache__")}
    assert folders <= set(STAGES), folders - set(STAGES)
    top = {p.stem for p in TESTS.glob("test_*.py")}
    assert top <= TOP_TESTS, f"test files at the top of tests/ that belong in a stage's folder: {sorted(top - TOP_TESTS)}"
    modules = _module_names()
    stray = []
    for path in sorted(p for p in TESTS.glob("*/**/test_*.py") if "data" not in p.relative_to(TESTS).parts):
        rel = str(path.relative_to(TESTS))
        folder = ".".join(path.parent.relative_to(TESTS).parts)  # tools/sanitizers/ holds tools.sanitizers' tests
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
    gone = [f"{m}: {t}" for m, t in COVERED_ELSEWHERE.items() if m not in _module_names() or not (TESTS / t).is_file()]
    assert not gone, f"COVERED_ELSEWHERE names a module or test file that is not there: {gone}"


def test_any_stays_rare():
    """``Any`` at most 20 per 1,000 lines of kprof/ (issue 53): a value read from outside (YAML, JSON, XML) is
    ``object`` and narrowed before use; ``Any`` is left for what has no types here (torch, CuPy, CUPTI and the
    driver's handles, NumPy values in the reference evaluator)."""
    count = lines = 0
    for path in _sources():
        text = path.read_text().splitlines()
        lines += len(text)
        count += sum(len(re.findall(r"\bAny\b", line)) for line in text if not line.lstrip().startswith("from typing"))
    assert count * 1000 <= 20 * lines, f"{count} Any in {lines} lines: {count * 1000 / lines:.1f} per 1,000 (at most 20)"


# Where a record is read by its keys: each module that decodes one (kprof's own JSON read back, or what comes
# from outside: a spec's YAML, a tool's CSV header), with what it decodes. Everywhere else a record is typed.
DECODERS = {
    "launch/childresult.py": "the child's result file (ChildResult, its checks, errors, timing)",
    "launch/job.py": "the job file the child reads (Job.from_dict)",
    "measure/ceilings.py": "kprof peak's cache file (Ceilings, Theoretical) and a device's attributes",
    "measure/points.py": "a stored bench point (PointResult.from_dict, its baselines)",
    "measure/bench.py": "kprof peak's result as it is measured",
    "measure/kernelprofile.py": "a stored kernel profile (KernelProfile.from_dict)",
    "findings.py": "a finding and an allocation as the child or a report wrote them",
    "results/history.py": "a history row's stored point, summary and machine",
    "tools/suites/suiteevents.py": "the pytest child's event log",
    "tools/programs/launchlog.py": "the launch hook's log",
    "tools/programs/tallylog.py": "the launch tally's log",
    "tools/sanitizers/nan.py": "the nan watcher's log",
    "tools/programs/exitcode.py": "the exit-code hook's status file",
    "tools/programs/ranks.py": "each rank's marker file",
    "tools/nsight/ncu.py": "Nsight Compute's CSV header",
    "tools/nsight/sourcepage.py": "Nsight Compute's Source page (CSV) and a stored page (SourceLines.from_dict)",
    "build/build.py": "a build cache entry's metadata",
    "child/runner.py": "the child's manifest",
    "child/framework.py": "CuPy's __cuda_array_interface__",
    "spec/loader.py": "a spec's YAML", "spec/fields.py": "a spec's YAML: the fields of what to build and launch",
    "corpus/cases.py": "a corpus case's expect: block (YAML)",
    "corpus/perfcases.py": "a performance case's expect: block (YAML)",
    "corpus/benchcases.py": "the cheat corpus's YAML",
    "commands/commands.py": "the user's --allocations file",
}
# A few lookups that are not a record read back, each with why.
NOT_RECORDS = {
    ("child/timing.py", "result.data"): "the child's own result while it is being written",
    ("diagnosis/rules.py", "p.stalls.shares"): "a mapping of Nsight Compute's stall reasons, not a record",
    ("proc.py", "env"): "a child's environment",
    ("tools/programs/allocators.py", "out"): "a child's environment",
    ("hooks/nan_watch.py", "kwargs"): "a Triton launch's keyword arguments",
    ("hooks/rank_wrap.py", "env"): "a rank's environment",
}


def test_a_record_is_read_by_its_keys_only_in_its_decoder():
    """No ``.get("key")`` on a record kprof wrote outside the one module that decodes it into a type (issue 53):
    a new module that looks a record up by its keys is either that record's decoder (listed in DECODERS with
    what it decodes) or reads the typed record the decoder returns."""
    found = []
    for path in _sources():
        rel = path.relative_to(PKG).as_posix()
        if rel in DECODERS:
            continue
        for node in ast.walk(_parsed(path)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                receiver = ast.unparse(node.func.value)
                if receiver not in ("os.environ", "sys.modules") and (rel, receiver) not in NOT_RECORDS:
                    found.append(f"kprof/{rel}:{node.lineno}: {receiver}.get({node.args[0].value!r})")
    assert not found, found
    gone = [m for m in DECODERS if not (PKG / m).is_file()] + [m for m, _ in NOT_RECORDS if not (PKG / m).is_file()]
    assert not gone, f"DECODERS or NOT_RECORDS names a module that is not there: {gone}"


API_MODULES = {"api": "kprof.commands.api", "offline": "kprof.commands.offline", "corpora": "kprof.commands.corpora",
               "profiles": "kprof.commands.profiles"}
# The API's functions over what the CLI has already prepared (a spec resolved with its --param and --size, built
# once for several uses) and its checks before a GPU run; the public functions are built on them.
PREPARED_TIER = {"require_gpu", "cases_beyond"}


def test_every_command_is_parsing_and_printing_over_an_api_function():
    """Each ``cmd_NAME`` of kprof/commands/commands.py calls (itself or through a helper it hands ``opts``) a
    function of the API modules, and every such function it calls is public in ``kprof`` (issue 53: an API
    function behind every command); commands/api.py stays under 350 lines."""
    import kprof

    tree = ast.parse((PKG / "commands" / "commands.py").read_text())
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    missing, private = [], []
    for name, fn in funcs.items():
        if not name.startswith("cmd_"):
            continue
        reach = [fn, *(funcs[c.func.id] for c in ast.walk(fn) if isinstance(c, ast.Call)
                       and isinstance(c.func, ast.Name) and c.func.id in funcs)]
        called = {(c.func.value.id, c.func.attr) for f in reach for c in ast.walk(f) if isinstance(c, ast.Call)
                  and isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)
                  and c.func.value.id in API_MODULES and c.func.attr[0].islower()}
        if not called:
            missing.append(name)
        private += [f"{name}: {m}.{f}" for m, f in called if f not in kprof.__all__ and f not in PREPARED_TIER]
    assert not missing, f"commands with no API function behind them: {missing}"
    assert not private, f"API functions a command calls that kprof does not export: {private}"
    assert len((PKG / "commands" / "api.py").read_text().splitlines()) < 350


DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"


def _defines(path: Path, name: str) -> bool:
    """Whether the module at ``path`` defines ``name`` (a function, a class, or a method of one) at any depth."""
    tree = _parsed(path)
    return any(isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and n.name == name
               for n in ast.walk(tree))


def test_the_architecture_page_names_only_modules_and_functions_that_are_where_it_says():
    """docs/architecture.md's walk-through had run_all in compute_sanitizer and cmd_sanitize doing the lookup after
    both had moved: every kprof/... path it names exists, every `kprof/x.py` `name()` it pairs is defined in that
    module, and every `module.name()` it writes is defined in the module of that name."""
    text = DOC.read_text()
    missing = [m for m in re.findall(r"`(kprof/[\w/]+\.py)`", text) if not (PKG.parent / m).is_file()]
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
    """Four of docs/architecture.md's statements had stopped being true (issue 78): each is held here against the
    code. Every module is in its tree of modules; the modules it names as the only callers of the catalog and the
    build are those that import them; a compute-sanitizer tool is a registry row and its name in TOOLS; render.py
    holds only the shared layout (it imports no kind of result); cmd_sanitize raises only for a command line's own
    mistakes (a kernel and a program, or neither)."""
    text = DOC.read_text()
    tree = text[text.index("```\nkprof/"):text.index("```", text.index("```\nkprof/") + 3)]
    listed = set(re.findall(r"(\w+)\.py", tree))
    unlisted = sorted(str(p.relative_to(PKG)) for p in _sources() if p.stem not in listed)
    assert not unlisted, f"modules docs/architecture.md's tree of modules leaves out: {unlisted}"

    row = next(line for line in text.splitlines() if line.startswith("| commands | `kprof/commands/pipeline.py`"))
    said = {f"commands.{m}" for m in re.findall(r"[`/](\w+)\.py`", row)}
    callers = {name for name, deps in GRAPH.items() if {"spec.catalog", "build.build"} & deps
               and name not in ("tools.machine.doctor", "spec.catalog", "build.build")}
    assert callers <= said, f"callers of the catalog or the build the page does not name: {callers - said}"

    from kprof.tools.sanitizers import checkers, compute_sanitizer

    rows = tuple(c.name for c in checkers.REGISTRY if isinstance(c, compute_sanitizer.SanitizerTool))
    assert rows == compute_sanitizer.TOOLS and "compute_sanitizer.TOOLS" in text

    kinds = {m for m in GRAPH["results.render"] if not m.startswith(("units", "stats"))}
    assert not kinds, f"render.py, the shared layout, imports {kinds}"

    fn = next(n for n in ast.parse((PKG / "commands" / "commands.py").read_text()).body
              if isinstance(n, ast.FunctionDef) and n.name == "cmd_sanitize")
    raised = [ast.unparse(n.exc) for n in ast.walk(fn) if isinstance(n, ast.Raise) and n.exc is not None]
    assert len(raised) == 2 and all(r.startswith("UsageError(") for r in raised), raised
    assert "cmd_sanitize` refuses what only a command line can get wrong" in text
