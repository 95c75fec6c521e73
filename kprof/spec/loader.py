"""Loading a spec: one YAML file beside each ``.cu``, read with ``yaml.safe_load`` (capped, no alias,
no deep nesting), every field validated, every error naming the file and the field
(``kernels/tiled_matmul.yaml: launch.grid[0]: unknown size 'Q'``), into :mod:`kprof.spec.schema`'s
:class:`KernelSpec`. References go through :mod:`kprof.spec.reference` and :mod:`kprof.spec.pyref`; nothing
from a spec ever reaches ``eval``. ``docs/spec.md`` documents the format.
"""

from __future__ import annotations

import ast
import keyword
import os
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from kprof import inputs
from kprof.errors import InputError, ReferenceExprError, SizeExprError, SpecError
from kprof.spec import reference, sizeexpr
from kprof.spec.schema import (
    ARCH_NAME,
    CUBLAS_SGEMM,
    DTYPES,
    FILLS,
    IDENT,
    MATHS,
    ROLES,
    SWIZZLES,
    TENSORMAP_DTYPES,
    TENSORMAP_MAX_RANK,
    Arg,
    BufferArg,
    Check,
    Fill,
    KernelSpec,
    Launch,
    Requirement,
    ScalarArg,
    SizeDef,
    Step,
    TensorMapArg,
    Tolerance,
    define_env,
)

_TOP_KEYS = {
    "name", "description", "source", "entry", "defines", "nvcc_flags", "sizes", "args",
    "launch", "reference", "tolerance", "work", "checks", "expect", "notes", "twin",
    "twin_defines", "baseline", "baselines", "steps", "python", "requires",
}  # fmt: skip
_BASELINE_NAME = re.compile(r"^[a-z][a-z0-9_.-]{0,39}\Z")  # a name in baselines: (torch, torch.compile)
# What a Python operation (``python: ops.py:scale``) cannot have: it is the function, not a kernel.
_NOT_FOR_PYTHON = ("source", "entry", "launch", "steps", "nvcc_flags", "twin", "twin_defines")


MAX_SPEC_BYTES = 256 * 1024  # the largest shipped spec is under 4 KB
MAX_FILL_CHARS = 200  # a fill rule: a name and up to three numbers


MAX_DEPTH = 32  # the deepest shipped spec nests 4 levels; PyYAML's composer recurses once a level


def _yaml_problem(text: str) -> str | None:
    """What makes ``text`` unfit to build, found from the event stream before anything is built: an
    alias (``*name``; aliases can expand exponentially: a spec of under 1 KB once held kprof for
    minutes and gigabytes, and a spec never needs one), or nesting deeper than :data:`MAX_DEPTH`."""
    import yaml

    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        line = int(event.start_mark.line) + 1 if event.start_mark is not None else 0
        if isinstance(event, yaml.AliasEvent):
            return f"line {line}: YAML aliases (*name) are not allowed in a spec; write the value out"
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                return f"line {line}: nested deeper than {MAX_DEPTH} levels; a spec needs a few"
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
    return None


# Specs read before, by path and text, with a digest of the files they name (the kernel's source, the Python
# references): a spec that several commands, sweeps or tests read is parsed once (PyYAML's pure-Python parser
# takes about 10 ms a spec); a change to the spec or to a file it names reads it again.
_LOADED: dict[tuple[str, str], tuple[KernelSpec, frozenset[Path], str]] = {}
_LOADED_MAX = 512


def _named_files(value: object, out: set[Path]) -> set[Path]:
    """Every file a loaded spec names: its Path fields and its stored Python references, recursively."""
    import dataclasses

    from kprof.spec import pyref

    if isinstance(value, Path):
        out.add(value)
    elif isinstance(value, str):
        if pyref.is_stored(value):
            out.add(pyref.Ref.from_stored(value).path)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _named_files(getattr(value, f.name), out)
    elif isinstance(value, (tuple, list, frozenset, set)):
        for v in value:
            _named_files(v, out)
    elif isinstance(value, dict):
        for k, v in value.items():
            _named_files(k, out)
            _named_files(v, out)
    return out


def _digest_of(files: frozenset[Path]) -> str:
    import hashlib

    digest = hashlib.sha256()
    for f in sorted(files):
        digest.update(os.fsencode(str(f)) + b"\0")
        try:
            if f.is_file() and f.stat().st_size <= MAX_NAMED_BYTES:
                digest.update(f.read_bytes())
            else:
                digest.update(b"\1not a small file")
        except OSError:
            digest.update(b"\1unreadable")
    return digest.hexdigest()


MAX_NAMED_BYTES = 4 * 1024 * 1024  # a named file larger than this is not read for the digest (its name is)


# What PyYAML's safe constructor raises, past its own YAMLError, for values it cannot build: a date that is
# not one (2001-02-30: ValueError), `!!int abc` (ValueError), `!!bool maybe` (KeyError), `!!timestamp x`
# (AttributeError), an integer past Python's 4,300 digits (ValueError).
YAML_VALUE_ERRORS = (ValueError, KeyError, AttributeError, TypeError, OverflowError, IndexError)


def value_problem(exc: BaseException) -> str:
    """One line for a value PyYAML could not build: what it is, and how to write it instead."""
    said = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
    return (f"a value that cannot be built ({type(exc).__name__}: {said}); write it plainly (a number, a quoted "
            "string), without a YAML tag such as !!int or !!timestamp")


