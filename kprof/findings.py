"""Findings: what a sanitizer (or kprof's own ``values`` detector) found, in one stable shape.

The ``kind`` vocabulary is stable and documented in ``docs/sanitize.md``. Buffer names come from
kprof's own record of its allocations (the runner writes name, base address and size of every
buffer), because compute-sanitizer's XML carries only the raw address. Identical records are
merged into one finding with a ``count``. JSON and SARIF 2.1.0 writers live here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kprof.inputs import scalar_fields

KINDS = {
    "out-of-bounds-read": "a read outside every allocation (or outside a shared/local array)",
    "out-of-bounds-write": "a write outside every allocation (or outside a shared/local array)",
    "misaligned-read": "a read whose address is not a multiple of its size",
    "misaligned-write": "a write whose address is not a multiple of its size",
    "invalid-access": "another invalid memory access memcheck reported",
    "hardware-exception": "the GPU raised an exception (illegal instruction, misaligned PC, ...)",
    "leak": "device memory allocated and never freed (cuMemAlloc or device-side malloc)",
    "race-raw": "read after write: a thread reads what another wrote without a barrier between",
    "race-war": "write after read: a thread overwrites what another still reads",
    "race-waw": "write after write: two threads write the same address without ordering",
    "race": "results differ between identical runs (values): a race, also in global memory",
    "uninitialized-read": "a read of memory nothing wrote",
    "unwritten-output": "output elements the kernel never wrote (values)",
    "wrong-result": "the output disagrees with the float64 reference (values)",
    "barrier-divergence": "__syncthreads() reached by only some threads of a block or warp",
    "invalid-warp-sync": "a warp-level primitive (__shfl_sync, __syncwarp) with a bad mask",
    "sync-error": "another synchronisation error synccheck reported",
    "api-error": "a CUDA API call failed",
    "sanitizer-error": "the tool itself failed while checking (an internal error): not the "
                       "program's, and not checked",
}


@dataclass(frozen=True)
class Access:
    """One side of a race: where and by which thread."""

    file: str | None
    line: int | None
    access: str | None  # "read" / "write"
    thread: tuple[int, int, int] | None = None


@dataclass(frozen=True)
class Extra:
    """What kprof adds to a finding beyond the tool's record, each a field of its own; JSON's
    ``extra`` holds those that are set (``extra.library``, ``extra.reported_at``, ...)."""

    # the library whose kernel it is (kprof.tools.sanitizers.kernelpolicy.libraries_own)
    library: str | None = None
    # the library whose code launched the kernel, from the host frames
    launched_by: str | None = None
    # where the user's source of a kernel built from a string is (kprof.tools.sanitizers.embedded)
    source: str | None = None
    # the tool's own place, where kprof moved the finding to the user's line
    reported_at: str | None = None
    # the header function inlined into the user's line (``__syncwarp at ...:110``)
    inlined: str | None = None
    # the finding this one is a consequence of (kprof.tools.sanitizers.checkers)
    explained_by: str | None = None
    hazard_records: int | None = None  # racecheck: the hazard records an analysis record stands for

    def to_dict(self) -> dict[str, object]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, raw: object) -> Extra:
        """As :meth:`to_dict` wrote it; a key it does not know, or a value of the wrong type, is
        dropped."""
        return cls(**scalar_fields(cls, raw))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Finding:
    tool: str
    kind: str
    kernel: str | None
    file: str | None
    line: int | None
    _: KW_ONLY  # the rest by name: a finding has nineteen fields
    thread: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    count: int
    message: str  # the sanitizer's own text
    buffer: str | None = None
    detail: str | None = None  # kprof's words: "4 bytes past the end of C (C is ...)"
    address: int | None = None
    size: int | None = None
    other: Access | None = None  # races: the second access
    indices: tuple[tuple[int, ...], ...] = ()  # values: the first differing indices
    extra: Extra = field(default_factory=Extra)
    # a program's launch site: the innermost host frame in the user's files
    launch: str | None = None
    # the tool's grid ids of the launches these records came from
    grids: frozenset[int] = frozenset()
    # the rank of a multi-process job (torchrun, mpirun) whose process it came from
    rank: int | None = None

    @property
    def launches(self) -> int | None:
        """How many launches the merged records came from (None: the tool gave no grid ids)."""
        return len(self.grids) or None

    def key(self) -> tuple[Any, ...]:
        """What makes two records the same finding."""
        other = (self.other.file, self.other.line, self.other.access) if self.other else None
        return (self.tool, self.kind, self.kernel, self.file, self.line, self.buffer, other,
                self.launch, self.rank)

    def lines(self) -> set[int]:
        out = {self.line} if self.line is not None else set()
        if self.other and self.other.line is not None:
            out.add(self.other.line)
        return out

    def location(self) -> str:
        where = f"{_short(self.file)}:{self.line}" if self.file and self.line else (_short(self.file) or "?")
        if self.other and self.other.line is not None and self.other.line != self.line:
            where += f" / {_short(self.other.file)}:{self.other.line}"
        return where

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["thread"] = list(self.thread) if self.thread else None
        data["block"] = list(self.block) if self.block else None
        data["indices"] = [list(i) for i in self.indices]
        data["grids"] = sorted(self.grids)
        data["launches"] = self.launches
        data["extra"] = self.extra.to_dict()
        return data

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Finding:
        """A finding as :meth:`to_dict` (or the values detector's child) wrote it: fields it does
        not have are dropped, lists become the tuples and sets they were."""
        known = {f.name for f in fields(cls)}
        data = {k: v for k, v in raw.items() if k in known}
        data["thread"] = tuple(data["thread"]) if data.get("thread") else None
        data["block"] = tuple(data["block"]) if data.get("block") else None
        data["indices"] = tuple(tuple(i) for i in data.get("indices") or ())
        other = data.get("other")
        data["other"] = (Access(other.get("file"), other.get("line"), other.get("access"),
                                tuple(other["thread"]) if other.get("thread") else None)
                         if isinstance(other, dict) else None)
        data["grids"] = frozenset(data.get("grids") or ())
        data["extra"] = Extra.from_dict(data.get("extra"))
        return cls(**data)


def merge(findings: list[Finding]) -> list[Finding]:
    """Fold identical findings into one, keeping the first record's thread and block."""
    order: list[tuple[Any, ...]] = []
    merged: dict[tuple[Any, ...], Finding] = {}
    for f in findings:
        k = f.key()
        if k in merged:
            merged[k] = replace(merged[k], count=merged[k].count + f.count,
                                grids=merged[k].grids | f.grids)
        else:
            merged[k] = f
            order.append(k)
    return [merged[k] for k in order]


def fold_same_place(findings: list[Finding]) -> list[Finding]:
    """One headline per place: races the tool reported at the same lines of the same kernel, from
    the same launch site, under several kinds or wordings ("Race condition", "Potential WAR hazard
    detected"; a RAW and a WAW of one unsynchronised increment) become one finding, the
    most-reported first, with the others named in its detail and their records counted."""
    # place -> its records, in the order places were first seen
    groups: dict[Any, list[Finding]] = {}
    for i, f in enumerate(findings):
        place = (f.tool, f.kernel, frozenset(f.lines()), f.launch) if f.kind.startswith("race-") and f.lines() else i
        groups.setdefault(place, []).append(f)
    folded = []
    for group in groups.values():
        head = max(group, key=lambda g: g.count)
        if len(group) > 1:
            also = ", ".join(f"{g.kind} ({g.count:,} records: {g.message})" for g in group
                             if g is not head)
            head = replace(head, count=sum(g.count for g in group),
                           grids=frozenset().union(*(g.grids for g in group)),
                           detail=(head.detail + "; " if head.detail else "") + f"also reported as {also}")
        folded.append(head)
    return folded


def label(f: Finding) -> str:
    """How a finding is named when another points at it: "memcheck out-of-bounds-write at
    t.cu:15"."""
    return f"{f.tool} {f.kind} at {f.location()}"


@dataclass(frozen=True)
class Allocation:
    """One buffer kprof's runner allocated for a spec (its result's ``allocations``): what names an
    address."""

    name: str
    base: int
    nbytes: int
    dtype: str
    shape: tuple[int, ...] = ()
    role: str = ""  # in, out, inout, scratch ('' in a record from before kprof kept it)


def allocation_of(raw: object) -> Allocation | None:
    """An allocation as the runner wrote it, or None for a record that is not one (a name and dtype,
    a base and size that are counts, a shape that is a list of at most 8 sizes if it has one)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not isinstance(raw.get("dtype"), str):
        return None
    base, nbytes, shape = raw.get("base"), raw.get("nbytes"), raw.get("shape", [])
    counts = [base, nbytes, *(shape if isinstance(shape, list) else [])]
    if not isinstance(shape, list) or len(shape) > 8 or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts):
        return None
    assert isinstance(base, int) and isinstance(nbytes, int)
    role = raw.get("role")
    return Allocation(raw["name"], base, nbytes, raw["dtype"], tuple(shape),
                      role if isinstance(role, str) else "")


def buffer_detail(address: int, allocations: Sequence[Allocation]) -> tuple[str | None, str | None]:
    """Name the buffer an address belongs to or lies nearest, in the user's terms."""
    if not allocations:
        return None, None
    best: tuple[int, Allocation, str] | None = None
    for alloc in allocations:
        base, nbytes = alloc.base, alloc.nbytes
        if base <= address < base + nbytes:
            offset = address - base
            item = _itemsize(alloc.dtype)
            text = f"at byte {offset:,} of {alloc.name} (element {offset // item:,}; {_describe(alloc)})"
            return alloc.name, text
        if address >= base + nbytes:
            distance = address - (base + nbytes)
            where = "immediately past" if distance == 0 else f"{distance:,} bytes past"
            element = (address - base) // _itemsize(alloc.dtype)
            text = f"{where} the end of {alloc.name}: element {element:,} ({_describe(alloc)})"
        else:
            distance = base - address
            text = f"{distance:,} bytes before the start of {alloc.name} ({_describe(alloc)})"
        if best is None or distance < best[0]:
            best = (distance, alloc, text)
    assert best is not None
    return best[1].name, best[2]


def _describe(alloc: Allocation) -> str:
    dims = " x ".join(str(d) for d in alloc.shape)
    return f"{alloc.name} is {dims} {alloc.dtype}, {alloc.nbytes:,} bytes"


def _itemsize(dtype: str) -> int:
    from kprof.spec import DTYPES

    return DTYPES.get(dtype, (1, "u"))[0]


def _short(path: str | None) -> str | None:
    if path is None:
        return None
    return path.rsplit("/", 1)[-1]


# ------------------------------------------------------------------------------------ output

JSON_VERSION = 1


def to_json(results: list[Any], kernel: str | None) -> dict[str, Any]:
    """One object with a top-level ``findings`` list (schema: docs/sanitize.md)."""
    findings = [f.to_dict() for r in results for f in r.findings]
    return {
        "version": JSON_VERSION,
        "kernel": kernel,
        "clean": not findings and all(r.ok for r in results),
        "findings": findings,
        "tools": [r.summary() for r in results],
    }


def to_sarif(results: list[Any], tool_version: str, root: str | None = None) -> dict[str, object]:
    """SARIF 2.1.0: one run, one rule per finding kind, one result per finding. Files under ``root``
    are relative to the ``SRCROOT`` base (``root`` as a file URI), others are absolute file URIs,
    all percent-encoded; a finding with no file has no location, and no line below 1 is written."""
    findings = [f for r in results for f in r.findings]
    kinds = sorted({f.kind for f in findings})
    rules = [{"id": k, "name": k, "shortDescription": {"text": KINDS.get(k, k)},
              "help": {"text": f"{k}: {KINDS.get(k, k)} (kprof's findings vocabulary, "
                               "docs/sanitize.md)"}}
             for k in kinds]
    sarif_results = []
    for f in findings:
        text = f.message + (f" ({f.detail})" if f.detail else "")
        if f.count > 1:
            text += f" [{f.count} records" + (f" from {f.launches} launches]"
                                              if (f.launches or 0) > 1 else "]")
        result: dict[str, object] = {
            "ruleId": f.kind,
            "ruleIndex": kinds.index(f.kind),
            "level": "error",
            "message": {"text": f"{f.tool}: {text}"},
            "locations": [loc] if (loc := sarif_location(f.file, f.line, root)) else [],
            "properties": {"kernel": f.kernel, "thread": f.thread, "block": f.block,
                           "buffer": f.buffer,
                           "count": f.count, "launch": f.launch, "launches": f.launches},
        }  # fmt: skip
        if f.other and (other := sarif_location(f.other.file, f.other.line, root)):
            result["relatedLocations"] = [dict(other, id=1,
                                               message={"text": "the other access "
                                                                f"({f.other.access})"})]
        sarif_results.append(result)
    run: dict[str, object] = {"tool": {"driver": {"name": "kprof", "version": tool_version,
                                                  "rules": rules}},
                           "results": sarif_results, "invocations": [_invocation(results)]}
    if root:
        run["originalUriBaseIds"] = {"SRCROOT": {"uri": Path(root).resolve().as_uri() + "/"}}
    return {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
            "runs": [run]}


def _invocation(results: list[Any]) -> dict[str, object]:
    """Whether every tool ran to a verdict: a tool that checked nothing (NOT CHECKED), timed out or
    failed is a notification, and the run is not successful, so a viewer that shows no result does
    not read as clean."""
    notes = [{"level": "warning" if r.status == "not-checked" else "error",
              "message": {"text": f"{r.tool}: {r.status}" + (f": {r.message}" if r.message
                                                             else "")},
              "descriptor": {"id": r.status}, "properties": {"tool": r.tool}}
             for r in results if not r.ok]
    checked = {r.tool: r.checked.to_dict() for r in results
               if getattr(r, "checked", None) is not None}
    out: dict[str, object] = {"executionSuccessful": not notes, "toolExecutionNotifications": notes}
    # what each tool's run covered: launches, kernels with line information, pools
    # (kprof.tools.programs.coverage)
    if checked:
        out["properties"] = {"checked": checked}
    return out


def sarif_location(path: str | None, line: int | None,
                   root: str | None) -> dict[str, object] | None:
    """A SARIF location: under ``root``, relative to SRCROOT; else an absolute file URI;
    percent-encoded."""
    if not path:
        return None
    base = root.rstrip("/") + "/" if root else None
    if base and path.startswith(base):
        artifact: dict[str, object] = {"uri": quote(path[len(base):]), "uriBaseId": "SRCROOT"}
    elif path.startswith("/"):
        artifact = {"uri": Path(path).as_uri()}
    else:
        artifact = {"uri": quote(path)}
    physical: dict[str, object] = {"artifactLocation": artifact}
    if line is not None and line >= 1:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}
