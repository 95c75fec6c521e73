"""The one process runner: find an external tool, run a list argv with a timeout, keep its output.

Every external program kprof starts (nvcc, compute-sanitizer, ncu, the runner child) goes
through :func:`run`: a list argv, never a shell string, and a timeout that kills the whole process
group, and stdout/stderr kept on the result so nothing the child printed is lost.
"""

from __future__ import annotations

import locale
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO, cast

from kprof.errors import ToolNotFoundError

INSTALL_HINTS = {
    "nvcc": (
        "install the CUDA toolkit, or `pip install \"kprof[cuda13]\"` for a pinned nvcc from pip; "
        "kprof looks in pip's nvidia wheels, CUDA_HOME/CUDA_PATH and PATH"
    ),
    "compute-sanitizer": (
        "install the CUDA toolkit, or `pip install \"kprof[cuda13]\"` (its "
        "nvidia-cuda-sanitizer-api wheel ships compute-sanitizer; on a CUDA "
        "12 driver, kprof[cuda12])"
    ),
    "ncu": (
        "install Nsight Compute (it ships with the CUDA toolkit, or from "
        "developer.nvidia.com/nsight-compute); it is not on pip. Put ncu on PATH or set CUDA_HOME"
    ),
    "cuobjdump": "install the CUDA toolkit (cuobjdump ships beside nvcc)",
}


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int | None  # None when it timed out
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def signal_name(self) -> str | None:
        if self.returncode is not None and self.returncode < 0:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return f"signal {-self.returncode}"
        return None

    def tail(self, lines: int = 20) -> str:
        text = (self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr).rstrip()
        return "\n".join(text.splitlines()[-lines:])


_WHEEL_BINARIES = {"compute-sanitizer": "nvidia/cuda_sanitizer_api/bin/compute-sanitizer"}


ROOT = Path(__file__).resolve().parent.parent  # a source checkout: a child imports this kprof


def in_sys_path(relative: str) -> Path | None:
    """A pip wheel's file under a folder of sys.path: a ``pip install --target`` folder on
    PYTHONPATH is one cuda-pathfinder does not search."""
    for entry in sys.path:
        candidate = Path(entry or ".") / relative
        if candidate.exists():
            return candidate
    return None


