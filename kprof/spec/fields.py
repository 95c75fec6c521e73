"""The fields of a spec that say what to build and launch: defines, sizes, nvcc flags, the arguments
(buffers, scalars, tensor maps, their fills), the launch and the steps, each checked and read into
the schema's classes, every error naming its field. :mod:`kprof.spec.loader` reads the file and the
rest of the fields (reference, tolerance, checks, baselines) and calls these."""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Callable
from pathlib import Path

from kprof import inputs
from kprof.errors import SpecError
from kprof.spec import sizeexpr
from kprof.spec.schema import (
    CUBLAS_SGEMM,
    DTYPES,
    FILLS,
    IDENT,
    ROLES,
    SWIZZLES,
    TENSORMAP_DTYPES,
    TENSORMAP_MAX_RANK,
    Arg,
    BufferArg,
    Fill,
    Launch,
    ScalarArg,
    SizeDef,
    Step,
    TensorMapArg,
)

# characters of a kernel's name: far past any real one, short of a name that floods a message
MAX_ENTRY = 1024
_NAME = re.compile(r"^(?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*")
# a template argument list: types, numbers, sizeof, casts
_ARGS = re.compile(r"^[\w\s:<>,.*&()+\-]*\Z")


def entry_problem(entry: str) -> str | None:
    """What is wrong with ``entry`` as a kernel's name (None: it is one). Pure."""
    if len(entry) > MAX_ENTRY:
        return f"a name of {len(entry):,} characters; a kernel's name has at most {MAX_ENTRY:,}"
    shape = "is not a kernel's name as the source writes it (name, ns::name, or a template's name<float, 256>)"
    m = _NAME.match(entry)
    if not m or entry != entry.strip() or any(ord(c) < 32 for c in entry):
        return shape
    rest = entry[m.end():].strip()
    if not rest:
        return None
    if not (rest.startswith("<") and rest.endswith(">")) or not _ARGS.match(rest):
        return shape
    depth = 0
    for ch in rest:
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if depth < 0:
            return "has template arguments whose < and > do not pair up"
    return None if depth == 0 else "has template arguments whose < and > do not pair up"


MAX_FILL_CHARS = 200  # a fill rule: a name and up to three numbers


def within(prefix: str, fail: Fail) -> Fail:
    """``fail`` for the fields of one part of the spec (``steps[1].launch.grid``)."""

    def inner(fld: str, problem: str) -> SpecError:
        return fail(f"{prefix}.{fld}", problem)

    return inner



Fail = Callable[[str, str], SpecError]


CheckExpr = Callable[[object, str], str]


