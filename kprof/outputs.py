"""Every file kprof writes, one writer (issue 79's outputs): a path checked before the run (a file's
folder there, a folder kprof may write, never a name ending in '/'), a regular file replaced atomically with
its mode kept, a device, a FIFO or this process's own redirected stream written in place, a link followed
link by link and never written through to another regular file, a new file never made through a link, a
failed write one line (a full disk apart from a path kprof may not write). ``docs/limits.md`` says the rules.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import threading
from pathlib import Path
from typing import Literal

from kprof.errors import OutputError, UsageError
from kprof.inputs import cut_short, file_kind, reason_of, shown_path, user_path


def output_file(text: str | Path, what: str) -> Path:
    """A file kprof will write (``--sarif FILE``, ``--plot FILE``), checked before anything runs:
    its folder exists and it is not a folder itself (nor a name ending in ``/``, which names one),
    so a bad path never costs a finished run."""
    path = user_path(text, what)
    if str(text).endswith(("/", os.sep)):
        raise UsageError(f"{what} {shown_path(Path(str(text)))}: ends with '/', which names a folder; "
                         "give a file name")
    if path.is_dir():
        raise UsageError(f"{what} {shown_path(path)}: is a folder; give a file name")
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(f"{what} {shown_path(path)}: the folder {shown_path(parent)} does not "
                         "exist; create it first")
    try:
        # a block device, a socket, a stream's link that leads nowhere: said now, not after the run
        output_kind(path)
    except UsageError as exc:
        raise UsageError(f"{what}: {exc}") from None
    return path


def output_dir(text: str | Path, what: str, *, create: bool = True) -> Path:
    """A folder kprof will write into, checked before anything runs: what of it exists is a folder,
    and the nearest that exists may be written. ``create``: made now; else left for
    :func:`make_dir` when the first file goes there, so a run refused later (no GPU, a bad name)
    leaves no folder behind."""
    path = user_path(text, what)
    if not create:
        existing = path
        while not os.path.lexists(existing) and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir():
            raise UsageError(f"{what} {shown_path(path)}: {shown_path(existing)} is a file, not a "
                             "folder")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise UsageError(f"{what} {shown_path(path)}: kprof may not write in "
                             f"{shown_path(existing)}; give a folder it may write")
        return path
    return make_dir(path, what)


def make_dir(path: Path, what: str) -> Path:
    """``path`` and its missing parents, made (an output folder when its first file is written)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise UsageError(f"{what} {shown_path(path)}: is a file, not a folder") from None
    except OSError as exc:
        raise UsageError(f"{what} {shown_path(path)}: {reason_of(exc)}") from None
    return path


def exists_error(path: Path, what: str) -> UsageError | None:
    """The refusal for a new file whose name is taken (by a file, a folder or a symlink, dangling or
    not)."""
    if not (path.exists() or path.is_symlink()):
        return None
    link = " (a symlink: kprof never writes through one)" if path.is_symlink() else ""
    return UsageError(f"{what}: {path} exists{link}: pick another name or folder, or remove it")


def create_new(path: Path, text: str, what: str) -> None:
    """Write a file that must not exist yet, never through a symlink (``O_EXCL`` refuses any)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        raise exists_error(path, what) or UsageError(f"{what}: {path} exists") from None
    except OSError as exc:
        raise write_error(path, exc) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise write_error(path, exc) from None


def replace_file(path: Path, data: str | bytes) -> None:
    """Write ``path`` whole, respecting what is there (:func:`output_kind`).

    A regular file, or nothing, is replaced atomically: a temporary file beside it renamed over it,
    so a reader never sees half a file. A symlink to a regular file or to nothing is replaced, not
    written through. A character device or a FIFO, and a stream's name such as ``/dev/stdout`` (a
    link into ``/proc/self/fd``), is written in place and never renamed over: many users run as
    root, where a rename over ``/dev/null`` would turn the machine's device into a file. A folder, a
    block device, a socket and a link that leads nowhere through ``/proc`` or ``/dev`` are one line
    each."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    kind = output_kind(path)
    if kind == "in place":
        _write_in_place(path, payload)
        return
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:64]}-", dir=path.parent)
    except OSError as exc:
        raise write_error(path, exc) from None
    try:
        os.fchmod(fd, new_file_mode(path))
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise write_error(path, exc) from None


def place_file(made: Path, path: Path) -> None:
    """Put ``made``, a finished file a tool wrote beside ``path`` (ncu's ``--export``), at ``path``,
    respecting what is there as :func:`replace_file` does: renamed over a regular file, a link to
    one or nothing (the link itself replaced, never written through); copied into a character device
    or a FIFO; a folder, a socket or a block device one line. ``made`` is gone afterwards either
    way."""
    try:
        if output_kind(path) == "replace":
            os.chmod(made, new_file_mode(path))
            os.replace(made, path)
        else:
            _write_in_place(path, made.read_bytes())
    except OSError as exc:
        raise write_error(path, exc) from None
    finally:
        made.unlink(missing_ok=True)


