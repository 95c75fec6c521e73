"""Where the user's code launched a kernel, from a sanitizer record's saved host stack: pure.

compute-sanitizer saves the host stack of every launch (``<hostStack>``): native frames (a module,
sometimes a function) and, for Python programs, Python frames (function, path, line), innermost
first. The launch site is the innermost frame in the user's own files: frames of the interpreter,
of the standard library, of installed packages (site-packages, dist-packages) and of kprof itself
are skipped, so a Triton kernel launched through torch and triton's launcher is reported at the
user's line (``prog.py:15``), not inside triton.
"""

from __future__ import annotations

import re
import sysconfig
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from kprof import inputs

# kprof/, this file being kprof/tools/programs/hostframes.py
_PACKAGE = Path(__file__).resolve().parents[2]
_KPROF = str(_PACKAGE)
# kprof's own modules, wherever that kprof was installed (a report recorded on another machine), in
# its stage folders or at its top, as an older kprof had them all (kprof/device.py, now
# kprof/child/device.py)
_KPROF_MODULES = frozenset(p.name for p in _PACKAGE.rglob("*.py"))
_KPROF_FOLDERS = frozenset(d.name for d in _PACKAGE.iterdir() if (d / "__init__.py").is_file())
# a stage's rooms (kprof/tools/sanitizers/values.py)
_KPROF_ROOMS = {f: frozenset(r.name for r in (_PACKAGE / f).iterdir()
                             if (r / "__init__.py").is_file())
                for f in _KPROF_FOLDERS}
_LIBRARY_PARTS = ("/site-packages/", "/dist-packages/", "/lib/python3", "/usr/lib/",
                  "/usr/local/cuda", "/lib64/")


@dataclass(frozen=True)
class Frame:
    func: str | None
    path: str | None
    line: int | None
    module: str | None
    pc: int | None = None  # a native frame's offset in its module (a return address)

    def where(self) -> str:
        if self.path and self.line:
            return f"{self.path}:{self.line}"
        if self.module and not self.path:  # a native frame: "launch in vecadd"
            from kprof.demangle import short

            name = short(self.func, 60) if self.func else f"{self.pc:#x}" if self.pc is not None else "?"
            return f"{name} in {Path(self.module).name}"
        return self.path or self.module or "?"


def frames(record: ET.Element) -> list[Frame]:
    """The saved host frames of one record, innermost first (empty when none were saved)."""
    out = []
    for node in record.findall("hostStack/frame"):
        out.append(Frame(node.findtext("func"), node.findtext("path"),
                         inputs.report_uint(node.findtext("line")),
                         node.findtext("module"), inputs.report_uint(node.findtext("pc"))))
    return out


@lru_cache(maxsize=1)
def _library_dirs() -> tuple[str, ...]:
    dirs = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(sorted(d for d in dirs if d))


def is_user_file(path: str) -> bool:
    """A file of the user's own, not of Python, an installed package, the CUDA toolkit or kprof."""
    # "<frozen runpy>"; Cython's build-tree paths (cupy/cuda/function.cpp)
    if not path or not path.startswith("/"):
        return False
    if path.startswith(_KPROF) or any(part in path for part in _LIBRARY_PARTS):
        return False
    if _is_kprof_module(path):
        return False
    return not any(path.startswith(d) for d in _library_dirs())


def _is_kprof_module(path: str) -> bool:
    """``.../kprof/NAME.py``, ``.../kprof/FOLDER/NAME.py`` or ``.../kprof/FOLDER/ROOM/NAME.py`` for
    one of kprof's modules, folders and rooms."""
    parts = Path(path).parts
    if "kprof" not in parts[:-1] or parts[-1] not in _KPROF_MODULES:
        return False
    rest = parts[len(parts) - parts[::-1].index("kprof"):]
    return len(rest) == 1 or (len(rest) == 2 and rest[0] in _KPROF_FOLDERS) or (
        len(rest) == 3 and rest[0] in _KPROF_FOLDERS and rest[1] in _KPROF_ROOMS.get(rest[0], ()))


def launch_site(stack: list[Frame]) -> Frame | None:
    """The innermost Python frame in the user's own files that has a line, or None (a native frame,
    one with a module, is :func:`native_site`'s, even where the binary's line information gave it a
    path)."""
    return next((f for f in stack if f.path and f.line and not f.module and is_user_file(f.path)),
                None)


# Native modules that are never the user's program: the system's and the CUDA toolkit's libraries,
# the Python interpreter and installed packages (by folder or by name).
_SYSTEM_DIRS = ("/usr/", "/lib/", "/lib64/", "/bin/", "/sbin/", "/opt/nvidia/", "/etc/")
_LIBRARY_NAMES = ("libcuda", "libcudart", "libnv", "libcublas", "libcufft", "libcurand",
                  "libcusparse", "libcusolver",
                  "libcudnn", "libnccl", "libtorch", "libc10", "libc.so", "libstdc++", "libgcc",
                  "ld-linux", "libpthread", "libpython", "python")
# Functions of the CUDA runtime (linked into the program by nvcc) and of nvcc's generated launch
# stubs.
_RUNTIME_FUNCS = ("cuda", "__cuda", "__device_stub", "cudart::", "libcudart", "__nv", "_GLOBAL__",
                  "dim3::")


def is_user_module(module: str) -> bool:
    """A native module of the user's own: not a system, CUDA, Python or installed package's
    library."""
    name = Path(module).name
    if not module.startswith("/") or module.startswith(_SYSTEM_DIRS) or any(p in module for p in _LIBRARY_PARTS):
        return False
    return not name.startswith(_LIBRARY_NAMES)


def native_site(stack: list[Frame], kernel: str | None) -> Frame | None:
    """A C++ program's launch site: the innermost native frame in the user's own module that is not
    the CUDA runtime nvcc linked in, nor the kernel's own host stub (the function nvcc generates
    with the kernel's name), or None. ``main in vecadd``; the line comes from
    :mod:`kprof.tools.programs.addr2line`."""
    from kprof.demangle import base_name, demangle, short

    stub = base_name(kernel) if kernel else None
    for f in stack:
        if not f.module or not is_user_module(f.module) or (f.path and not _user_source(f.path)):
            continue
        name = demangle(f.func) if f.func else None
        if name is not None and (short(name, 10_000).startswith(_RUNTIME_FUNCS)
                                 or base_name(name) == stub):
            continue
        return Frame(name, f.path, f.line if f.path else None, f.module, f.pc)
    return None


# A CUDA toolkit's own headers (sm_30_intrinsics.hpp, crt/device_functions.h, cuda/std/...): the
# system toolkit's include folder, a target's, or a pip wheel's (site-packages/nvidia/.../include).
_CUDA_HEADER = re.compile(r"(/targets/[^/]+/include/|/cuda(-[\d.]+)?/include/|/site-packages/nvidia/.*/include/)")


def is_cuda_header(path: str | None) -> bool:
    return bool(path) and _CUDA_HEADER.search(str(path).replace("\\", "/")) is not None


def _user_source(path: str) -> bool:
    """A host source file the user wrote: not a CUDA header (``crt/device_functions.h``) nor the
    stub file nvcc generates and deletes (``/tmp/tmpxft_..._vecadd.cudafe1.stub.c``). A relative
    path (as nvcc was given it) counts."""
    name = Path(path).name
    if name.startswith("tmpxft_") or ".cudafe1." in name or "/targets/" in path or is_cuda_header(path):
        return False
    return not any(part in path for part in _LIBRARY_PARTS)
