"""The only compute-sanitizer caller: argv builder, XML parser, and the thin run around them.

Each tool runs in its own child process: compute-sanitizer wrapping ``python -m kprof.child.runner``,
with ``--xml --save`` (the parser reads the XML, never the text), ``--error-exitcode`` (the tool's
default exit code is 0 even with errors), and a timeout. The runner's own result file says whether
the target really ran: a target that fails to start leaves the same empty XML as a clean run, so
"clean" is only claimed when the runner reached the end of its launch.

Defaults chosen to beat running the tools by hand:
- memcheck: ``--padding 256`` so a write that overflows into the next allocation lands in padding
  and is caught; ``--leak-check full``; leaks of kprof's own buffers (left when a faulting kernel
  killed the runner) are not reported as the kernel's.
- racecheck: ``--racecheck-report all``: hazard records give the threads and block, the analysis
  record gives both source lines and the count.
- initcheck: the runner does not poison outputs, so a read of memory nothing wrote stays visible.
- all but racecheck: ``--show-backtrace device`` (the kernel line comes from ``-lineinfo``; host stacks
  only bloat the XML, but a finding inside a CUDA header, ``__syncwarp`` in ``sm_30_intrinsics.hpp``, needs
  the device frames to reach the user's call); racecheck ``no`` (with device frames, on an H200 at
  2370a0e, its "Race condition" records stopped joining its hazards and a WAR race read as RAW);
  ``--check-exit-code no`` (kprof reads the runner's status itself).
"""

from __future__ import annotations

import functools
import re
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from kprof import inputs, proc
from kprof.errors import KprofError, UsageError
from kprof.findings import Access, Allocation, Extra, Finding, buffer_detail, fold_same_place, merge
from kprof.launch import launch
from kprof.launch.job import Job, RunMode
from kprof.tools import coverage, exitcode, hostframes, kernelpolicy, ranks
from kprof.tools.checker import Needs, Program, Settings
from kprof.tools.demangle import demangle
from kprof.tools.toolrun import ERROR_EXITCODE, ToolResult, classify, classify_program

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")  # compute-sanitizer's own: the checkers are kprof.tools.checkers
PRINT_LIMIT = 10000
PROGRAM_PRINT_LIMIT = 1000  # a racy program prints thousands of records: the text alone took 14 s of 17 on an H200
PADDING = 256
DEFAULT_TIMEOUT = 300.0
MAX_REPORT_BYTES = 256 * 1024 * 1024  # a saved report: racecheck's largest seen on an H200 was a few MB


INJECTION = "libsanitizer-collection.so"


def injection_args(exe: Path) -> list[str]:
    """``--injection-path`` where the tool's libraries are not beside it. A toolkit (and CUDA 13's
    wheel) keeps them in the tool's folder; pip's CUDA 12 wheel has ``bin/compute-sanitizer`` and
    ``lib/libsanitizer-collection.so``, where the tool alone says "Unable to find injection library"
    (seen on an H200 with nvidia-cuda-sanitizer-api-cu12 12.9.79)."""
    if (exe.parent / INJECTION).is_file():
        return []
    beside = exe.parent.parent / "lib"
    return ["--injection-path", str(beside)] if (beside / INJECTION).is_file() else []


_VERSION = re.compile(r"Version ([0-9]{4})\.([0-9]{1,3})\.([0-9]{1,3})")


@functools.lru_cache(maxsize=8)
def version(exe: str | Path) -> str:
    """The tool's version as ``--version`` prints it ("Version 2025.3.1.0 (build ...)": ``2025.3.1``); '' when it
    does not say (kprof's policies then assume the oldest behaviour they know)."""
    try:
        done = proc.run([str(exe), "--version"], timeout=30)
    except (OSError, KprofError):
        return ""
    return parse_version(done.stdout)


def parse_version(text: str) -> str:
    """``2025.3.1`` from what ``--version`` prints ("Version 2025.3.1.0 (build ...)"), '' without one. Pure."""
    found = _VERSION.search(text)
    return ".".join(found.groups()) if found else ""