def new_file_mode(path: Path) -> int:
    """The mode a file kprof writes at ``path`` gets: the regular file it replaces keeps its own;
    a new one gets what the umask leaves of 0666, as ``open()`` would give it (a temporary file is
    made 0600, which a rename would otherwise keep)."""
    try:
        info = os.lstat(path)
        if stat.S_ISREG(info.st_mode):
            return stat.S_IMODE(info.st_mode)
    except OSError:
        pass
    return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it (``/proc/self/status``)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:  # elsewhere: set and put back at once, one thread at a time
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


_UMASK_LOCK = threading.Lock()

OutputKind = Literal["replace", "in place"]
STREAM_FOLDERS = ("/proc/", "/dev/")  # where a link names a stream or a device, not a file
MAX_LINK_HOPS = 40  # the kernel's own limit on links followed in one lookup
PIPE_WAIT_S = 30.0  # how long a FIFO's reader may leave its pipe full before the write is given up


def output_kind(path: Path) -> OutputKind:
    """How kprof writes an output at ``path``: ``"replace"`` (atomically, by a rename) or ``"in
    place"`` (a device, a FIFO, a stream's link), or a :class:`UsageError` for what it never
    writes. A link is followed link by link: written in place only where it ends at a character
    device or a FIFO, or is this process's own standard output or error (a stream the user's shell
    redirected); a link to any other regular file (``/proc/self/root/etc/...``, ``/dev/shm/x``) is
    replaced itself, never written through."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return "replace"
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot write {shown_path(path)}: {reason_of(exc)}") from None
    if not stat.S_ISLNK(info.st_mode):
        return "replace" if stat.S_ISREG(info.st_mode) else _in_place_or_refused(path, info.st_mode)
    hops = _link_hops(path)
    stream = str(path.absolute()).startswith("/dev/") or any(h.startswith(STREAM_FOLDERS) for h in hops)
    try:
        info = os.stat(path)
    except OSError:
        if stream:
            raise UsageError(f"cannot write {shown_path(path)}: a link to {cut_short(hops[0] if hops else '?')}, "
                             "which leads nowhere; give a file name") from None
        return "replace"  # a dangling link in the user's own folder: the documented rule, replaced
    if stat.S_ISREG(info.st_mode):
        # the one regular file written through a link: the one this process's stdout or stderr already
        # is (``--sarif /dev/stdout > report.sarif``), told by the file itself, not by the link's name
        return "in place" if _is_own_stream(info) else "replace"
    return _in_place_or_refused(path, info.st_mode)


def _link_hops(path: Path) -> list[str]:
    """Where a link leads, hop by hop (each target made absolute against the link's folder), as far
    as links go or :data:`MAX_LINK_HOPS`."""
    hops: list[str] = []
    cur = path.absolute()
    for _ in range(MAX_LINK_HOPS):
        try:
            target = os.readlink(cur)
        except OSError:
            break
        cur = Path(os.path.normpath(cur.parent / target))
        hops.append(str(cur))
    return hops


def _in_place_or_refused(path: Path, mode: int) -> OutputKind:
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "in place"
    if stat.S_ISDIR(mode):
        raise UsageError(f"{shown_path(path)} is a folder where kprof writes a file: remove it or "
                         "give a file name")
    raise UsageError(f"cannot write {shown_path(path)}: {file_kind(mode)}; kprof writes to a file, a "
                     "character device or a FIFO")


def _write_in_place(path: Path, payload: bytes) -> None:
    """Write a device, a FIFO or what a stream's link names, without creating or renaming anything.
    A FIFO is opened without blocking, so one no program reads is one line rather than a hang, and a
    reader that stops reading for :data:`PIPE_WAIT_S` ends the write the same way."""
    import select

    flags = os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise UsageError(f"cannot write {shown_path(path)}: a FIFO no program reads; start its "
                             "reader first, or give a file name") from None
        raise write_error(path, exc) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode):
            if not _is_own_stream(info):  # the link changed since it was looked at: never through it
                raise UsageError(f"cannot write {shown_path(path)}: it now leads to a regular file "
                                 "that is not kprof's output stream; give a file name")
            os.ftruncate(fd, 0)  # a stream redirected to a file: that file, written whole
        view = memoryview(payload)
        while view:
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                if not select.select([], [fd], [], PIPE_WAIT_S)[1]:
                    raise UsageError(f"cannot write {shown_path(path)}: its reader took nothing "
                                     f"for {PIPE_WAIT_S:.0f} s") from None
    except OSError as exc:
        raise write_error(path, exc) from None
    finally:
        os.close(fd)


def _is_own_stream(info: os.stat_result) -> bool:
    """Whether an opened regular file is this process's standard output or error."""
    for fd in (1, 2):
        try:
            own = os.fstat(fd)
        except OSError:
            continue
        if (own.st_dev, own.st_ino) == (info.st_dev, info.st_ino):
            return True
    return False


# the disk, not the path, is the trouble
OUTPUT_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG)


def write_error(path: Path, exc: OSError) -> OutputError | UsageError:
    """A failed write in one line: a full disk (exit 7) told apart from a path that cannot be
    written (2)."""
    if exc.errno in OUTPUT_ERRNOS:
        return OutputError(f"cannot write {shown_path(path)}: {reason_of(exc)}; free some space or "
                           "write elsewhere")
    return UsageError(f"cannot write {shown_path(path)}: {reason_of(exc)}")
