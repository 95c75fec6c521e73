"""compute-sanitizer's XML read into findings: the records (parsed once, pulled in pieces, capped),
each kind of record (memcheck's accesses, leaks and API errors, racecheck's hazards joined to their
analyses, initcheck, synccheck) decoded into a :class:`kprof.findings.Finding`, with the nearest
allocation, the user's line under a CUDA header and the launch site. Pure functions of the text:
:mod:`kprof.tools.sanitizers.compute_sanitizer`
runs the tool and hands its XML here."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from kprof import inputs
from kprof.demangle import demangle
from kprof.errors import UsageError
from kprof.findings import Access, Allocation, Extra, Finding, buffer_detail, fold_same_place, merge
from kprof.tools.programs import hostframes
from kprof.tools.sanitizers import kernelpolicy


def parse_xml(text: str, tool: str, allocations: Sequence[Allocation] | None = None,
              tool_text: str = "") -> tuple[list[Finding], list[str]]:
    """Findings from compute-sanitizer's XML, merged; plus notes about records set aside.

    ``allocations`` is kprof's own record of a spec's buffers (it names the buffer an address hit);
    ``tool_text`` is what the tool printed beside the XML, whose "N bytes after the nearest
    allocation" lines (absent from the XML) describe the allocation a program's access missed. At
    most
    :data:`MAX_RECORDS` records are read; a note says how many more the report holds."""
    recs = read_records(text, MAX_RECORDS)
    findings, notes = parse_records(recs, tool, allocations, tool_text)
    return findings, notes + unread_note(text, len(recs))


# Records read from one report. Each costs about 0.3 ms to place (its host stack, the user's line,
# the kernel's name); a report of 200,000 distinct out-of-bounds records took 45 s. Past the cap the
# records are counted, not read: a report that long repeats a few mistakes at many addresses, and
# kprof folds those by place anyway.
MAX_RECORDS = 20_000


def unread_note(text: str, read: int) -> list[str]:
    total = text.count("<record>")
    if total <= read:
        return []
    return [f"the report holds {total:,} records; kprof read the first {read:,} (the rest are not "
            "in these findings: fix these and run again, or read the XML itself)"]


def records(text: str) -> list[ET.Element]:
    """The records of one report, in the order the tool wrote them (a UsageError for a file that is
    not compute-sanitizer XML)."""
    return read_records(text)


# Record kinds after which memcheck has stopped the kernel and the CUDA context is unusable.
STOPS_THE_CONTEXT = ("Precise", "Imprecise")


def parse_records(recs: list[ET.Element], tool: str,
                  allocations: Sequence[Allocation] | None = None,
                  tool_text: str = "") -> tuple[list[Finding], list[str]]:
    """:func:`parse_xml` over some of a report's records (one test's, in a suite run)."""
    allocations = allocations or []
    nearest = nearest_allocations(tool_text)
    own = {a.base for a in allocations}
    findings: list[Finding] = []
    analyses: list[Finding] = []
    notes: list[str] = []
    precise_errors = 0
    for rec in recs:
        kind = rec.findtext("kind") or ""
        found: Finding | None = _internal(rec, tool)
        if found is not None:
            pass
        elif kind in ("Precise", "Imprecise"):
            precise_errors += 1
            found = _memcheck(rec, tool, allocations)
        elif kind == "Leak":
            address = _int(rec.findtext("what/address"))
            if address in own:
                notes.append(f"kprof's own buffer at {address:#x} was not freed because the target "
                             "stopped early; not the kernel's leak")
                continue
            found = _leak(rec, tool)
        elif kind == "Analysis":
            analyses.append(_decorate(_analysis(rec, tool), rec, nearest))
        elif kind == "Sanitizer" and rec.findtext("level") == "Warning":
            if (note := _tool_warning(rec, tool)) not in notes:
                notes.append(note)
        elif kind == "Api":
            error = rec.findtext("what/error") or ""
            api = rec.findtext("what/api") or ""
            if precise_errors and error in _AFTER_A_FAULT:
                notes.append(f"{api} -> {error}: the sanitizer stopped the kernel at its first "
                             "error")
                continue
            if api.startswith(_LOOKUPS) and error in _NOT_THERE:
                note = f"{api} -> {error}: a library asking the driver for an entry point it lacks, not an error"
                if note not in notes:
                    notes.append(note)
                continue
            found = _api(rec, tool)
        else:
            found = _other(rec, tool, kind, allocations)
        if found is not None:
            findings.append(_decorate(found, rec, nearest))
    findings = merge(_proxy_places(findings))
    if analyses:
        findings = _join_races(findings, merge(analyses))
    return fold_same_place(findings), notes


def _proxy_places(findings: list[Finding]) -> list[Finding]:
    """Every hazard at a place (kernel and both lines) where one record showed a missing proxy fence
    (a thread against itself) says so: of 10,000 such records from 2026.4 on an H200, 44 paired a
    thread with itself."""
    def place(f: Finding) -> tuple[Any, ...]:
        return (f.kernel, f.line, f.other.line if f.other else None)

    proxied = {place(f): f.detail for f in findings if f.detail and PROXY_FENCE in f.detail}
    if not proxied:
        return findings
    return [replace(f, detail=proxied[place(f)]) if place(f) in proxied
            and f.kind.startswith("race-") else f for f in findings]


# The errors every later CUDA call returns once memcheck has stopped a kernel at its first error
# (driver and runtime names): consequences of that finding, not findings of their own.
_AFTER_A_FAULT = ("CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ILLEGAL_ADDRESS",
                  "cudaErrorLaunchFailure", "cudaErrorIllegalAddress")


# The driver's entry-point lookups: cuda-bindings 13 asks cuGetProcAddress for every versioned
# symbol it knows, and those the driver lacks come back CUDA_ERROR_INVALID_VALUE or NOT_FOUND. Seen
# under memcheck on an H200 (driver 580.159.04): 34 such records from a correct cuda-python launch.
_LOOKUPS = ("cuGetProcAddress",)
_NOT_THERE = ("CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NOT_FOUND")


def read_records(text: str, cap: int | None = None) -> list[ET.Element]:
    """The report's records, in order; with ``cap``, the first ``cap`` of them, the rest of the text
    not parsed."""
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("start", "end"))
    out: list[ET.Element] = []
    root: ET.Element | None = None
    depth = 0
    step = 1 << 20  # fed a megabyte at a time: a capped read stops soon after its last record
    try:
        for at in range(0, max(len(text), 1), step):
            parser.feed(text[at:at + step])
            for pair in parser.read_events():
                # start and end events carry elements
                event, elem = cast(tuple[str, ET.Element], pair)
                depth += 1 if event == "start" else -1
                if root is None:
                    root = elem
                    if root.tag != "ComputeSanitizerOutput":
                        raise UsageError("not compute-sanitizer XML: the root element is "
                                         f"<{root.tag}>, not <ComputeSanitizerOutput>")
                elif event == "end" and depth == 1 and elem.tag == "record":
                    out.append(elem)
                    root.remove(elem)  # the root keeps none: what was read is not walked again
                    if cap is not None and len(out) >= cap:
                        return out
        parser.close()
    except ET.ParseError as exc:
        raise UsageError(f"not compute-sanitizer XML: {exc}") from None
    if root is None:
        raise UsageError("not compute-sanitizer XML: no element in it")
    return out


# A record of the tool's own failure: on an H200 (2025.3.1), racecheck with library kernels excluded
# wrote "Internal Sanitizer Error: The Sanitizer failed to handle a hardware exception." in a half
# nn.Linear test
INTERNAL_ERROR = "Internal Sanitizer Error"


def _other(rec: ET.Element, tool: str, kind: str, allocations: Sequence[Allocation]) -> Finding:
    if kind == "Hazard":
        return _hazard(rec, tool)
    if kind == "Initcheck":
        return _initcheck(rec, tool, allocations)
    if kind == "Synccheck":
        return _synccheck(rec, tool)
    return Finding(tool, "sync-error" if tool == "synccheck" else "invalid-access", None, None,
                   None, thread=None,
    block=None, count=1,
                   message=rec.findtext("what/text") or f"unrecognised record <{kind}>")


# The tool's own warnings: initcheck's "Error buffer overflow has been detected. Some records have
# been dropped" (a launch with more errors than the tool's device buffer holds: 257 of 524,289 on an
# H200), said as a note.
_WARNINGS = {"Error buffer overflow": "{tool}'s error buffer overflowed in a launch: records past "
                                      "it were dropped (those kept show the same kind of access)"}


def _tool_warning(rec: ET.Element, tool: str) -> str:
    """A note for a record of the tool's own warning (kind ``Sanitizer``, level ``Warning``): not
    the program's."""
    text = (rec.findtext("what/error") or rec.findtext("what/text") or "").strip()
    said = next((v for k, v in _WARNINGS.items() if text.startswith(k)), None)
    return said.format(tool=tool) if said else f"{tool} warned: {text[:300]}"