def build_argv(exe: str | Path, tool: str, xml_path: str | Path, *, padding: int = PADDING,
               print_limit: int = PRINT_LIMIT, program: bool = False, skip_libraries: bool = False,
               device_frames: bool = False, tool_version: str = "") -> list[str]:
    """compute-sanitizer's argv for ``tool``, up to (not including) the target program.

    ``program``: the target is the user's program, not kprof's runner. Host backtraces are kept (the
    launch site comes from them), every child process is followed, and memcheck's leak check is off:
    a correct PyTorch program reports the tensors still alive at exit as leaks (measured on an H200:
    8 KB for two tensors, 138 MB after a few torch ops), which says nothing about its kernels. In a program,
    ``skip_libraries`` leaves library kernels out (:mod:`kprof.tools.kernelpolicy`). initcheck keeps only the
    host frames unless ``device_frames``: device frames cost 51 s of a 72 s run on one half GEMM's output read by
    PyTorch's copy kernel (host frames alone: 4.6 s; none: 4.6 s; an H200, compute-sanitizer 2025.3.1,
    examples/gemm_initcheck.py), and they only move a read inside a CUDA header to the user's call
    (:func:`run_program` asks for them again when a finding needs that). ``tool_version`` (:func:`version`) picks
    the library kernels a tool may skip (:func:`kprof.tools.kernelpolicy.exclude_args`)."""
    if tool not in TOOLS:
        raise UsageError(f"'{tool}' is not a compute-sanitizer tool ({', '.join(TOOLS)})")
    argv = [
        str(exe), "--tool", tool,
        "--xml", "--save", str(xml_path),
        "--error-exitcode", str(ERROR_EXITCODE),
        "--print-limit", str(print_limit),
        "--check-exit-code", "no",
    ]  # fmt: skip
    argv += injection_args(Path(str(exe)))
    if program:
        argv += ["--target-processes", "all", *(kernelpolicy.exclude_args(tool, tool_version) if skip_libraries else [])]
        if tool == "initcheck" and not device_frames:
            argv += ["--show-backtrace", "host"]
    else:  # racecheck keeps none: with device frames its analysis records no longer joined its hazards (an H200, 2370a0e)
        argv += ["--show-backtrace", "no" if tool == "racecheck" else "device"]
    if tool == "memcheck":
        argv += ["--padding", str(padding)] + ([] if program else ["--leak-check", "full"])
    elif tool == "racecheck":
        argv += ["--racecheck-report", "all"]
    return argv


# ------------------------------------------------------------------------------------ parsing


def parse_xml(text: str, tool: str, allocations: Sequence[Allocation] | None = None,
              tool_text: str = "") -> tuple[list[Finding], list[str]]:
    """Findings from compute-sanitizer's XML, merged; plus notes about records set aside.

    ``allocations`` is kprof's own record of a spec's buffers (it names the buffer an address hit);
    ``tool_text`` is what the tool printed beside the XML, whose "N bytes after the nearest
    allocation" lines (absent from the XML) describe the allocation a program's access missed. At most
    :data:`MAX_RECORDS` records are read; a note says how many more the report holds."""
    recs = _records(text, MAX_RECORDS)
    findings, notes = parse_records(recs, tool, allocations, tool_text)
    return findings, notes + _unread_note(text, len(recs))


# Records read from one report. Each costs about 0.3 ms to place (its host stack, the user's line, the kernel's
# name); a report of 200,000 distinct out-of-bounds records took 45 s. Past the cap the records are counted, not
# read: a report that long repeats a few mistakes at many addresses, and kprof folds those by place anyway.
MAX_RECORDS = 20_000


def _unread_note(text: str, read: int) -> list[str]:
    total = text.count("<record>")
    if total <= read:
        return []
    return [f"the report holds {total:,} records; kprof read the first {read:,} (the rest are not in these findings: "
            "fix these and run again, or read the XML itself)"]


def records(text: str) -> list[ET.Element]:
    """The records of one report, in the order the tool wrote them (a UsageError for a file that is
    not compute-sanitizer XML)."""
    return _records(text)


# Record kinds after which memcheck has stopped the kernel and the CUDA context is unusable.
STOPS_THE_CONTEXT = ("Precise", "Imprecise")


def parse_records(recs: list[ET.Element], tool: str, allocations: Sequence[Allocation] | None = None,
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
                notes.append(f"kprof's own buffer at {address:#x} was not freed because the target stopped early; "
                             "not the kernel's leak")
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
                notes.append(f"{api} -> {error}: the sanitizer stopped the kernel at its first error")
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
    """Every hazard at a place (kernel and both lines) where one record showed a missing proxy fence (a thread
    against itself) says so: of 10,000 such records from 2026.4 on an H200, 44 paired a thread with itself."""
    def place(f: Finding) -> tuple[Any, ...]:
        return (f.kernel, f.line, f.other.line if f.other else None)

    proxied = {place(f): f.detail for f in findings if f.detail and PROXY_FENCE in f.detail}
    if not proxied:
        return findings
    return [replace(f, detail=proxied[place(f)]) if place(f) in proxied and f.kind.startswith("race-") else f
            for f in findings]


# The errors every later CUDA call returns once memcheck has stopped a kernel at its first error
# (driver and runtime names): consequences of that finding, not findings of their own.
_AFTER_A_FAULT = ("CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ILLEGAL_ADDRESS", "cudaErrorLaunchFailure",
                  "cudaErrorIllegalAddress")


# The driver's entry-point lookups: cuda-bindings 13 asks cuGetProcAddress for every versioned symbol it
# knows, and those the driver lacks come back CUDA_ERROR_INVALID_VALUE or NOT_FOUND. Seen under memcheck
# on an H200 (driver 580.159.04): 34 such records from a correct cuda-python launch.
_LOOKUPS = ("cuGetProcAddress",)
_NOT_THERE = ("CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_NOT_FOUND")


def _records(text: str, cap: int | None = None) -> list[ET.Element]:
    """The report's records, in order; with ``cap``, the first ``cap`` of them, the rest of the text not parsed."""
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("start", "end"))
    out: list[ET.Element] = []
    root: ET.Element | None = None
    depth = 0
    step = 1 << 20  # fed a megabyte at a time: a capped read stops soon after its last record
    try:
        for at in range(0, max(len(text), 1), step):
            parser.feed(text[at:at + step])
            for pair in parser.read_events():
                event, elem = cast(tuple[str, ET.Element], pair)  # start and end events carry elements
                depth += 1 if event == "start" else -1
                if root is None:
                    root = elem
                    if root.tag != "ComputeSanitizerOutput":
                        raise UsageError(f"not compute-sanitizer XML: the root element is <{root.tag}>, not "
                                         "<ComputeSanitizerOutput>")
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


