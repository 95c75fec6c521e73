"""Where a program launched each kernel from: the user's Python line, found in one run of the
program with kprof's launch tally in its site mode (:mod:`kprof.hooks.launch_tally`: CUPTI callbacks
on the driver and runtime launch calls, the launching thread's Python frames read inside the
callback).

Nsight Compute cannot give it: it holds CUPTI's one subscriber in its own run (CUPTI's limitations:
an application that calls CUPTI cannot run under Nsight Compute), and its report names the kernel,
not the Python line. So ``kprof profile -- CMD`` runs the program once more with no tool, after
ncu's run, and stops it as soon as it has launched as many kernels as ncu looked at and every kernel
ncu profiled (``KPROF_LAUNCH_SITES``/``KPROF_LAUNCH_SITES_OF``). Parsing is pure
(:func:`from_tally`).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kprof import inputs, proc
from kprof.tools.programs import allocators, exitcode

MAX_SITES_BYTES = 16 << 20
NO_FRAME = "no Python frame on the launching thread (a C++ thread: autograd's backward, a library's worker)"


@dataclass(frozen=True)
class LaunchSite:
    """One place in the user's code that launched a kernel (the first launch from there)."""
    # as the launch call named it: mangled for C++ kernels, as written for Triton and extern "C"
    kernel: str
    path: str | None  # None: no frame of the user's on the launching thread
    line: int | None
    func: str | None
    first_launch: int  # the process's launches so far, at the first launch from here
    pid: int

    def where(self) -> str:
        if not self.path:
            return NO_FRAME
        return f"{self.path}:{self.line}" + (f" ({self.func})" if self.func
                                             and self.func != "<module>" else "")


@dataclass(frozen=True)
class Sites:
    """Every kernel's launch sites from one run of the program, or why there are none."""
    by_kernel: dict[str, tuple[LaunchSite, ...]] = field(default_factory=dict)
    counted: bool = False  # some Python process of the program ran the tally
    why: str = ""  # why not (no Python process; CUPTI could not start; the run was skipped)
    complete: bool = True  # False: the run timed out, so later kernels may lack their sites

    def to_dict(self) -> dict[str, object]:
        return {"counted": self.counted, "why": self.why, "complete": self.complete,
                "kernels": {k: [s.where() for s in v] for k, v in self.by_kernel.items()}}


def from_tally(text: str) -> Sites:
    """The tally's log (every process's lines) as :class:`Sites`."""
    from kprof.tools.programs import tallylog

    events = tallylog.read(text)
    started = [e for e in events if isinstance(e, tallylog.Started)]
    found: dict[str, list[LaunchSite]] = {}
    for e in events:
        if isinstance(e, tallylog.Site):
            found.setdefault(e.name, []).append(LaunchSite(e.name, e.path, e.line, e.func,
                                                           e.launches, e.pid))
    if not any(e.ok for e in started):
        why = next((e.why for e in started if not e.ok), "")
        return Sites(why=why
                     or "the program started no Python process kprof could hook (a binary's "
                        "launches have no Python line)")
    return Sites({k: tuple(v) for k, v in found.items()}, counted=True)


def run(cmd: list[str], *, timeout: float, env: dict[str, str], cwd: str | Path | None = None,
        stop_after: int = 0, kernels: tuple[str, ...] = ()) -> Sites:
    """Run ``cmd`` once with the tally in its site mode; stop it once it has made ``stop_after``
    launches and launched each of ``kernels`` (bare names; 0: run to its end). Never raises for the
    program's sake."""
    with tempfile.TemporaryDirectory(prefix="kprof-sites-") as tmp:
        status, tally = Path(tmp) / "status.json", Path(tmp) / "tally.jsonl"
        run_env = {**allocators.with_hooks(env),
                   "KPROF_LAUNCH_SITES": str(stop_after) if stop_after else "all",
                   "KPROF_LAUNCH_SITES_OF": json.dumps(sorted(set(kernels)))}
        done = proc.run(exitcode.wrap(cmd, status, tally), timeout=timeout, env=run_env, cwd=cwd)
        text = inputs.read_text(tally, "the launch sites", limit=MAX_SITES_BYTES, errors="replace") if (
            tally.is_file()) else ""
    sites = from_tally(text)
    return Sites(sites.by_kernel, sites.counted, sites.why, complete=not done.timed_out)