def _internal(rec: ET.Element, tool: str) -> Finding | None:
    """The tool's own failure (:data:`INTERNAL_ERROR`), whatever the record's kind; None for any
    other record."""
    text = rec.findtext("what/text") or ""
    if not text.startswith(INTERNAL_ERROR):
        return None
    return Finding(tool, "sanitizer-error", None, None, None, thread=None, block=None, count=1,
                   message=text,
                   detail=f"compute-sanitizer's {tool} failed while checking this run: the tool's "
                          "error, not the program's, and what it was checking went unchecked")


def _decorate(f: Finding, rec: ET.Element, nearest: dict[int, str]) -> Finding:
    """The kernel's name demangled, the launch site in the user's files, and the allocation an
    access missed (from the tool's text) where kprof's own allocation record does not name a
    buffer."""
    stack = hostframes.frames(rec)
    kernel = demangle(f.kernel) if f.kernel else None
    site = hostframes.launch_site(stack)
    launch = site.where() if site else _native_launch(stack, kernel)
    detail, kind = f.detail, f.kind
    if f.address is not None and f.address in nearest and (f.buffer is None
                                                           or _PERMISSION.match(nearest[f.address])):
        detail = nearest[f.address]
        # the XML's record reads as any invalid write; the text says why
        if _PERMISSION.match(detail):
            kind = "invalid-access"
    # racecheck's hazards carry it; memcheck stops at its first faulting launch
    grid = _int(rec.findtext(".//gridid"))
    grids = frozenset({grid}) if grid is not None else frozenset()
    # a library's kernel its record names in short
    by = kernelpolicy.launched_by(fr.module for fr in stack)
    extra = replace(f.extra, launched_by=by) if by else f.extra
    f = replace(f, kind=kind, kernel=kernel, launch=launch, detail=detail, grids=grids, extra=extra)
    return _in_user_source(f,
                           [fr.path for fr in stack if fr.path
                            and hostframes.is_user_file(fr.path)])


