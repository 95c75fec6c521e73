"""Loading a spec: one YAML file beside each ``.cu``, read with ``yaml.safe_load`` (capped, no
alias, no deep nesting), every field validated, every error naming the file and the field
(``kernels/tiled_matmul.yaml: launch.grid[0]: unknown size 'Q'``), into :mod:`kprof.spec.schema`'s
:class:`KernelSpec`. References go through :mod:`kprof.spec.reference` and :mod:`kprof.spec.pyref`;
nothing from a spec ever reaches ``eval``. ``docs/spec.md`` documents the format.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

from kprof import inputs
from kprof.errors import InputError, SizeExprError, SpecError
from kprof.spec import fields, sizeexpr
from kprof.spec.expected import input_names, load_checks, load_reference, load_tolerance
from kprof.spec.fields import (
    CheckExpr,
    Fail,
    cut,
    load_args,
    load_defines,
    load_launch,
    load_nvcc_flags,
    load_sizes,
    load_steps,
    show,
)
from kprof.spec.schema import (
    ARCH_NAME,
    CUBLAS_SGEMM,
    IDENT,
    MATHS,
    Arg,
    KernelSpec,
    Launch,
    Requirement,
    Step,
    Work,
    define_env,
)

_TOP_KEYS = {
    "name", "description", "source", "entry", "defines", "nvcc_flags", "sizes", "args",
    "launch", "reference", "tolerance", "work", "checks", "expect", "notes", "twin",
    "twin_defines", "baseline", "baselines", "steps", "python", "requires",
}  # fmt: skip
# a name in baselines: (torch, torch.compile)
_BASELINE_NAME = re.compile(r"^[a-z][a-z0-9_.-]{0,39}\Z")
# What a Python operation (``python: ops.py:scale``) cannot have: it is the function, not a kernel.
_NOT_FOR_PYTHON = ("source", "entry", "launch", "steps", "nvcc_flags", "twin", "twin_defines")


MAX_SPEC_BYTES = 256 * 1024  # the largest shipped spec is under 4 KB


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


# Specs read before, by path and text, with a digest of the files they name (the kernel's source,
# the Python references): a spec that several commands, sweeps or tests read is parsed once
# (PyYAML's pure-Python parser takes about 10 ms a spec); a change to the spec or to a file it names
# reads it again.
_LOADED: dict[tuple[str, str], tuple[KernelSpec, frozenset[Path], str]] = {}
_LOADED_MAX = 512


def _named_files(value: object, out: set[Path]) -> set[Path]:
    """Every file a loaded spec names: its Path fields and its stored Python references,
    recursively."""
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


# a named file larger than this is not read for the digest (its name is)
MAX_NAMED_BYTES = 4 * 1024 * 1024


# What PyYAML's safe constructor raises, past its own YAMLError, for values it cannot build: a date
# that is not one (2001-02-30: ValueError), `!!int abc` (ValueError), `!!bool maybe` (KeyError),
# `!!timestamp x` (AttributeError), an integer past Python's 4,300 digits (ValueError).
YAML_VALUE_ERRORS = (ValueError, KeyError, AttributeError, TypeError, OverflowError, IndexError)


def value_problem(exc: BaseException) -> str:
    """One line for a value PyYAML could not build: what it is, and how to write it instead."""
    said = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
    return (f"a value that cannot be built ({type(exc).__name__}: {said}); write it plainly (a "
            "number, a quoted string), without a YAML tag such as !!int or !!timestamp")


def load(path: str | Path) -> KernelSpec:
    """Read and validate one spec file: a regular file of at most 256 KiB, plain YAML (no aliases,
    at most 32 levels deep), ``yaml.safe_load`` rules."""
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
    # a tagged or dated value PyYAML fails to build with a plain Python error
    except YAML_VALUE_ERRORS as exc:
        raise SpecError(where, "", f"not valid YAML: {value_problem(exc)}") from None
    try:
        spec = from_dict(data, path)
    except YAML_VALUE_ERRORS as exc:  # a value no field's check saw coming: one line, never exit 70
        raise SpecError(where, "", f"a value kprof could not read: {value_problem(exc)}") from None
    if len(_LOADED) >= _LOADED_MAX:
        _LOADED.clear()
    named = frozenset(_named_files(spec, set()))
    _LOADED[(str(path), text)] = (spec, named, _digest_of(named))
    return spec


def from_dict(data: object, path: Path) -> KernelSpec:
    where = _display(path)

    def fail(fld: str, problem: str) -> SpecError:
        return SpecError(where, fld, problem)

    if not isinstance(data, dict):
        raise fail("",
                   "a spec must be a mapping of fields (name, source, sizes, args, launch, ...)")
    unknown = sorted(set(map(str, data)) - _TOP_KEYS)
    if unknown:
        raise fail(unknown[0], f"unknown field (known fields: {', '.join(sorted(_TOP_KEYS))})")
    name, description = _load_name(data, path, fail)
    python_text = data.get("python")
    if python_text is None:
        source, entry = _load_source(data, path, name, fail)
    defines = load_defines(data.get("defines"), fail)
    flags = load_nvcc_flags(data.get("nvcc_flags", []), path.parent, fail)
    sizes = load_sizes(data.get("sizes"), fail)
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

    args = load_args(data.get("args"), fail, check_expr)
    python: str | None = None
    first_entry: str | None
    if python_text is not None:
        python, source, steps, launch = _load_python_op(data, args,
                                                        {s.name for s in sizes} | {k for k, _ in defines},
                                                        path.parent, fail)
        entry = first_entry = steps[0].entry
    else:
        steps, first_entry, launch = _load_launches(data, args, fail, check_expr)
    work = data.get("work", {}) or {}
    if not isinstance(work, dict) or set(work) - {"flops", "bytes", "math"}:
        raise fail("work",
                   "must be a mapping with 'flops' and/or 'bytes' size expressions (and 'math')")
    if work.get("math", "fp32") not in MATHS:
        raise fail("work.math",
                   f"must be {' or '.join(MATHS)} (what the FLOPs run on: FP32 FMA, or dense "
                   f"16-bit tensor-core math), not {work.get('math')!r}")
    notes = data.get("notes", "")
    if not isinstance(notes, str):
        raise fail("notes", "must be a string")
    twin, twin_defines = _load_twin(data, path, fail)
    tolerance = load_tolerance(data.get("tolerance"), fail, check_expr, args, known_sizes)
    # what the runner passes a Python baseline besides sizes and inputs
    numeric = set(define_env(defines))
    return KernelSpec(
        name=name, path=path.resolve(), source=source, entry=first_entry or entry,
        description=description.strip(), sizes=sizes, args=args, launch=launch,
        reference=load_reference(data.get("reference"), args, known_sizes, fail, path.parent),
        tolerance=tolerance,
        work=Work(flops=check_expr(work["flops"], "work.flops") if "flops" in work else None,
                  bytes=check_expr(work["bytes"], "work.bytes") if "bytes" in work else None,
                  math=str(work.get("math", "fp32"))),
        defines=defines, nvcc_flags=tuple(flags),
        checks=load_checks(data.get("checks", []), {s.name for s in sizes}, args, fail),
        expect=data.get("expect"), notes=notes.strip(), twin=twin, twin_defines=twin_defines,
        baseline=_load_baseline(data.get("baseline"), args, {s.name for s in sizes}, numeric,
                                path.parent, fail),
        baselines=_load_named_baselines(data.get("baselines"), args, {s.name for s in sizes},
                                        numeric, path.parent, fail),
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
        raise fail("requires.arch", f"{show(arch)}: write it as sm_XY, e.g. sm_80")
    if not isinstance(why, str) or not why.strip() or len(why) > 200:
        raise fail("requires.why",
                   "must name the feature that needs this architecture, in at most 200 characters")
    return Requirement(arch, " ".join(why.split()))


def _load_name(data: dict[str, object], path: Path, fail: Fail) -> tuple[str, str]:
    """name and description."""
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not IDENT.match(name):
        raise fail("name", f"{show(name)} must be an identifier (letters, digits, _)")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise fail("description", "must be a string")
    return name, description


def _load_source(data: dict[str, object], path: Path, name: str, fail: Fail) -> tuple[Path, str]:
    """The .cu file and the kernel's entry."""
    source_text = data.get("source", f"{path.stem}.cu")
    if not isinstance(source_text, str) or not source_text:
        raise fail("source", "must be the path of the .cu file, relative to the spec")
    try:
        source = (path.parent / source_text).resolve()
        found = source.is_file()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL in the name
        raise fail("source", f"{show(source_text)} cannot be read ({cut(str(exc), 80)})") from None
    if not found:
        raise fail("source",
                   f"{cut(source_text, 60)} does not exist next to the spec "
                   f"({cut(str(source), 120)})")
    if problem := inputs.shell_problem(str(source)):  # nvcc hands the path to a shell
        raise fail("source",
                   f"the path {show(str(source), 100)} {problem}: rename the file or its folder")
    entry = data.get("entry", name)
    if not isinstance(entry, str):
        raise fail("entry", f"{show(entry)} must be the name of the kernel as the source writes it")
    if (why := fields.entry_problem(entry)) is not None:
        raise fail("entry", why if len(entry) > fields.MAX_ENTRY else f"{show(entry)} {why}")
    return source, entry


