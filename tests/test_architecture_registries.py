"""The house rules of what kprof has several of, checked on the source: the checkers listed in one
registry; every command parsing and printing over an exported API function."""

from __future__ import annotations

import ast

from house import MODULES, PKG, _parsed

import kprof
from kprof.tools.sanitizers import checkers

CHECKER_NAMES = set(checkers.names())  # from the registry: a new checker is held here too

# where a checker is defined, registered or given its place: the registry, the two checker modules,
# and kprof mutants' preference of which checks run first
CHECKER_HOMES = {"tools.sanitizers.checkers", "tools.sanitizers.checker",
                 "tools.sanitizers.compute_sanitizer", "tools.sanitizers.values", "corpus.mutants"}


def test_the_checkers_are_listed_in_one_registry():
    """No module but the checkers' own spells out a list of checkers (a tuple or list of two or more
    of their names) or tests a tool against the values detector's name (``tool == "values"``): what
    a checker needs is its ``needs``, and the lists come from kprof.tools.sanitizers.checkers, so a
    new checker is one file and one line."""
    found = []
    for name, path in MODULES.items():
        if name in CHECKER_HOMES:
            continue
        for node in ast.walk(_parsed(path)):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                names = [e.value for e in node.elts if isinstance(e, ast.Constant)
                         and e.value in CHECKER_NAMES]
                if len(names) >= 2:
                    found.append(f"{name}:{node.lineno} {names}")
            if isinstance(node, ast.Compare) and any(isinstance(c, ast.Constant)
                                                     and c.value == "values"
                                                     for c in [node.left, *node.comparators]):
                found.append(f"{name}:{node.lineno} compares with 'values'")
    assert not found, found


API_MODULES = {"api": "kprof.commands.api", "offline": "kprof.commands.offline",
               "corpora": "kprof.commands.corpora", "profiles": "kprof.commands.profiles"}

# The API's functions over what the CLI has already prepared (a spec resolved with its --param and
# --size, built once for several uses) and its checks before a GPU run; the public functions are
# built on them.
PREPARED_TIER = {"require_gpu", "cases_beyond"}


def test_every_command_is_parsing_and_printing_over_an_api_function():
    """Each ``cmd_NAME`` of kprof/commands/commands.py calls (itself or through a helper it hands
    ``opts``) a function of the API modules, and every such function it calls is public in ``kprof``
    (issue 53: an API function behind every command); commands/api.py stays under 350 lines."""

    tree = ast.parse((PKG / "commands" / "commands.py").read_text())
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    missing, private = [], []
    for name, fn in funcs.items():
        if not name.startswith("cmd_"):
            continue
        reach = [fn, *(funcs[c.func.id] for c in ast.walk(fn) if isinstance(c, ast.Call)
                       and isinstance(c.func, ast.Name) and c.func.id in funcs)]
        called = {(c.func.value.id, c.func.attr) for f in reach for c in ast.walk(f)
                  if isinstance(c, ast.Call)
                  and isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)
                  and c.func.value.id in API_MODULES and c.func.attr[0].islower()}
        if not called:
            missing.append(name)
        private += [f"{name}: {m}.{f}" for m, f in called if f not in kprof.__all__
                    and f not in PREPARED_TIER]
    assert not missing, f"commands with no API function behind them: {missing}"
    assert not private, f"API functions a command calls that kprof does not export: {private}"
    assert len((PKG / "commands" / "api.py").read_text().splitlines()) < 350