def child_env() -> dict[str, str]:
    """The environment of a kprof child (the runner, NVRTC's compiler): it finds this kprof even
    when kprof is run from a source checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _make_executable(path: Path) -> bool:
    """Add the executable bit wherever the file is readable (u, g, o); False where that is not
    allowed (a read-only install, another user's file)."""
    try:
        mode = path.stat().st_mode
        path.chmod(mode | ((mode & 0o444) >> 2))
    except OSError:
        return False
    return os.access(path, os.X_OK)


def find_tool(name: str) -> Path:
    """Locate an NVIDIA command-line tool: cuda-pathfinder first (pip wheels, CUDA_HOME), then
    PATH."""
    env_override = os.environ.get(f"KPROF_{name.upper().replace('-', '_')}")
    if env_override:
        path = Path(env_override)
        if path.is_file() and os.access(path, os.X_OK):
            return path
        raise ToolNotFoundError(name,
                                f"KPROF_{name.upper().replace('-', '_')}={env_override} is "
                                "not an executable"
                                + (f" (it is a file: chmod +x {env_override})" if path.is_file()
                                   else ""))
    found: str | None = None
    try:
        from cuda.pathfinder import find_nvidia_binary_utility

        found = find_nvidia_binary_utility(name)
    except Exception:  # noqa: BLE001 - an old cuda-pathfinder, or one that does not know this tool
        found = None
    # a CUDA 12 wheel cuda-pathfinder did not find (a --target folder)
    if not found and name in _WHEEL_BINARIES:
        candidate = in_sys_path(_WHEEL_BINARIES[name])
        if candidate is not None and candidate.is_file():
            # seen: nvidia-cuda-sanitizer-api-cu12 12.9.79 installs it without the executable bit
            # (0644 in the wheel): set the bit at first use, as a user would, where the file is
            # theirs to change
            if not os.access(candidate, os.X_OK) and not _make_executable(candidate):
                raise ToolNotFoundError(name,
                                        f"{candidate} is not executable (its wheel ships it so) "
                                        f"and kprof could not set the bit: chmod +x {candidate}")
            found = str(candidate)
    if not found:
        found = shutil.which(name)
    if not found:
        for base in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
            if base and (Path(base) / "bin" / name).is_file():
                found = str(Path(base) / "bin" / name)
                break
    if not found and name == "ncu":
        for candidate in sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu"), reverse=True):
            found = str(candidate)
            break
    if not found:
        raise ToolNotFoundError(name, INSTALL_HINTS.get(name, "install it and put it on PATH"))
    return Path(found)


@lru_cache(maxsize=1)
def _prctl() -> Callable[[int, int], int] | None:
    """libc's prctl, looked up once a process (the child only calls it); None off Linux or where it
    is not."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return cast(Callable[[int, int], int], ctypes.CDLL(None, use_errno=True).prctl)
    except (OSError, AttributeError):
        return None


def _dies_with_kprof() -> Callable[[], None] | None:
    """On Linux, the child is killed when kprof is (``PR_SET_PDEATHSIG``): a SIGKILL of kprof, which
    no handler sees, left its GPU child running a point to its end (on an H200, found by
    scripts/interrupts.py). A child whose parent is gone before it asked (a race with that kill)
    ends at once. None elsewhere."""
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def ask() -> None:
        prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
        if os.getppid() != parent:
            os._exit(137)

    return ask


# how long kprof reads on after the child ended, or was stopped, while something keeps its pipes
PIPE_GRACE_S = 5.0


def run(
    argv: list[str],
    *,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    watch: Callable[[], bool] | None = None,
    poll: float = 0.5,
) -> Completed:
    """Run ``argv``; on timeout stop it and all it started, and return what it printed.

    ``watch`` is asked every ``poll`` seconds while the child runs (it may print progress); when it
    returns True the child is stopped as on a timeout (a test past its own time limit). The child is
    done when it and its process group are, not when every pipe closes: a process it left running in
    a session of its own (a daemon, a server) that keeps stdout open no longer holds kprof until the
    timeout, which then called a finished program one that timed out; kprof reads
    :data:`PIPE_GRACE_S` more and says that it stopped."""
    start = time.monotonic()
    if _STOPPING.is_set():  # kprof is stopping (Ctrl-C in the main thread): no new child
        raise KeyboardInterrupt
    try:
        proc = subprocess.Popen(
            [str(a) for a in argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            start_new_session=True,  # so a timeout can kill the child's children too
            preexec_fn=_dies_with_kprof(),
        )
    except FileNotFoundError:
        raise ToolNotFoundError(str(argv[0]), INSTALL_HINTS.get(Path(str(argv[0])).name, "not found")) from None
    readers = (_Reader(proc.stdout), _Reader(proc.stderr))
    try:
        ended = _wait(proc, start, timeout, watch, poll) and _group_done(proc, start, timeout, readers)
    except KeyboardInterrupt:
        # asked to stop (Ctrl-C, SIGTERM): as a terminal would ask, so a compiler removes its
        # temporary files (nvcc's tmpxft_*), then killed; a second Ctrl-C comes after
        with deferred_interrupts():
            _stop_politely(proc)
            _kill_tree(proc)
            # its output goes unread: the readers close their pipes as the stopped processes' ends close
            proc.wait()
        raise
    if not ended:
        _kill_tree(proc)
        proc.wait()
    out, err = _read_on(readers, 0.0 if ended else PIPE_GRACE_S, ended)
    return Completed(tuple(map(str, argv)), proc.returncode if ended else None, out, err,
                     time.monotonic() - start, timed_out=not ended)


def _group_done(proc: subprocess.Popen[bytes], start: float, timeout: float | None,
                readers: tuple[_Reader, ...]) -> bool:
    """After the child's exit, until its pipes close (True) while the rest of its process group runs
    (the program's own work: a shell's background job, a child it did not wait for), as before; once
    no process of the group is left, at most :data:`PIPE_GRACE_S` more for what holds them from a
    session of its own (a daemon, a server). False: the time ran out first."""
    quiet_since: float | None = None
    main = threading.current_thread() is threading.main_thread()
    while any(r.is_alive() for r in readers):
        if not main and _STOPPING.is_set():
            raise KeyboardInterrupt
        now = time.monotonic()
        if timeout is not None and now - start >= timeout:
            return False
        if _group_alive(proc.pid):
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since >= PIPE_GRACE_S:
            return True
        for r in readers:
            r.join(0.05)
    return True


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # there, and not ours to signal
    return True


# Set by the main thread's Ctrl-C or SIGTERM while other threads run children (kprof build --all, the
# tools side by side): each of those children is stopped as the main thread's would be, and no new
# one starts (a signal reaches the main thread alone).
_STOPPING = threading.Event()
STOP_POLL_S = 0.2  # how often a child's wait in another thread looks at _STOPPING


def stop_children() -> None:
    """Stop every child that threads other than the main one are running, and start no other, until
    :func:`children_may_run`."""
    _STOPPING.set()


def children_may_run() -> None:
    _STOPPING.clear()


def _wait(proc: subprocess.Popen[bytes], start: float, timeout: float | None,
          watch: Callable[[], bool] | None, poll: float) -> bool:
    """Until the child exits (True), or its time is up or ``watch`` says stop (False); in a thread
    other than the main one, a KeyboardInterrupt once :func:`stop_children` is called."""
    main = threading.current_thread() is threading.main_thread()
    while True:
        if not main and _STOPPING.is_set():
            raise KeyboardInterrupt
        left = None if timeout is None else timeout - (time.monotonic() - start)
        if left is not None and left <= 0:
            return False
        step = left if watch is None else (poll if left is None else min(poll, left))
        if not main:
            step = STOP_POLL_S if step is None else min(step, STOP_POLL_S)
        try:
            proc.wait(timeout=step)
        except subprocess.TimeoutExpired:
            if watch is not None and watch():
                return False
            continue
        if watch is not None:
            watch()  # the last events the child wrote
        return True


KEEP_HEAD = 8 << 20  # of a pipe's output kprof keeps its first 8 MiB ...
# ... and its last 56 MiB (the tools' reports go to files; ncu's table of 1,000 launches is ~3 MB)
KEEP_TAIL = 56 << 20


class _Reader(threading.Thread):
    """One of the child's pipes read to its end in a thread of its own, as the bytes come. Of a long
    output (a training run's log under the tools) the first :data:`KEEP_HEAD` and the last
    :data:`KEEP_TAIL` bytes are kept,
    with a line saying how much was left out between them: kprof's memory is not the program's log's
    size."""

    def __init__(self, pipe: IO[bytes] | None) -> None:
        super().__init__(daemon=True)
        self.pipe = pipe
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_bytes = 0
        self.seen = 0
        self.lock = threading.Lock()
        self.start()

    def run(self) -> None:
        if self.pipe is None:
            return
        fd = self.pipe.fileno()
        try:
            while chunk := os.read(fd, 1 << 16):
                self._keep(chunk)
        except OSError:
            pass
        finally:
            self.pipe.close()

    def _keep(self, chunk: bytes) -> None:
        with self.lock:
            self.seen += len(chunk)
            room = KEEP_HEAD - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail.append(chunk)
                self.tail_bytes += len(chunk)
                while self.tail_bytes - len(self.tail[0]) >= KEEP_TAIL:
                    self.tail_bytes -= len(self.tail.popleft())

    def text(self) -> str:
        with self.lock:
            left_out = self.seen - len(self.head) - self.tail_bytes
            data = bytes(self.head) + (f"\n(kprof: {left_out:,} bytes of output left out here)\n".encode() if left_out
                                       else b"") + b"".join(self.tail)
        text = data.decode(locale.getpreferredencoding(False), errors="replace")
        return text.replace("\r\n", "\n").replace("\r", "\n")


def _read_on(readers: tuple[_Reader, ...], grace: float, ended: bool = False) -> tuple[str, str]:
    """What the child printed, once its pipes close or ``grace`` seconds from now. A process it
    started that still holds them (in a session of its own, left running by a program that ended) is
    left to them, and the output says so."""
    deadline = time.monotonic() + grace
    for r in readers:
        r.join(max(0.0, deadline - time.monotonic()))
    out, err = (r.text() for r in readers)
    if any(r.is_alive() for r in readers):
        err += ("\n(kprof: a process the program started kept its output open after it ended; "
                f"kprof read on {PIPE_GRACE_S:g} s and stopped)" if ended else
                "\n(kprof: a process the child started kept its pipes open after the stop; what it "
                "printed after that is not here)")
    return out, err


STOP_GRACE_S = 3.0  # how long an interrupted child has to clean up after SIGINT, then SIGTERM, before SIGKILL


def _stop_politely(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT to the child's process group, then SIGTERM, each with a share of :data:`STOP_GRACE_S`
    to end in. A second Ctrl-C meanwhile waits (interrupts are held here): users press it twice, and
    a compiler killed at once leaves its files behind. The group's leader ending is enough: what it
    leaves is killed next."""
    for sig, share in ((signal.SIGINT, 2 / 3), (signal.SIGTERM, 1 / 3)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=STOP_GRACE_S * share)
            return
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Ctrl-C and SIGTERM held while the block runs (an entry of the build cache committed, a
    temporary file removed, a JSON document written), then delivered: what the block does is done
    whole or not begun. Only the main thread receives them; elsewhere, or without
    ``pthread_sigmask``, the block runs as is."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """Stop the child and everything it started: its process group, and every process below it by
    /proc's parent links, those that made a session of their own too (a daemon, a launcher's proxy:
    MPICH's ``hydra_pmi_proxy`` does, though it ends its own ranks when the launcher goes; a process
    a program put in a new session ran on after the group's kill, tests/test_proc.py). Each is
    stopped (SIGSTOP) before any is killed, so none forks or is re-parented away in between; then
    each is killed."""
    stopped: set[int] = set()
    # a process may fork between the walk and its stop: walk again until nothing is new
    for _ in range(5):
        new = tree(proc.pid) - stopped
        if not new:
            break
        for pid in new:
            _signal(pid, signal.SIGSTOP)
        stopped |= new
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    for pid in stopped:
        _signal(pid, signal.SIGKILL)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def tree(root: int) -> set[int]:
    """``root`` and every process below it, by the parent each has in ``/proc`` (a session or a
    group of its own does not change its parent); ``{root}`` where there is no ``/proc`` to read."""
    below: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return {root}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # it ended while the walk went on
        # after the command's name, which may hold spaces and ')'
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1 and fields[1].isdigit():
            below.setdefault(int(fields[1]), []).append(int(name))
    out: set[int] = set()
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo += below.get(pid, [])
    return out
