"""A multi-process job under a tool, rank by rank: ``kprof sanitize -- torchrun --nproc_per_node 2
train.py``, ``-- mpirun -np 2 python prog.py``, ``-- srun ...``. Pure: the parent's side of
:mod:`kprof.hooks.rank_wrap`.

One compute-sanitizer over the whole launcher (``--target-processes all``) checks every rank, but
its one report does not say which process a record came from. So kprof runs the launcher itself with
no tool, and each Python process that is a rank (``RANK``, ``OMPI_COMM_WORLD_RANK``, ``PMI_RANK``,
``PMIX_RANK``, ``SLURM_PROCID``) starts again under the tool, in place, saving to a report of its
own rank (NVIDIA's own advice for MPI jobs is a tool per rank with the rank in the file name). Each
finding then carries its rank; a rank that started and left no report (it died, or hung until the
timeout) is named. A job whose ranks are not Python processes (``mpirun ./app``) is checked the old
way, the launcher under the tool, ranks not told apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from kprof.findings import Finding


@dataclass(frozen=True)
class Launcher:
    """What kprof knows of one launcher of multi-process jobs; a new launcher is a row of
    :data:`LAUNCHERS` and
    its test. Its ranks (:mod:`kprof.hooks.rank_wrap`, :mod:`kprof.hooks.nan_watch`), its copies'
    ports (:mod:`kprof.tools.sanitizers.copies`) and its detection here all read the row."""

    name: str
    commands: tuple[str, ...]  # the executables that start it (``mpirun``, ``mpiexec``)
    modules: tuple[str, ...] = ()  # ``python -m MODULE`` that starts it
    rank_vars: tuple[str, ...] = ()  # the environment variables its ranks read their rank from
    # its options that fix the rendezvous port on the command line
    port_options: tuple[str, ...] = ()
    port_env: str = ""  # where a copy's own rendezvous port goes, when the command line fixes none
    # it gives what it starts a port of its own (copies side by side would share it)
    own_port: bool = False
    # its options that take no value (the script starts after its options)
    flags: tuple[str, ...] = ()


LAUNCHERS = (
    Launcher("torchrun", ("torchrun",), ("torch.distributed.run", "torch.distributed.launch"),
             ("RANK",),
             ("--master-port", "--master_port", "--rdzv-endpoint", "--rdzv_endpoint"),
             "PET_MASTER_PORT",
             flags=("--standalone", "--no-python", "--no_python", "-m", "--module")),
    Launcher("mpirun", ("mpirun", "mpiexec"),
             rank_vars=("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")),
    Launcher("srun", ("srun",), rank_vars=("SLURM_PROCID",), own_port=True),
    Launcher("accelerate", ("accelerate",), rank_vars=("RANK",), own_port=True),  # 29500 by default
    Launcher("deepspeed", ("deepspeed",), rank_vars=("RANK",), own_port=True),
)
# every launcher's rank variables, in the table's order: what a process of a job reads its rank from
# (the hooks get them from kprof through KPROF_RANK_VARS:
# kprof.tools.programs.allocators.with_hooks)
RANK_VARS = tuple(dict.fromkeys(v for launcher in LAUNCHERS for v in launcher.rank_vars))


def launcher(cmd: list[str]) -> Launcher | None:
    """The launcher a command starts (``python -m torch.distributed.run`` is torchrun), or None for
    a single-process program."""
    if not cmd:
        return None
    base = Path(cmd[0]).name
    for row in LAUNCHERS:
        if base in row.commands or (base.startswith("python") and len(cmd) > 2 and cmd[1] == "-m"
                                    and cmd[2] in row.modules):
            return row
    return None


def launcher_of(cmd: list[str]) -> str | None:
    """The name of the launcher a command starts (:func:`launcher`), or None."""
    row = launcher(cmd)
    return row.name if row else None


def rank_argv(tool_argv: list[str], folder: Path, tool: str) -> list[str]:
    """One rank's compute-sanitizer argv (up to the program): its report and text in ``folder``
    under its rank (``{rank}``, filled in by the hook), and the rank's own exit code kept (no
    ``--error-exitcode``: a rank with findings must not make the launcher stop the others before
    they write theirs)."""
    out: list[str] = []
    skip = False
    for i, word in enumerate(tool_argv):
        if skip:
            skip = False
            continue
        if word == "--error-exitcode":
            skip = True
            continue
        if i > 0 and tool_argv[i - 1] == "--save":
            word = str(folder / f"{tool}.rank{{rank}}.xml")
        out.append(word)
    return [*out, "--log-file", str(folder / f"{tool}.rank{{rank}}.txt")]


def wrap_env(argv: list[str], folder: Path) -> dict[str, str]:
    """What the launcher's environment gains so its ranks wrap themselves
    (kprof.hooks.rank_wrap)."""
    return {"KPROF_RANK_WRAP": json.dumps({"argv": argv, "folder": str(folder)})}


def mark_env(folder: Path) -> dict[str, str]:
    """What the launcher's environment gains so its ranks only say who they are (no tool to start:
    ncu follows every process of the job itself): each Python rank writes ``rank{R}.json`` with its
    pid in ``folder``."""
    return wrap_env([], folder)


def pids(folder: Path) -> dict[int, int]:
    """Each marked rank's pid, to its rank (:func:`mark_env`); a marker that is not kprof's is
    passed over."""
    out: dict[int, int] = {}
    for path in sorted(folder.glob("rank*.json")):
        try:
            marker = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        pid, rank = (marker.get("pid"), marker.get("rank")) if isinstance(marker, dict) else (None, None)
        if isinstance(pid, int) and isinstance(rank, int):
            out[pid] = rank
    return out


@dataclass(frozen=True)
class RankReport:
    rank: int
    xml: str  # the rank's records ('' when it wrote none)
    text: str  # the tool's text output for the rank
    error: str = ""  # why the rank could not be wrapped


def read(folder: Path, tool: str) -> list[RankReport]:
    """Each rank that started (its marker), with what it left, by rank."""
    out = []
    markers = {int(m.stem[4:]): m for m in folder.glob("rank*.json") if m.stem[4:].isdigit()}
    for rank, marker in sorted(markers.items()):
        try:
            error = str(json.loads(marker.read_text()).get("error") or "")
        except (OSError, ValueError, AttributeError):
            error = ""
        xml, text = folder / f"{tool}.rank{rank}.xml", folder / f"{tool}.rank{rank}.txt"
        out.append(RankReport(rank, xml.read_text(errors="replace") if xml.is_file() else "",
                              text.read_text(errors="replace") if text.is_file() else "", error))
    return out


def with_rank(findings: list[Finding], rank: int) -> list[Finding]:
    return [replace(f, rank=rank) for f in findings]


def silent(reports: list[RankReport], tool: str, timed_out: bool) -> list[str]:
    """A note for each rank that started and left no report under ``tool``."""
    notes = []
    for r in reports:
        if r.error:
            notes.append(f"rank {r.rank} could not be started under {tool} ({r.error}): it was not "
                         "checked")
        elif not r.xml.strip():
            why = ("it was still running at the timeout (hung?)" if timed_out else
                   "it ended before the tool could write it (it died, or the launcher stopped it "
                   "when another rank failed: its kernels until then were not reported)")
            notes.append(f"rank {r.rank} started under {tool} but left no report: {why}")
    return notes
