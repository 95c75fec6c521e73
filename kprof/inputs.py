"""Inputs are hostile until checked: the one place kprof opens a file it did not write, expands a
path a user or an environment variable gave, writes a file a user named, and vets text before it
reaches a program that runs its steps through a shell.

- **Reads** open only regular files (a FIFO or a device is refused before anything blocks on it:
  the open is non-blocking and the type is checked on the open descriptor), read at most a cap of
  bytes, and decode once. JSON is parsed with its depth checked, so ``[[[[...`` is one line, not
  a ``RecursionError``.
- **Paths** are expanded once (``~`` and ``~user``; an unknown user is one line, not a
  ``RuntimeError``), and a NUL is refused.
- **Shell text**: nvcc hands its sub-steps to ``sh`` inside double quotes, where a backtick or
  ``$(...)`` still runs a command. Every path and flag kprof passes to a tool is checked against
  :data:`SHELL_CHARACTERS` (and control characters) and refused in one line that names the field
  and the character.
- **Writes** never follow a symlink into the user's files: a new file is created exclusively
  (``O_EXCL`` fails on any link, dangling or not), a replaced file is written beside it and renamed
  over it, which replaces a link rather than writing through it. Nothing that is not a regular file
  is ever renamed over: a device, a FIFO or a stream's name (``/dev/stdout``) is written in place
  (:func:`replace_file`). A full disk is one line (:class:`OutputError`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kprof.errors import InputError, UsageError

# The characters the issue tracker's hostile battery used and that a POSIX shell gives meaning to:
# command substitution (` and $), separators and pipes, redirections, subshells, escapes and quotes.
SHELL_CHARACTERS = "`$;|&<>()\\'\""
MAX_JSON_DEPTH = 64
# a timeout above a week is a typo; the OS timers overflow near 1e10 s
MAX_SECONDS = 7 * 24 * 3600.0
# a child's time limit below this ends it before it has started (Python, CUDA's initialisation)
MIN_TIMEOUT = 1.0
# any count an option or an API argument takes: beyond it SQLite (a history limit) and CUDA overflow
MAX_COUNT = 2**31 - 1
MiB = 1024 * 1024


def shell_character(text: str) -> str | None:
    """The first character of ``text`` a shell could act on (or a control character), else None."""
    for ch in text:
        if ch in SHELL_CHARACTERS or ord(ch) < 0x20 or ord(ch) == 0x7F:
            return ch
    return None


def describe_character(ch: str) -> str:
    names = {"\n": "a newline", "\r": "a carriage return", "\t": "a tab", "\0": "a NUL",
             "'": "a quote (')", '"': 'a quote (")', "\\": "a backslash"}
    if ch in names:
        return names[ch]
    if ord(ch) < 0x20 or ord(ch) == 0x7F:
        return f"the control character {ord(ch):#04x}"
    return f"'{ch}'"


def shell_problem(text: str) -> str | None:
    """"holds '`', which a shell would act on (...)" for text nvcc must never see, else None: the
    words every refusal of a path or flag ends with, whoever names the field."""
    ch = shell_character(text)
    if ch is None:
        return None
    return f"holds {describe_character(ch)}, which a shell would act on (nvcc runs its steps through one)"


def shell_safe(text: str, what: str, fix: str = "rename it") -> str:
    """``text`` unchanged, or a :class:`UsageError` naming ``what`` and the character."""
    problem = shell_problem(text)
    if problem is not None:
        raise UsageError(f"{what}: {cut_short(text, 120)} {problem}: {fix}")
    return text


def user_path(text: str | Path, what: str) -> Path:
    """A path from an option, an environment variable or a spec, with ``~`` expanded once."""
    raw = str(text)
    if "\0" in raw:
        raise UsageError(f"{what}: the path holds a NUL character")
    if raw.startswith("~"):
        user = raw[1:].split("/", 1)[0]
        try:
            return _fits(Path(raw).expanduser(), what)
        except RuntimeError:
            who = f"no user '{user}'" if user else "no home directory (HOME is not set)"
            raise UsageError(f"{what}: {cut_short(raw)}: {who} to expand '~' for; write the path out") from None
    return _fits(Path(raw), what)


MAX_NAME_BYTES = 255  # one name in a path (NAME_MAX of Linux's file systems)
MAX_PATH_BYTES = 4096  # a whole path (PATH_MAX)


def _fits(path: Path, what: str) -> Path:
    """``path``, or one line where a name in it or the whole is longer than the file system takes
    (the system's "File name too long" would otherwise surface wherever the path is first used)."""
    try:
        whole = os.fsencode(str(path))
    except (UnicodeEncodeError, ValueError):
        raise UsageError(f"{what}: {cut_short(str(path))}: the path cannot be encoded for the file "
                         "system") from None
    if len(whole) > MAX_PATH_BYTES:
        raise UsageError(f"{what}: a path of {len(whole):,} bytes; the file system takes at most "
                         f"{MAX_PATH_BYTES:,}")
    longest = max((len(os.fsencode(part)) for part in path.parts), default=0)
    if longest > MAX_NAME_BYTES:
        raise UsageError(f"{what}: {cut_short(str(path))}: a name of {longest} bytes in it; the file "
                         f"system takes at most {MAX_NAME_BYTES}")
    return path


# a symlink loop (RuntimeError before 3.13), a long name, a NUL
PATH_ERRORS = (OSError, RuntimeError, ValueError)


def resolved(path: Path) -> Path | None:
    """``path`` made absolute with its links followed, or None where it cannot be (a symlink loop, a
    name longer than the file system takes, a NUL): the caller says so in one line."""
    try:
        return path.resolve()
    except PATH_ERRORS:
        return None


def is_file(path: Path) -> bool:
    """Whether ``path`` is a regular file (or a link to one); False, never an exception, for a loop,
    a long name or a NUL, which :meth:`pathlib.Path.is_file` raises on some of."""
    try:
        return path.is_file()
    except PATH_ERRORS:
        return False


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (through links and relative parts); a missing one is the
    other only where both name the same place."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except PATH_ERRORS:
        return False
    where = resolved(a)
    return where is not None and where == resolved(b)


def regular_file_error(path: Path) -> str | None:
    """Why ``path`` cannot be read as an input (not there, a folder, a FIFO, a device), or None."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "no such file"
    except (OSError, ValueError) as exc:
        return reason_of(exc)
    return None if stat.S_ISREG(mode) else f"{file_kind(mode)}, not a regular file"


def _error(what: str, path: Path, reason: str) -> InputError:
    return InputError(f"{what} {shown_path(path)}: {reason}", path, reason)


def _open_regular(path: Path, what: str) -> tuple[int, os.stat_result]:
    """A descriptor of a regular file and its status. The open does not block (a FIFO with no writer
    would hold kprof forever) and the type is checked on the descriptor."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise _error(what, path, "no such file") from None
    except (OSError, ValueError) as exc:
        raise _error(what, path, reason_of(exc)) from None
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise _error(what, path, reason_of(exc)) from None
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise _error(what, path, f"{file_kind(info.st_mode)}, not a regular file: give a file")
    return fd, info


def read_bytes(path: str | Path, what: str, *, limit: int) -> bytes:
    """At most ``limit`` bytes of a regular file, or one line that says why not
    (:func:`_open_regular`)."""
    path = Path(path)
    fd, info = _open_regular(path, what)
    try:
        if info.st_size > limit:
            raise _error(what, path, f"{info.st_size:,} bytes; kprof reads at most {limit:,}")
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(limit + 1 - total, MiB))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:  # it grew while being read
            raise _error(what, path, f"more than {limit:,} bytes; kprof reads at most {limit:,}")
        return b"".join(chunks)
    except OSError as exc:
        raise _error(what, path, reason_of(exc)) from None
    finally:
        os.close(fd)