# A record of the tool's own failure: on an H200 (2025.3.1), racecheck with library kernels excluded wrote
# "Internal Sanitizer Error: The Sanitizer failed to handle a hardware exception." in a half nn.Linear test
INTERNAL_ERROR = "Internal Sanitizer Error"


def _other(rec: ET.Element, tool: str, kind: str, allocations: Sequence[Allocation]) -> Finding:
    if kind == "Hazard":
        return _hazard(rec, tool)
    if kind == "Initcheck":
        return _initcheck(rec, tool, allocations)
    if kind == "Synccheck":
        return _synccheck(rec, tool)
    return Finding(tool, "sync-error" if tool == "synccheck" else "invalid-access", None, None, None, None, None, 1,
                   rec.findtext("what/text") or f"unrecognised record <{kind}>")


# The tool's own warnings: initcheck's "Error buffer overflow has been detected. Some records have been dropped"
# (a launch with more errors than the tool's device buffer holds: 257 of 524,289 on an H200), said as a note.
_WARNINGS = {"Error buffer overflow": "{tool}'s error buffer overflowed in a launch: records past it were dropped "
                                      "(those kept show the same kind of access)"}


def _tool_warning(rec: ET.Element, tool: str) -> str:
    """A note for a record of the tool's own warning (kind ``Sanitizer``, level ``Warning``): not the program's."""
    text = (rec.findtext("what/error") or rec.findtext("what/text") or "").strip()
    said = next((v for k, v in _WARNINGS.items() if text.startswith(k)), None)
    return said.format(tool=tool) if said else f"{tool} warned: {text[:300]}"


def _internal(rec: ET.Element, tool: str) -> Finding | None:
    """The tool's own failure (:data:`INTERNAL_ERROR`), whatever the record's kind; None for any other record."""
    text = rec.findtext("what/text") or ""
    if not text.startswith(INTERNAL_ERROR):
        return None
    return Finding(tool, "sanitizer-error", None, None, None, None, None, 1, text,
                   detail=f"compute-sanitizer's {tool} failed while checking this run: the tool's error, not the "
                          "program's, and what it was checking went unchecked")


def _decorate(f: Finding, rec: ET.Element, nearest: dict[int, str]) -> Finding:
    """The kernel's name demangled, the launch site in the user's files, and the allocation an access
    missed (from the tool's text) where kprof's own allocation record does not name a buffer."""
    stack = hostframes.frames(rec)
    kernel = demangle(f.kernel) if f.kernel else None
    site = hostframes.launch_site(stack)
    launch = site.where() if site else _native_launch(stack, kernel)
    detail, kind = f.detail, f.kind
    if f.address is not None and f.address in nearest and (f.buffer is None or _PERMISSION.match(nearest[f.address])):
        detail = nearest[f.address]
        if _PERMISSION.match(detail):  # the XML's record reads as any invalid write; the text says why
            kind = "invalid-access"
    grid = _int(rec.findtext(".//gridid"))  # racecheck's hazards carry it; memcheck stops at its first faulting launch
    grids = frozenset({grid}) if grid is not None else frozenset()
    by = kernelpolicy.launched_by(fr.module for fr in stack)  # a library's kernel its record names in short
    extra = replace(f.extra, launched_by=by) if by else f.extra
    f = replace(f, kind=kind, kernel=kernel, launch=launch, detail=detail, grids=grids, extra=extra)
    return _in_user_source(f, [fr.path for fr in stack if fr.path and hostframes.is_user_file(fr.path)])


def _native_launch(stack: list[hostframes.Frame], kernel: str | None) -> str | None:
    """A C++ program's launch site: ``/src/vecadd.cu:7 (launch in vecadd)`` where the binary has host
    line information (``-g``, through addr2line), else ``launch in vecadd``; None without a frame of
    the user's own module."""
    from kprof.tools import addr2line

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
    """A finding in a file that is not there (CuPy's deleted temporary file, NVRTC's program name) or
    that a library generated, placed where the user's source is (:func:`kprof.tools.embedded.place`), with a
    note; where it moved, the tool's own place is kept in ``extra.reported_at``."""
    from kprof.tools import embedded

    found = embedded.place(f.file, f.line, f.kernel, stack_files, f.launch)
    if found is None:
        return f
    extra = replace(f.extra, source=found.note)
    other = f.other
    if (found.path, found.line) != (f.file, f.line):
        extra = replace(extra, reported_at=f"{f.file}:{f.line}" if f.line else str(f.file))
        if other is not None and other.file == f.file:  # the race's other side is in the same string
            moved = embedded.locate(other.file, other.line, f.kernel, stack_files)
            if moved is not None:
                other = replace(other, file=moved.path, line=moved.line)
    return replace(f, file=found.path, line=found.line, other=other, extra=extra)