def load(path: str | Path) -> KernelSpec:
    """Read and validate one spec file: a regular file of at most 256 KiB, plain YAML (no aliases, at
    most 32 levels deep), ``yaml.safe_load`` rules."""
    import yaml

    path = inputs.user_path(path, "spec")
    where = _display(path)
    try:
        text = inputs.read_text(path, "spec", limit=MAX_SPEC_BYTES)
    except InputError as exc:
        raise SpecError(where, "", exc.reason) from None
    if (known := _LOADED.get((str(path), text))) is not None and _digest_of(known[1]) == known[2]:
        return known[0]
    try:
        problem = _yaml_problem(text)
        if problem is not None:
            raise SpecError(where, "", problem)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(where, "", f"not valid YAML: {at}{problem}") from None
    except YAML_VALUE_ERRORS as exc:  # a tagged or dated value PyYAML fails to build with a plain Python error
        raise SpecError(where, "", f"not valid YAML: {value_problem(exc)}") from None
    spec = from_dict(data, path)
    if len(_LOADED) >= _LOADED_MAX:
        _LOADED.clear()
    named = frozenset(_named_files(spec, set()))
    _LOADED[(str(path), text)] = (spec, named, _digest_of(named))
    return spec


Fail = Callable[[str, str], SpecError]
CheckExpr = Callable[[object, str], str]


def from_dict(data: object, path: Path) -> KernelSpec:
    where = _display(path)

    def fail(fld: str, problem: str) -> SpecError:
        return SpecError(where, fld, problem)

    if not isinstance(data, dict):
        raise fail("", "a spec must be a mapping of fields (name, source, sizes, args, launch, ...)")
    unknown = sorted(set(map(str, data)) - _TOP_KEYS)
    if unknown:
        raise fail(unknown[0], f"unknown field (known fields: {', '.join(sorted(_TOP_KEYS))})")
    name, description = _load_name(data, path, fail)
    python_text = data.get("python")
    if python_text is None:
        source, entry = _load_source(data, path, name, fail)
    defines = _load_defines(data.get("defines"), fail)
    flags = _load_nvcc_flags(data.get("nvcc_flags", []), path.parent, fail)
    sizes = _load_sizes(data.get("sizes"), fail)
    known_sizes = {s.name for s in sizes} | {k for k, _ in defines}

    def check_expr(expr: object, fld: str) -> str:
        try:
            used = sizeexpr.names(expr)
        except SizeExprError as exc:
            raise fail(fld, str(exc)) from None
        missing = sorted(used - known_sizes)
        if missing:
            known = ", ".join(sorted(known_sizes)) or "none"
            raise fail(fld, f"unknown size '{missing[0]}' (known: {known})")
        return str(expr)

    args = _load_args(data.get("args"), fail, check_expr)
    python: str | None = None
    first_entry: str | None
    if python_text is not None:
        python, source, steps, launch = _load_python_op(data, args, {s.name for s in sizes} | {k for k, _ in defines},
                                                        path.parent, fail)
        entry = first_entry = steps[0].entry
    else:
        steps, first_entry, launch = _load_launches(data, args, fail, check_expr)
    work = data.get("work", {}) or {}
    if not isinstance(work, dict) or set(work) - {"flops", "bytes", "math"}:
        raise fail("work", "must be a mapping with 'flops' and/or 'bytes' size expressions (and 'math')")
    if work.get("math", "fp32") not in MATHS:
        raise fail("work.math", f"must be {' or '.join(MATHS)} (what the FLOPs run on: FP32 FMA, or dense 16-bit "
                                f"tensor-core math), not {work.get('math')!r}")
    notes = data.get("notes", "")
    if not isinstance(notes, str):
        raise fail("notes", "must be a string")
    twin, twin_defines = _load_twin(data, path, fail)
    tolerance = _load_tolerance(data.get("tolerance"), fail, check_expr, args, known_sizes)
    numeric = set(define_env(defines))  # what the runner passes a Python baseline besides sizes and inputs
    return KernelSpec(
        name=name, path=path.resolve(), source=source, entry=first_entry or entry, description=description.strip(),
        sizes=sizes, args=args, launch=launch,
        reference=_load_reference(data.get("reference"), args, known_sizes, fail, path.parent),
        tolerance=tolerance,
        flops=check_expr(work["flops"], "work.flops") if "flops" in work else None,
        bytes=check_expr(work["bytes"], "work.bytes") if "bytes" in work else None, math=str(work.get("math", "fp32")),
        defines=defines, nvcc_flags=tuple(flags),
        checks=_load_checks(data.get("checks", []), {s.name for s in sizes}, args, fail),
        expect=data.get("expect"), notes=notes.strip(), twin=twin, twin_defines=twin_defines,
        baseline=_load_baseline(data.get("baseline"), args, {s.name for s in sizes}, numeric, path.parent, fail),
        baselines=_load_named_baselines(data.get("baselines"), args, {s.name for s in sizes}, numeric, path.parent, fail),
        steps=steps, python=python, requires=_load_requires(data.get("requires"), fail),
    )  # fmt: skip


def _load_requires(raw: object, fail: Fail) -> Requirement | None:
    if raw is None:
        return None
    shape = "must be a mapping {arch: sm_XY, why: the feature that needs it}, e.g. {arch: sm_80, why: cp.async}"
    if not isinstance(raw, dict) or set(map(str, raw)) != {"arch", "why"}:
        raise fail("requires", shape)
    arch, why = raw["arch"], raw["why"]
    if not isinstance(arch, str) or not ARCH_NAME.match(arch):
        raise fail("requires.arch", f"{_show(arch)}: write it as sm_XY, e.g. sm_80")
    if not isinstance(why, str) or not why.strip() or len(why) > 200:
        raise fail("requires.why", "must name the feature that needs this architecture, in at most 200 characters")
    return Requirement(arch, " ".join(why.split()))


def _load_name(data: dict[str, object], path: Path, fail: Fail) -> tuple[str, str]:
    """name and description."""
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not IDENT.match(name):
        raise fail("name", f"{_show(name)} must be an identifier (letters, digits, _)")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise fail("description", "must be a string")
    return name, description


MAX_ENTRY = 1024  # characters of a kernel's name: far past any real one, short of a name that floods a message


