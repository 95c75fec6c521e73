"""What the house rules' tests share (tests/test_architecture_*.py): the package under test, its
modules by dotted name, their parsed trees and the import graph."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import kprof

# the package under test: the source tree's, or the installed wheel's when CI runs the tests against
# it
PKG = Path(kprof.__file__).resolve().parent

# inside kprof/ in an installed wheel
DATA_FOLDERS = {"kernels", "sanitizer_cases", "perf_cases", "bench_cases"}

# loaded into programs, or data
NOT_STAGES = {"hooks", "baselines", "builtin", "templates"} | DATA_FOLDERS


def _sources() -> list[Path]:
    """kprof's own modules (not the data folders' Python: a bench case's operations, a kernel's
    reference)."""
    return [p for p in sorted(PKG.rglob("*.py")) if p.relative_to(PKG).parts[0] not in DATA_FOLDERS]


def _dotted(path: Path) -> str:
    """kprof/child/runner.py -> child.runner; a stage folder's __init__.py is the folder (spec)."""
    parts = path.relative_to(PKG).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# Every module is a node, in whichever stage folder it lives (kprof/spec/, kprof/tools/,
# kprof/child/, ...)
MODULES: dict[str, Path] = {_dotted(p): p for p in _sources()
                            if p != PKG / "__init__.py"
                            and p.relative_to(PKG).parts[0] not in NOT_STAGES}


@functools.cache
def _parsed(path: Path) -> ast.Module:
    """A module's tree, parsed once for the whole file's tests (none of them changes a tree)."""
    return ast.parse(path.read_text())


def _trees(path: Path) -> list[ast.Module]:
    return [_parsed(path)]


COMMAND_LAYER = {"commands.cli", "commands.commands", "commands.pipeline", "commands.api",
                 "commands.corpora", "commands.offline", "commands.scaffold",
                 "commands.profiles", "commands.streams"}  # api: the same front door, from Python


def _nodes(tree: ast.AST):
    """Every node, leaving out ``if TYPE_CHECKING:`` blocks (imports for annotations only)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            continue
        yield node
        yield from _nodes(node)


def _imports(path: Path, typed: bool = False) -> set[str]:
    """The kprof modules a file imports, at module level or inside functions: ``from kprof.child
    import runner`` is child.runner, ``from kprof.spec import KernelSpec`` the spec folder's front
    (spec); ``typed``: the imports for annotations only too."""
    out: set[str] = set()
    tree = _parsed(path)
    for node in ast.walk(tree) if typed else _nodes(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "kprof":
                out.update(a.name for a in node.names if a.name in MODULES)
            elif node.module.startswith("kprof."):
                rest = node.module[len("kprof."):]
                out.update(f"{rest}.{a.name}" if f"{rest}.{a.name}" in MODULES else rest
                           for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name[len("kprof."):] for a in node.names if a.name.startswith("kprof."))
    return out & set(MODULES)


GRAPH = {name: _imports(path) - {name} for name, path in MODULES.items()}

# The stage folders, bottom to top: a folder imports only the folders before it (and the modules at
# the top of kprof/). spec -> build -> launch (the parent's side of the child) -> child -> tools
# (sanitize) and measure (bench, profile) -> diagnosis (why a kernel is slow) -> corpus (the checks
# of the checks) -> results
# -> commands (the front doors).
STAGES = ["spec", "build", "launch", "child", "tools", "measure", "diagnosis", "corpus", "results",
          "commands"]

# What stays at the top of kprof/: the front doors a user imports or runs (the package, python -m
# kprof, the pytest plugin's entry point, kprof.load, kprof.range) and the leaves every stage uses.
TOP = {"__main__", "pytest_plugin", "op", "annotate", "errors", "version", "inputs", "outputs", "proc",
       "parallel", "telemetry", "units", "findings", "stats", "demangle"}
