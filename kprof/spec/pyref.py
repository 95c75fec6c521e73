"""References written in Python: ``reference: refs.py:expected`` or ``{y: mypkg.refs:expected_y}``.

When the vocabulary cannot say what a kernel computes (a histogram of a special kind, a top-k with
ties, a whole algorithm), the spec names a Python function. It receives the inputs as NumPy arrays
(floating-point inputs as float64, integer inputs as int64) by argument name, plus the sizes and the
scalars, taking the ones its parameters name (or all, with ``**kwargs``); it returns the expected
output, or for a spec-wide reference a dict of outputs.

It is the user's own code, run in the runner child the way pytest runs a test file. At spec load
kprof reads it without running it (:func:`check`: the file or module exists, the function is
defined at its top level, its parameters are names the spec has). In the child, :func:`call`
imports it and calls it; an exception is reported as the user's error, with the user's traceback.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kprof import inputs
from kprof.errors import InputError, UserCodeError

# a reference or baseline file, parsed to check its function's parameters: 2 MiB parse in well under
# a second (15 MB took 38 s and 6 GB)
MAX_PY_BYTES = 2 * 1024 * 1024
PREFIX = "python:"  # how a resolved Python reference is stored in a spec: python:/abs/refs.py:fn
_FILE_REF = re.compile(r"^(?P<file>[^\s:\[\]()]+\.py):(?P<func>[A-Za-z_]\w*)$")
_MODULE_REF = re.compile(r"^(?P<module>[A-Za-z_]\w*(\.[A-Za-z_]\w*)*):(?P<func>[A-Za-z_]\w*)$")


def looks_like(text: object) -> bool:
    """``refs.py:fn`` or ``pkg.mod:fn`` (an expression never has a bare ``:`` outside brackets)."""
    return isinstance(text, str) and bool(_FILE_REF.match(text.strip())
                                          or _MODULE_REF.match(text.strip()))


@dataclass(frozen=True)
class Ref:
    path: Path  # the .py file
    func: str

    def stored(self) -> str:
        return f"{PREFIX}{self.path}:{self.func}"

    @classmethod
    def from_stored(cls, text: str) -> Ref:
        path, _, func = text[len(PREFIX):].rpartition(":")
        return cls(Path(path), func)

    def label(self) -> str:
        return f"{self.path.name}:{self.func}"


def is_stored(text: str) -> bool:
    return text.startswith(PREFIX)


def check(text: str, spec_folder: Path, known: set[str]) -> Ref:
    """The reference a spec names, read without running it. Raises ValueError with what is wrong."""
    text = text.strip()
    if m := _FILE_REF.match(text):
        found = inputs.resolved(spec_folder / m.group("file"))
        if found is None or not inputs.is_file(found):
            where = found or "a symlink loop or a name too long"
            raise ValueError(f"{m.group('file')} does not exist next to the spec ({where})")
        path = found
    elif m := _MODULE_REF.match(text):
        path = _module_file(m.group("module"))
    else:
        raise ValueError(f"{text!r}: write FILE.py:FUNCTION (relative to the spec) or "
                         "package.module:FUNCTION")
    func = m.group("func")
    try:
        tree = ast.parse(inputs.read_text(path, "Python file", limit=MAX_PY_BYTES), str(path))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError, MemoryError, InputError) as exc:
        raise ValueError(f"{path.name} cannot be read as Python: {exc}") from None
    node = next((n for n in tree.body
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == func), None)
    if node is None:
        raise ValueError(f"{path.name} defines no top-level function {func}")
    _check_parameters(node, path, known)
    return Ref(path, func)


def _module_file(module: str) -> Path:
    """Where ``module`` lives, found without importing it: on sys.path, or through the top-level
    package's import finder (an editable install finds its packages by a hook, not a path)."""
    import importlib.util

    parts = module.split(".")
    roots = [Path(entry or ".") for entry in sys.path]
    try:
        top = importlib.util.find_spec(parts[0])  # a top-level name: located, not imported
    except (ImportError, ValueError):
        top = None
    if top is not None and top.submodule_search_locations:
        roots += [Path(loc).parent for loc in top.submodule_search_locations]
    elif top is not None and top.origin:
        roots.append(Path(top.origin).parent)
    for root in roots:
        base = root.joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if inputs.is_file(candidate) and (found := inputs.resolved(candidate)) is not None:
                return found
    raise ValueError(f"module {module} is not on the Python path (sys.path)")


def _check_parameters(node: ast.FunctionDef | ast.AsyncFunctionDef, path: Path,
                      known: set[str]) -> None:
    a = node.args
    if a.vararg is not None or a.posonlyargs:
        raise ValueError(f"{path.name}: {node.name}() takes its arguments by name (no *args, no "
                         "positional-only)")
    required = [p.arg for p in a.args[: len(a.args) - len(a.defaults)]]
    required += [p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is None]
    unknown = sorted(set(required) - known)
    if unknown:
        raise ValueError(f"{path.name}: {node.name}() asks for {unknown[0]!r}, which is not an "
                         f"input, size or scalar of this spec (known: {', '.join(sorted(known))})")


def call(ref: Ref, env: dict[str, object]) -> object:
    """Import the user's file and call the function with the names it takes (in the runner
    child)."""
    fn = load(ref)
    try:
        return fn(**select(fn, env))
    except Exception as exc:  # noqa: BLE001 - the user's code: any exception is theirs, reported as such
        raise UserCodeError(f"your reference {ref.label()} raised {type(exc).__name__}: {exc}",
                            user_traceback(exc, ref.path)) from None


def load(ref: Ref, what: str = "reference") -> Any:
    """The user's function, its file imported (an import error is the user's, with their
    traceback)."""
    try:
        spec = importlib.util.spec_from_file_location(f"kprof_user_{abs(hash(str(ref.path)))}",
                                                      ref.path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {ref.path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, ref.func)
    except Exception as exc:  # noqa: BLE001 - the user's code: any exception is theirs, reported as such
        raise UserCodeError(f"your {what} {ref.label()} raised {type(exc).__name__}: {exc}",
                            user_traceback(exc, ref.path)) from None


def select(fn: Any, env: dict[str, object]) -> dict[str, object]:
    """The names of ``env`` that ``fn`` takes (all of them with ``**kwargs``)."""
    import inspect

    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(env)
    return {k: v for k, v in env.items() if k in params}


def user_traceback(exc: BaseException, path: Path) -> str:
    """The traceback from the user's file down, without kprof's frames above it."""
    frames = traceback.extract_tb(exc.__traceback__)
    start = next((i for i, f in enumerate(frames) if Path(f.filename).resolve() == path), 0)
    lines = traceback.format_list(frames[start:]) + traceback.format_exception_only(type(exc), exc)
    return "Traceback (most recent call last), from your reference:\n" + "".join(lines)
