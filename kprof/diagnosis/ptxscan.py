"""Source lines from PTX, without counters: what each line of the user's kernel asks the GPU to do.

kprof builds with ``-lineinfo``, so the PTX of a kernel carries ``.loc FILE LINE COL`` before the
instructions of each source line (and ``inlined_at`` where a function was inlined: the line in the
kernel's own file is kept). :func:`scan` reads it into :class:`Instr` records, each with its line
and how many loops it sits in (a loop is a backward branch to a label above it). The diagnosis asks
it questions: which lines hold global atomics, FP64 arithmetic, local memory, a barrier inside a
loop, 64-bit division, adjacent scalar loads that one vector load would do, a branch around a loop.

It is static: it says what a line does, not how often or how slowly. Pure, tested on PTX nvcc
writes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_PTX_BYTES = 64 * 1024 * 1024

_ENTRY = re.compile(r"^\.(?:visible\s+)?\.entry\s+([A-Za-z_$][\w$]*)")
_LOC = re.compile(r"^\.loc\s+(\d+)\s+(\d+)\s+\d+(?:.*inlined_at\s+(\d+)\s+(\d+)\s+\d+)?")
_FILE = re.compile(r'^\.file\s+(\d+)\s+"([^"]*)"')
_LABEL = re.compile(r"^(\$?[A-Za-z_][\w$]*):\s*$")
_BRA = re.compile(r"^(@!?%p\w*\s+)?bra(?:\.uni)?\s+(\$?[\w$]+)\s*;")
_INSTR = re.compile(r"^(@!?%\w+\s+)?([a-z][\w.]*)\s*(.*?);?\s*$")


Coef = int | str  # a lane stride: bytes, VAR or UNKNOWN


@dataclass(frozen=True)
class Instr:
    op: str  # the opcode with its suffixes: ld.global.v4.f32, atom.global.add.u32, div.s64
    file: str
    line: int
    loops: int  # how many loops hold it
    index: int  # its place in the entry
    args: str = ""  # the operands as written


@dataclass
class Entry:
    name: str
    instrs: list[Instr] = field(default_factory=list)
    # (at, target index, conditional)
    branches: list[tuple[int, int, bool]] = field(default_factory=list)
    exits: set[int] = field(default_factory=set)  # label indices whose block only returns
    # a conditional branch's index -> its predicate register
    guards: dict[int, str] = field(default_factory=dict)

    def hottest(self, pred: Callable[[Instr], bool]) -> tuple[str, int] | None:
        """The line whose matching instructions sit in the most loops (then the most of them)."""
        best: dict[tuple[str, int], tuple[int, int]] = {}
        for i in self.instrs:
            if pred(i):
                depth, count = best.get((i.file, i.line), (0, 0))
                best[(i.file, i.line)] = (max(depth, i.loops), count + 1)
        return max(best, key=lambda k: best[k]) if best else None

    def count(self, pred: Callable[[Instr], bool]) -> int:
        return sum(1 for i in self.instrs if pred(i))


def is_global_atomic(i: Instr) -> bool:
    return i.op.startswith(("atom.", "red.")) and ".shared" not in i.op


def is_fp64(i: Instr) -> bool:
    return ".f64" in i.op and not i.op.startswith(("ld.", "st.", "mov.", "ld.param"))


def is_local(i: Instr) -> bool:
    return i.op.startswith(("ld.local", "st.local"))


def is_shared(i: Instr) -> bool:
    return i.op.startswith(("ld.shared", "st.shared"))


def is_barrier(i: Instr) -> bool:
    return i.op.startswith(("bar.sync", "barrier.sync", "bar.red", "barrier.red"))


def is_div64(i: Instr) -> bool:
    return i.op.startswith(("div.s64", "div.u64", "rem.s64", "rem.u64"))


def is_global_access(i: Instr) -> bool:
    return i.op.startswith(("ld.global", "st.global"))


def width(i: Instr) -> int:
    """Bytes a thread moves with one load or store."""
    vec = 4 if ".v4" in i.op else 2 if ".v2" in i.op else 1
    m = re.search(r"\.[bfsu](8|16|32|64)$", i.op)
    return vec * (int(m.group(1)) // 8 if m else 4)


def scan(ptx: str) -> dict[str, Entry]:
    """Every entry of the PTX, its instructions with their source lines and loop depths."""
    text = ptx[:MAX_PTX_BYTES]
    files: dict[str, str] = {m.group(1): m.group(2)
                             for m in map(_FILE.match, (ln.strip() for ln in text.splitlines()))
                             if m}
    entries: dict[str, Entry] = {}
    current: Entry | None = None
    raw: list[tuple[str, str, int, str]] = []  # (op, file, line, operands)
    labels: dict[str, int] = {}
    branches: list[tuple[int, str, bool]] = []
    guards: dict[int, str] = {}
    where = ("", 0)

    def close() -> None:
        if current is None:
            return
        loops = [(labels[t], at) for at, t, _ in branches if t in labels and labels[t] <= at]
        for k, (op, f, ln, args) in enumerate(raw):
            depth = sum(1 for lo, hi in loops if lo <= k <= hi)
            current.instrs.append(Instr(op, f, ln, depth, k, args))
        current.branches = [(at, labels[t], cond) for at, t, cond in branches if t in labels]
        current.exits = {idx for idx in labels.values() if idx < len(raw) and raw[idx][0] == "ret"}
        current.guards = dict(guards)
        entries[current.name] = current

    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("//"):
            continue
        if m := _ENTRY.match(s):
            close()
            current, raw, labels, branches, where = Entry(m.group(1)), [], {}, [], ("", 0)
            guards = {}
            continue
        if current is None:
            continue
        if m := _LOC.match(s):
            fid, ln = m.group(1), int(m.group(2))
            if m.group(3) and files.get(m.group(3)) != files.get(fid) and files.get(m.group(3)):
                # inlined from a header: the kernel's own line
                fid, ln = m.group(3), int(m.group(4))
            if ln:  # line 0 is code of no one line (the compiler's own): the record says 0
                where = (files.get(fid, fid), ln)
            else:
                where = (files.get(fid, fid), 0)
            continue
        if m := _LABEL.match(s):
            labels[m.group(1)] = len(raw)
            continue
        if s.startswith((".", "{", "}", ")")) or s.startswith("//"):
            continue
        if m := _BRA.match(s):
            if m.group(1):
                guards[len(raw)] = m.group(1).strip().lstrip("@!")
            branches.append((len(raw), m.group(2), bool(m.group(1))))
            raw.append(("bra", where[0], where[1], m.group(2)))
            continue
        if m := _INSTR.match(s):
            raw.append((m.group(2), where[0], where[1], m.group(3)))
    close()
    # the files' names: .file comes after the entries, so the records are rewritten with them
    for e in entries.values():
        e.instrs = [Instr(i.op, files.get(i.file, i.file), i.line, i.loops, i.index, i.args)
                    for i in e.instrs]
    return entries


def inline_sites(ptx: str) -> dict[tuple[str, int], frozenset[tuple[str, int]]]:
    """Where each line of an inlined function was inlined: (file, line) of a header's line (a CUDA
    header's ``atomicAdd``, a helper of the user's own) -> the lines of another file that call it,
    followed out to the outermost (``.loc F L C, function_name ..., inlined_at F2 L2 C2`` chains).
    Lines inlined within their own file are left out: they are the user's lines already. Pure."""
    text = ptx[:MAX_PTX_BYTES]
    files: dict[str, str] = {}
    pairs: set[tuple[str, int, str, int]] = set()
    for raw in text.splitlines():
        s = raw.strip()
        if m := _FILE.match(s):
            files[m.group(1)] = m.group(2)
        elif (m := _LOC.match(s)) and m.group(3) and int(m.group(2)) and int(m.group(4)):
            pairs.add((m.group(1), int(m.group(2)), m.group(3), int(m.group(4))))
    calls: dict[tuple[str, int], set[tuple[str, int]]] = {}
    for fid, ln, cid, cl in pairs:
        calls.setdefault((files.get(fid, fid), ln), set()).add((files.get(cid, cid), cl))

    def outermost(at: tuple[str, int], depth: int = 0) -> set[tuple[str, int]]:
        if at not in calls or depth > 8:
            return {at}
        return set().union(*(outermost(c, depth + 1) for c in calls[at]))

    out = {}
    for at in calls:
        sites = frozenset(x for x in outermost(at) if x[0] != at[0])
        if sites:
            out[at] = sites
    return out