def as_python_operation(spec: KernelSpec, stored: str, label: str) -> KernelSpec:
    """``spec`` with a Python callable (pyref stored form, e.g. a framework baseline) as its
    operation: the same buffers, sizes, reference and work, so kprof profile reports what the
    callable launches (inside kprof's NVTX range) beside the kernel, named ``SPEC__LABEL``
    (``rmsnorm_onepass__torch_compile``: letters, digits and ``_`` only, which ncu's NVTX filter
    reads literally)."""
    from kprof.spec import pyref

    ref = pyref.Ref.from_stored(stored)
    steps, launch = _python_launch(ref.func, spec.args)
    safe = re.sub(r"[^A-Za-z0-9_]", "_", label)
    return replace(spec, name=f"{spec.name}__{safe}", python=stored, source=ref.path,
                   entry=ref.func, steps=steps,
                   launch=launch, nvcc_flags=(), twin=None, twin_defines=(), baseline=None,
                   baselines=())


def _python_launch(func: str, args: tuple[Arg, ...]) -> tuple[tuple[Step, ...], Launch]:
    """A Python operation's one step (the function over every argument), with no launch of kprof's
    own."""
    return (Step(func, tuple(a.name for a in args), None),), Launch(("1", "1", "1"), ("1", "1", "1"))