# memcheck under NVTX memory permissions: "Address 0x... is not writable", "... is not readable/writable
# with atomic operations"
_PERMISSION = re.compile(r"not (?:readable/writable with atomic operations|readable|writable)")
_NOT_ALLOWED = re.compile(r"(?:Address|Access to) (0x[0-9a-fA-F]{1,16}) is (" + _PERMISSION.pattern + r")[ \t]*$")
_OUT_OF_BOUNDS = re.compile(r"(?:Address|Access to) (0x[0-9a-fA-F]{1,16}) is out of bounds[ \t]*$")
_NEAREST = re.compile(r"^[= \t]*and is ([0-9,]{1,26}) bytes (after|before) the nearest allocation at "
                      r"(0x[0-9a-fA-F]{1,16}) of size ([0-9,]{1,26}) bytes")


_HEAP = re.compile(r"^[= \t]*and is located in (?:the |a )?(?:freed )?device heap")
HEAP_DETAIL = ("in the device heap (memory a kernel took with malloc or new): past the end of a block, or in one "
               "already freed (the tool does not say which)")
FREED_HEAP_DETAIL = "in device-heap memory already freed (free or delete in a kernel)"


def permission_detail(what: str) -> str:
    return f"{what}: the program's NVTX memory permissions (nvtxMemPermissionsAssign) forbid this access"


def nearest_allocations(text: str) -> dict[int, str]:
    """address -> what memcheck's text output says of it and its XML does not: "4 bytes past the end of a
    4,000-byte allocation at 0x...", in the device heap (freed, where it says so), or not writable under
    the program's NVTX permissions (read line by line: linear in the text, whatever it holds)."""
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


def _nearest(out: dict[int, str], address: str, distance: str, side: str, base: str, size: str) -> None:
    n, nbytes = int(distance.replace(",", "")), int(size.replace(",", ""))
    unit = "byte" if n == 1 else "bytes"
    if side == "after":
        where = "immediately past the end" if n == 0 else f"{n:,} {unit} past the end"
    else:
        where = f"{n:,} {unit} before the start"
    out[int(address, 16)] = f"{where} of a {nbytes:,}-byte allocation at {base} (the nearest one)"


# A number from the XML, or None when it is missing, not a number, or outside 64 bits unsigned (a damaged
# report loses a field, not the whole report).
_int = inputs.report_uint


def _dim3(node: ET.Element | None) -> tuple[int, int, int] | None:
    if node is None:
        return None
    x, y, z = (_int(node.findtext(a)) or 0 for a in ("x", "y", "z"))
    return (x, y, z)


def _where(rec: ET.Element, path: str = "where") -> tuple[str | None, str | None, int | None]:
    return rec.findtext(f"{path}/func"), rec.findtext(f"{path}/path"), _int(rec.findtext(f"{path}/line"))


def _where_user(rec: ET.Element) -> tuple[str | None, str | None, int | None, Extra]:
    """The record's location, moved to the user's call where the tool stopped inside a CUDA header (an
    inlined intrinsic: ``__syncwarp``, ``__shfl_sync``, an atomic): the first device frame outside the
    toolkit's headers (``--show-backtrace device``). The header's place is kept in ``extra.reported_at``."""
    from kprof.tools.hostframes import is_cuda_header

    func, path, line = _where(rec)
    if not is_cuda_header(path):
        return func, path, line, Extra()
    for frame in rec.findall("deviceStack/frame"):
        fpath = frame.findtext("path")
        if fpath and not is_cuda_header(fpath):  # the tool's own place kept as _in_user_source keeps it
            return frame.findtext("func"), fpath, _int(frame.findtext("line")), Extra(
                reported_at=f"{path}:{line}", inlined=f"{func} at {Path(str(path)).name}:{line}")
    return func, path, line, Extra()


def _memcheck(rec: ET.Element, tool: str, allocations: Sequence[Allocation]) -> Finding:
    func, path, line, extra = _where_user(rec)
    exception = rec.findtext("what/exception") or ""  # a hardware exception's name: "Out-of-range shared or local address"
    text = rec.findtext("what/text") or ""
    error = (rec.findtext("what/error") or exception or text).lower()
    direction = (rec.findtext("what/direction") or "").lower()
    space = rec.findtext("what/space") or ""
    permission = _PERMISSION.search(error) or _PERMISSION.search(text)  # NVTX memory permissions the program set
    if rec.findtext("kind") == "Imprecise" or "exception" in error:
        kind = "hardware-exception"
        if not text.strip() and exception:
            text = f"the GPU raised an exception: {exception}"
        elif not text.strip():  # a __trap() leaves the record's text empty
            text = (f"the GPU raised {rec.findtext('what/error') or 'an exception'}: the kernel executed __trap(), "
                    "a failed device assert or an illegal instruction")
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
    return Finding(tool, kind, func, path, line, _dim3(rec.find("who/threadIdx")), _dim3(rec.find("who/blockIdx")),
                   1, text, buffer, detail, address, size, extra=extra)


