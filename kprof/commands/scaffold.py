"""``kprof new NAME [--dir DIR] [--like KERNEL]``: a kernel and its spec to start from.

Writes ``NAME.cu`` and ``NAME.yaml``: kprof's template (y = alpha * x + y, with a comment on every
spec field), or a copy of a shipped kernel renamed to NAME. Both build and verify as written, so
the first ``kprof run NAME.yaml`` passes and every later change is the user's.
"""

from __future__ import annotations

import re
from pathlib import Path

from kprof import inputs, outputs
from kprof.errors import UsageError
from kprof.spec import KernelSpec, catalog

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
# Names a kernel cannot have: C++'s keywords (C++20), CUDA's built-in variables, types and functions
# the kernel's translation unit already declares (a kernel `min` or `blockIdx` does not build),
# `main`, and the words YAML reads as a boolean or null in the spec's `entry:` (`yes`, `null`).
_CXX_KEYWORDS = frozenset((
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
    "case", "catch",
    "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval",
    "constexpr",
    "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype",
    "default", "delete",
    "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false",
    "float", "for",
    "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept",
    "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
    "reinterpret_cast",
    "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast",
    "struct", "switch",
    "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename",
    "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq"
))
_CUDA_NAMES = frozenset((
    "main", "blockIdx", "threadIdx", "blockDim", "gridDim", "warpSize", "dim3", "min", "max", "abs",
    "fabs", "printf", "malloc", "free", "memcpy", "memset", "assert", "sqrt", "exp", "log", "pow"
))
_YAML_WORDS = frozenset(["yes", "no", "on", "off", "true", "false", "y", "n", "null"])
_VECTOR_TYPE = re.compile(r"^(u?char|u?short|u?int|u?long|u?longlong|float|double)[1-4]\Z")


def _unusable(name: str) -> str | None:
    """Why ``name`` cannot name a kernel though it is an identifier, or None."""
    if name in _CXX_KEYWORDS:
        return "a C++ keyword"
    if name in _CUDA_NAMES or _VECTOR_TYPE.match(name):
        return "a name CUDA already declares"
    if name.lower() in _YAML_WORDS:
        return "a word YAML reads as a boolean or null (the spec's entry: would not be the name)"
    if name.startswith("__") or (name.startswith("_") and name[1:2].isupper()):
        return "reserved to the compiler (a leading __ or _ and a capital)"
    return None


def new(name: str, folder: Path | str, like: str | None = None) -> tuple[Path, Path]:
    """Write NAME.cu and NAME.yaml into ``folder`` (and, with ``like``, the Python files its spec
    names beside it); never overwrite, never write through a symlink."""
    if not _IDENT.match(name) or len(name) > 100:
        raise UsageError(f"kprof new {name[:60]!r}: a kernel name is an identifier (letters, "
                         "digits, _), e.g. kprof new my_scale")
    if (why := _unusable(name)) is not None:
        raise UsageError(f"kprof new {name}: {why}, so a kernel of that name does not build; give "
                         f"another name, e.g. kprof new my_{name.strip('_').lower() or 'kernel'}")
    folder = inputs.user_path(folder, "--dir")
    cu, yaml_path = folder / f"{name}.cu", folder / f"{name}.yaml"
    if like is None:
        files = {cu: (TEMPLATES / "kernel.cu").read_text().replace("NAME", name),
                 yaml_path: (TEMPLATES / "kernel.yaml").read_text().replace("NAME", name)}
    else:
        source, spec, helpers = _renamed(like, name)
        files = {cu: source, yaml_path: spec,
                 **{folder / helper.name: _helper_text(helper) for helper in helpers}}
    for path in files:  # every name checked before any is written: all or nothing
        if (taken := outputs.exists_error(path, "kprof new")) is not None:
            raise taken
    outputs.output_dir(folder, "--dir")
    _builds(name, {path.name: text for path, text in files.items()})
    written: list[Path] = []
    try:
        for path, text in files.items():
            outputs.create_new(path, text, "kprof new")
            written.append(path)
    except UsageError:
        for path in written:  # all or nothing: a half-written kernel does not build
            path.unlink(missing_ok=True)
        raise
    return cu, yaml_path