def _load_source(data: dict[str, object], path: Path, name: str, fail: Fail) -> tuple[Path, str]:
    """The .cu file and the kernel's entry."""
    source_text = data.get("source", f"{path.stem}.cu")
    if not isinstance(source_text, str) or not source_text:
        raise fail("source", "must be the path of the .cu file, relative to the spec")
    try:
        source = (path.parent / source_text).resolve()
        found = source.is_file()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL in the name
        raise fail("source", f"{_show(source_text)} cannot be read ({_cut(str(exc), 80)})") from None
    if not found:
        raise fail("source", f"{_cut(source_text, 60)} does not exist next to the spec ({_cut(str(source), 120)})")
    if problem := inputs.shell_problem(str(source)):  # nvcc hands the path to a shell
        raise fail("source", f"the path {_show(str(source), 100)} {problem}: rename the file or its folder")
    entry = data.get("entry", name)
    if not isinstance(entry, str) or not IDENT.match(entry):
        raise fail("entry", f"{_show(entry)} must be the extern \"C\" name of the kernel")
    if len(entry) > MAX_ENTRY:
        raise fail("entry", f"a name of {len(entry):,} characters; a kernel's name has at most {MAX_ENTRY:,}")
    return source, entry


def input_names(args: tuple[Arg, ...]) -> set[str]:
    """What a reference, a scale or a Python baseline may name besides the sizes: the scalars and the
    input buffers."""
    return {a.name for a in args if isinstance(a, ScalarArg) or (isinstance(a, BufferArg) and a.role in ("in", "inout"))}


def _output_names(args: tuple[Arg, ...]) -> set[str]:
    return {a.name for a in args if isinstance(a, BufferArg) and a.role in ("out", "inout")}


def as_python_operation(spec: KernelSpec, stored: str, label: str) -> KernelSpec:
    """``spec`` with a Python callable (pyref stored form, e.g. a framework baseline) as its operation:
    the same buffers, sizes, reference and work, so kprof profile reports what the callable launches
    (inside kprof's NVTX range) beside the kernel, named ``SPEC__LABEL`` (``rmsnorm_onepass__torch_compile``:
    letters, digits and ``_`` only, which ncu's NVTX filter reads literally)."""
    from kprof.spec import pyref

    ref = pyref.Ref.from_stored(stored)
    steps, launch = _python_launch(ref.func, spec.args)
    safe = re.sub(r"[^A-Za-z0-9_]", "_", label)
    return replace(spec, name=f"{spec.name}__{safe}", python=stored, source=ref.path, entry=ref.func, steps=steps,
                   launch=launch, nvcc_flags=(), twin=None, twin_defines=(), baseline=None, baselines=())


def _python_launch(func: str, args: tuple[Arg, ...]) -> tuple[tuple[Step, ...], Launch]:
    """A Python operation's one step (the function over every argument), with no launch of kprof's own."""
    return (Step(func, tuple(a.name for a in args), None),), Launch(("1", "1", "1"), ("1", "1", "1"))


def _load_python_op(data: dict[str, object], args: tuple[Arg, ...], names: set[str], folder: Path,
                    fail: Fail) -> tuple[str, Path, tuple[Step, ...], Launch]:
    """``python: ops.py:scale`` (or ``package.module:scale``): a function taking the spec's buffers (as
    framework tensors), sizes, defines (``names``) and scalars by name, read now without running it.
    Its one step is the function over every argument, with no launch of kprof's own."""
    from kprof.spec import pyref

    extra = [k for k in _NOT_FOR_PYTHON if k in data]
    if extra:
        raise fail(extra[0], "a Python operation (python: FILE.py:FUNCTION) has no source, entry, launch or steps: "
                             "the function is the operation; remove it")
    raw = data["python"]
    if not isinstance(raw, str) or not pyref.looks_like(raw):
        raise fail("python", f"{_show(raw)} must name a function: FILE.py:FUNCTION (relative to the spec) or "
                             "package.module:FUNCTION")
    try:
        ref = pyref.check(raw, folder, {a.name for a in args} | names)
    except ValueError as exc:
        raise fail("python", _cut(str(exc), 300)) from None
    return (ref.stored(), ref.path, *_python_launch(ref.func, args))


def _load_launches(data: dict[str, object], args: tuple[Arg, ...], fail: Fail,
                   check_expr: CheckExpr) -> tuple[tuple[Step, ...], str | None, Launch]:
    """The steps of a multi-kernel spec (with its first kernel's entry and launch), or the one launch."""
    steps = _load_steps(data.get("steps"), args, fail, check_expr)
    if not steps:
        return steps, None, _load_launch(data.get("launch"), fail, check_expr)
    if "launch" in data or "entry" in data:
        raise fail("launch" if "launch" in data else "entry",
                   "a spec with steps gives each step its entry and launch; remove the top-level one")
    kernels = [st for st in steps if st.launch is not None]
    if not kernels:
        raise fail("steps", "at least one step must launch a kernel of the source")
    assert kernels[0].launch is not None
    return steps, kernels[0].entry, kernels[0].launch


def _load_twin(data: dict[str, object], path: Path, fail: Fail) -> tuple[Path | None, tuple[tuple[str, str], ...]]:
    twin = None
    if "twin" in data:
        given = path.parent / data["twin"] if isinstance(data["twin"], str) and "\0" not in data["twin"] else None
        twin = inputs.resolved(given) if given is not None and inputs.is_file(given) else None
        if twin is None:
            raise fail("twin", f"{_show(data['twin'])} must name the fixed .cu file (a path relative to the spec)")
    twin_defines = _load_defines(data.get("twin_defines"), lambda f, p: fail(f.replace("defines", "twin_defines", 1), p))
    return twin, twin_defines