def read_head(path: str | Path, what: str, nbytes: int) -> bytes:
    """The first ``nbytes`` of a regular file of any size (an executable's header)."""
    path = Path(path)
    fd, _ = _open_regular(path, what)
    try:
        return os.read(fd, nbytes)
    except OSError as exc:
        raise _error(what, path, reason_of(exc)) from None
    finally:
        os.close(fd)


def read_text(path: str | Path, what: str, *, limit: int, errors: str = "strict") -> str:
    data = read_bytes(path, what, limit=limit)
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        raise _error(what, Path(path), f"not UTF-8 text (byte {exc.start})") from None


_UINT = re.compile(r"[0-9]{1,20}|0[xX][0-9a-fA-F]{1,16}")


def scalar_fields(cls: type, raw: object) -> dict[str, object]:
    """The fields of dataclass ``cls`` that a record kprof wrote (``raw``, a dict from JSON) holds
    with the right type, for the fields annotated ``str``, ``int`` or either ``| None``; a key it
    does not know, a value of the wrong type (a bool for an int) and a record that is not a dict are
    dropped. Pure."""
    import dataclasses

    if not isinstance(raw, dict):
        return {}
    kept: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        v, kind = raw.get(f.name), str(f.type).removesuffix(" | None")
        if (kind == "str" and isinstance(v, str)) or (kind == "int" and isinstance(v, int)
                                                      and not isinstance(v, bool)):
            kept[f.name] = v
    return kept


