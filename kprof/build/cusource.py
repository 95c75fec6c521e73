"""Reading a CUDA source as text, for the transforms that rewrite it (kprof.build.shake's warp
delays, kprof.corpus.mutants' mutants): comments and literals blanked so no position found lies in
one, and the bracket that closes another."""

from __future__ import annotations

import os
import re
from pathlib import Path

from kprof import inputs
from kprof.errors import UsageError


def closing(text: str, opening: int) -> int | None:
    """The index of the ``)`` that closes the ``(`` at ``opening``; None when the text ends
    first."""
    depth = 0
    for i in range(opening, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return None


def blank_comments(text: str) -> str:
    """``text`` with every comment and string or character literal's contents turned into spaces
    (line breaks kept), so that positions found in it are positions in ``text`` and none lies in a
    comment."""
    out = list(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)  # the quotes themselves stay
            j += 1
        else:
            j = i + 1
        i = j
    return "".join(out)


_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(\w+)(.*)$")


def unguarded_defines(text: str, names: set[str]) -> list[tuple[str, int, str]]:
    """Each ``#define NAME`` of ``names`` not inside an ``#ifndef NAME`` (or ``#if
    !defined(NAME)``): a define the spec or ``--param`` sets that this line would override. (name,
    line, the line's text)."""
    stack: list[str] = []  # the open conditions: the name each one guards, or ""
    out = []
    lines = text.splitlines()
    for number, line in enumerate(blank_comments(text).splitlines(), 1):
        m = _DIRECTIVE.match(line)
        if m is None:
            continue
        word, rest = m.group(1), m.group(2).strip()
        if word == "ifndef":
            stack.append(rest.split()[0] if rest else "")
        elif word == "if":
            g = re.match(r"!\s*defined\s*\(?\s*(\w+)\s*\)?\s*$", rest)
            stack.append(g.group(1) if g else "")
        elif word == "ifdef":
            stack.append("")
        elif word in ("else", "elif") and stack:
            stack[-1] = ""
        elif word == "endif" and stack:
            stack.pop()
        elif word == "define":
            name = re.match(r"(\w+)", rest)
            if name and name.group(1) in names and name.group(1) not in stack:
                out.append((name.group(1), number, lines[number - 1].strip()))
    return out


# A header a tutorial's file includes for its host code, and the library it belongs to (what to
# install)
LIBRARY_HEADERS = {
    "cublas_v2.h": ("cuBLAS", "nvidia-cublas"), "cublas.h": ("cuBLAS", "nvidia-cublas"),
    "cublasLt.h": ("cuBLASLt", "nvidia-cublas"), "cudnn.h": ("cuDNN", "nvidia-cudnn-cu13"),
    "cudnn_frontend.h": ("cuDNN's frontend", "nvidia-cudnn-frontend"),
    "nccl.h": ("NCCL", "nvidia-nccl-cu13"),
    "curand.h": ("cuRAND", "nvidia-curand"), "curand_kernel.h": ("cuRAND", "nvidia-curand"),
    "cufft.h": ("cuFFT", "nvidia-cufft"), "cusparse.h": ("cuSPARSE", "nvidia-cusparse"),
    "cusolverDn.h": ("cuSOLVER", "nvidia-cusolver"), "mpi.h": ("MPI", "mpich (and its headers)"),
    "omp.h": ("OpenMP", "your compiler's OpenMP"),
}  # fmt: skip
_MISSING = (
    re.compile(r"^(?P<file>[^\n:]+):(?P<line>\d+):\d+: fatal error: (?P<header>[^:\n]+): No such "
               r"file or directory", re.M),
    re.compile(r'^(?P<file>[^\n(]+)\((?P<line>\d+)\): catastrophic error: cannot open source file '
               r'"(?P<header>[^"\n]+)"',
               re.M),
)
_ERROR = re.compile(r"^(?P<file>[^\n(]+)\((?P<line>\d+)\): (?:error|catastrophic error)(?: "
                    r"[^:\n]*)?: (?P<what>[^\n]+)", re.M)


def compile_stop(log: str) -> str | None:
    """Where a compile stopped and what to do, in a line, from the compiler's log: a header it could
    not find (with the library it belongs to and how to get it, or to keep the host code that needs
    it out of kprof's build), else its first error. None where the log names no line. Pure."""
    from pathlib import Path

    for rx in _MISSING:
        if m := rx.search(log):
            header = m.group("header").strip()
            base = Path(header).name
            where = f"{Path(m.group('file')).name} line {m.group('line')}"
            lib = LIBRARY_HEADERS.get(base)
            get = (f"it is {lib[0]}'s header, for the host code: install it where the compiler "
                   f"looks ({lib[1]}, or a CUDA toolkit that has it)" if lib
                   else "put its folder on the include path")
            return (f"{where} includes {header}, which the compiler cannot find: {get}; or keep "
                    "that include and the host code that needs it inside #ifndef KPROF_BUILD ... "
                    "#endif (kprof builds with -DKPROF_BUILD)")
    if m := _ERROR.search(log):
        return f"{Path(m.group('file')).name} line {m.group('line')}: {m.group('what').strip()[:200]}"
    return None


MAX_SOURCE_BYTES = 64 * 1024 * 1024  # one .cu or header; the largest shipped one is under 20 KB


def local_sources(source: Path) -> list[tuple[Path, bytes]]:
    """The source and every local header it includes with ``#include "..."``, recursively, each read
    once (regular files only, capped): what the cache key hashes."""
    seen: dict[Path, bytes] = {}
    todo = [source]
    include = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"\n]+)"', re.M)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        if (why := inputs.regular_file_error(path)) is not None:
            # nvcc would open it and wait (a FIFO) or never end
            if path != source and os.path.lexists(path):
                raise UsageError(f"{source.name} includes {path.name}: {why}; a header must be a "
                                 "regular file")
            continue
        data = inputs.read_bytes(path, "source", limit=MAX_SOURCE_BYTES)
        seen[path] = data
        text = data.decode("utf-8", errors="replace")
        for inc in include.findall(text):
            try:
                todo.append((path.parent / inc).resolve())
            # a loop of symlinks, a NUL: nvcc reports the include
            except (OSError, RuntimeError, ValueError):
                continue
    return list(seen.items())
