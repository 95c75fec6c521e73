"""kprof's launch tally, loaded into a program by kprof's sitecustomize when ``KPROF_LAUNCH_TALLY``
is set (``kprof sanitize -- CMD``'s run of the program beside the tools' runs:
:mod:`kprof.tools.programs.launchcount`; CUPTI
cannot run under compute-sanitizer, which holds its one subscriber): it counts the kernels the
program launches, through the driver API (``cuLaunchKernel``, ``cuLaunchKernelEx``, cooperative
launches: Triton, CuPy, cuda-python) and the runtime API (``cudaLaunchKernel``: PyTorch's own
kernels), a CUDA graph's launch counted as one, and says of each kernel whether its module has line
information (a ``.debug_line`` or ``.nv_debug_line_sass`` section in the cubin the driver loaded:
``-lineinfo``), so that a clean verdict says what it covered, and a run that launched nothing is not
called clean. It does nothing else: no synchronisation, no copy (the launch recorder,
:mod:`launch_recorder`, is the values
detector's).

One JSON object per line, appended to ``$KPROF_LAUNCH_TALLY`` (every Python process of the program
writes its own lines, each with its ``pid``; :mod:`kprof.tools.programs.coverage` reads them):

- ``{"event": "tally", "pid": P, "ok": true}`` once started, or ``"ok": false, "why": ...``;
- ``{"event": "kernel", "pid": P, "name": N, "lineinfo": true|false|null, "launches": K}`` at the
first
  launch of each kernel (``K``: the process's launches so far, this one included; null: no module of
  the name was read);
- ``{"event": "total", "pid": P, "launches": K}`` when the process exits normally;
- with ``KPROF_LAUNCH_SITES`` set (``kprof profile -- CMD``'s run of the program beside ncu's: CUPTI
has one
  subscriber, and ncu holds it in its own run), ``{"event": "site", "pid": P, "name": N, "path": F,
  "line": L, "func": G, "launches": K}`` at the first launch of each kernel from each place in the
  user's Python code (the innermost frame outside Python, installed packages, kprof and
  torch.compile's generated files; path null: no such frame on the launching thread, as on
  autograd's own), at most ``MAX_SITES`` a kernel. ``KPROF_LAUNCH_SITES=all`` lets the program run
  to its end; a number N stops it (``os._exit``: that run is only for the places) once it has made N
  launches and launched every kernel named in ``KPROF_LAUNCH_SITES_OF`` (a JSON list of bare
  function names, each found inside a launched kernel's name).

A process that dies before its exit (a tool that stops it at a fault) leaves its kernel lines: at
least that many launches.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import sys
import sysconfig
from types import FrameType
from typing import Any

MAX_KERNELS = 10_000  # kernel lines written per process, at most
MAX_SITES = 8  # site lines per kernel, at most
MAX_TEST_NAMES = 64  # kernel names a test's finish event carries, at most
_NOT_USERS = ("/site-packages/", "/dist-packages/", "/torchinductor_", "/triton/runtime/",
              "/lib/python3")
_DRIVER = ("cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
           "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz", "cuGraphLaunch",
           "cuGraphLaunch_ptsz")
_RUNTIME = ("cudaLaunchKernel_v7000", "cudaLaunchKernel_ptsz_v7000", "cudaLaunchKernelExC_v11060",
            "cudaLaunchKernelExC_ptsz_v11060", "cudaLaunchCooperativeKernel_v9000",
            "cudaLaunchCooperativeKernel_ptsz_v9000", "cudaGraphLaunch_v10000",
            "cudaGraphLaunch_ptsz_v10000")
_LINE_SECTIONS = (".debug_line", ".nv_debug_line_sass")
_MODULE_CUBIN = (8, 16)  # offsetof(CUpti_ModuleResourceData, cubinSize), offsetof(..., pCubin)


def cubin_facts(image: bytes) -> tuple[set[str], bool] | None:
    """The kernels of a cubin (its ``.text.NAME`` sections) and whether it has line information;
    None for an image that is not a 64-bit ELF kprof can read. A fatbin's embedded, uncompressed ELF
    images are read one by one: the names of all, line information if any has it."""
    if image[:4] != b"\x7fELF":
        found = [f for f in (_elf_facts(image[at:]) for at in _elf_starts(image)) if f is not None]
        if not found:
            return None
        return set().union(*(k for k, _ in found)), any(lines for _, lines in found)
    return _elf_facts(image)


def _elf_starts(image: bytes) -> list[int]:
    out: list[int] = []
    at = image.find(b"\x7fELF")
    while at >= 0 and len(out) < 256:
        out.append(at)
        at = image.find(b"\x7fELF", at + 4)
    return out


def elf_sections(image: bytes) -> dict[str, bytes] | None:
    """Every section of a 64-bit little-endian ELF image (a cubin), by name; None for anything else
    (kprof's mutants compare two cubins' ``.text`` sections with it too: kprof.corpus.mutants)."""
    if len(image) < 64 or image[:4] != b"\x7fELF" or image[4] != 2 or image[5] != 1:
        return None

    def u(at: int, size: int) -> int:
        return int.from_bytes(image[at:at + size], "little")

    shoff, shentsize, shnum, shstrndx = u(0x28, 8), u(0x3A, 2), u(0x3C, 2), u(0x3E, 2)
    if shentsize < 64 or shnum == 0 or shstrndx >= shnum or shoff + shnum * shentsize > len(image):
        return None
    heads = [(u(shoff + i * shentsize, 4), u(shoff + i * shentsize + 0x18, 8),
              u(shoff + i * shentsize + 0x20, 8))
             for i in range(shnum)]
    _, names_at, names_size = heads[shstrndx]
    if names_at + names_size > len(image):
        return None
    table = image[names_at:names_at + names_size]
    out = {}
    for start, offset, size in heads:
        if start < len(table):
            end = table.find(b"\0", start)
            out[table[start:end if end >= 0 else len(table)].decode("utf-8", "replace")] = image[offset:offset + size]
    return out


def _elf_facts(image: bytes) -> tuple[set[str], bool] | None:
    sections = elf_sections(image)
    if sections is None:
        return None
    return {n[len(".text."):] for n in sections if n.startswith(".text.")}, any(n in _LINE_SECTIONS for n in sections)


class Tally:
    def __init__(self, log_path: str) -> None:
        self.out = open(log_path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - the program's lifetime
        self.pid = os.getpid()
        self.launches = 0
        self.kernels: set[str] = set()
        # launches per kernel name (kprof's pytest child: each test's, by since())
        self.counts: dict[str, int] = {}
        self.lineinfo: dict[str, bool] = {}  # kernel name -> its module has line information
        # inside a runtime launch: the driver calls it makes are not counted again
        self.runtime_depth = 0
        self.subscriber: object = None
        self.sites: Any = None
        self.resource_domain: object = None
        self.runtime_domain: object = None
        self.site_mode = False  # KPROF_LAUNCH_SITES: where each kernel was launched from
        self.stop_after = 0  # launches after which the process stops (0: never) ...
        self.stop_when_seen: set[str] = set()  # ... once it has launched these too (bare names)
        self.site_seen: dict[str, set[tuple[str | None, int | None]]] = {}
        self.user_files: dict[str, bool] = {}
        # Python's, the packages', kprof's folders: at the first site
        self.not_users: tuple[str, ...] | None = None

    def emit(self, **event: object) -> None:
        self.out.write(json.dumps({"pid": self.pid, **event}) + "\n")

    def start(self) -> None:
        try:
            from cupti import cupti

            self.sites = (cupti.ApiCallbackSite.API_ENTER, cupti.ApiCallbackSite.API_EXIT)
            self.resource_domain, self.runtime_domain = cupti.CallbackDomain.RESOURCE, cupti.CallbackDomain.RUNTIME_API
            self.subscriber = cupti.subscribe(self._callback, None)
            for name in _DRIVER:
                cupti.enable_callback(1, self.subscriber, cupti.CallbackDomain.DRIVER_API,
                                      getattr(cupti.driver_api_trace_cbid, name))
            for name in _RUNTIME:
                cupti.enable_callback(1, self.subscriber, self.runtime_domain,
                                      getattr(cupti.runtime_api_trace_cbid, name))
            cupti.enable_callback(1, self.subscriber, self.resource_domain,
                                  cupti.CallbackIdResource.MODULE_LOADED)
        except Exception as exc:  # noqa: BLE001 - the program runs on; the parent says the launches were not counted
            self.emit(event="tally", ok=False,
                      why=f"kprof's launch tally could not start: {type(exc).__name__}: {exc}")
            return
        self.emit(event="tally", ok=True)
        atexit.register(self.finish)

    def finish(self) -> None:
        self.emit(event="total", launches=self.launches)

    def _callback(self, userdata: object, domain: object, cbid: object, cbdata: object) -> None:
        try:
            if domain == self.resource_domain:
                self._module(cbdata)
                return
            site = getattr(cbdata, "callback_site", None)
            if domain == self.runtime_domain:
                if site == self.sites[0]:
                    self.runtime_depth += 1
                    return
                self.runtime_depth = max(0, self.runtime_depth - 1)
            elif site != self.sites[1] or self.runtime_depth:
                return
            self._launched(str(getattr(cbdata, "symbol_name", "") or "")
                           or str(getattr(cbdata, "function_name", "")))
        except Exception as exc:  # noqa: BLE001 - a launch it cannot read is said, the program goes on
            self.emit(event="error", why=f"{type(exc).__name__}: {exc}")

    def _module(self, cbdata: object) -> None:
        descriptor = int(getattr(cbdata, "resource_descriptor", 0) or 0)
        if not descriptor:
            return
        size = ctypes.c_size_t.from_address(descriptor + _MODULE_CUBIN[0]).value
        at = ctypes.c_void_p.from_address(descriptor + _MODULE_CUBIN[1]).value
        if not at or not size:
            return
        facts = cubin_facts(ctypes.string_at(at, size))
        if facts is not None:
            kernels, lines = facts
            for name in kernels:
                self.lineinfo[name] = self.lineinfo.get(name, False) or lines

    def mark(self) -> tuple[int, dict[str, int]]:
        """Where the counts stand now, for :meth:`since`."""
        return self.launches, dict(self.counts)

    def since(self, mark: tuple[int, dict[str, int]]) -> dict[str, object]:
        """What was launched since ``mark``: launches, kernels, and of them with line information
        and in no module read, and their names (kprof's pytest child writes it in each test's finish
        event)."""
        names = [n for n, c in self.counts.items() if c != mark[1].get(n, 0)]
        return {"launches": self.launches - mark[0], "kernels": len(names),
                "with_lines": sum(self.lineinfo.get(n) is True for n in names),
                "unknown_lines": sum(n not in self.lineinfo for n in names),
                "names": names[:MAX_TEST_NAMES]}

    def is_user_file(self, path: str) -> bool:
        known = self.user_files.get(path)
        if known is None:
            if self.not_users is None:
                kprof_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
                self.not_users = tuple(sorted({p
                                               for k in ("stdlib", "platstdlib", "purelib",
                                                         "platlib")
                                               if (p := sysconfig.get_paths().get(k))} | {kprof_dir}))
            known = (path.startswith("/") and not any(part in path for part in _NOT_USERS)
                     and not any(path.startswith(d + os.sep) for d in self.not_users))
            self.user_files[path] = known
        return known

    def site(self) -> tuple[str | None, int | None, str | None]:
        """The innermost frame of the launching thread in the user's own files (path, line,
        function)."""
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            if self.is_user_file(frame.f_code.co_filename):
                return frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name
            frame = frame.f_back
        return None, None, None

    def _site(self, name: str) -> None:
        seen = self.site_seen.setdefault(name, set())
        if len(seen) >= MAX_SITES:
            return
        path, line, func = self.site()
        if (path, line) not in seen:
            seen.add((path, line))
            self.emit(event="site", name=name, path=path, line=line, func=func,
                      launches=self.launches)

    def _launched(self, name: str) -> None:
        self.launches += 1
        if self.site_mode and (len(self.site_seen) < MAX_KERNELS or name in self.site_seen):
            if name not in self.site_seen:
                self.stop_when_seen = {w for w in self.stop_when_seen if w not in name}
            self._site(name)
        if len(self.counts) < MAX_KERNELS or name in self.counts:
            self.counts[name] = self.counts.get(name, 0) + 1
        if name not in self.kernels and len(self.kernels) < MAX_KERNELS:
            self.kernels.add(name)
            self.emit(event="kernel", name=name, lineinfo=self.lineinfo.get(name),
                      launches=self.launches)
        if self.stop_after and self.launches >= self.stop_after and not self.stop_when_seen:
            self.out.flush()
            os._exit(0)  # the sites run has what it came for


_TALLY: list[Tally] = []  # the program's one tally, kept alive with its CUPTI subscriber


def running() -> Tally | None:
    """This process's tally, once it counts (None: not loaded here, or it could not start)."""
    return _TALLY[0] if _TALLY and _TALLY[0].subscriber is not None else None


def install() -> None:
    path = os.environ.get("KPROF_LAUNCH_TALLY")
    if path and not _TALLY:
        _TALLY.append(Tally(path))
        sites = os.environ.get("KPROF_LAUNCH_SITES", "")
        _TALLY[0].site_mode = bool(sites)
        _TALLY[0].stop_after = int(sites) if sites.isdigit() else 0  # "all": to the program's end
        try:
            wanted = json.loads(os.environ.get("KPROF_LAUNCH_SITES_OF") or "[]")
        except ValueError:
            wanted = []
        _TALLY[0].stop_when_seen = {str(w) for w in wanted if w} if isinstance(wanted, list) else set()
        _TALLY[0].start()