def _load_steps(raw: object, args: tuple[Arg, ...], fail: Fail, check_expr: CheckExpr) -> tuple[Step, ...]:
    """``steps:`` a list of ``{entry: NAME, args: [ARG, ...], launch: {...}}`` or
    ``{cublas_sgemm: {A: ARG, B: ARG, C: ARG, M: ARG, N: ARG, K: ARG}}`` (row-major C = A @ B)."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw:
        raise fail("steps", "must be a list of launches: {entry: NAME, args: [ARG, ...], launch: {grid, block}}")
    by_name = {a.name: a for a in args}
    out = []
    for k, item in enumerate(raw):
        fld = f"steps[{k}]"
        if not isinstance(item, dict):
            raise fail(fld, "must be a mapping: {entry: NAME, args: [ARG, ...], launch: {grid, block}}")
        if "cublas_sgemm" in item:
            if set(item) != {"cublas_sgemm"} or not isinstance(item["cublas_sgemm"], dict):
                raise fail(fld, "a cuBLAS step is {cublas_sgemm: {A: ARG, B: ARG, C: ARG, M: ARG, N: ARG, K: ARG}}")
            call = item["cublas_sgemm"]
            if set(call) != {"A", "B", "C", "M", "N", "K"}:
                raise fail(f"{fld}.cublas_sgemm", "give exactly A, B, C (buffers) and M, N, K (int32 scalars)")
            names = tuple(str(call[key]) for key in ("A", "B", "C", "M", "N", "K"))
            for key, name in zip("ABCMNK", names):
                arg = by_name.get(name)
                want_buffer = key in "ABC"
                if arg is None or isinstance(arg, TensorMapArg) or isinstance(arg, BufferArg) != want_buffer or (
                        want_buffer and arg.dtype != "float32") or (not want_buffer and arg.dtype != "int32"):
                    kind = "a float32 buffer" if want_buffer else "an int32 scalar"
                    raise fail(f"{fld}.cublas_sgemm.{key}", f"{_show(name)} must name {kind} of args")
            out.append(Step(CUBLAS_SGEMM, names, None))
            continue
        extra = set(item) - {"entry", "args", "launch"}
        if extra:
            raise fail(f"{fld}.{sorted(extra)[0]}", "unknown field (known: entry, args, launch; or cublas_sgemm)")
        entry = item.get("entry")
        if not isinstance(entry, str) or not IDENT.match(entry):
            raise fail(f"{fld}.entry", f"{_show(entry)} must be the extern \"C\" name of a kernel in the source")
        arg_names = item.get("args")
        if not isinstance(arg_names, list) or not arg_names or not all(isinstance(n, str) for n in arg_names):
            raise fail(f"{fld}.args", "must list the spec's argument names this kernel takes, in order")
        for j, name in enumerate(arg_names):
            if name not in by_name:
                raise fail(f"{fld}.args[{j}]", f"unknown argument {_show(name)} (args: {', '.join(by_name)})")
        launch = _load_launch(item.get("launch"), _within(fld, fail), check_expr)
        out.append(Step(entry, tuple(arg_names), launch))
    return tuple(out)


# A spec is data: nvcc options that change code generation only. Anything that runs a program
# (-ccbin), writes files (-MF, --keep-dir, -o) or reads files outside the spec's folder
# (--pre-include, -I elsewhere) is refused.
_FLAG_EXACT = frozenset({
    "-lineinfo", "-G", "--use_fast_math", "-use_fast_math", "--extra-device-vectorization", "-restrict", "--restrict",
    "--expt-relaxed-constexpr", "--expt-extended-lambda", "-Xptxas=-v", "--ptxas-options=-v", "-w",
})  # fmt: skip
_FLAG_PATTERNS = (
    re.compile(r"^-O[0-3]$"),
    re.compile(r"^--?maxrregcount=\d{1,3}$"),
    re.compile(r"^--?std=c\+\+(11|14|17|20)$"),
    re.compile(r"^-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_.+-]{0,64})?$"),
    re.compile(r"^-U[A-Za-z_][A-Za-z0-9_]*$"),
    re.compile(r"^--?(ftz|prec-div|prec-sqrt|fmad)=(true|false)$"),
    re.compile(r"^(-Xptxas=|--ptxas-options=)(-O[0-3]|-dlcm=(ca|cg|cs)|--warn-on-spills|-warn-spills)$"),
)
ALLOWED_FLAGS = ("-O0..-O3, -maxrregcount=N, -std=c++17, -DNAME[=VALUE], -UNAME, -I<dir inside the spec's folder>, "
                 "--include-path=<dir inside the spec's folder>, -lineinfo, -G, --use_fast_math, --ftz/--prec-div/"
                 "--prec-sqrt/--fmad=true|false, -restrict, --extra-device-vectorization, --expt-relaxed-constexpr, "
                 "--expt-extended-lambda, -Xptxas=-v|-O3|-dlcm=ca|--warn-on-spills, -w")


def _load_nvcc_flags(raw: object, folder: Path, fail: Fail) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(f, str) for f in raw):
        raise fail("nvcc_flags", "must be a list of nvcc options, e.g. [-maxrregcount=128, --use_fast_math]")
    flags = []
    for i, flag in enumerate(raw):
        if problem := inputs.shell_problem(flag):  # nvcc hands its flags to a shell
            raise fail(f"nvcc_flags[{i}]", f"{_show(flag)} {problem}: remove it")
        if flag in _FLAG_EXACT or any(p.match(flag) for p in _FLAG_PATTERNS):
            flags.append(flag)
            continue
        include = re.match(r"^(-I|--include-path=)(.+)$", flag)
        if include:
            target, here = inputs.resolved(folder / include.group(2)), inputs.resolved(folder)
            if target is None or here is None:
                raise fail(f"nvcc_flags[{i}]", f"{_show(flag)}: the include folder cannot be followed (a symlink loop or "
                                               "a name too long)")
            if target == here or here in target.parents:
                if problem := inputs.shell_problem(str(target)):
                    raise fail(f"nvcc_flags[{i}]", f"the include folder {_show(str(target), 100)} {problem}: rename it")
                flags.append(f"{include.group(1)}{target}")  # nvcc runs from anywhere: the folder, absolute
                continue
            raise fail(f"nvcc_flags[{i}]", f"{_show(flag)}: an include directory must be inside the spec's folder")
        raise fail(f"nvcc_flags[{i}]", f"{_show(flag)} is not allowed (a spec may change code generation only); "
                                       f"allowed: {ALLOWED_FLAGS}")
    return tuple(flags)


def _within(prefix: str, fail: Fail) -> Fail:
    """``fail`` for the fields of one part of the spec (``steps[1].launch.grid``)."""

    def inner(fld: str, problem: str) -> SpecError:
        return fail(f"{prefix}.{fld}", problem)

    return inner


def _load_baseline(raw: object, args: tuple[Arg, ...], sizes: set[str], defines: set[str], folder: Path,
                   fail: Fail, field: str = "baseline") -> str | None:
    """cublas_sgemm, another spec's name, or a Python callable (FILE.py:FUNCTION or
    package.module:FUNCTION) that runs the operation on the spec's inputs as framework tensors (and
    may take the sizes and the numeric defines, as the runner passes them: CAUSAL)."""
    if raw is None:
        return None
    from kprof.spec import pyref

    if isinstance(raw, str) and pyref.looks_like(raw):
        known = input_names(args) | sizes | defines
        try:
            return pyref.check(raw, folder, known).stored()
        except ValueError as exc:
            raise fail(field, _cut(str(exc), 300)) from None
    if not isinstance(raw, str) or not IDENT.match(raw):
        raise fail(field, f"{_show(raw)} must be cublas_sgemm, the name of another kernel spec, or a Python "
                          "callable (baselines.py:torch_add, or package.module:function)")
    if raw != CUBLAS_SGEMM:
        return raw  # another spec, found through the catalog when bench runs
    names = {a.name for a in args}
    if not {"A", "B", "C"} <= names or not {"M", "N", "K"} <= sizes:
        raise fail(field, "cublas_sgemm needs buffers A, B, C and sizes M, N, K (C = A @ B, row-major)")
    return raw


def _load_named_baselines(raw: object, args: tuple[Arg, ...], sizes: set[str], defines: set[str], folder: Path,
                          fail: Fail) -> tuple[tuple[str, str], ...]:
    """``baselines: {torch: kprof.baselines.torch_ops:rms_norm, torch.compile: ...}``: names that
    ``kprof bench --baseline NAME`` takes for this spec, each a baseline as ``baseline:`` takes one."""
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        raise fail("baselines", "must be a mapping NAME: baseline, e.g. {torch: kprof.baselines.torch_ops:add}")
    out = []
    for name, value in raw.items():
        if not isinstance(name, str) or not _BASELINE_NAME.match(name) or name in ("auto", "none", CUBLAS_SGEMM):
            raise fail(f"baselines.{name}", "a name is lowercase letters, digits, '_', '.' or '-', up to 40, and "
                                            "not auto, none or cublas_sgemm")
        stored = _load_baseline(value, args, sizes, defines, folder, fail, field=f"baselines.{name}")
        if stored is None:
            raise fail(f"baselines.{name}", "is empty: name cublas_sgemm, another kernel spec, or a Python callable")
        out.append((name, stored))
    return tuple(out)


def _load_defines(raw: object, fail: Fail) -> tuple[tuple[str, str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise fail("defines", "must be a mapping NAME: value (passed to nvcc as -DNAME=value)")
    out = []
    for key, value in raw.items():
        if not isinstance(key, str) or not IDENT.match(key):
            raise fail(f"defines.{key}", "must be an identifier")
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise fail(f"defines.{key}", "must be a number or an identifier")
        if isinstance(value, str) and not IDENT.match(value):
            raise fail(f"defines.{key}", f"{_show(value)} must be a number or an identifier")
        out.append((key, str(value)))
    return tuple(out)


def _load_sizes(raw: object, fail: Fail) -> tuple[SizeDef, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise fail("sizes", "must be a mapping NAME: {default: N, sanitize: n}")
    out = []
    for key, value in raw.items():
        fld = f"sizes.{key}"
        if not isinstance(key, str) or not IDENT.match(key):
            raise fail(fld, "a size name must be an identifier")
        if key in sizeexpr.FUNCTION_NAMES:
            raise fail(fld, f"'{key}' is a function name in size arithmetic; pick another name")
        if isinstance(value, int) and not isinstance(value, bool):
            value = {"default": value}
        if not isinstance(value, dict) or "default" not in value or set(value) - {"default", "sanitize"}:
            raise fail(fld, "must be a number or {default: N, sanitize: n}")
        default = _positive(value["default"], f"{fld}.default", fail)
        sanitize = _positive(value.get("sanitize", default), f"{fld}.sanitize", fail)
        out.append(SizeDef(key, default, sanitize))
    return tuple(out)


def _positive(v: object, fld: str, fail: Fail) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise fail(fld, f"{_show(v)} must be a positive whole number")
    return v


def _load_args(raw: object, fail: Fail, check_expr: CheckExpr) -> tuple[Arg, ...]:
    if not isinstance(raw, list) or not raw:
        raise fail("args", "must be a non-empty list of the kernel's arguments, in order")
    out: list[Arg] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        fld = f"args[{i}]"
        if not isinstance(item, dict):
            raise fail(fld, "must be a mapping with 'name' and 'buffer' or 'scalar'")
        name = item.get("name")
        if not isinstance(name, str) or not IDENT.match(name):
            raise fail(f"{fld}.name", f"{_show(name)} must be an identifier")
        if keyword.iskeyword(name):
            raise fail(f"{fld}.name",
                       f"'{name}' is a Python keyword and cannot appear in a reference; rename it (e.g. '{name}_')")
        if name in seen:
            raise fail(f"{fld}.name", f"duplicate argument name '{name}'")
        seen.add(name)
        if sum(k in item for k in ("buffer", "scalar", "tensormap")) != 1:
            raise fail(fld, f"'{name}' needs exactly one of 'buffer: DTYPE', 'scalar: DTYPE' or 'tensormap: BUFFER'")
        if "tensormap" in item:
            out.append(_load_tensormap(item, fld, check_expr, fail))
        elif "buffer" in item:
            extra = set(item) - {"name", "buffer", "shape", "role", "fill"}
            if extra:
                raise fail(f"{fld}.{sorted(extra)[0]}", "unknown field (buffer fields: name, buffer, shape, role, fill)")
            dtype = _dtype(item["buffer"], f"{fld}.buffer", fail)
            shape = item.get("shape")
            if isinstance(shape, (str, int)) and not isinstance(shape, bool):
                shape = [shape]
            if not isinstance(shape, list) or not shape:
                raise fail(f"{fld}.shape", "must be a list of size expressions, e.g. [M, K]")
            shape_t = tuple(check_expr(d, f"{fld}.shape[{j}]") for j, d in enumerate(shape))
            role = item.get("role", "in")
            if role not in ROLES:
                raise fail(f"{fld}.role", f"{_show(role)} must be one of {', '.join(ROLES)}")
            if role in ("out", "scratch") and "fill" in item:
                raise fail(
                    f"{fld}.fill",
                    f"{'an' if role == 'out' else 'a'} {role} buffer is poisoned before each launch, not filled; "
                    "use role: inout "
                    "with fill: zeros if the kernel accumulates into it",
                )
            # Out and scratch buffers are poisoned, never filled (a fill was refused above); an integer
            # input defaults to randint(0, 100), a floating-point one to uniform(-1, 1).
            if role in ("out", "scratch"):
                fill = Fill("zeros")
            else:
                default = "uniform" if DTYPES[dtype][1] == "f" else "randint(0, 100)"
                fill = _fill(item.get("fill", default), f"{fld}.fill", dtype, fail)
            out.append(BufferArg(name, dtype, shape_t, role, fill))
        else:
            extra = set(item) - {"name", "scalar", "value"}
            if extra:
                raise fail(f"{fld}.{sorted(extra)[0]}", "unknown field (scalar fields: name, scalar, value)")
            dtype = _dtype(item["scalar"], f"{fld}.scalar", fail)
            if "value" not in item:
                raise fail(f"{fld}.value", "a scalar needs a value (a number or a size expression)")
            out.append(ScalarArg(name, dtype, check_expr(item["value"], f"{fld}.value")))
    buffers = {a.name: a for a in out if isinstance(a, BufferArg)}
    for i, a in enumerate(out):
        if not isinstance(a, TensorMapArg):
            continue
        buf = buffers.get(a.buffer)
        if buf is None:
            raise fail(f"args[{i}].tensormap", f"{_show(a.buffer)} is not a buffer argument (buffers: {', '.join(buffers)})")
        if buf.dtype not in TENSORMAP_DTYPES:
            raise fail(f"args[{i}].tensormap", f"{a.buffer} is {buf.dtype}; a tensor map describes {', '.join(TENSORMAP_DTYPES)}")
        if len(a.box) != len(buf.shape):
            raise fail(f"args[{i}].box", f"has {len(a.box)} dimensions; {a.buffer} has {len(buf.shape)} (its shape)")
    return tuple(out)


def _load_tensormap(item: dict[str, object], fld: str, check_expr: CheckExpr, fail: Fail) -> TensorMapArg:
    """``{name, tensormap: BUFFER, box: [...], swizzle: 0|32|64|128}``: a CUtensorMap of a buffer argument."""
    extra = set(item) - {"name", "tensormap", "box", "swizzle"}
    if extra:
        raise fail(f"{fld}.{sorted(extra)[0]}", "unknown field (tensor map fields: name, tensormap, box, swizzle)")
    buffer = item["tensormap"]
    if not isinstance(buffer, str) or not IDENT.match(buffer):
        raise fail(f"{fld}.tensormap", f"{_show(buffer)} must name a buffer argument")
    box = item.get("box")
    if not isinstance(box, list) or not 1 <= len(box) <= TENSORMAP_MAX_RANK:
        raise fail(f"{fld}.box", f"must be a list of 1 to {TENSORMAP_MAX_RANK} size expressions, outermost first, "
                                 "e.g. [64, BK]: the elements TMA moves at once")
    swizzle = item.get("swizzle", 0)
    if isinstance(swizzle, bool) or swizzle not in SWIZZLES:
        raise fail(f"{fld}.swizzle", f"{_show(swizzle)} must be one of {', '.join(map(str, SWIZZLES))} (bytes; 0: none)")
    return TensorMapArg(str(item["name"]), buffer, tuple(check_expr(d, f"{fld}.box[{j}]") for j, d in enumerate(box)), swizzle)


def _dtype(value: object, fld: str, fail: Fail) -> str:
    if not isinstance(value, str) or value not in DTYPES:
        raise fail(fld, f"{_show(value)} is not a supported dtype ({', '.join(DTYPES)})")
    return value


def _fill(raw: object, fld: str, dtype: str, fail: Fail) -> Fill:
    if not isinstance(raw, str):
        raise fail(fld, "must be a fill rule such as uniform(-1, 1), normal, zeros, randint(0, 10)")
    if len(raw) > MAX_FILL_CHARS:  # a rule is a name and up to three numbers: a 100,000-term one is refused unparsed
        raise fail(fld, f"a fill rule of {len(raw):,} characters; write one such as uniform(-1, 1) (at most "
                        f"{MAX_FILL_CHARS})")
    try:
        node = ast.parse(raw.strip(), mode="eval").body
    except (SyntaxError, RecursionError, MemoryError):
        raise fail(fld, f"cannot parse fill rule {_show(raw)}") from None
    params: tuple[float, ...] = ()
    if isinstance(node, ast.Name):
        kind = node.id
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        kind = node.func.id
        try:
            params = tuple(float(_number(a)) for a in node.args)
        except ValueError:
            raise fail(fld, f"fill parameters must be numbers: {_show(raw)}") from None
    else:
        raise fail(fld, f"{_show(raw)} is not a fill rule ({', '.join(FILLS)})")
    if kind not in FILLS:
        raise fail(fld, f"unknown fill rule '{kind}' (known: {', '.join(FILLS)})")
    lo, hi = FILLS[kind]
    if not lo <= len(params) <= hi:
        raise fail(fld, f"{kind} takes {lo}..{hi} parameters, got {len(params)}")
    if kind == "uniform" and len(params) == 1:
        raise fail(fld, "uniform takes (low, high)")
    if kind == "normal" and len(params) == 1:
        raise fail(fld, "normal takes (mean, std)")
    if kind == "randint" and (DTYPES[dtype][1] == "f" or params[0] >= params[1]):
        raise fail(fld, "randint(low, high) needs an integer buffer and low < high")
    if kind == "peaked" and not 0 < params[1] <= 1:
        raise fail(fld, "peaked(height, share) needs a share of the elements in (0, 1]")
    if kind == "peaked" and len(params) == 3 and not params[2] >= 0:
        raise fail(fld, "peaked(height, share, spread) needs a spread (the other elements' standard deviation) of 0 or more")
    if kind in ("uniform", "normal", "peaked") and DTYPES[dtype][1] != "f":
        raise fail(fld, f"{kind} fills floating-point buffers; use randint(low, high) for {dtype}")
    return Fill(kind, params)


def _number(node: ast.AST) -> float:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_number(node.operand)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    raise ValueError("not a number")


def _load_launch(raw: object, fail: Fail, check_expr: CheckExpr) -> Launch:
    if not isinstance(raw, dict):
        raise fail("launch", "must be a mapping with grid, block and optionally shared_mem")
    extra = set(raw) - {"grid", "block", "shared_mem"}
    if extra:
        raise fail(f"launch.{sorted(extra)[0]}", "unknown field (known: grid, block, shared_mem)")

    def dims(key: str) -> tuple[str, str, str]:
        value = raw.get(key)
        if value is None:
            raise fail(f"launch.{key}", "is required, e.g. [ceil(N / 256)] or [16, 16]")
        if isinstance(value, (int, str)) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, list) or not 1 <= len(value) <= 3:
            raise fail(f"launch.{key}", "must be a list of 1 to 3 size expressions")
        exprs = [check_expr(v, f"launch.{key}[{j}]") for j, v in enumerate(value)]
        return tuple(exprs + ["1"] * (3 - len(exprs)))  # type: ignore[return-value]

    grid, block = dims("grid"), dims("block")
    smem = check_expr(raw.get("shared_mem", 0), "launch.shared_mem")
    return Launch(grid, block, smem)


SPEC_WIDE = "*"  # the output key of a spec-wide Python reference (it returns every output)


def _load_reference(raw: object, args: tuple[Arg, ...], known_sizes: set[str], fail: Fail,
                    folder: Path) -> tuple[tuple[str, str], ...]:
    """Each output's reference: an expression of the vocabulary, or a Python function (``FILE.py:FN``,
    ``package.module:FN``; stored resolved as ``python:/abs/FILE.py:FN``). A spec-wide ``reference:
    FILE.py:FN`` returns a dict of every output."""
    from kprof.spec import pyref

    outputs = _output_names(args)
    known = input_names(args) | known_sizes

    def python(text: str, fld: str) -> str:
        try:
            return pyref.check(text, folder, known).stored()
        except ValueError as exc:
            raise fail(fld, _cut(str(exc), 300)) from None

    if isinstance(raw, str) and pyref.looks_like(raw):
        return ((SPEC_WIDE, python(raw, "reference")),)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise fail("reference", "must map each output buffer to an expression (C: A @ B), or name a Python "
                                "function (refs.py:expected)")
    out = []
    for key, expr in raw.items():
        fld = f"reference.{key}"
        if key not in outputs:
            raise fail(fld, f"'{key}' is not an out or inout buffer (outputs: {', '.join(sorted(outputs)) or 'none'})")
        if pyref.looks_like(expr):
            out.append((key, python(str(expr), fld)))
            continue
        out.append((key, _vocabulary_expr(expr, known, fld, fail)))
    missing = sorted(outputs - {k for k, _ in out})
    if missing:
        raise fail("reference", f"output '{missing[0]}' has no reference; add '{missing[0]}: <expression>' "
                                "(or name a Python function: refs.py:expected)")
    return tuple(out)


def _load_tolerance(raw: object, fail: Fail, check_expr: CheckExpr, args: tuple[Arg, ...],
                    known_sizes: set[str]) -> Tolerance:
    """Absent: the output dtype's default. ``1e-5``: that rtol with the dtype's atol.
    ``{rtol: 1e-6, atol: "2e-7 * sqrt(K)"}``: numbers or size expressions, either may be left out.
    ``{metric: normwise, rtol: 1e-5}``: the normwise verdict, ``max|out - ref| <= rtol * max|ref|``.
    ``{rtol: 1e-6, scale: {C: "abs(A) @ abs(B)"}}``: rtol times that, element by element, not |ref|."""
    if raw is None:
        return Tolerance()
    if not isinstance(raw, dict):
        return Tolerance(rtol=_tolerance_value(raw, "tolerance", fail, check_expr))
    unknown = sorted(set(raw) - {"rtol", "atol", "metric", "scale"})
    if unknown or not raw:
        raise fail(f"tolerance.{unknown[0]}" if unknown else "tolerance",
                   "a tolerance is a number (rtol) or a mapping of rtol, atol, metric and scale, "
                   "e.g. {rtol: 1e-6, atol: 1e-7}")
    metric = raw.get("metric", "elementwise")
    if metric not in ("elementwise", "normwise"):
        raise fail("tolerance.metric", f"{_show(metric)} must be elementwise (every element within "
                                       "atol + rtol * |ref|) or normwise (max|out - ref| <= rtol * max|ref|)")
    if metric == "normwise" and "atol" in raw:
        raise fail("tolerance.atol", "the normwise metric has no atol; leave it out or use metric: elementwise")
    if metric == "normwise" and "rtol" not in raw:
        raise fail("tolerance.rtol", "the normwise metric needs an rtol, e.g. {metric: normwise, rtol: 1e-5}")
    if "scale" in raw and metric == "normwise":
        raise fail("tolerance.scale", "the normwise metric has no scale; leave it out or use metric: elementwise")
    return Tolerance(rtol=_tolerance_value(raw["rtol"], "tolerance.rtol", fail, check_expr) if "rtol" in raw else None,
                     atol=_tolerance_value(raw["atol"], "tolerance.atol", fail, check_expr) if "atol" in raw else None,
                     metric=metric, scale=_load_scale(raw.get("scale"), args, known_sizes, fail))


def _load_scale(raw: object, args: tuple[Arg, ...], known_sizes: set[str],
                fail: Fail) -> tuple[tuple[str, str], ...]:
    """``scale: {C: "abs(A) @ abs(B)"}``: per output, an expression of the inputs, sizes and scalars in the
    reference vocabulary, with the output's shape (or one that broadcasts to it)."""
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        raise fail("tolerance.scale", "must map outputs to expressions, e.g. {C: \"abs(A) @ abs(B)\"}: the size of "
                                      "the terms each element sums, which rtol multiplies in place of |ref|")
    outputs = _output_names(args)
    known = input_names(args) | known_sizes
    out = []
    for key, expr in raw.items():
        fld = f"tolerance.scale.{key}"
        if key not in outputs:
            raise fail(fld, f"'{key}' is not an out or inout buffer (outputs: {', '.join(sorted(outputs)) or 'none'})")
        if not isinstance(expr, str):
            raise fail(fld, f"{_show(expr)} must be an expression of the inputs, e.g. \"abs(A) @ abs(B)\"")
        out.append((str(key), _vocabulary_expr(expr, known, fld, fail)))
    return tuple(out)


