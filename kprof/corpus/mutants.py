"""How strong a spec's verdict is: mutants of its kernel, each run through the verdict. Generation
and scoring are pure; the run is :mod:`kprof.corpus.mutation`, with what the command layer builds.

A mutant is the kernel's source with one classic mistake put in (the operators below: a bound off by
one, a missing barrier, an accumulation that overwrites, swapped indices, a wrong initial value, a
skipped reduction level, a flushed small value). Each is built; one whose cubin is the original's
byte for byte computes the same and is **equivalent** (decided by the compiler's output, not by a
guess). Every other mutant runs at the spec's sanitize size and at every size it checks: **killed**
when a verdict fails (or the run faults or hangs), **survived** when every verdict passes: the spec
let a wrong kernel through there, and its tolerance, reference or sizes are too weak. A survivor
that moved a bound and gave the original's results to the last bit is decided by a probe
(:func:`boundary_probe`): the original with a trap where the two differ, run at the same sizes. If
it stops, the checked sizes meet the boundary, the mutant ran otherwise there and computed the same:
**equivalent by its results**
there (said so, apart from the machine code's equivalents, and counted both ways in the report). If
it never stops, no checked size tests the bound: a survivor that says so. The score is the share of
non-equivalent mutants killed.

Lines are mutated in their code only (not comments, not preprocessor lines), one change per mutant,
the line count kept, so a report's line is the source's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Literal

from kprof.build.cusource import closing

if TYPE_CHECKING:
    from kprof.launch.childresult import OutputCheck
    from kprof.spec import KernelSpec

# a mutant's sizes of at most this many bytes of buffers run first, the others only if it passes
# them
SMALL_BYTES = 64 * 2**20
# checked sizes of at most this many bytes of buffers also run under memcheck
MEMCHECK_BYTES = 16 * 2**20
# per kernel: the first of each operator's places first, so every operator is tried
MAX_MUTANTS = 60


@dataclass(frozen=True)
class Mutant:
    id: str  # M1, M2, ... in source order within each operator's round
    operator: str
    line: int  # 1-based
    before: str
    after: str
    source: str  # the whole mutated source

    def diff(self) -> str:
        return f"@@ line {self.line} ({self.operator})\n-{self.before.rstrip()}\n+{self.after.rstrip()}"


# How a mutant was decided (MutantResult.by), besides the verdict or the tool that killed it:
BY_MACHINE_CODE = "machine code"  # equivalent: every .text section the original's, byte for byte
BY_LAUNCH = "the launch"  # equivalent: a bound no launch of its spec can meet
# equivalent: the probe stopped, and the results were the original's
BY_BOUNDARY = "results at its boundary"
BY_SAME_RESULTS = "same results"  # survived with the original's results, undecided
BY_NOT_MET = "boundary not met"  # survived: no checked size meets the bound it moved
# equivalent: its line says so, with why (NOTE); a survivor in the strict score
BY_NOTE = "the source's note"

# A line whose every mutant computes what the original does, in the author's words: the choice
# between two correct paths (a dispatch threshold, a tile size), not a bound of what is read or
# written. Like a mutation tester's "disable" comment, but each is listed with its reason and the
# strict score counts it.
NOTE = re.compile(r"//.*?\bkprof-mutants:\s*equivalent\b[\s:,.-]*(?P<why>\S.*?)\s*$")


def note_of(mutant: Mutant) -> str | None:
    """The reason the mutated line's note gives, or None: a note with no reason is no note, and it
    covers only a bound moved by one (:data:`BOUNDARY_OPERATORS`), never a dropped term or a swapped
    index."""
    m = NOTE.search(mutant.before) if mutant.operator in BOUNDARY_OPERATORS else None
    return m.group("why") if m else None


@dataclass(frozen=True)
class MutantResult:
    mutant: Mutant
    verdict: Literal["killed", "survived", "equivalent", "not-built", "built"]
    why: str = ""  # the failing check, the fault, or how equivalence was decided
    # killed: verdict, or the tool (memcheck, racecheck, ...); else one of the BY_ values above
    by: str = ""

    def to_dict(self) -> dict[str, object]:
        out = asdict(self.mutant)
        out.pop("source")
        return {**out, "verdict": self.verdict, "by": self.by, "why": self.why,
                "diff": self.mutant.diff()}


def _code_part(line: str) -> tuple[str, str]:
    """(code, trailing comment) of a C++ line; a ``//`` inside a string literal is rare in kernels
    and not looked for."""
    at = line.find("//")
    return (line, "") if at < 0 else (line[:at], line[at:])


def _sub_each(pattern: str, repl: str | Callable[[re.Match[str]], str], code: str) -> Iterator[str]:
    """``code`` with one match of ``pattern`` replaced, for each match in turn."""
    for m in re.finditer(pattern, code):
        new = repl(m) if callable(repl) else m.expand(repl)
        if new != m.group(0):
            yield code[: m.start()] + new + code[m.end():]


def _flushed(code: str) -> Iterator[str]:
    """``expf(E)`` -> ``(expf(E) < 1e-6f ? 0.0f : expf(E))``: small probabilities written as
    zero."""
    for m in re.finditer(r"\b(__expf|expf)\(", code):
        close = closing(code, m.end() - 1)
        if close is None:
            continue
        call = code[m.start():close + 1]
        yield code[: m.start()] + f"({call} < 1e-6f ? 0.0f : {call})" + code[close + 1:]


def _outside_for_header(mutated: Iterator[str], code: str) -> Iterator[str]:
    """The mutants whose change is not inside a ``for (...)`` header (``k0 = TILE`` there would
    hang)."""
    for new in mutated:
        at = next(i for i, (a, b) in enumerate(zip(new, code)) if a != b)
        head = code[:at]
        if head.rfind("for (") < 0 or head.count("(") - head.count(")") <= head[:head.rfind("for (")].count("(") - \
                head[:head.rfind("for (")].count(")"):
            yield new


# name -> what a mutant of this operator does to one line's code (each result one mutant)
OPERATORS: dict[str, Callable[[str], Iterator[str]]] = {
    "< for <=": lambda c: _sub_each(r" <= ", " < ", c),
    "<= for <": lambda c: _sub_each(r"(?<=[\w)\]]) < (?=[\w(])", " <= ", c),
    "> for >=": lambda c: _sub_each(r" >= ", " > ", c),
    ">= for >": lambda c: _sub_each(r"(?<=[\w)\]]) > (?=[\w(])", " >= ", c),
    "missing tail (bound - 1)": lambda c: _sub_each(r"(\bfor \([^;]*; *\w+ < )(\w+)(;)",
                                                    r"\1\2 - 1\3", c),
    "missing barrier": lambda c: _sub_each(r"__syncthreads\(\);", "", c),
    "overwrite for accumulate (= for +=)": lambda c: _outside_for_header(
        _sub_each(r"(\b\w+(?:\[[^\]]*\])*) \+= ", r"\1 = ", c), c),
    "dropped term (+ 1 removed)": lambda c: _sub_each(r" \+ 1\b", "", c),
    "swapped indices": lambda c: _sub_each(r"\[(\w+)\]\[(\w+)\]",
                                           lambda m: f"[{m.group(2)}][{m.group(1)}]"
                                           if m.group(1) != m.group(2) else m.group(0), c),
    "wrong initial value (0 -> 1)": lambda c: _sub_each(r"(\b\w+ = )0\.0f;", r"\g<1>1.0f;", c),
    "skipped reduction level (>>= 2)": lambda c: _sub_each(r">>= 1\b", ">>= 2", c),
    "flushed small value": _flushed,
}


def generate(text: str, limit: int = MAX_MUTANTS) -> list[Mutant]:
    """Every mutant of ``text`` the operators make, one change each, at most ``limit``: taken round
    by round (each operator's first place, then each one's second, ...) so a long kernel tries every
    operator."""
    lines = text.splitlines(keepends=True)
    per_op: dict[str, list[tuple[int, str]]] = {name: [] for name in OPERATORS}
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if not stripped or stripped.startswith(("#", "//", "*", "/*")):
            continue
        code, comment = _code_part(line)
        for name, op in OPERATORS.items():
            for new in op(code):
                per_op[name].append((i, new + comment))
    chosen: list[tuple[str, int, str]] = []
    depth = 0
    while len(chosen) < limit and any(len(v) > depth for v in per_op.values()):
        for name, places in per_op.items():
            if len(places) > depth and len(chosen) < limit:
                chosen.append((name, *places[depth]))
        depth += 1
    chosen.sort(key=lambda c: (c[1], list(OPERATORS).index(c[0])))
    out = []
    for k, (name, i, new) in enumerate(chosen, 1):
        mutated = lines[:i] + [new if new.endswith("\n") or not lines[i].endswith("\n") else new + "\n"] + lines[i + 1:]
        out.append(Mutant(f"M{k}", name, i + 1, lines[i], new, "".join(mutated)))
    return out


# The operators whose mutant differs from the original only where two values meet: a comparison
# moved by one (``<`` and ``<=`` differ only where both sides are equal) and a loop that stops one
# early (it differs only where the loop variable reaches the bound less one).
RELATIONAL = {"< for <=": "<=", "<= for <": "<", "> for >=": ">=", ">= for >": ">"}
BOUNDARY_OPERATORS = (*RELATIONAL, "missing tail (bound - 1)")
# Stops the kernel where the boundary is met: the probe's run faults exactly when some thread of a
# checked size reaches it. Defined on a line of its own before the source (the probe's lines are
# never reported).
PROBE_MACRO = "#define KPROF_BOUNDARY(met) ((met) ? (__trap(), 0) : 0)\n"
def _ends_here(code: str, i: int) -> bool:
    """Whether ``code[i]`` is part of what ends a comparison's operand at bracket depth zero: an
    operator of lower precedence (logical, equality, bitwise, conditional, assignment, comma), a
    statement's end, a brace, another comparison (``<<``, ``>>``, ``->`` and a logical not are
    not)."""
    ch = code[i]
    if ch not in "&|=!<>?:;,{}^":
        return False
    pair = code[max(0, i - 1):i + 2]
    if ch in "<>" and ("<<" in pair or ">>" in pair or code[max(0, i - 1):i + 1] == "->"):
        return False
    if ch == "!" and code[i + 1:i + 2] != "=":
        return False  # logical not binds tighter than a comparison
    return True


def _operand(code: str, start: int, step: int) -> tuple[int, int]:
    """The extent [begin, end) of a comparison's operand, from ``start`` (next to the operator's
    space) going ``step`` (-1 left, 1 right): it ends at an unmatched bracket or, at depth zero, at
    an operator of lower precedence than a comparison or another comparison; a leading ``return`` is
    not part of it."""
    depth, i = 0, start
    opening, closing = ("([", ")]") if step > 0 else (")]", "([")
    while 0 <= i < len(code):
        ch = code[i]
        if ch in opening:
            depth += 1
        elif ch in closing:
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and _ends_here(code, i):
            break
        i += step
    lo, hi = (i + 1, start + 1) if step < 0 else (start, i)
    text = code[lo:hi]
    if step < 0 and re.match(r"\s*return\b", text):
        lo += re.match(r"\s*return\b", text).end()  # type: ignore[union-attr]
        text = code[lo:hi]
    lo += len(text) - len(text.lstrip())
    hi -= len(text) - len(text.rstrip())
    return lo, max(lo, hi)


@dataclass(frozen=True)
class _Moved:
    """The original comparison a boundary mutant moved, on its line: the operands, the operator,
    where the comparison stands in the line's code, and ``shift`` (`` - 1`` for a loop one short:
    the two part where the left side meets the bound less one)."""

    lhs: str
    op: str
    rhs: str
    begin: int
    end: int
    shift: str

    @property
    def met(self) -> str:
        return f"({self.lhs}) == ({self.rhs}){self.shift}"


def _moved(mutant: Mutant) -> _Moved | None:
    """The comparison a boundary mutant moved, found by precedence on its line; None for another
    operator, or a comparison whose operands are not on the line."""
    if mutant.operator not in BOUNDARY_OPERATORS:
        return None
    before, after = _code_part(mutant.before)[0], _code_part(mutant.after)[0]
    at = next((i for i, (a, b) in enumerate(zip(before, after)) if a != b), None)
    if at is None:
        return None
    ops = list(re.finditer(r" (<=|>=|<|>) ", before))
    if mutant.operator in RELATIONAL:  # the comparison the change is in
        found = next((m for m in ops if m.start() <= at < m.end()), None)
        shift = ""
    else:  # "for (...; i < n;" -> "n - 1": the last comparison before the changed bound
        found = next((m for m in reversed(ops) if m.end() <= at), None)
        shift = " - 1"
    if found is None or (shift and found.group(1) != "<"):
        return None
    left, right = _operand(before, found.start() - 1, -1), _operand(before, found.end(), 1)
    lhs, rhs = before[left[0]:left[1]], before[right[0]:right[1]]
    if not lhs or not rhs:
        return None
    return _Moved(lhs, found.group(1), rhs, left[0], right[1], shift)


def boundary_probe(mutant: Mutant) -> tuple[str, str] | None:
    """The original source with the mutated comparison guarded by a trap where the mutant and the
    original part (``KPROF_BOUNDARY((L) == (R))``, or ``(L) == (R) - 1`` for a loop that stops
    early), and that condition as text; None for another operator, or a comparison whose operands
    are not found on its line. The probe's run at the checked sizes says whether they reach the
    boundary at all: one that is reached and changed nothing is equivalent by its results there; one
    that is never reached is a bound no checked size tests."""
    moved = _moved(mutant)
    if moved is None:
        return None
    code, comment = _code_part(mutant.before)
    line = (code[:moved.begin] + f"(KPROF_BOUNDARY({moved.met}), {moved.lhs} {moved.op} "
                                 f"{moved.rhs})"
            + code[moved.end:] + comment)
    lines = mutant.source.splitlines(keepends=True)
    lines[mutant.line - 1] = line if line.endswith("\n") or not mutant.before.endswith("\n") else line + "\n"
    return PROBE_MACRO + "".join(lines), moved.met


_KERNEL = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(")


def _kernel_at(source: str, line: int) -> tuple[str, list[str], str] | None:
    """(name, parameter names, body) of the ``__global__`` function that holds the 1-based ``line``
    (its body: to the next kernel or the end of the file, which holds at least the whole function);
    None outside one."""
    offset = sum(len(x) for x in source.splitlines(keepends=True)[:line - 1])
    kernels = list(_KERNEL.finditer(source))
    found = [m for m in kernels if m.start() < offset]
    if not found:
        return None
    m = found[-1]
    end = closing(source, m.end() - 1)
    if end is None or end > offset:
        return None
    params = [re.findall(r"\w+", p)[-1] for p in source[m.end():end].split(",")
              if re.findall(r"\w+", p)]
    stop = next((k.start() for k in kernels if k.start() > m.start()), len(source))
    return m.group(1), params, source[end:stop]


def unreachable_by_launch(mutant: Mutant, spec: KernelSpec) -> str | None:
    """Why a relational mutant's boundary can never be met under the spec's launches, or None.
    Decided for one shape, the guard of a kernel launched with one block per item: the comparison's
    one side is ``blockIdx.x`` (or a variable given it once and never changed), the other a kernel
    parameter whose spec value is the very expression of every grid's x that launches this kernel.
    Then the block index stays below that value at every size, the two sides are never equal, and
    ``r > rows`` does what ``r >= rows`` does: the mutant is equivalent under the spec, by its
    launch."""
    moved = _moved(mutant) if mutant.operator in RELATIONAL else None
    kernel = _kernel_at(mutant.source, mutant.line)
    if moved is None or kernel is None:
        return None
    name, params, body = kernel
    left, op, right = moved.lhs, moved.op, moved.rhs
    # r >= rows, r < rows; rows > r, rows <= r
    index, bound = (left, right) if op in (">=", "<") else (right, left)
    if index != "blockIdx.x":  # a variable given the block index once, and never anything else
        name_ = re.escape(index)
        given = re.findall(rf"(?<![\w.]){name_}\s*=(?!=)\s*([^;]+);", body)
        changed = re.search(rf"(?<![\w.]){name_}\s*(?:[-+*/%&|^]|<<|>>)=|(?:\+\+|--)\s*{name_}\b"
                            # compound, ++/--, its address taken
                            rf"|\b{name_}\s*(?:\+\+|--)|&\s*{name_}\b", body)
        if [g.strip() for g in given] != ["blockIdx.x"] or changed:
            return None
    if bound not in params:
        return None
    position = params.index(bound)
    launches = [(st.args, st.launch or spec.launch) for st in spec.steps if st.entry == name] if spec.steps else \
        ([(tuple(a.name for a in spec.args), spec.launch)] if name == spec.entry else [])
    values = {a.name: getattr(a, "value", None) for a in spec.args}
    if not launches or any(position >= len(args) for args, _ in launches):
        return None
    grids = [(values.get(args[position]), launch.grid[0]) for args, launch in launches]
    if all(value is not None and value.replace(" ", "") == str(grid).replace(" ", "")
           for value, grid in grids):
        grid = launches[0][1].grid[0]
        return (f"its boundary ({left} == {right}) is never met: {index} is the block index, below "
                f"the grid's {grid} blocks, and {bound} is {grid} at every size (the spec's "
                "launch); equivalent under the spec")
    if all(value is not None and _same_function(value, str(grid), spec) for value, grid in grids):
        grid, value = launches[0][1].grid[0], grids[0][0]
        return (f"its boundary ({left} == {right}) is never met: {index} is the block index, below "
                f"the grid's blocks ({grid}), which with the spec's defines is {bound}'s {value} "
                f"at each of {len(SAMPLES) ** 2} sizes tried (every pair of 1 to 65,537 around the "
                "powers of two); equivalent under the spec")
    return None


# Sizes at which two launch expressions are held side by side: around every power of two a kernel's
# tile or block size may be, where expressions of where(), cdiv() and le() change branch.
SAMPLES = (1, 2, 3, 7, 8, 9, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 4095, 4096, 4097, 65535,
           65537)


def _same_function(a: str, b: str, spec: KernelSpec) -> bool:
    """Whether two size expressions take the same value, with the spec's defines, at every pair of
    :data:`SAMPLES` for the sizes they name (each size in turn the first of the pair, the others the
    second): ``where(FIT * WROWS * le(C, 256), cdiv(R, WROWS), R)`` is ``R`` when WROWS is 0."""
    from fractions import Fraction

    from kprof.spec import sizeexpr

    defines = {k: Fraction(v) for k, v in spec.numeric_defines().items()}
    try:
        names = sorted((sizeexpr.names(a) | sizeexpr.names(b)) - set(defines))
    except (ValueError, SyntaxError):
        return False
    if not names:
        return False
    for first in SAMPLES:
        for second in SAMPLES:
            env = {**defines,
                   **{n: Fraction(first if i == 0 else second) for i, n in enumerate(names)}}
            try:
                if sizeexpr.evaluate(a, env) != sizeexpr.evaluate(b, env):
                    return False
            except (ValueError, ZeroDivisionError, KeyError, TypeError, ArithmeticError):
                return False
    return True


def judge(checks_by_size: list[tuple[str, bool, str]]) -> tuple[Literal["killed", "survived"], str]:
    """A built, non-equivalent mutant's verdict from its runs: (size label, passed, why) each.
    Killed at the first size whose verdict failed (or whose run failed); survived when every one
    passed."""
    for label, ok, why in checks_by_size:
        if not ok:
            return "killed", f"{label}: {why}" if why else label
    return "survived", "every verdict passed: " + ", ".join(label for label, _, _ in checks_by_size)


# Where the verdict passes a mutant, the tools that kprof runs on a kernel beside its verdict, at
# the sanitize size, first to last until one finds something: a bound off by one that writes or
# reads just outside a buffer (memcheck), a barrier taken out (racecheck, synccheck), a read of
# shared memory nothing wrote (the values detector), a read of global memory nothing wrote
# (initcheck).
FIRST = ("memcheck", "racecheck", "values", "synccheck")


def tools() -> tuple[str, ...]:
    """Every checker of the registry (:mod:`kprof.tools.sanitizers.checkers`), :data:`FIRST`
    first."""
    from kprof.tools.sanitizers import checkers

    return checkers.order(FIRST)


def fingerprint(checks: Sequence[OutputCheck]) -> tuple[object, ...]:
    """What a verified run says of its outputs, to the last bit: each output's digest (kprof mutants
    runs with ``RunMode(digest=True)``: the outputs' bytes, where the verdict's numbers also move
    with the float64 reference, which another number of threads sums in another order) and verdict.
    A survivor with the original's fingerprint at every size is not called equivalent by that alone:
    on an H200 most such mutants of rmsnorm_bf16 were lines that no checked size runs (the long-row
    path); the boundary probe decides the ones that moved a bound."""
    return tuple((repr(c.name), repr(c.digest), repr(c.ok)) for c in checks)


def same_results(original: list[tuple[object, ...]], mutant: list[tuple[object, ...]]) -> bool:
    return len(original) == len(mutant) and all(a == b for a, b in zip(original, mutant))


def score(results: list[MutantResult], strict: bool = False) -> tuple[int, int, float | None]:
    """(killed, non-equivalent built mutants, killed / non-equivalent); None when there is none.
    ``strict``: only the same machine code or the launch makes a mutant equivalent (one equivalent
    by its results at a met boundary, or by the source's note, counts as a survivor)."""
    counted = [r for r in results if r.verdict in ("killed", "survived")
               or (strict and r.verdict == "equivalent" and r.by in (BY_BOUNDARY, BY_NOTE))]
    killed = sum(r.verdict == "killed" for r in counted)
    return killed, len(counted), (killed / len(counted) if counted else None)


def text_sections(cubin: bytes) -> dict[str, bytes] | None:
    """The machine code of a cubin: each ``.text.KERNEL`` section's bytes; None for an image that is
    not a 64-bit ELF. Two builds whose sections are equal run the same instructions, whatever their
    line information says (a mutant's cubin names another source path). The ELF reader is the launch
    tally's (kprof/hooks/launch_tally.py, which must stand alone in a user's program)."""
    from kprof.hooks.launch_tally import elf_sections

    sections = elf_sections(cubin)
    return None if sections is None else {n: b for n, b in sections.items()
                                          if n.startswith(".text.")}


def equivalent(original: bytes, mutant: bytes) -> bool:
    """The mutant runs the same machine code as the original (how a mutant is decided
    equivalent)."""
    a, b = text_sections(original), text_sections(mutant)
    return a is not None and a == b
