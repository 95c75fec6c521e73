"""The source line of a host address in a native program, from binutils' ``addr2line``: the launch
site of a plain C++ program (``./vecadd``) built with host line information (``-g``).

compute-sanitizer saves a launch's native frames as a module and an offset in it (``<pc>``, relative
to where the module was loaded). For a position-independent executable or a shared library that
offset is the address ``addr2line`` wants; for a fixed-address executable (``ET_EXEC``) the lowest
loaded address is added (read from the ELF program headers). A saved frame holds a return address,
so the call is at ``pc - 1``.

``addr2line`` is optional: where it is missing, or the module is gone, has no line information, or
the lookup fails or takes too long, there is no line (the function and module still name the site).
It runs as a list argv with a timeout, on regular files only, at most :data:`MAX_LOOKUPS` times per
process.
"""

from __future__ import annotations

import shutil
import struct
import threading
from functools import lru_cache
from pathlib import Path

from kprof import inputs, proc
from kprof.errors import InputError, ToolNotFoundError

TIMEOUT_S = 10.0
MAX_LOOKUPS = 64  # addr2line processes one kprof process may start (each launch site is one)
_ELF_HEADER = 64
_lock = threading.Lock()
_used = [0]


def argv(exe: str, module: str, addresses: list[int]) -> list[str]:
    """``addr2line -f -C -e MODULE ADDR...``: for each address its function (demangled) and
    ``file:line``."""
    return [exe, "-f", "-C", "-e", module, *(f"{a:#x}" for a in addresses)]


def parse(text: str, count: int) -> list[tuple[str | None, str | None, int | None]]:
    """addr2line's two lines per address -> (function, file, line); ``??`` and ``?`` are unknown.
    Pure."""
    lines = text.splitlines()
    out: list[tuple[str | None, str | None, int | None]] = []
    for i in range(count):
        func = lines[2 * i].strip() if 2 * i < len(lines) else "??"
        where = lines[2 * i + 1].strip() if 2 * i + 1 < len(lines) else "??:0"
        where = where.split(" (discriminator", 1)[0]
        path, _, number = where.rpartition(":")
        line = inputs.report_uint(number)
        known = path not in ("", "??") and line not in (None, 0)
        out.append((None if func == "??" else func, path if known else None,
                    line if known else None))
    return out


def elf_base(data: bytes) -> int | None:
    """0 for a position-independent ELF file, the lowest ``PT_LOAD`` address (page-aligned) for a
    fixed-address executable; None for what is not a 64-bit little-endian ELF file. Pure."""
    if len(data) < _ELF_HEADER or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    e_type = struct.unpack_from("<H", data, 16)[0]
    if e_type != 2:  # ET_EXEC; ET_DYN (3) is loaded anywhere: offsets are addresses
        return 0 if e_type == 3 else None
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    lows = []
    for i in range(min(phnum, 256)):
        at = phoff + i * phentsize
        if at + 0x18 > len(data):
            break
        p_type, = struct.unpack_from("<I", data, at)
        if p_type == 1:  # PT_LOAD
            lows.append(struct.unpack_from("<Q", data, at + 0x10)[0])
    return (min(lows) & ~0xFFF) if lows else None


def line_of(module: str | None, pc: int | None) -> tuple[str | None, str | None, int | None] | None:
    """(function, file, line) of the call before the return address ``pc`` in ``module``, or
    None."""
    if not module or pc is None or not module.startswith("/") or pc <= 0:
        return None
    try:
        info = Path(module).stat()
    except (OSError, ValueError):
        return None
    return _lookup(module, pc, info.st_mtime_ns, info.st_size)


@lru_cache(maxsize=256)
def _lookup(module: str, pc: int, mtime_ns: int,
            size: int) -> tuple[str | None, str | None, int | None] | None:
    exe = shutil.which("addr2line")
    if exe is None:
        return None
    try:
        head = inputs.read_head(module, "a module of the launch", 1 << 16)
    except InputError:
        return None
    base = elf_base(head)
    if base is None:
        return None
    with _lock:
        if _used[0] >= MAX_LOOKUPS:
            return None
        _used[0] += 1
    try:
        done = proc.run(argv(exe, module, [base + pc - 1]), timeout=TIMEOUT_S)
    except ToolNotFoundError:
        return None
    if done.timed_out or done.returncode != 0:
        return None
    return parse(done.stdout, 1)[0]
