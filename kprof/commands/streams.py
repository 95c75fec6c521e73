"""The standard streams as kprof leaves them, whatever state they came in: closed (``>&-``), full
(``>/dev/full``), a broken pipe, an ASCII-only locale, control characters on their way to a
terminal; and SIGTERM turned into the same stop as Ctrl-C. :mod:`kprof.commands.cli` wraps every
command in these."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kprof.errors import EXIT_OK, EXIT_OUTPUT


class CleanStream:
    """A text stream that escapes control characters on their way to it
    (:func:`kprof.inputs.terminal_safe`). ``tolerant`` (stderr: progress lines and notes): a write or
    flush it cannot take (a full disk, a closed pipe) is dropped and the stream pointed at
    /dev/null, so a full stderr never changes a run's exit code nor loses its table on stdout."""

    def __init__(self, stream: Any, *, tolerant: bool = False) -> None:
        from kprof.inputs import terminal_safe

        self._stream = stream
        self._safe = terminal_safe
        self._tolerant = tolerant

    def write(self, text: str) -> int:
        try:
            self._stream.write(self._safe(text) if isinstance(text, str) else text)
        except (OSError, ValueError):
            if not self._tolerant:
                raise
            self._give_up()
        return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError):
            if not self._tolerant:
                raise
            self._give_up()

    def _give_up(self) -> None:
        try:
            quiet(self._stream.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        self._stream = open(os.devnull, "w")  # noqa: SIM115 - the stream's life, as the one it stands for

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


@contextmanager
def clean_terminal() -> Any:
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = CleanStream(sys.stdout), CleanStream(sys.stderr, tolerant=True)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def closed_streams() -> int | None:
    """A closed standard stream (``>&-``, ``2>&-``; Python leaves it None): stderr closed is written
    to nowhere, so the exit code alone tells the error; stdout closed is one line and exit 7 before
    anything runs, as there is nowhere to print what kprof would measure."""
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - kept for the process's life, as stderr is
    if sys.stdout is None:
        say("kprof: error: standard output is closed (>&-): nothing kprof prints could be read; "
            "give it a file or "
             "a pipe (> out.txt)")
        return EXIT_OUTPUT
    return None


def say(line: str) -> None:
    """One line on stderr; a stderr that cannot take it (a full disk, 2>/dev/full) changes no exit
    code."""
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        quiet(2)


def quiet(fd: int) -> None:
    """Point ``fd`` at /dev/null so the interpreter's own flush at exit has nothing to fail on."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except (OSError, ValueError):
        pass


def tolerant_streams() -> None:
    """A terminal or a pipe whose encoding cannot show a character (an ASCII-only locale) gets an
    escape for it, never a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a stream that cannot be reconfigured keeps its own rule
                pass


def flushed(code: int) -> int:
    """Standard output flushed before the exit code is final: output to a full disk (``>/dev/full``)
    is one line and exit 7, not an exception at interpreter exit."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        quiet_stdout()
    except OSError as exc:
        failed = output_failed(exc)
        return failed if code == EXIT_OK else code
    return code


def output_failed(exc: OSError) -> int:
    """Standard output could not be written (a full disk): one line on stderr, exit 7."""
    quiet_stdout()
    say(f"kprof: error: cannot write the output: {exc.strerror or exc}")
    return EXIT_OUTPUT


def quiet_stdout() -> None:
    """Point standard output at /dev/null so the interpreter's own flush at exit has nothing to fail
    on."""
    try:
        quiet(sys.stdout.fileno())
    except (OSError, ValueError):  # a stream with no descriptor
        pass


TERMINATED: list[int] = []  # the SIGTERM that stopped this run, if one did


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (a job's time limit, ``timeout``, ``kill``) stops kprof as Ctrl-C does: the running
    child's process group is killed, and what was measured is printed and kept. Only from the main
    thread, and the previous handler is put back."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        # said at the end as 143, the shell's code for SIGTERM, not Ctrl-C's 130
        TERMINATED.append(signum)
        raise KeyboardInterrupt

    TERMINATED.clear()
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)