def _leak(rec: ET.Element, tool: str) -> Finding:
    kind_of = rec.findtext("what/type") or ""
    where = "on the device heap (malloc in a kernel without free)" if kind_of == "deviceheap" else "by the host"
    size = _int(rec.findtext("what/size"))
    return Finding(tool, "leak", None, None, None, None, None, 1, rec.findtext("what/text") or "leak",
                   detail=f"{size:,} bytes allocated {where}" if size is not None else None,
                   address=_int(rec.findtext("what/address")), size=size)


_RACE = {("write", "read"): "race-raw", ("read", "write"): "race-war", ("write", "write"): "race-waw"}


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
        # 2026.4 prints "Potential WAW hazard detected (missing fence.proxy.async.shared)" but its XML says only
        # "Potential WAW hazard detected"; a thread races itself only through an asynchronous copy
        detail = PROXY_DETAIL.format(a0=a0, l0=l0, a1=a1, l1=l1)
    return Finding(tool, kind, f0, p0, l0, _dim3(t0.find("threadIdx")) if t0 is not None else None,
                   _dim3(rec.find("what/common/blockIdx")), 1, rec.findtext("what/text") or "hazard",
                   detail=detail, address=_int(rec.findtext("what/common/address")), other=other)


PROXY_FENCE = "fence.proxy.async"
PROXY_DETAIL = ("{a0} at line {l0}, then {a1} at line {l1}, one of them an asynchronous copy's (a thread does not race "
                "itself otherwise): before a bulk copy (cp.async.bulk, TMA) each thread that wrote the shared memory "
                "needs fence.proxy.async.shared::cta, as a barrier orders threads, not proxies (what compute-sanitizer "
                "2026.4 calls a missing fence.proxy.async); after a copy, its wait (cp.async.wait_group, the "
                "mbarrier) must come before the target is touched")


def _analysis(rec: ET.Element, tool: str) -> Finding:
    src, dst = rec.find("what/source"), rec.find("what/destination")
    d0 = (src.findtext("direction") or "").lower() if src is not None else ""
    d1 = (dst.findtext("direction") or "").lower() if dst is not None else ""
    f0, p0, l0 = _where(src) if src is not None else (None, None, None)
    _, p1, l1 = _where(dst) if dst is not None else (None, None, None)
    count = _int(dst.findtext("count")) if dst is not None else None
    return Finding(tool, _RACE.get((d0, d1), "race-raw"), f0, p0, l0, None, None, count or 1,
                   rec.findtext("what/text") or "Race condition",
                   detail=f"{d0} at line {l0}, then {d1} at line {l1} by another thread, no barrier between",
                   other=Access(p1, l1, d1))


def _join_races(hazards: list[Finding], analyses: list[Finding]) -> list[Finding]:
    """One finding per race: the analysis record's lines and count, a hazard's thread and block."""
    from dataclasses import replace

    out = []
    used: set[int] = set()
    waiting: dict[tuple[Any, ...], list[int]] = {}  # (kernel, lines) -> hazards not yet joined, first first
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
            out.append(replace(a, thread=h.thread, block=h.block, address=h.address, launch=h.launch or a.launch,
                               grids=a.grids | h.grids,
                               other=replace(a.other, thread=h.other.thread) if a.other and h.other else a.other,
                               detail=h.detail if h.detail and PROXY_FENCE in h.detail else a.detail,
                               extra=Extra(hazard_records=h.count)))
        else:
            out.append(a)
    out += [h for i, h in enumerate(hazards) if i not in used]
    return out


def _initcheck(rec: ET.Element, tool: str, allocations: Sequence[Allocation]) -> Finding:
    func, path, line, extra = _where_user(rec)
    address = _int(rec.findtext("what/address"))
    size = _int(rec.findtext("what/size"))
    buffer, detail = buffer_detail(address, allocations) if address is not None else (None, None)
    return Finding(tool, "uninitialized-read", func, path, line, _dim3(rec.find("who/threadIdx")),
                   _dim3(rec.find("who/blockIdx")), 1, rec.findtext("what/text") or "uninitialised read",
                   buffer, detail, address, size, extra=extra)