_ADDRESS = re.compile(r"\[(%\w+)(?:\+(-?\d+))?\]")


def adjacent_scalar_loads(entry: Entry) -> tuple[str, int] | None:
    """A line with 4-byte (or smaller) global loads of one base register at consecutive offsets
    (``x[i], x[i + 1], ...``, PTX ``[%rd5]``, ``[%rd5+4]``) that one vector load could do."""
    groups: dict[tuple[str, str, int], set[int]] = {}
    for i in entry.instrs:
        if i.op.startswith("ld.global") and ".v" not in i.op and width(i) <= 4 and (m := _ADDRESS.search(i.args)):
            groups.setdefault((m.group(1), i.file, i.line), set()).add(int(m.group(2) or 0))
    found = [(len(offs), (f, ln)) for (_, f, ln), offs in groups.items() if len(offs) >= 2]
    return max(found)[1] if found else None


def branch_around_loop(entry: Entry) -> tuple[str, int] | None:
    """The line of a conditional branch into two paths that each start a loop (an if and an else,
    each with real work): not a bounds check (a jump to the exit), not a loop's own test."""
    headers = {tgt for at, tgt, _ in entry.branches if tgt <= at}
    uncond = {at: tgt for at, tgt, cond in entry.branches if not cond}

    def loop_near(k: int) -> bool:
        k = uncond.get(k, k)  # a path that starts with a jump starts where it lands
        return any(k <= h <= k + 3 for h in headers)

    for at, tgt, cond in entry.branches:
        if cond and tgt > at and tgt not in entry.exits and loop_near(tgt) and loop_near(at + 1):
            i = entry.instrs[at]
            return (i.file, i.line)
    return None