def _load_python_op(data: dict[str, object], args: tuple[Arg, ...], names: set[str], folder: Path,
                    fail: Fail) -> tuple[str, Path, tuple[Step, ...], Launch]:
    """``python: ops.py:scale`` (or ``package.module:scale``): a function taking the spec's buffers
    (as framework tensors), sizes, defines (``names``) and scalars by name, read now without running
    it. Its one step is the function over every argument, with no launch of kprof's own."""
    from kprof.spec import pyref

    extra = [k for k in _NOT_FOR_PYTHON if k in data]
    if extra:
        raise fail(extra[0],
                   "a Python operation (python: FILE.py:FUNCTION) has no source, entry, launch or "
                   "steps: the function is the operation; remove it")
    raw = data["python"]
    if not isinstance(raw, str) or not pyref.looks_like(raw):
        raise fail("python",
                   f"{show(raw)} must name a function: FILE.py:FUNCTION (relative to the spec) or "
                   "package.module:FUNCTION")
    try:
        ref = pyref.check(raw, folder, {a.name for a in args} | names)
    except ValueError as exc:
        raise fail("python", cut(str(exc), 300)) from None
    return (ref.stored(), ref.path, *_python_launch(ref.func, args))


def _load_launches(data: dict[str, object], args: tuple[Arg, ...], fail: Fail,
                   check_expr: CheckExpr) -> tuple[tuple[Step, ...], str | None, Launch]:
    """The steps of a multi-kernel spec (with its first kernel's entry and launch), or the one
    launch."""
    steps = load_steps(data.get("steps"), args, fail, check_expr)
    if not steps:
        return steps, None, load_launch(data.get("launch"), fail, check_expr)
    if "launch" in data or "entry" in data:
        raise fail("launch" if "launch" in data else "entry",
                   "a spec with steps gives each step its entry and launch; "
                   "remove the top-level one")
    kernels = [st for st in steps if st.launch is not None]
    if not kernels:
        raise fail("steps", "at least one step must launch a kernel of the source")
    assert kernels[0].launch is not None
    return steps, kernels[0].entry, kernels[0].launch