def _synccheck(rec: ET.Element, tool: str) -> Finding:
    func, path, line, extra = _where_user(rec)
    text = rec.findtext("what/text") or ""
    kind_text = rec.findtext("what/type") or ""
    low = (text + " " + kind_text).lower()
    if "invalid argument" in low:  # __syncwarp(mask) or a *_sync intrinsic whose mask leaves out a calling lane
        kind = "invalid-warp-sync"
    elif "already initialized" in low or "invalidate before" in low:  # 2026.4: an mbarrier initialised twice
        kind = "sync-error"
    elif "divergent" in low or ("barrier" in low and "warp" not in kind_text.lower()):
        kind = "barrier-divergence"
    elif "mask" in low or "warp" in low or "shfl" in low:
        kind = "invalid-warp-sync"
    else:
        kind = "sync-error"
    message = f"{text}: {kind_text}" if kind_text else text
    detail = ("a warp-synchronous call (__syncwarp, __shfl_*_sync, __ballot_sync, ...) whose mask leaves out a lane "
              "that calls it: the mask must name every lane that reaches the call" if kind == "invalid-warp-sync" else
              "an mbarrier initialised again while it is still valid: invalidate it first (mbarrier.inval), or "
              "initialise it once and wait on its phase parity" if "already initialized" in low else None)
    if extra.inlined and detail:
        detail += f" (inside {extra.inlined}, inlined into this line)"
    return Finding(tool, kind, func, path, line, _dim3(rec.find("who/threadIdx")), _dim3(rec.find("who/blockIdx")),
                   1, message, detail=detail, extra=extra)


def _api(rec: ET.Element, tool: str) -> Finding:
    api = rec.findtext("what/api")
    return Finding(tool, "api-error", None, None, None, None, None, 1, rec.findtext("what/text") or "API error",
                   detail=f"{api} -> {rec.findtext('what/error')}")


# ------------------------------------------------------------------------------------ running


def run_tool(job: Job, tool: str, *, timeout: float = DEFAULT_TIMEOUT, padding: int = PADDING) -> ToolResult:
    """Run one compute-sanitizer tool over the runner with ``job``; never raises for the target's sake."""
    exe = proc.find_tool("compute-sanitizer")
    job = replace(job, mode=RunMode(verify=False, time=False, poison=tool != "initcheck"))
    with tempfile.TemporaryDirectory(prefix="kprof-sanitize-") as tmp:
        xml_path = Path(tmp) / f"{tool}.xml"
        done, data = launch.run(job, timeout=timeout, wrapper=build_argv(exe, tool, xml_path, padding=padding))
        xml_text = xml_path.read_text(errors="replace") if xml_path.is_file() else ""
    allocations = list(data.allocations)
    findings, notes = parse_xml(xml_text, tool, allocations) if xml_text.strip() else ([], [])
    return replace(classify(tool, done, data, findings, notes, timeout, bool(xml_text.strip())),
                   checked=spec_coverage(job, data), version=version(exe))


def spec_coverage(job: Job, data: Any) -> coverage.Coverage | None:
    """What a spec's run under a tool covered: its job's launches once the child reached them (None
    for a Python operation, whose launches are the framework's)."""
    if job.target.python is not None:
        return None
    kernels = {s.entry for s in job.target.steps if s.entry != "cublas_sgemm"}
    launched = data.phase not in ("start", "init", "device", "loaded", "allocated")  # "launch" on: the tool saw it
    return coverage.of_spec(len(job.target.steps) if launched else 0, len(kernels))


def run_batch(jobs: list[Job], tool: str, *, timeout: float = DEFAULT_TIMEOUT,
              padding: int = PADDING) -> list[ToolResult] | None:
    """One tool over several jobs in one child (kprof.launch.launch.run_batch), for jobs expected to be
    clean (kprof cases' twins): one start of the tool and of CUDA instead of one per job. A report
    with no record, every job finished, is every job clean. Anything else (a record, a job that
    did not finish, the tool's error) is None: the records of one process cannot be told apart by
    job, so the caller runs each job alone (:func:`run_many`)."""
    exe = proc.find_tool("compute-sanitizer")
    mode = RunMode(verify=False, time=False, poison=tool != "initcheck")
    with tempfile.TemporaryDirectory(prefix="kprof-sanitize-") as tmp:
        xml_path = Path(tmp) / f"{tool}.xml"
        done, datas = launch.run_batch([replace(j, mode=mode) for j in jobs], timeout=timeout,
                                       wrapper=build_argv(exe, tool, xml_path, padding=padding))
        xml_text = xml_path.read_text(errors="replace") if xml_path.is_file() else ""
    if done.timed_out or done.returncode != 0 or not xml_text.strip():
        return None
    findings, notes = parse_xml(xml_text, tool, [])
    seconds = [d.job_seconds for d in datas if d.finished]
    if findings or len(seconds) != len(datas):
        return None
    start = max(0.0, done.seconds - sum(s or 0.0 for s in seconds)) / len(datas)  # the tool's start, shared
    results = [replace(classify(tool, replace(done, seconds=(s or 0.0) + start), d, [], notes, timeout, True),
                       checked=spec_coverage(j, d), version=version(exe)) for s, d, j in zip(seconds, datas, jobs)]
    return results if all(r.status == "clean" for r in results) else None


