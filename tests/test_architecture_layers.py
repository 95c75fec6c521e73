"""The house rules of layering, checked on the source: no import cycle, the stages' folders one way
down the pipeline, the tools' rooms one way, only the command layer looks kernels up or builds them,
one owner module per external tool, only the device layer imports cuda.bindings, the child reads a
typed job, no module imports the package's front door."""

from __future__ import annotations

import ast

import pytest
from house import COMMAND_LAYER, GRAPH, MODULES, NOT_STAGES, PKG, STAGES, TOP, _imports, _nodes, _sources, _trees


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


# modules a room of a stage's folder holds (issue 70: tools/ held 24, and 4,443 lines)
MAX_ROOM = 10


def test_the_tools_stage_is_rooms_of_at_most_ten_modules():
    """kprof/tools/: the sanitizers and their checkers, the user's program, the suites, Nsight
    Compute and the machine, each a folder of its own; no module at the stage's top; each room at
    most MAX_ROOM modules."""
    tools = PKG / "tools"
    assert sorted(p.name for p in tools.glob("*.py")) == ["__init__.py"], "a module at the top of kprof/tools/"
    rooms = {d.name: sorted(p.stem for p in d.glob("*.py") if p.name != "__init__.py")
             for d in tools.iterdir() if (d / "__init__.py").is_file()}
    assert set(rooms) == {"sanitizers", "programs", "suites", "nsight", "machine"}, sorted(rooms)
    big = {room: len(mods) for room, mods in rooms.items() if len(mods) > MAX_ROOM}
    assert not big, f"rooms of kprof/tools/ over {MAX_ROOM} modules: {big}"


def test_the_tools_rooms_import_one_way():
    """The rooms stand on floors: programs and nsight at the bottom, sanitizers on them, suites and
    the machine on top. No two rooms import each other (the user's program once imported coverage,
    checker and toolrun from the sanitizers while they imported 21 of its names): with annotations'
    imports counted too."""
    def room(name: str) -> str | None:
        parts = name.split(".")
        return parts[1] if parts[0] == "tools" and len(parts) > 2 else None

    ties = {(room(a), room(b)) for a, path in MODULES.items() for b in _imports(path, typed=True)
            if room(a) and room(b) and room(a) != room(b)}
    both = sorted((a, b) for a, b in ties if (b, a) in ties and a < b)
    assert not both, f"rooms of kprof/tools/ that import each other: {both}"


@pytest.mark.parametrize("upstream", ["spec.catalog", "build.build"])
def test_only_the_command_layer_looks_up_or_builds_kernels(upstream):
    allowed = COMMAND_LAYER | {upstream, "tools.machine.doctor"}  # doctor reports on nvcc itself
    callers = sorted(name for name, deps in GRAPH.items() if upstream in deps
                     and name not in allowed)
    assert not callers, f"{upstream} is imported below the command layer by: {callers}"


@pytest.mark.parametrize("tool, owner",
                         [("compute-sanitizer", "compute_sanitizer"), ("ncu", "ncu"),
                          ("nvcc", "toolchain")])
def test_one_owner_module_per_external_tool(tool, owner):
    """Each external tool is found (and so run) by one module, wherever its stage's folder puts
    it."""
    files = [f for f in _sources() if f.stem == owner]
    assert len(files) == 1, files
    finders = sorted(str(f.relative_to(PKG)) for f in _sources()
                     if f'find_tool("{tool}")' in f.read_text() and f != files[0])
    assert not finders, f"{tool} is found and run outside kprof/{files[0].relative_to(PKG)}: {finders}"


def test_only_the_device_layer_imports_cuda_bindings():
    """The driver through kprof/child/device.py only; NVRTC (a compiler, no context) through
    kprof/build/nvrtc.py only."""
    users = sorted(name for name, path in MODULES.items() if "cuda.bindings" in path.read_text()
                   and name not in ("child.device", "tools.machine.doctor", "build.nvrtc"))
    assert not users, f"cuda.bindings imported outside kprof/child/device.py: {users}"
    nvrtc_imports = {line.strip() for line in MODULES["build.nvrtc"].read_text().splitlines()
                     if line.strip().startswith(("from ", "import ")) and "cuda.bindings" in line}
    assert nvrtc_imports == {"from cuda.bindings import nvrtc",
                             "from cuda.bindings import __version__ as bindings_version"}


@pytest.mark.parametrize("child", ["child.runner", "child.workspace", "child.timing"])
def test_the_child_reads_a_typed_job(child):
    text = MODULES[child].read_text()
    assert "job.get(" not in text and 'job["' not in text and "spec_mod.load" not in text


def test_no_module_imports_the_package_front_door():
    """``kprof/__init__.py`` is the public front door; a module below it that imports from it
    (``from kprof import __version__``) climbs back up (the version lives in kprof/version.py)."""
    upward = [f"{name}.py" for name, path in MODULES.items()
              for tree in _trees(path) for node in _nodes(tree)
              if isinstance(node, ast.ImportFrom) and node.module == "kprof"
              and any(a.name in ("__version__", "sanitize", "profile", "load", "range")
                      for a in node.names)]
    assert not upward, upward


def test_no_two_stage_folders_import_each_other():
    """Between the stage folders (kprof/child/, kprof/tools/, kprof/results/, kprof/spec/) and the
    modules beside them, imports go one way: no folder imports a module that imports back into
    it."""
    def group(name: str) -> str:
        return name.split(".")[0]

    ties = {(group(a), group(b)) for a, deps in GRAPH.items() for b in deps if group(a) != group(b)}
    both = sorted((a, b) for a, b in ties if (b, a) in ties and a < b)
    assert not both, both


def test_the_tree_shows_the_pipeline():
    """Every module of kprof/ is in its stage's folder but the front doors and the shared leaves;
    each folder says what it owns (a module docstring); the folders import one way, down the
    pipeline."""
    folders = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()} - NOT_STAGES
    assert folders == set(STAGES), folders ^ set(STAGES)
    top = {p.stem for p in PKG.glob("*.py")} - {"__init__"}
    assert top == TOP, f"modules at the top of kprof/ that belong in a stage folder: {sorted(top - TOP)}"
    for folder in STAGES:
        assert ast.get_docstring(ast.parse((PKG / folder / "__init__.py").read_text())), folder
    upward = sorted(f"{a} -> {b}" for a, path in MODULES.items()
                    for b in _imports(path, typed=True) - {a}  # a reader follows annotations too
                    if a.split(".")[0] in STAGES and b.split(".")[0] in STAGES
                    and STAGES.index(b.split(".")[0]) > STAGES.index(a.split(".")[0]))
    assert not upward, f"imports that climb back up the pipeline: {upward}"


def test_the_spec_stage_is_a_folder_of_schema_and_loader():
    """kprof/spec/: the schema (dataclasses, resolve) and the loader (YAML, validation), one way:
    the loader builds the schema's classes, the schema never imports the loader; the folder is one
    node of the graph above, with the edges of both."""
    assert ({"spec.loader", "spec.schema"} <= GRAPH["spec"]
            and GRAPH["spec.schema"] <= {"spec.sizeexpr", "errors", "inputs"})
    assert {"spec.sizeexpr", "spec.expected", "inputs", "spec.schema"} <= GRAPH["spec.loader"]
    assert "spec.reference" in GRAPH["spec.expected"]
    schema = (PKG / "spec" / "schema.py").read_text()
    assert "from kprof.spec.loader" not in schema and "import yaml" not in schema
    assert "from kprof.spec.schema import" in (PKG / "spec" / "loader.py").read_text()