def _vocabulary_expr(expr: object, known: set[str], fld: str, fail: Fail) -> str:
    """An expression of the reference vocabulary over ``known`` names, checked now (not evaluated)."""
    try:
        used = reference.names(expr)
    except ReferenceExprError as exc:
        raise fail(fld, str(exc)) from None
    unknown = sorted(used - known)
    if unknown:
        raise fail(fld, f"unknown name '{unknown[0]}' (inputs: {', '.join(sorted(known))})")
    return str(expr)


def _tolerance_value(raw: object, fld: str, fail: Fail, check_expr: CheckExpr) -> str:
    """A number, or a size expression checked now and worked out at each size."""
    is_atol = fld.endswith("atol")
    what = "an absolute error of 0 or more, e.g. 1e-7" if is_atol else "a relative error between 0 and 1, e.g. 1e-5"
    if isinstance(raw, str):
        try:
            raw = float(raw)
        except ValueError:
            return check_expr(raw, fld)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 0 <= raw < (float("inf") if is_atol else 1):
        raise fail(fld, f"{_show(raw)} must be {what}, or a size expression such as 1e-7 * sqrt(K)")
    return repr(float(raw))


def _load_checks(raw: object, sizes: set[str], args: tuple[Arg, ...], fail: Fail) -> tuple[Check, ...]:
    if not isinstance(raw, list):
        raise fail("checks", "must be a list of size sets to verify, e.g. [{M: 127, N: 131, K: 97}]")
    inputs = {a.name: a for a in args if isinstance(a, BufferArg) and a.role == "in"}
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not item:
            raise fail(f"checks[{i}]", "must be a mapping of sizes (and fill: {INPUT: RULE})")
        fills: list[tuple[str, Fill]] = []
        for key, value in item.items():
            if key == "fill":
                if not isinstance(value, dict) or not value:
                    raise fail(f"checks[{i}].fill", "must map input buffers to fill rules, e.g. {x: \"normal(0, 3)\"}")
                for buf, rule in value.items():
                    if buf not in inputs:
                        raise fail(f"checks[{i}].fill.{buf}", f"not an input buffer (inputs: {', '.join(inputs) or 'none'})")
                    fills.append((str(buf), _fill(rule, f"checks[{i}].fill.{buf}", inputs[buf].dtype, fail)))
                continue
            if key not in sizes:
                raise fail(f"checks[{i}].{key}", f"unknown size (known: {', '.join(sorted(sizes))}; or fill)")
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise fail(f"checks[{i}].{key}", f"{_show(value)} must be a positive whole number")
        out.append(Check(tuple((k, v) for k, v in item.items() if k != "fill"), tuple(fills)))
    return tuple(out)


def _show(value: object, limit: int = 60) -> str:
    """A value quoted in an error message, cut short: a spec's value can be huge (an integer of more digits
    than Python will print is named by its size)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * limit:
        return f"an integer of {value.bit_length():,} bits"
    try:
        shown = repr(value) if not isinstance(value, str) or len(value) < limit else repr(value[:limit]) + "..."
    except ValueError:  # a nested integer too long to print
        shown = f"a {type(value).__name__} too large to show"
    return _cut(shown, limit + 5)


def _cut(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _display(path: Path) -> str:
    """The spec's path as messages show it: relative to here when it is below, control characters escaped
    (a message is one line, whatever the file is called)."""
    try:
        text = str(path.resolve().relative_to(Path.cwd()))
    except (ValueError, OSError, RuntimeError):
        text = str(path)
    return inputs.one_line(text)