def _native_launch(stack: list[hostframes.Frame], kernel: str | None) -> str | None:
    """A C++ program's launch site: ``/src/vecadd.cu:7 (launch in vecadd)`` where the binary has
    host line information (``-g``, through addr2line), else ``launch in vecadd``; None without a
    frame of the user's own module."""
    from kprof.tools.programs import addr2line

    frame = hostframes.native_site(stack, kernel)
    if frame is None:
        return None
    if frame.path and frame.line:  # compute-sanitizer read the binary's line information itself
        given = Path(frame.path)
        shown = given.resolve() if not given.is_absolute() and given.is_file() else given
        return f"{shown}:{frame.line} ({replace(frame, path=None).where()})"
    found = addr2line.line_of(frame.module, frame.pc)
    if found is None or found[1] is None:
        return frame.where()
    func, path, line = found
    named = replace(frame, func=func or frame.func)
    return f"{path}:{line} ({named.where()})"


def _in_user_source(f: Finding, stack_files: list[str]) -> Finding:
    """A finding in a file that is not there (CuPy's deleted temporary file, NVRTC's program name)
    or that a library generated, placed where the user's source is
    (:func:`kprof.tools.sanitizers.embedded.place`), with a note; where it moved, the tool's own
    place is kept in ``extra.reported_at``."""
    from kprof.tools.sanitizers import embedded

    found = embedded.place(f.file, f.line, f.kernel, stack_files, f.launch)
    if found is None:
        return f
    extra = replace(f.extra, source=found.note)
    other = f.other
    if (found.path, found.line) != (f.file, f.line):
        extra = replace(extra, reported_at=f"{f.file}:{f.line}" if f.line else str(f.file))
        # the race's other side is in the same string
        if other is not None and other.file == f.file:
            moved = embedded.locate(other.file, other.line, f.kernel, stack_files)
            if moved is not None:
                other = replace(other, file=moved.path, line=moved.line)
    return replace(f, file=found.path, line=found.line, other=other, extra=extra)


