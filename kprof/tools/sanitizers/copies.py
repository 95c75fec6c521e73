"""The copies of a user's program that ``kprof sanitize -- CMD`` starts (one per tool, and the
launch count), as the program's own: whether they may run side by side, and what each one gets of
its own.

A user's program is theirs. Copies that run at once collide where the program holds something by
name: a port (torchrun binds its rendezvous on 29500 unless told otherwise: four copies of a
two-rank job at once failed with ``EADDRINUSE`` and the seeded bug went unreported), a file it
writes (a checkpoint, a log, a database), most of the GPU's memory. kprof cannot know that a program
does none of these, so by default the copies run **one after another**; ``--jobs N`` runs N side by
side, the user's word that they are independent. Either way each copy gets:

- a temporary folder of its own (``TMPDIR``), removed after it;
- for torchrun (``torchrun``, ``python -m torch.distributed.run``) with no port of the user's on its
command
  line, a rendezvous port of its own through torchrun's own ``PET_MASTER_PORT``: the user's argv is
  not rewritten. A port the user gave (``--master-port``, ``--rdzv-endpoint``) is kept, so such
  copies never run side by side, whatever ``--jobs`` says;
- where copies ran side by side and one died of the GPU's memory, a run of it alone afterwards, in
place of the
  failed one.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace

from kprof.tools.programs.ranks import launcher
from kprof.tools.sanitizers.checker import Program
from kprof.tools.sanitizers.toolrun import ToolResult

# what a run that died of the GPU's memory says
_OOM = ("out of memory", "cuda_error_out_of_memory", "cudaerrormemoryallocation",
        "outofmemoryerror")


@dataclass(frozen=True)
class Schedule:
    """How many copies run at once, and what decided it (said in the report)."""

    jobs: int
    why: str


def fixed_port(cmd: list[str]) -> str | None:
    """The option of the user's launcher command that fixes its rendezvous port (torchrun's
    ``--master-port 29500``: its launcher row's ``port_options``), or None: up to the script it
    runs, since what follows is the script's own."""
    row = launcher(cmd)
    if row is None:
        return None
    for word in _launcher_words(cmd, row.flags):
        for option in row.port_options:
            if word == option or word.startswith(option + "="):
                return word
    return None


def _launcher_words(cmd: list[str], flags: tuple[str, ...]) -> list[str]:
    """The launcher's own options: the words before the first that names the script or program it
    starts."""
    words = cmd[3:] if len(cmd) > 2 and cmd[1] == "-m" else cmd[1:]
    out = []
    takes_value = False
    for word in words:
        if takes_value:
            out.append(word)
            takes_value = False
        elif word.startswith("-"):
            out.append(word)
            takes_value = "=" not in word and word not in flags
        else:
            break
    return out


def schedule(cmd: list[str], jobs: int | None) -> Schedule:
    """How the copies of ``cmd`` run: one after another by default; ``jobs`` at once where the user
    asks, unless the copies would share a port the command line fixes."""
    # the launcher's row (kprof.tools.programs.ranks.LAUNCHERS) says what its copies share
    row = launcher(cmd)
    port = fixed_port(cmd)
    if row is not None and port is not None:
        return Schedule(1,
                        f"one after another: the command fixes {row.name}'s rendezvous port "
                        f"({port}), which copies side by side would share")
    if row is not None and row.own_port:
        return Schedule(1,
                        f"one after another: {row.name} gives what it starts a port of its own, "
                        "which copies side by side would share")
    if jobs is not None and jobs > 1:
        return Schedule(jobs,
                        f"{jobs} side by side (--jobs {jobs}: the copies are "
                        "independent, on your word)")
    return Schedule(1,
                    "one after another (a program's copies side by side could collide on its "
                    "files, ports or GPU memory; --jobs N runs N at once)")


def free_port() -> int:
    """A TCP port no one listens on now, for one copy's rendezvous."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def copy_env(cmd: list[str]) -> dict[str, str]:
    """What one copy's environment gains besides its own TMPDIR: a rendezvous port of its own
    through the launcher's own variable (torchrun's ``PET_MASTER_PORT``) where the command line sets
    none."""
    row = launcher(cmd)
    if row is not None and row.port_env and fixed_port(cmd) is None:
        return {row.port_env: str(free_port())}
    return {}


@contextlib.contextmanager
def own(program: Program) -> Iterator[Program]:
    """``program`` as one copy runs it: its own temporary folder (removed after) and its own
    rendezvous."""
    folder = tempfile.mkdtemp(prefix="kprof-copy-")
    try:
        env = {**program.env, **copy_env(list(program.cmd)), "TMPDIR": folder}
        yield replace(program, env=env)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def died_of_memory(result: ToolResult) -> bool:
    """Whether a copy's run ended because the GPU's memory ran out (a copy beside it may have held
    it)."""
    if result.status in ("clean", "findings"):
        return False
    text = f"{result.message}\n{result.log}".lower()
    return any(word in text for word in _OOM)