def run_program(cmd: list[str], tool: str, *, timeout: float = DEFAULT_TIMEOUT, padding: int = PADDING,
                env: dict[str, str] | None = None, cwd: str | Path | None = None,
                skip_libraries: bool = False) -> ToolResult:
    """Run the user's program under one tool, in its own process group; never raises for its sake.
    What it launched is counted in another run (:mod:`kprof.tools.launchcount`): CUPTI cannot run beside
    compute-sanitizer."""

    exe = proc.find_tool("compute-sanitizer")
    launcher = ranks.launcher_of(cmd)
    if launcher is not None:
        ranked = run_ranks(cmd, tool, exe, timeout=timeout, padding=padding, env=env, cwd=cwd,
                           skip_libraries=skip_libraries)
        if ranked is not None:
            return ranked
    device_frames, tool_version = False, version(exe)
    while True:
        with tempfile.TemporaryDirectory(prefix="kprof-sanitize-") as tmp:
            xml_path, status_path = Path(tmp) / f"{tool}.xml", Path(tmp) / "status.json"
            argv = build_argv(exe, tool, xml_path, padding=padding, program=True, print_limit=PROGRAM_PRINT_LIMIT,
                              skip_libraries=skip_libraries, device_frames=device_frames, tool_version=tool_version)
            argv += exitcode.wrap(cmd, status_path)
            done = proc.run(argv, timeout=timeout, env=env, cwd=cwd)
            xml_text = xml_path.read_text(errors="replace") if xml_path.is_file() else ""
            status = exitcode.read_status(status_path)
        findings, notes = _program_findings(xml_text, tool, done.stdout)
        if device_frames or done.timed_out or not needs_device_frames(tool, findings):
            break  # a run that timed out is not run again: the timeout is the user's bound on the whole
        device_frames = True  # once more with device frames: the user's call of the header's function
    if device_frames:
        notes.append(f"{tool} ran again with device frames: a finding inside a CUDA header needed them for the user's line")
    if launcher is not None:
        notes.append(f"no process of the {launcher} job was a Python rank kprof could put under {tool} "
                     "on its own: the launcher ran under it, every process checked, ranks not told apart")
    found = classify_program(tool, done, status, findings, notes, timeout, bool(xml_text.strip()))
    return replace(found, version=tool_version)


def needs_device_frames(tool: str, findings: list[Finding]) -> bool:
    """Whether a run without device frames (initcheck in a program: :func:`build_argv`) left a finding of the
    user's kernel at a line inside a CUDA header, which only device frames move to the user's call. Pure."""
    from kprof.tools.hostframes import is_cuda_header

    return tool == "initcheck" and any(is_cuda_header(f.file) and not f.extra.library for f in findings)


def _program_findings(xml_text: str, tool: str, tool_text: str) -> tuple[list[Finding], list[str]]:
    """A program's report: its findings, those inside a library's kernel marked the library's."""
    if not xml_text.strip():
        return [], []
    findings, notes = parse_xml(xml_text, tool, tool_text=tool_text)
    findings, set_aside = kernelpolicy.libraries_own(findings)
    return findings, notes + set_aside


def run_ranks(cmd: list[str], tool: str, exe: Path, *, timeout: float, padding: int, env: dict[str, str] | None,
              cwd: str | Path | None, skip_libraries: bool) -> ToolResult | None:
    """A multi-process job (:mod:`kprof.tools.ranks`): the launcher with no tool, each Python rank under the
    tool on its own, each finding with its rank. None: no process of the job had a rank kprof could wrap
    (the caller then runs the launcher under the tool, ranks not told apart)."""
    from kprof.tools import allocators

    with tempfile.TemporaryDirectory(prefix="kprof-ranks-") as tmp:
        folder, status_path = Path(tmp), Path(tmp) / "status.json"
        argv = ranks.rank_argv(build_argv(exe, tool, folder / "x.xml", padding=padding, program=True,
                                          print_limit=PROGRAM_PRINT_LIMIT, skip_libraries=skip_libraries,
                                          tool_version=version(exe)), folder, tool)
        run_env = {**allocators.with_hooks(dict(env) if env is not None else proc.child_env()),
                   **ranks.wrap_env(argv, folder)}
        done = proc.run(exitcode.wrap(cmd, status_path), timeout=timeout, env=run_env, cwd=cwd)
        status = exitcode.read_status(status_path)
        reports = ranks.read(folder, tool)
    if not reports:
        return None
    findings: list[Finding] = []
    notes = ranks.silent(reports, tool, done.timed_out)
    for r in reports:
        found, said = _program_findings(r.xml, tool, r.text)
        findings += ranks.with_rank(found, r.rank)
        notes += [f"rank {r.rank}: {n}" for n in said]
    notes.insert(0, f"{len(reports)} rank(s), each under {tool} on its own")
    ranked = classify_program(tool, done, status, findings, notes, timeout, any(r.xml.strip() for r in reports))
    return replace(ranked, version=version(exe))