# memcheck under NVTX memory permissions: "Address 0x... is not writable", "... is not
# readable/writable with atomic operations"
_PERMISSION = re.compile(r"not (?:readable/writable with atomic operations|readable|writable)")
_NOT_ALLOWED = re.compile(r"(?:Address|Access to) (0x[0-9a-fA-F]{1,16}) is (" + _PERMISSION.pattern + r")[ \t]*$")
_OUT_OF_BOUNDS = re.compile(r"(?:Address|Access to) (0x[0-9a-fA-F]{1,16}) is out of bounds[ \t]*$")
_NEAREST = re.compile(r"^[= \t]*and is ([0-9,]{1,26}) bytes (after|before) the nearest allocation "
                      r"at "
                      r"(0x[0-9a-fA-F]{1,16}) of size ([0-9,]{1,26}) bytes")


_HEAP = re.compile(r"^[= \t]*and is located in (?:the |a )?(?:freed )?device heap")
HEAP_DETAIL = ("in the device heap (memory a kernel took with malloc or new): past the end of a "
               "block, or in one already freed (the tool does not say which)")
FREED_HEAP_DETAIL = "in device-heap memory already freed (free or delete in a kernel)"


def permission_detail(what: str) -> str:
    return f"{what}: the program's NVTX memory permissions (nvtxMemPermissionsAssign) forbid this access"


def nearest_allocations(text: str) -> dict[int, str]:
    """address -> what memcheck's text output says of it and its XML does not: "4 bytes past the end
    of a 4,000-byte allocation at 0x...", in the device heap (freed, where it says so), or not
    writable under the program's NVTX permissions (read line by line: linear in the text, whatever
    it holds)."""
    out: dict[int, str] = {}
    address: str | None = None
    for line in text.splitlines():
        if address is not None and (m := _NEAREST.match(line)):
            distance, side, base, size = m.groups()
            _nearest(out, address, distance, side, base, size)
        elif address is not None and _HEAP.match(line):
            out[int(address, 16)] = FREED_HEAP_DETAIL if "freed" in line else HEAP_DETAIL
        if (n := _NOT_ALLOWED.search(line)):
            out[int(n.group(1), 16)] = permission_detail(n.group(2))
        oob = _OUT_OF_BOUNDS.search(line)
        address = oob.group(1) if oob else None
    return out


def _nearest(out: dict[int, str], address: str, distance: str, side: str, base: str,
             size: str) -> None:
    n, nbytes = int(distance.replace(",", "")), int(size.replace(",", ""))
    unit = "byte" if n == 1 else "bytes"
    if side == "after":
        where = "immediately past the end" if n == 0 else f"{n:,} {unit} past the end"
    else:
        where = f"{n:,} {unit} before the start"
    out[int(address, 16)] = f"{where} of a {nbytes:,}-byte allocation at {base} (the nearest one)"


# A number from the XML, or None when it is missing, not a number, or outside 64 bits unsigned (a
# damaged report loses a field, not the whole report).
_int = inputs.report_uint