VAR = "var"  # a coefficient known only at run time (a kernel parameter, a block size)
UNKNOWN = "?"  # the value depends on data (a load), or on the lane in a way kprof does not follow
_IMM = re.compile(r"^-?(?:0[xX][0-9a-fA-F]+|\d+)$")


def _add(a: Coef, b: Coef, sign: int = 1) -> Coef:
    if UNKNOWN in (a, b):
        return UNKNOWN
    if LANE in (a, b):  # a lane-varying value that is not linear stays so, whatever is added
        return LANE
    if VAR in (a, b):
        return VAR
    if not (isinstance(a, int) and isinstance(b, int)):
        return UNKNOWN
    return a + sign * b


def _mul(a: Coef, b: Coef, a_imm: int | None, b_imm: int | None) -> Coef:
    if UNKNOWN in (a, b):
        return UNKNOWN
    if a == 0 and b == 0:
        return 0
    if a != 0 and b != 0:
        return UNKNOWN
    coef, other_imm = (a, b_imm) if a != 0 else (b, a_imm)
    if not isinstance(coef, int):  # VAR or LANE times a warp-uniform value stays what it was
        return coef
    if other_imm is not None:
        return coef * other_imm
    return VAR  # a lane-linear value times a run-time value


LANE = "lane"  # differs between the lanes of a warp, not linearly (x & 1, x % 4 of a lane index)


