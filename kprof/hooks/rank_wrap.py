"""kprof's rank wrapper, loaded by kprof's sitecustomize when ``KPROF_RANK_WRAP`` is set (``kprof
sanitize -- torchrun ...``, ``-- mpirun ...``: :mod:`kprof.tools.programs.ranks`): a Python process
that is one rank of a multi-process job (it has ``RANK``, ``OMPI_COMM_WORLD_RANK``, ``PMI_RANK``,
``PMIX_RANK`` or ``SLURM_PROCID``) starts again under compute-sanitizer, in place (``os.execv``:
same pid, so the launcher still watches it), saving its records to a file of its own rank. The
launcher itself and processes without a rank run on as they are. Once per process:
``KPROF_RANK_WRAPPED`` marks the wrapped one.

``KPROF_RANK_WRAP`` is a JSON object: ``argv`` (compute-sanitizer's, up to the program; ``{rank}``
in any word is replaced by the rank) and ``folder`` (where ``rank{R}.json`` says the rank started,
with its pid and argv, before the exec). A failure here leaves the process to run unwrapped and says
so in that file. An empty ``argv`` only marks the rank (``kprof profile -- torchrun ...``: ncu
follows every process itself, and kprof tells the ranks apart by the pids the markers give).
"""

from __future__ import annotations

import json
import os
import sys


def rank_of(env: dict[str, str] | os._Environ[str]) -> int | None:
    """The rank from the variables kprof's launchers' table names (``KPROF_RANK_VARS``, set by kprof
    for the program: kprof.tools.programs.ranks.LAUNCHERS), or None."""
    for name in env.get("KPROF_RANK_VARS", "").split(","):
        value = env.get(name, "")
        if value.isdigit():
            return int(value)
    return None


def install() -> None:
    raw = os.environ.get("KPROF_RANK_WRAP")
    rank = rank_of(os.environ)
    if not raw or rank is None or os.environ.get("KPROF_RANK_WRAPPED"):
        return
    marker: dict[str, object] = {"rank": rank, "pid": os.getpid(), "argv": list(sys.orig_argv)}
    try:
        config = json.loads(raw)
        argv = [str(a).replace("{rank}", str(rank)) for a in config["argv"]]
        folder = str(config["folder"])
    except (ValueError, KeyError, TypeError) as exc:
        sys.stderr.write(f"kprof: rank {rank} not wrapped: KPROF_RANK_WRAP is not kprof's ({exc})\n")
        return
    if not argv:  # mark only: this process is rank R, pid P
        try:
            with open(os.path.join(folder, f"rank{rank}.json"), "w", encoding="utf-8") as f:
                json.dump(marker, f)
        except OSError as exc:
            sys.stderr.write(f"kprof: rank {rank} not marked: {exc}\n")
        return
    os.environ["KPROF_RANK_WRAPPED"] = "1"
    try:
        with open(os.path.join(folder, f"rank{rank}.json"), "w", encoding="utf-8") as f:
            json.dump(marker, f)
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(argv[0], [*argv, sys.executable, *sys.orig_argv[1:]])
    except OSError as exc:  # the rank runs on unwrapped; the parent says it was not checked
        with open(os.path.join(folder, f"rank{rank}.json"), "w", encoding="utf-8") as f:
            json.dump({**marker, "error": f"{type(exc).__name__}: {exc}"}, f)