def _dim3(node: ET.Element | None) -> tuple[int, int, int] | None:
    if node is None:
        return None
    x, y, z = (_int(node.findtext(a)) or 0 for a in ("x", "y", "z"))
    return (x, y, z)


def _where(rec: ET.Element, path: str = "where") -> tuple[str | None, str | None, int | None]:
    return rec.findtext(f"{path}/func"), rec.findtext(f"{path}/path"), _int(rec.findtext(f"{path}/line"))


def _where_user(rec: ET.Element) -> tuple[str | None, str | None, int | None, Extra]:
    """The record's location, moved to the user's call where the tool stopped inside a CUDA header
    (an inlined intrinsic: ``__syncwarp``, ``__shfl_sync``, an atomic): the first device frame
    outside the toolkit's headers (``--show-backtrace device``). The header's place is kept in
    ``extra.reported_at``."""
    from kprof.tools.programs.hostframes import is_cuda_header

    func, path, line = _where(rec)
    if not is_cuda_header(path):
        return func, path, line, Extra()
    for frame in rec.findall("deviceStack/frame"):
        fpath = frame.findtext("path")
        # the tool's own place kept as _in_user_source keeps it
        if fpath and not is_cuda_header(fpath):
            return frame.findtext("func"), fpath, _int(frame.findtext("line")), Extra(
                reported_at=f"{path}:{line}", inlined=f"{func} at {Path(str(path)).name}:{line}")
    return func, path, line, Extra()


def _memcheck(rec: ET.Element, tool: str, allocations: Sequence[Allocation]) -> Finding:
    func, path, line, extra = _where_user(rec)
    # a hardware exception's name: "Out-of-range shared or local address"
    exception = rec.findtext("what/exception") or ""
    text = rec.findtext("what/text") or ""
    error = (rec.findtext("what/error") or exception or text).lower()
    direction = (rec.findtext("what/direction") or "").lower()
    space = rec.findtext("what/space") or ""
    # NVTX memory permissions the program set
    permission = _PERMISSION.search(error) or _PERMISSION.search(text)
    if rec.findtext("kind") == "Imprecise" or "exception" in error:
        kind = "hardware-exception"
        if not text.strip() and exception:
            text = f"the GPU raised an exception: {exception}"
        elif not text.strip():  # a __trap() leaves the record's text empty
            text = (f"the GPU raised {rec.findtext('what/error') or 'an exception'}: the kernel "
                    "executed __trap(), a failed device assert or an illegal instruction")
    elif "misaligned" in error:
        kind = f"misaligned-{direction or 'read'}"
    elif permission:
        kind = "invalid-access"
    elif "out of bounds" in error or "out-of-range" in error or "invalid" in error:
        kind = f"out-of-bounds-{direction}" if direction in ("read", "write") else "invalid-access"
    else:
        kind = "invalid-access"
    address = _int(rec.findtext("what/address"))
    size = _int(rec.findtext("what/size"))
    buffer = detail = None
    if permission:
        detail = permission_detail(permission.group(0))
        if address is not None and space == "__global__":
            buffer = buffer_detail(address, allocations)[0]
    elif address is not None and space == "__global__":
        buffer, detail = buffer_detail(address, allocations)
    elif space:
        detail = f"in {space.strip('_')} memory"
    return Finding(tool, kind, func, path, line, thread=_dim3(rec.find("who/threadIdx")),
                   block=_dim3(rec.find("who/blockIdx")),
                   count=1, message=text, buffer=buffer, detail=detail, address=address, size=size,
                   extra=extra)


def _leak(rec: ET.Element, tool: str) -> Finding:
    kind_of = rec.findtext("what/type") or ""
    where = "on the device heap (malloc in a kernel without free)" if kind_of == "deviceheap" else "by the host"
    size = _int(rec.findtext("what/size"))
    return Finding(tool, "leak", None, None, None, thread=None, block=None, count=1,
                   message=rec.findtext("what/text") or "leak",
                   detail=f"{size:,} bytes allocated {where}" if size is not None else None,
                   address=_int(rec.findtext("what/address")), size=size)