def installed_version() -> str:
    """The version of the compute-sanitizer kprof runs (:func:`version`); '' when there is none to ask."""
    try:
        return version(proc.find_tool("compute-sanitizer"))
    except KprofError:
        return ""


def run_wrapped(cmd: list[str], tool: str, *, timeout: float | None, env: dict[str, str], cwd: str | Path | None,
                watch: Callable[[], bool] | None = None, padding: int = PADDING,
                skip_libraries: bool = False, print_limit: int = PROGRAM_PRINT_LIMIT) -> tuple[proc.Completed, str]:
    """Run ``cmd`` (kprof's own child of a user's program: a pytest batch) under one tool with a
    program's defaults; the finished process and the XML text (empty when none was written). The
    caller reads the records: its child says what ran."""
    exe = proc.find_tool("compute-sanitizer")
    with tempfile.TemporaryDirectory(prefix="kprof-sanitize-") as tmp:
        xml_path = Path(tmp) / f"{tool}.xml"
        argv = build_argv(exe, tool, xml_path, padding=padding, program=True, print_limit=print_limit,
                          skip_libraries=skip_libraries, tool_version=version(exe))
        done = proc.run(argv + cmd, timeout=timeout, env=env, cwd=cwd, watch=watch)
        xml_text = inputs.read_text(xml_path, "the tool's report", limit=MAX_REPORT_BYTES, errors="replace") if (
            xml_path.is_file()) else ""
    return done, xml_text


_TOOL_OF_KIND = {"Precise": "memcheck", "Imprecise": "memcheck", "Leak": "memcheck", "Hazard": "racecheck",
                 "Analysis": "racecheck", "Initcheck": "initcheck", "Synccheck": "synccheck"}


def infer_tool(text: str) -> str | None:
    """The tool that wrote an XML report, from its records' kinds (None for a clean report or API errors only)."""
    return _tool_of(_records(text, MAX_RECORDS))


def _tool_of(recs: list[ET.Element]) -> str | None:
    tools = {_TOOL_OF_KIND[k] for k in (rec.findtext("kind") or "" for rec in recs) if k in _TOOL_OF_KIND}
    return tools.pop() if len(tools) == 1 else None


def from_xml(path: Path, tool: str | None, allocations: Sequence[Allocation] | None = None) -> ToolResult:
    """Report a saved XML file (from another machine) the same way, without a GPU. ``tool`` None: worked
    out from the records; a ``tool`` that contradicts them is refused. A text report saved beside it
    (``FILE.txt`` for ``FILE.xml``) adds the allocations an access missed."""
    text = inputs.read_text(path, "--from-xml", limit=MAX_REPORT_BYTES, errors="replace")
    recs = _records(text, MAX_RECORDS)  # parsed once, for the tool and the findings
    found = _tool_of(recs)
    if tool is None:
        if found is None:
            raise UsageError(f"--from-xml {path}: its records do not say which tool wrote it (a clean report has none): "
                             f"give --tool ({', '.join(TOOLS)})")
        tool = found
    elif found is not None and found != tool:
        raise UsageError(f"--from-xml {path}: --tool {tool}, but its records were written by {found}")
    side = path.with_suffix(".txt")
    tool_text = inputs.read_text(side, "the text report", limit=MAX_REPORT_BYTES, errors="replace") if (
        inputs.regular_file_error(side) is None) else ""
    findings, notes = parse_records(recs, tool, allocations, tool_text=tool_text)
    notes += _unread_note(text, len(recs))
    return ToolResult(tool, "findings" if findings else "clean", findings, 0.0, f"read from {path} ({tool})", notes)


class SanitizerTool:
    """One compute-sanitizer tool as a checker (:class:`kprof.tools.checker.Checker`)."""

    def __init__(self, name: str, summary: str, *, stops: bool = False, user_kernels: bool = False) -> None:
        if name not in TOOLS:
            raise ValueError(f"{name!r} is not a compute-sanitizer tool ({', '.join(TOOLS)})")
        self.name, self.summary = name, summary
        self.needs = Needs(sanitizer=True, stops=stops, user_kernels=user_kernels)

    def __repr__(self) -> str:
        return f"SanitizerTool({self.name!r})"

    def check_job(self, job: Job, settings: Settings) -> ToolResult:
        return run_tool(job, self.name, timeout=settings.timeout, padding=settings.padding)

    def check_jobs(self, jobs: list[Job], settings: Settings) -> list[ToolResult]:
        """All in one child first (:func:`run_batch`), then alone each job that child could not clear."""
        cleared = run_batch(jobs, self.name, timeout=settings.timeout, padding=settings.padding) if len(jobs) > 1 else None
        return list(cleared) if cleared is not None else [self.check_job(j, settings) for j in jobs]

    def check_program(self, program: Program, settings: Settings) -> ToolResult:
        return run_program(list(program.cmd), self.name, timeout=settings.timeout, padding=settings.padding,
                           env=program.env, cwd=program.cwd,
                           skip_libraries=self.needs.skips_libraries(settings.all_kernels))