def _builds(name: str, files: dict[str, str]) -> None:
    """The kernel as it would be written, loaded and built in a folder of its own: a name the
    compiler will not take (a CUDA math function such as ``ceil``, a type such as ``size_t``, a
    define of the spec such as ``BLOCK``) is refused in one line before anything is written,
    whatever list it is on or not. Where no compiler is here, the name passes on the checks of
    :func:`_unusable` alone."""
    import tempfile

    from kprof.build import build, toolchain
    from kprof.errors import BuildError, KprofError, ToolNotFoundError

    with tempfile.TemporaryDirectory(prefix="kprof-new-") as tmp:
        for file, text in files.items():
            (Path(tmp) / file).write_text(text)
        try:
            build.build(catalog.load(str(Path(tmp) / f"{name}.yaml")), "sm_90")
        except ToolNotFoundError:
            return  # nothing here builds a kernel: the name is judged by _unusable alone
        except BuildError as exc:
            # no kernel builds here: not the name's fault
            if (broken := toolchain.probe_compile("sm_90")) is not None:
                raise UsageError(f"kprof new {name}: {broken.rstrip('.')}; `kprof doctor --for "
                                 "build` says what to fix") from None
            first = next((ln.strip() for ln in (exc.log or "").splitlines() if "error" in ln),
                         str(exc))
            raise UsageError(f"kprof new {name}: a kernel of that name does not build "
                             f"({_first_error(first, tmp)}); give another name, e.g. kprof new "
                             f"my_{name.strip('_').lower() or 'kernel'}") from None
        except UsageError as exc:  # the machine's trouble (TMPDIR, the cache), not the name's
            raise UsageError(f"kprof new {name}: {str(exc).splitlines()[0]}") from None
        except KprofError as exc:
            raise UsageError(f"kprof new {name}: {str(exc).splitlines()[0]}; give another name, "
                             f"e.g. kprof new my_{name.strip('_').lower() or 'kernel'}") from None


def _first_error(line: str, folder: str) -> str:
    """nvcc's first error without the temporary folder's path: ``ceil.cu(3): error: ...``."""
    return inputs.one_line(line.replace(folder + "/", ""))[:160]


def _renamed(like: str, name: str) -> tuple[str, str, list[Path]]:
    """A shipped kernel's source and spec with its kernel renamed to ``name``, and the Python files
    beside the spec that it names (a reference, a baseline), which the copy needs to build and
    verify."""
    spec = catalog.load(like)
    twin = spec.path.with_suffix(".cu").resolve() != spec.source.resolve() and spec.path.parent != TEMPLATES
    if spec.twin is not None or spec.expect is not None or (twin and spec.name.endswith("_fixed")):
        raise UsageError(f"--like {like}: a sanitizer or performance case (or its fixed twin, "
                         "whose spec is the case's); start from a kernel of `kprof list`")
    from kprof import inputs
    from kprof.build.cusource import MAX_SOURCE_BYTES
    from kprof.spec.loader import MAX_SPEC_BYTES

    source = inputs.read_text(spec.source, "--like's source", limit=MAX_SOURCE_BYTES)
    text = inputs.read_text(spec.path, "--like's spec", limit=MAX_SPEC_BYTES)
    if not spec.steps:  # one kernel: rename it, in the source and in the spec's entry
        source = re.sub(rf"\b{re.escape(spec.entry)}\b", name, source)
        text = re.sub(rf"^entry:\s*{re.escape(spec.entry)}\s*$", f"entry: {name}", text, flags=re.M)
    text = re.sub(r"^name:.*$", f"name: {name}", text, flags=re.M)
    text = re.sub(r"^source:.*$", f"source: {name}.cu", text, flags=re.M)
    if spec.baseline and spec.baseline not in ("cublas_sgemm",):
        text = re.sub(r"^baseline:.*$",
                      f"baseline: {spec.baseline}  # the shipped kernel it was compared with",
                      text, flags=re.M)
    return source, text, _python_files(spec)


def _helper_text(path: Path) -> str:
    from kprof import inputs
    from kprof.spec.pyref import MAX_PY_BYTES

    return inputs.read_text(path, "--like's Python file", limit=MAX_PY_BYTES)


def _python_files(spec: KernelSpec) -> list[Path]:
    """The ``FILE.py`` of every Python reference, baseline or operation of ``spec`` that lies in its
    own folder (a ``package.module:FN`` is imported, not copied)."""
    from kprof.spec import pyref

    stored = [expr for _, expr in spec.reference] + [expr for _, expr in spec.baselines]
    stored += [s for s in (spec.python, spec.baseline) if s]
    out: list[Path] = []
    for text in stored:
        if text.startswith(pyref.PREFIX):
            path = pyref.Ref.from_stored(text).path
            if path.parent == spec.path.resolve().parent and path.suffix == ".py" and path not in out:
                out.append(path)
    return out