class _Forms(dict[str, "int | str"]):
    """Each register's form as a pass goes, and every form each register was given. A register given
    different forms in different places (a loop-carried value: ``j = next[j]``'s j is the thread's
    index before the loop and a loaded value in it) is, in the second pass, what joins them:
    UNKNOWN."""

    def __init__(self, joined: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.defs: dict[str, set[int | str]] = {}
        self.joined = joined

    def __setitem__(self, reg: str, form: int | str) -> None:
        self.defs.setdefault(reg, set()).add(form)
        super().__setitem__(reg, UNKNOWN if reg in self.joined else form)


def _pass(entry: Entry) -> tuple[list[tuple[Instr, int | str]], dict[int, bool]]:
    """Two forward passes over the PTX in order (:func:`_one_pass`): the second with the registers
    that the first saw given different forms (loop-carried values) taken as UNKNOWN."""
    forms = _Forms()
    first = _one_pass(entry, forms)
    joined = frozenset(reg for reg, given in forms.defs.items() if len(given) > 1)
    return _one_pass(entry, _Forms(joined)) if joined else first


def _one_pass(entry: Entry, forms: _Forms) -> tuple[list[tuple[Instr, int | str]], dict[int, bool]]:
    """One forward pass over the PTX in order (a register's last definition wins: good for index
    arithmetic): each global access with its lanes' stride, and each conditional branch with whether
    its predicate can differ between the lanes of a warp."""
    preds: dict[str, bool] = {}

    def val(tok: str) -> tuple[int | str, int | None]:
        tok = tok.strip()
        if _IMM.match(tok):
            return 0, int(tok, 0)
        if tok == "%tid.x":
            return 1, None
        if tok.startswith("%") and not tok.startswith(("%r", "%rd", "%f", "%fd", "%p", "%h",
                                                       "%rs")):
            return 0, None  # %ctaid, %ntid, %nctaid...: the same for a warp's lanes
        return forms.get(tok, 0), None

    def varies(v: int | str) -> bool:
        return v not in (0, UNKNOWN)

    strides: list[tuple[Instr, int | str]] = []
    for i in entry.instrs:
        ops = [t.strip() for t in i.args.replace("{", "").replace("}", "").split(",")]
        op = i.op
        if op == "bra":
            continue
        if op.startswith(("ld.global", "st.global")):
            m = _ADDRESS.search(i.args)
            if m:
                strides.append((i, forms.get(m.group(1), 0)))
            if op.startswith("ld.") and ops:
                forms[ops[0]] = UNKNOWN
            continue
        if not ops or not ops[0].startswith("%"):
            continue
        dst, src = ops[0], ops[1:]
        vals = [val(x) for x in src]
        if op.startswith("setp."):
            preds[dst] = any(varies(v) for v, _ in vals[:2])
            continue
        if op.startswith(("not.pred", "mov.pred", "xor.pred", "and.pred", "or.pred")):
            preds[dst] = any(preds.get(x, False) for x in src)
            continue
        if "%laneid" in src:
            forms[dst] = 1
        elif op.startswith(("mov.", "cvt.", "cvta.")) and vals:
            forms[dst] = vals[0][0]
        elif op.startswith("ld."):
            forms[dst] = UNKNOWN if not op.startswith("ld.param") else 0
        elif op.startswith(("add.", "sub.")) and len(vals) == 2:
            forms[dst] = _add(vals[0][0], vals[1][0], -1 if op.startswith("sub.") else 1)
        elif op.startswith("mul.") and len(vals) == 2:
            forms[dst] = _mul(vals[0][0], vals[1][0], vals[0][1], vals[1][1])
        elif op.startswith("mad.") and len(vals) == 3:
            forms[dst] = _add(_mul(vals[0][0], vals[1][0], vals[0][1], vals[1][1]), vals[2][0])
        elif op.startswith("shl.") and len(vals) == 2:
            k = vals[1][1]
            forms[dst] = (vals[0][0] * (1 << k) if isinstance(vals[0][0], int) else vals[0][0]) if k is not None \
                else (UNKNOWN if vals[0][0] != 0 else 0)
        elif op.startswith(("and.", "rem.")) and len(vals) == 2 and isinstance(vals[0][0], int) and vals[1][1]:
            # x & (2^k - 1) or x % m of a lane-linear x: lanes differ unless the stride is a
            # multiple of the period
            period = vals[1][1] + 1 if op.startswith("and.") else vals[1][1]
            forms[dst] = LANE if vals[0][0] % period else 0
        else:
            forms[dst] = UNKNOWN if any(v[0] != 0 for v in vals) else 0
    # each conditional branch: whether its predicate (the "@%p" guard) can differ between lanes
    branches = {at: preds.get(guard, False) for at, guard in entry.guards.items()}
    return strides, branches


def lane_strides(entry: Entry) -> list[tuple[Instr, int | str]]:
    """Each global load and store with the bytes its address moves from one lane to the next (the
    coefficient of ``%tid.x``): the element size for a coalesced access, 0 for one address a warp,
    VAR for a stride known only at run time, UNKNOWN where the address depends on data."""
    return _pass(entry)[0]


def lane_branch(entry: Entry) -> tuple[str, int] | None:
    """The line of a branch into two paths of work (:func:`branch_around_loop`) whose condition
    differs between the lanes of a warp, as far as the PTX's arithmetic shows; None if none does."""
    hit = branch_around_loop(entry)
    if hit is None:
        return None
    _, lanes = _pass(entry)
    for at, varying in lanes.items():
        i = entry.instrs[at]
        if varying and (i.file, i.line) == hit:
            return hit
    return None


def lane_branches(entry: Entry) -> set[tuple[str, int]]:
    """The lines of every conditional branch whose condition differs between the lanes of a warp, as
    far as the PTX's arithmetic shows (``if ((threadIdx.x & 31) < 16)``), whatever its paths hold; a
    branch to the kernel's return (``if (i >= n) return;``) is left out: it diverges in the last
    block only."""
    _, lanes = _pass(entry)
    # a bounds check: the tail block only
    to_exit = {at for at, target, _ in entry.branches if target in entry.exits}
    return {(entry.instrs[at].file, entry.instrs[at].line) for at, varying in lanes.items()
            if varying and at not in to_exit}


def path_costs(entry: Entry, at: int) -> tuple[int, int] | None:
    """The instructions a step of each path's loop runs, for the two-path branch at ``at``."""
    headers = sorted({tgt: bat for bat, tgt, _ in entry.branches if tgt <= bat}.items())
    uncond = {a: t for a, t, c in entry.branches if not c}
    tgt = next((t for a, t, c in entry.branches if a == at and c), None)
    if tgt is None:
        return None

    def loop_from(k: int) -> int | None:
        k = uncond.get(k, k)
        for lo, hi in headers:
            if k <= lo <= k + 3:
                return hi - lo + 1
        return None

    a, b = loop_from(tgt), loop_from(at + 1)
    return (a, b) if a and b else None
