"""Kernels whose CUDA source is a string in the user's Python file: the line a tool reports is a
line of that string, in a file that is gone or never was. Pure but for reading the user's files
(capped, regular files only, parsed with :mod:`ast`, never run).

- CuPy's ``RawKernel`` and ``RawModule`` write the string to ``<temporary dir>/<hash>.cubin.cu``,
  compile it and delete the folder: a finding at ``/tmp/tmpw770smz0/d964...cubin.cu:5`` (recorded on
  an H200, ``tests/data/programs/cupy_shift.memcheck.xml``) is line 5 of the string ``SOURCE`` in
  ``cupy_shift.py``, which is that file's line 18.
- NVRTC (through cuda-python) names the source after the program's name: a bare ``block_sum.cu``
  comes back as ``<working directory>/block_sum.cu``, a path that need not exist.

:func:`locate` finds the string literal that defines the kernel (``__global__`` and the kernel's
name in it) among the Python files of the launch's host stack (not their neighbours: a file beside
them may define another kernel of the same name), and maps the line: a triple-quoted literal keeps
the source's lines, so line ``n`` of the source is the literal's first line plus ``n - 1``. A
literal whose lines do not match its text (escaped newlines, implicit concatenation) is named
without a line inside it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from kprof import inputs
from kprof.errors import InputError

MAX_SOURCE_BYTES = 1 << 20  # a Python file larger than this is not searched


@dataclass(frozen=True)
class Located:
    path: str
    line: int | None  # None: the literal is known, not the line inside it
    note: str  # what was reported and why it was moved: for the report and JSON


def locate(reported: str | None, line: int | None, kernel: str | None,
           stack_files: Iterable[str]) -> Located | None:
    """Where in the user's Python files the kernel's source is, when the tool reported a file that
    is not there; None when the reported file exists, or no single string literal defines the
    kernel."""
    if not reported or not kernel or inputs.regular_file_error(Path(reported)) is None:
        return None
    name = _bare_name(kernel)
    if not name:
        return None
    stack = list(dict.fromkeys(f for f in stack_files if f.endswith(".py")))
    hits = [(path, node) for path in stack for node in _literals(path, name)]
    if len({(p, n.lineno) for p, n in hits}) == 1:  # one definition: never a guess between two
        return _mapped(reported, line, *hits[0])
    return None


def _mapped(reported: str, line: int | None, path: str, node: ast.Constant) -> Located:
    text = str(node.value)
    exact = node.end_lineno is not None and node.end_lineno - node.lineno == text.count("\n")
    where = f"{reported}:{line}" if line else reported
    if exact and line and line <= text.count("\n") + 1:
        return Located(path, node.lineno + line - 1,
                       f"the kernel's source is the string at {Path(path).name}:{node.lineno}; the "
                       f"tool named {where}, a file that no longer exists (or never did)")
    return Located(path, node.lineno,
                   f"the kernel's source is the string at {Path(path).name}:{node.lineno} (line "
                   f"{line} of it); the tool named {where}, a file that no "
                   "longer exists (or never did)")


def _bare_name(kernel: str) -> str:
    """The kernel's function name, when it is one a string's ``__global__`` can define."""
    from kprof.demangle import base_name

    text = base_name(kernel)
    return text if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text) else ""


def _literals(path: str, name: str) -> list[ast.Constant]:
    """The string literals of ``path`` that define a kernel called ``name``."""
    pattern = re.compile(r"__global__[^;{]*\b" + re.escape(name) + r"\s*\(")
    return [n for n in _strings(path) if pattern.search(str(n.value))]


def _strings(path: str) -> tuple[ast.Constant, ...]:
    """Every string literal of a Python file holding ``__global__``; none when it cannot be read or
    parsed."""
    try:
        info = Path(path).stat()
    except (OSError, ValueError):
        return ()
    return _parsed(path, info.st_mtime_ns, info.st_size)


@lru_cache(maxsize=256)
def _parsed(path: str, mtime_ns: int, size: int) -> tuple[ast.Constant, ...]:
    """:func:`_strings` of one version of the file (its time and size are the key)."""
    try:
        text = inputs.read_text(path, "a Python file of the launch", limit=MAX_SOURCE_BYTES,
                                errors="replace")
    except InputError:
        return ()
    if "__global__" not in text:
        return ()
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    return tuple(n for n in ast.walk(tree)
                 if isinstance(n, ast.Constant) and isinstance(n.value, str)
                 and "__global__" in n.value)


def generated_by_torch(reported: str | None) -> str | None:
    """A note for a finding in the file torch's ``cpp_extension.load_inline`` wrote from its
    ``cuda_sources`` (``<build dir>/cuda.cu``, beside the ``build.ninja`` it builds with); None for
    any other file. The file exists, so the line stays; the user's source is the string they
    passed."""
    if not reported:
        return None
    path = Path(reported)
    if path.name != "cuda.cu" or inputs.regular_file_error(path.parent / "build.ninja") is not None:
        return None
    return (f"{path.name} is the file torch.utils.cpp_extension.load_inline wrote from your "
            f"cuda_sources (build folder {path.parent}): the line is of that file")


def missing(reported: str | None, line: int | None, launch: str | None) -> Located | None:
    """A finding in a file that is not there and holds no string of the user's: CuPy's temporary
    copy of a kernel it generated (``ElementwiseKernel``, ``ReductionKernel``:
    ``<tmp>/<hash>.cubin.cu``) is moved to the user's call that launched it; another file (an NVRTC
    program's name) stays, said not to be a file here. None where the file exists."""
    if not reported or inputs.regular_file_error(Path(reported)) is None:
        return None
    where = f"{reported}:{line}" if line else reported
    path, _, number = (launch or "").rpartition(":")
    if (reported.endswith(".cubin.cu") and path and number.isascii() and number.isdigit()
            and inputs.regular_file_error(Path(path)) is None):
        return Located(path, int(number),
                       f"CuPy generated this kernel's source (its copy, {where}, is deleted): "
                       f"the line is your call that launched it")
    return Located(reported, line,
                   f"{where} is not a file here: the name the program gave its kernel's "
                   "source (an NVRTC program's name, a library's temporary copy), or a report "
                   "read on another machine")


def place(reported: str | None, line: int | None, kernel: str | None, stack_files: Iterable[str],
          launch: str | None) -> Located | None:
    """Where a finding in ``reported:line`` belongs, with the note that says why, or None where the
    tool's place stands as it is: the string in the user's file that holds the kernel
    (:func:`locate`), else torch's generated extension file (:func:`generated_by_torch`), else a
    file that is not there (:func:`missing`)."""
    found = locate(reported, line, kernel, stack_files)
    if found is not None:
        return found
    note = generated_by_torch(reported)
    if note is not None and reported is not None:
        return Located(reported, line, note)
    return missing(reported, line, launch)