def report_uint(text: str | None) -> int | None:
    """A whole number a tool wrote in a report (a line, an address, a size), or None when the field
    is missing, not a number, or outside 64 bits unsigned. ASCII digits only (``int()`` takes
    ``'٣'`` and chokes on ``'²'``), and at most 20 of them (``int()`` refuses 5,000 with a
    ``ValueError``)."""
    if text is None:
        return None
    text = text.strip()
    if not _UINT.fullmatch(text):
        return None
    value = int(text, 0) if text[:2].lower() == "0x" else int(text)
    return value if value < 1 << 64 else None


def json_depth_error(text: str, limit: int = MAX_JSON_DEPTH) -> int | None:
    """The offset where JSON text nests deeper than ``limit``, else None (one linear pass)."""
    depth, in_string, escaped = 0, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return i
        elif ch in "]}":
            depth -= 1
    return None


def parse_json(text: str, what: str) -> object:
    """JSON with its nesting depth checked first; every failure is one line."""
    at = json_depth_error(text)
    if at is not None:
        raise UsageError(f"{what}: nested deeper than {MAX_JSON_DEPTH} levels (at character {at:,})")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{what}: not valid JSON ({cut_short(str(exc))})") from None


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Each line of a JSON-lines log that is a JSON object, in order: a line torn by a writer
    stopped mid-line, or one that is not an object, is skipped (kprof's hooks' and children's
    logs)."""
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def read_json(path: str | Path, what: str, *, limit: int = 64 * MiB) -> Any:
    return parse_json(read_text(path, what, limit=limit), f"{what} {shown_path(Path(path))}")


def file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a file"


def reason_of(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return cut_short(str(exc)) or type(exc).__name__


def one_line(text: str) -> str:
    """``text`` with its control characters escaped: a message is one line whatever an input
    held."""
    if not any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        return text
    return "".join(c.encode("unicode_escape").decode("ascii") if ord(c) < 0x20 or ord(c) == 0x7F
                   else c for c in text)


def shown_path(path: Path, limit: int = 100) -> str:
    """A path in a message: its end is what tells files apart, so a long one loses its start."""
    text = one_line(str(path))
    return text if len(text) <= limit else "..." + text[-(limit - 3):]


def cut_short(text: str, limit: int = 60) -> str:
    text = one_line(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# What kprof's output never passes on raw: C0 controls but newline and tab, DEL, the C1 controls
# (CSI, NEL, OSC...) and the bidirectional overrides. A spec, a history row or a report is text from
# elsewhere: an ESC or a CSI in it could clear or recolour the user's screen, or hide text. Each is
# written as \xNN or \uNNNN.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# kprof's progress line rewriting itself (kprof.results.render.Progress), kept
_OWN_ERASE = "\r\x1b[K"
_ERASE_MARK = "\ue000"


def terminal_safe(text: str) -> str:
    """``text`` with every control character escaped, kprof's own progress erase kept."""
    if not _UNSAFE.search(text):
        return text
    text = text.replace(_OWN_ERASE, _ERASE_MARK)
    text = _UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                       else f"\\u{ord(m.group()):04x}", text)
    return text.replace(_ERASE_MARK, _OWN_ERASE)


def program_argv(cmd: list[str], verb: str, cwd: str | Path | None) -> list[str]:
    """The command to run, checked before any tool starts: it names a program that exists."""
    example = f"kprof {verb} -- python train.py"
    if not cmd:
        raise UsageError(f"name the program to {verb} after --, e.g. {example}")
    first = cmd[0]
    # one line, whatever the name holds
    shown = shown_path(Path(first)) if os.sep in first else cut_short(first, 100)
    if first.startswith("-"):
        raise UsageError(f"kprof {verb} -- {shown}: that is an option, not a program; put kprof's "
                         f"options before -- and the command after it, e.g. {example}")
    if os.sep in first:
        path = Path(cwd or ".") / first
        if not is_file(path):
            raise UsageError(f"kprof {verb} -- {shown}: no such file")
        if not os.access(path, os.X_OK):
            raise UsageError(f"kprof {verb} -- {shown}: not executable; run it with its "
                             f"interpreter, e.g. kprof {verb} -- python {shown}")
    else:
        try:
            found = shutil.which(first)
        except (OSError, ValueError):  # a name longer than the file system takes, a NUL
            found = None
        if found is None:
            raise UsageError(f"kprof {verb} -- {shown}: no such program on PATH (e.g. {example})")
    return cmd