def _load_twin(data: dict[str, object], path: Path,
               fail: Fail) -> tuple[Path | None, tuple[tuple[str, str], ...]]:
    twin = None
    if "twin" in data:
        given = path.parent / data["twin"] if isinstance(data["twin"], str) and "\0" not in data["twin"] else None
        twin = inputs.resolved(given) if given is not None and inputs.is_file(given) else None
        if twin is None:
            raise fail("twin",
                       f"{show(data['twin'])} must name the fixed .cu file (a "
                       "path relative to the spec)")
    twin_defines = load_defines(data.get("twin_defines"), lambda f,
                                p: fail(f.replace("defines", "twin_defines", 1), p))
    return twin, twin_defines


def _load_baseline(raw: object, args: tuple[Arg, ...], sizes: set[str], defines: set[str],
                   folder: Path, fail: Fail, field: str = "baseline") -> str | None:
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
            raise fail(field, cut(str(exc), 300)) from None
    if not isinstance(raw, str) or not IDENT.match(raw):
        raise fail(field,
                   f"{show(raw)} must be cublas_sgemm, the name of another kernel spec, or a "
                   "Python callable (baselines.py:torch_add, or package.module:function)")
    if raw != CUBLAS_SGEMM:
        return raw  # another spec, found through the catalog when bench runs
    names = {a.name for a in args}
    if not {"A", "B", "C"} <= names or not {"M", "N", "K"} <= sizes:
        raise fail(field,
                   "cublas_sgemm needs buffers A, B, C and sizes M, N, K (C = A @ B, row-major)")
    return raw


def _load_named_baselines(raw: object, args: tuple[Arg, ...], sizes: set[str], defines: set[str],
                          folder: Path, fail: Fail) -> tuple[tuple[str, str], ...]:
    """``baselines: {torch: kprof.baselines.torch_ops:rms_norm, torch.compile: ...}``: names that
    ``kprof bench --baseline NAME`` takes for this spec, each a baseline as ``baseline:`` takes
    one."""
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        raise fail("baselines",
                   "must be a mapping NAME: baseline, e.g. {torch: kprof.baselines.torch_ops:add}")
    out = []
    for name, value in raw.items():
        if not isinstance(name, str) or not _BASELINE_NAME.match(name) or name in ("auto", "none", CUBLAS_SGEMM):
            raise fail(f"baselines.{name}",
                       "a name is lowercase letters, digits, '_', '.' or '-', up to 40, and "
                       "not auto, none or cublas_sgemm")
        stored = _load_baseline(value, args, sizes, defines, folder, fail,
                                field=f"baselines.{name}")
        if stored is None:
            raise fail(f"baselines.{name}",
                       "is empty: name cublas_sgemm, another kernel spec, or a Python callable")
        out.append((name, stored))
    return tuple(out)


def _display(path: Path) -> str:
    """The spec's path as messages show it: relative to here when it is below, control characters
    escaped (a message is one line, whatever the file is called)."""
    try:
        text = str(path.resolve().relative_to(Path.cwd()))
    except (ValueError, OSError, RuntimeError):
        text = str(path)
    return inputs.one_line(text)