_RACE = {("write", "read"): "race-raw", ("read", "write"): "race-war",
         ("write", "write"): "race-waw"}


def _hazard(rec: ET.Element, tool: str) -> Finding:
    kind = "race-" + (rec.findtext("what/common/type") or "raw").lower()
    t0, t1 = rec.find("what/thread0"), rec.find("what/thread1")
    f0, p0, l0 = _where(t0) if t0 is not None else (None, None, None)
    _, p1, l1 = _where(t1) if t1 is not None else (None, None, None)
    a0 = (t0.findtext("access") or "").lower() if t0 is not None else None
    a1 = (t1.findtext("access") or "").lower() if t1 is not None else None
    other = Access(p1, l1, a1, _dim3(t1.find("threadIdx")) if t1 is not None else None)
    detail = f"{a0} at line {l0}, then {a1} at line {l1} by another thread, no barrier between"
    same = t0 is not None and t1 is not None and _dim3(t0.find("threadIdx")) == _dim3(t1.find("threadIdx"))
    if same or PROXY_FENCE in " ".join(rec.itertext()):
        # 2026.4 prints "Potential WAW hazard detected (missing fence.proxy.async.shared)" but its
        # XML says only "Potential WAW hazard detected"; a thread races itself only through an
        # asynchronous copy
        detail = PROXY_DETAIL.format(a0=a0, l0=l0, a1=a1, l1=l1)
    return Finding(tool, kind, f0, p0, l0,
                   thread=_dim3(t0.find("threadIdx")) if t0 is not None else None,
                   block=_dim3(rec.find("what/common/blockIdx")), count=1,
                   message=rec.findtext("what/text") or "hazard",
                   detail=detail, address=_int(rec.findtext("what/common/address")), other=other)


PROXY_FENCE = "fence.proxy.async"
PROXY_DETAIL = ("{a0} at line {l0}, then {a1} at line {l1}, one of them an asynchronous copy's (a "
                "thread does not race itself otherwise): before a bulk copy (cp.async.bulk, TMA) "
                "each thread that wrote the shared memory needs fence.proxy.async.shared::cta, as "
                "a barrier orders threads, not proxies (what compute-sanitizer 2026.4 calls a "
                "missing fence.proxy.async); after a copy, its wait (cp.async.wait_group, the "
                "mbarrier) must come before the target is touched")


def _analysis(rec: ET.Element, tool: str) -> Finding:
    src, dst = rec.find("what/source"), rec.find("what/destination")
    d0 = (src.findtext("direction") or "").lower() if src is not None else ""
    d1 = (dst.findtext("direction") or "").lower() if dst is not None else ""
    f0, p0, l0 = _where(src) if src is not None else (None, None, None)
    _, p1, l1 = _where(dst) if dst is not None else (None, None, None)
    count = _int(dst.findtext("count")) if dst is not None else None
    return Finding(tool, _RACE.get((d0, d1), "race-raw"), f0, p0, l0, thread=None, block=None,
                   count=count or 1, message=rec.findtext("what/text") or "Race condition",
                   detail=f"{d0} at line {l0}, then {d1} at line {l1} by another thread, no "
                          "barrier between",
                   other=Access(p1, l1, d1))


def _join_races(hazards: list[Finding], analyses: list[Finding]) -> list[Finding]:
    """One finding per race: the analysis record's lines and count, a hazard's thread and block."""
    from dataclasses import replace

    out = []
    used: set[int] = set()
    # (kernel, lines) -> hazards not yet joined, first first
    waiting: dict[tuple[Any, ...], list[int]] = {}
    for i, h in enumerate(hazards):
        waiting.setdefault((h.kernel, tuple(sorted(h.lines()))), []).append(i)
    for key in waiting:
        waiting[key].reverse()  # popped from the end: linear in the records, not records squared
    for a in analyses:
        queue = waiting.get((a.kernel, tuple(sorted(a.lines()))))
        match = queue.pop() if queue else None
        if match is not None:
            used.add(match)
            h = hazards[match]
            out.append(replace(a, thread=h.thread, block=h.block, address=h.address,
                               launch=h.launch or a.launch, grids=a.grids | h.grids,
                               other=replace(a.other, thread=h.other.thread) if a.other and h.other
                               else a.other,
                               detail=h.detail if h.detail and PROXY_FENCE in h.detail
                               else a.detail, extra=Extra(hazard_records=h.count)))
        else:
            out.append(a)
    out += [h for i, h in enumerate(hazards) if i not in used]
    return out