def load_steps(raw: object, args: tuple[Arg, ...], fail: Fail,
               check_expr: CheckExpr) -> tuple[Step, ...]:
    """``steps:`` a list of ``{entry: NAME, args: [ARG, ...], launch: {...}}`` or
    ``{cublas_sgemm: {A: ARG, B: ARG, C: ARG, M: ARG, N: ARG, K: ARG}}`` (row-major C = A @ B)."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw:
        raise fail("steps",
                   "must be a list of launches: {entry: NAME, args: [ARG, ...], launch: {grid, "
                   "block}}")
    by_name = {a.name: a for a in args}
    out = []
    for k, item in enumerate(raw):
        fld = f"steps[{k}]"
        if not isinstance(item, dict):
            raise fail(fld,
                       "must be a mapping: {entry: NAME, args: [ARG, ...], launch: {grid, block}}")
        if "cublas_sgemm" in item:
            if set(item) != {"cublas_sgemm"} or not isinstance(item["cublas_sgemm"], dict):
                raise fail(fld,
                           "a cuBLAS step is {cublas_sgemm: {A: ARG, B: ARG, C: ARG, M: ARG, N: "
                           "ARG, K: ARG}}")
            call = item["cublas_sgemm"]
            if set(call) != {"A", "B", "C", "M", "N", "K"}:
                raise fail(f"{fld}.cublas_sgemm",
                           "give exactly A, B, C (buffers) and M, N, K (int32 scalars)")
            names = tuple(str(call[key]) for key in ("A", "B", "C", "M", "N", "K"))
            for key, name in zip("ABCMNK", names):
                arg = by_name.get(name)
                want_buffer = key in "ABC"
                if arg is None or isinstance(arg, TensorMapArg) or isinstance(arg, BufferArg) != want_buffer or (
                        want_buffer and arg.dtype != "float32") or (not want_buffer and arg.dtype != "int32"):
                    kind = "a float32 buffer" if want_buffer else "an int32 scalar"
                    raise fail(f"{fld}.cublas_sgemm.{key}",
                               f"{show(name)} must name {kind} of args")
            out.append(Step(CUBLAS_SGEMM, names, None))
            continue
        extra = set(item) - {"entry", "args", "launch"}
        if extra:
            raise fail(f"{fld}.{sorted(extra)[0]}",
                       "unknown field (known: entry, args, launch; or cublas_sgemm)")
        entry = item.get("entry")
        if not isinstance(entry, str):
            raise fail(f"{fld}.entry", f"{show(entry)} must be the name of a kernel in the source")
        if (why := entry_problem(entry)) is not None:
            raise fail(f"{fld}.entry", f"{show(entry)} {why}")
        arg_names = item.get("args")
        if not isinstance(arg_names, list) or not arg_names or not all(isinstance(n, str) for n in arg_names):
            raise fail(f"{fld}.args",
                       "must list the spec's argument names this kernel takes, in order")
        for j, name in enumerate(arg_names):
            if name not in by_name:
                raise fail(f"{fld}.args[{j}]",
                           f"unknown argument {show(name)} (args: {', '.join(by_name)})")
            if getattr(by_name[name], "constant", False):
                raise fail(f"{fld}.args[{j}]",
                           f"{show(name)} is a __constant__ array (memory: constant), not a kernel "
                           "parameter: leave it out of the step's args")
        launch = load_launch(item.get("launch"), within(fld, fail), check_expr)
        out.append(Step(entry, tuple(arg_names), launch))
    return tuple(out)


# A spec is data: nvcc options that change code generation only. Anything that runs a program
# (-ccbin), writes files (-MF, --keep-dir, -o) or reads files outside the spec's folder
# (--pre-include, -I elsewhere) is refused.
_FLAG_EXACT = frozenset({
    "-lineinfo", "-G", "--use_fast_math", "-use_fast_math", "--extra-device-vectorization",
    "-restrict", "--restrict",
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


ALLOWED_FLAGS = ("-O0..-O3, -maxrregcount=N, -std=c++17, -DNAME[=VALUE], -UNAME, -I<dir inside the "
                 "spec's folder>, --include-path=<dir inside the spec's folder>, -lineinfo, -G, "
                 "--use_fast_math, --ftz/--prec-div/--prec-sqrt/--fmad=true|false, -restrict, "
                 "--extra-device-vectorization, --expt-relaxed-constexpr, --expt-extended-lambda, "
                 "-Xptxas=-v|-O3|-dlcm=ca|--warn-on-spills, -w")


def load_nvcc_flags(raw: object, folder: Path, fail: Fail) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(f, str) for f in raw):
        raise fail("nvcc_flags",
                   "must be a list of nvcc options, e.g. [-maxrregcount=128, --use_fast_math]")
    flags = []
    for i, flag in enumerate(raw):
        if problem := inputs.shell_problem(flag):  # nvcc hands its flags to a shell
            raise fail(f"nvcc_flags[{i}]", f"{show(flag)} {problem}: remove it")
        if flag in _FLAG_EXACT or any(p.match(flag) for p in _FLAG_PATTERNS):
            flags.append(flag)
            continue
        include = re.match(r"^(-I|--include-path=)(.+)$", flag)
        if include:
            target, here = inputs.resolved(folder / include.group(2)), inputs.resolved(folder)
            if target is None or here is None:
                raise fail(f"nvcc_flags[{i}]",
                           f"{show(flag)}: the include folder cannot be followed (a symlink loop "
                           "or a name too long)")
            if target == here or here in target.parents:
                if problem := inputs.shell_problem(str(target)):
                    raise fail(f"nvcc_flags[{i}]",
                               f"the include folder {show(str(target), 100)} {problem}: rename it")
                # nvcc runs from anywhere: the folder, absolute
                flags.append(f"{include.group(1)}{target}")
                continue
            raise fail(f"nvcc_flags[{i}]",
                       f"{show(flag)}: an include directory must be inside the spec's folder")
        raise fail(f"nvcc_flags[{i}]",
                   f"{show(flag)} is not allowed (a spec may change code generation only); "
                   f"allowed: {ALLOWED_FLAGS}")
    return tuple(flags)


def load_defines(raw: object, fail: Fail) -> tuple[tuple[str, str], ...]:
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
            raise fail(f"defines.{key}", f"{show(value)} must be a number or an identifier")
        out.append((key, str(value)))
    return tuple(out)


def load_sizes(raw: object, fail: Fail) -> tuple[SizeDef, ...]:
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
        default = positive(value["default"], f"{fld}.default", fail)
        sanitize = positive(value.get("sanitize", default), f"{fld}.sanitize", fail)
        out.append(SizeDef(key, default, sanitize))
    return tuple(out)


def positive(v: object, fld: str, fail: Fail) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise fail(fld, f"{show(v)} must be a positive whole number")
    return v


def _load_buffer(item: dict[str, object], name: str, fld: str, fail: Fail,
                 check_expr: CheckExpr) -> BufferArg:
    """One buffer argument: its type, shape, role, fill, and whether it is consumed (reset),
    unordered (order: any) or a __constant__ array (memory: constant)."""
    extra = set(item) - {"name", "buffer", "shape", "role", "fill", "reset", "order", "memory"}
    if extra:
        raise fail(f"{fld}.{sorted(extra)[0]}",
                   "unknown field (buffer fields: name, buffer, shape, role, "
                   "fill, reset, order, memory)")
    dtype = dtype_of(item["buffer"], f"{fld}.buffer", fail)
    shape = item.get("shape")
    if isinstance(shape, (str, int)) and not isinstance(shape, bool):
        shape = [shape]
    if not isinstance(shape, list) or not shape:
        raise fail(f"{fld}.shape", "must be a list of size expressions, e.g. [M, K]")
    shape_t = tuple(check_expr(d, f"{fld}.shape[{j}]") for j, d in enumerate(shape))
    role = item.get("role", "in")
    if role not in ROLES:
        raise fail(f"{fld}.role", f"{show(role)} must be one of {', '.join(ROLES)}")
    if role in ("out", "scratch") and "fill" in item:
        raise fail(
            f"{fld}.fill",
            f"{'an' if role == 'out' else 'a'} {role} buffer is poisoned before each launch, not "
            "filled; use role: inout "
            "with fill: zeros if the kernel accumulates into it",
        )
    # Out and scratch buffers are poisoned, never filled (a fill was refused above); an integer
    # input defaults to randint(0, 100), a floating-point one to uniform(-1, 1).
    if role in ("out", "scratch"):
        fill = Fill("zeros")
    else:
        default = "uniform" if DTYPES[dtype][1] == "f" else "randint(0, 100)"
        fill = fill_of(item.get("fill", default), f"{fld}.fill", dtype, fail)
    reset = item.get("reset", False)
    if not isinstance(reset, bool) or (reset and role != "inout"):
        raise fail(f"{fld}.reset",
                   "true marks an inout buffer the kernel consumes (a counter it uses as a write "
                   "index), written again with its fill before each timed launch; give role: "
                   "inout, or leave reset out")
    order = item.get("order", "defined")
    if order not in ("defined", "any") or (order == "any" and role not in ("out", "inout")):
        raise fail(f"{fld}.order",
                   "any: an output whose order the kernel does not define (a stream compaction's), "
                   "checked as a multiset; defined (the default) checks each element in place. "
                   "Only an out or inout buffer has an order to check")
    memory = item.get("memory", "global")
    if memory not in ("global", "constant") or (memory == "constant" and role != "in"):
        raise fail(f"{fld}.memory",
                   "constant: the kernel's __constant__ array of this name, filled from the spec "
                   "before the launch (role: in, and not among the kernel's parameters); global "
                   "(the default) a buffer passed as a parameter")
    return BufferArg(name, dtype, shape_t, role, fill, reset=reset, unordered=order == "any",
                     constant=memory == "constant")


def load_args(raw: object, fail: Fail, check_expr: CheckExpr) -> tuple[Arg, ...]:
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
            raise fail(f"{fld}.name", f"{show(name)} must be an identifier")
        if keyword.iskeyword(name):
            raise fail(f"{fld}.name",
                       f"'{name}' is a Python keyword and cannot appear in a reference; rename it "
                       f"(e.g. '{name}_')")
        if name in seen:
            raise fail(f"{fld}.name", f"duplicate argument name '{name}'")
        seen.add(name)
        if sum(k in item for k in ("buffer", "scalar", "tensormap")) != 1:
            raise fail(fld,
                       f"'{name}' needs exactly one of 'buffer: DTYPE', 'scalar: DTYPE' or "
                       "'tensormap: BUFFER'")
        if "tensormap" in item:
            out.append(load_tensormap(item, fld, check_expr, fail))
        elif "buffer" in item:
            out.append(_load_buffer(item, name, fld, fail, check_expr))
        else:
            extra = set(item) - {"name", "scalar", "value"}
            if extra:
                raise fail(f"{fld}.{sorted(extra)[0]}",
                           "unknown field (scalar fields: name, scalar, value)")
            dtype = dtype_of(item["scalar"], f"{fld}.scalar", fail)
            if "value" not in item:
                raise fail(f"{fld}.value", "a scalar needs a value (a number or a size expression)")
            out.append(ScalarArg(name, dtype, check_expr(item["value"], f"{fld}.value")))
    buffers = {a.name: a for a in out if isinstance(a, BufferArg)}
    for i, a in enumerate(out):
        if not isinstance(a, TensorMapArg):
            continue
        buf = buffers.get(a.buffer)
        if buf is None:
            raise fail(f"args[{i}].tensormap",
                       f"{show(a.buffer)} is not a buffer argument (buffers: {', '.join(buffers)})")
        if buf.dtype not in TENSORMAP_DTYPES:
            raise fail(f"args[{i}].tensormap",
                       f"{a.buffer} is {buf.dtype}; a tensor map describes "
                       f"{', '.join(TENSORMAP_DTYPES)}")
        if len(a.box) != len(buf.shape):
            raise fail(f"args[{i}].box",
                       f"has {len(a.box)} dimensions; {a.buffer} has {len(buf.shape)} (its shape)")
    return tuple(out)


def load_tensormap(item: dict[str, object], fld: str, check_expr: CheckExpr,
                   fail: Fail) -> TensorMapArg:
    """``{name, tensormap: BUFFER, box: [...], swizzle: 0|32|64|128}``: a CUtensorMap of a buffer
    argument."""
    extra = set(item) - {"name", "tensormap", "box", "swizzle"}
    if extra:
        raise fail(f"{fld}.{sorted(extra)[0]}",
                   "unknown field (tensor map fields: name, tensormap, box, swizzle)")
    buffer = item["tensormap"]
    if not isinstance(buffer, str) or not IDENT.match(buffer):
        raise fail(f"{fld}.tensormap", f"{show(buffer)} must name a buffer argument")
    box = item.get("box")
    if not isinstance(box, list) or not 1 <= len(box) <= TENSORMAP_MAX_RANK:
        raise fail(f"{fld}.box",
                   f"must be a list of 1 to {TENSORMAP_MAX_RANK} size expressions, outermost "
                   "first, e.g. [64, BK]: the elements TMA moves at once")
    swizzle = item.get("swizzle", 0)
    if isinstance(swizzle, bool) or swizzle not in SWIZZLES:
        raise fail(f"{fld}.swizzle",
                   f"{show(swizzle)} must be one of {', '.join(map(str, SWIZZLES))} (bytes; 0: "
                   "none)")
    return TensorMapArg(str(item["name"]), buffer,
                        tuple(check_expr(d, f"{fld}.box[{j}]") for j, d in enumerate(box)), swizzle)


def dtype_of(value: object, fld: str, fail: Fail) -> str:
    if not isinstance(value, str) or value not in DTYPES:
        raise fail(fld, f"{show(value)} is not a supported dtype ({', '.join(DTYPES)})")
    return value


def fill_of(raw: object, fld: str, dtype: str, fail: Fail) -> Fill:
    if not isinstance(raw, str):
        raise fail(fld, "must be a fill rule such as uniform(-1, 1), normal, zeros, randint(0, 10)")
    # a rule is a name and up to three numbers: a 100,000-term one is refused unparsed
    if len(raw) > MAX_FILL_CHARS:
        raise fail(fld,
                   f"a fill rule of {len(raw):,} characters; write one such as uniform(-1, 1) (at "
                   f"most {MAX_FILL_CHARS})")
    try:
        node = ast.parse(raw.strip(), mode="eval").body
    except (SyntaxError, RecursionError, MemoryError):
        raise fail(fld, f"cannot parse fill rule {show(raw)}") from None
    params: tuple[float, ...] = ()
    if isinstance(node, ast.Name):
        kind = node.id
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        kind = node.func.id
        try:
            params = tuple(float(number_of(a)) for a in node.args)
        except ValueError:
            raise fail(fld, f"fill parameters must be numbers: {show(raw)}") from None
    else:
        raise fail(fld, f"{show(raw)} is not a fill rule ({', '.join(FILLS)})")
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
        raise fail(fld,
                   "peaked(height, share, spread) needs a spread (the other elements' standard "
                   "deviation) of 0 or more")
    if kind in ("uniform", "normal", "peaked") and DTYPES[dtype][1] != "f":
        raise fail(fld, f"{kind} fills floating-point buffers; use randint(low, high) for {dtype}")
    return Fill(kind, params)


def number_of(node: ast.AST) -> float:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -number_of(node.operand)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    raise ValueError("not a number")


def load_launch(raw: object, fail: Fail, check_expr: CheckExpr) -> Launch:
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


def show(value: object, limit: int = 60) -> str:
    """A value quoted in an error message, cut short: a spec's value can be huge (an integer of more
    digits than Python will print is named by its size)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * limit:
        return f"an integer of {value.bit_length():,} bits"
    try:
        shown = repr(value) if not isinstance(value, str) or len(value) < limit else repr(value[:limit]) + "..."
    except ValueError:  # a nested integer too long to print
        shown = f"a {type(value).__name__} too large to show"
    return cut(shown, limit + 5)


def cut(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."