def _initcheck(rec: ET.Element, tool: str, allocations: Sequence[Allocation]) -> Finding:
    func, path, line, extra = _where_user(rec)
    address = _int(rec.findtext("what/address"))
    size = _int(rec.findtext("what/size"))
    buffer, detail = buffer_detail(address, allocations) if address is not None else (None, None)
    return Finding(tool, "uninitialized-read", func, path, line,
                   thread=_dim3(rec.find("who/threadIdx")),
                   block=_dim3(rec.find("who/blockIdx")), count=1,
                   message=rec.findtext("what/text") or "uninitialised read",
                   buffer=buffer, detail=detail, address=address, size=size, extra=extra)


def _synccheck(rec: ET.Element, tool: str) -> Finding:
    func, path, line, extra = _where_user(rec)
    text = rec.findtext("what/text") or ""
    kind_text = rec.findtext("what/type") or ""
    low = (text + " " + kind_text).lower()
    # __syncwarp(mask) or a *_sync intrinsic whose mask leaves out a calling lane
    if "invalid argument" in low:
        kind = "invalid-warp-sync"
    # 2026.4: an mbarrier initialised twice
    elif "already initialized" in low or "invalidate before" in low:
        kind = "sync-error"
    elif "divergent" in low or ("barrier" in low and "warp" not in kind_text.lower()):
        kind = "barrier-divergence"
    elif "mask" in low or "warp" in low or "shfl" in low:
        kind = "invalid-warp-sync"
    else:
        kind = "sync-error"
    message = f"{text}: {kind_text}" if kind_text else text
    detail = ("a warp-synchronous call (__syncwarp, __shfl_*_sync, __ballot_sync, ...) whose mask "
              "leaves out a lane that calls it: the mask must name every lane that reaches the call"
              if kind == "invalid-warp-sync" else
              "an mbarrier initialised again while it is still valid: invalidate it first "
              "(mbarrier.inval), or initialise it once and wait on its phase parity"
              if "already initialized" in low else None)
    if extra.inlined and detail:
        detail += f" (inside {extra.inlined}, inlined into this line)"
    return Finding(tool, kind, func, path, line, thread=_dim3(rec.find("who/threadIdx")),
                   block=_dim3(rec.find("who/blockIdx")),
                   count=1, message=message, detail=detail, extra=extra)


def _api(rec: ET.Element, tool: str) -> Finding:
    api = rec.findtext("what/api")
    return Finding(tool, "api-error", None, None, None, thread=None, block=None, count=1,
    message=rec.findtext("what/text") or "API error",
                   detail=f"{api} -> {rec.findtext('what/error')}")


# ------------------------------------------------------------------------------------ running


_TOOL_OF_KIND = {"Precise": "memcheck", "Imprecise": "memcheck", "Leak": "memcheck",
                 "Hazard": "racecheck",
                 "Analysis": "racecheck", "Initcheck": "initcheck", "Synccheck": "synccheck"}


def infer_tool(text: str) -> str | None:
    """The tool that wrote an XML report, from its records' kinds (None for a clean report or API
    errors only)."""
    return tool_of(read_records(text, MAX_RECORDS))


def tool_of(recs: list[ET.Element]) -> str | None:
    tools = {_TOOL_OF_KIND[k] for k in (rec.findtext("kind") or "" for rec in recs)
             if k in _TOOL_OF_KIND}
    return tools.pop() if len(tools) == 1 else None
