"""What a program launches, counted in one run of it beside the tools' runs: kprof's launch tally
(:mod:`kprof.hooks.launch_tally`, CUPTI callbacks on the driver and runtime launch calls and on each
module's load) loaded into its Python processes, read into a
:class:`kprof.tools.programs.coverage.Coverage`.

The count cannot run inside a tool's run: compute-sanitizer holds CUPTI's one subscriber there (the
tally's subscribe fails with ``ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED``: seen on an H200, driver
580.159.04, compute-sanitizer 2025.3.1). So ``kprof sanitize -- CMD`` runs the program once more,
with no tool, side by side with the tools where ``--jobs`` allows, and each tool's line says what
that run launched; a program that launched no kernel there is NOT CHECKED under every tool.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from kprof import inputs, proc
from kprof.tools.programs import allocators, coverage, exitcode

MAX_TALLY_BYTES = 8 << 20  # the tally writes a line per kernel: 10,000 kernels at most per process


def count(cmd: list[str], *, timeout: float, env: dict[str, str], cwd: str | Path | None = None,
          pools_off: bool | None = None) -> coverage.Coverage:
    """Run ``cmd`` once with the launch tally and say what it launched; never raises for the
    program's sake (a program that fails or hangs leaves the launches counted until then: at least
    that many)."""
    with tempfile.TemporaryDirectory(prefix="kprof-count-") as tmp:
        status, tally = Path(tmp) / "status.json", Path(tmp) / "tally.jsonl"
        done = proc.run(exitcode.wrap(cmd, status, tally), timeout=timeout,
                        env=allocators.with_hooks(env), cwd=cwd)
        text = inputs.read_text(tally, "the launch tally", limit=MAX_TALLY_BYTES, errors="replace") if (
            tally.is_file()) else ""
        ended = exitcode.read_status(status)
    return settle(coverage.from_tally(text, pools_off=pools_off), ended, done.timed_out)


def settle(checked: coverage.Coverage, ended: exitcode.Status | None,
           timed_out: bool) -> coverage.Coverage:
    """What the count's run says, given how that run ended. A count whose run failed (a port another
    run held, a crash) and saw no launch says so and counts nothing: it leaves the verdict to each
    tool and never makes a clean program NOT CHECKED. Pure."""
    failed = timed_out or ended is None or ended.returncode != 0
    if failed and checked.counted and not checked.launches:
        how = "timed out" if timed_out else (ended.how() if ended else "did not start")
        checked = replace(checked, launches=None,
                          why=f"the count's own run of the program {how}, so it counted nothing")
    elif timed_out and checked.counted:
        checked = replace(checked, complete=False)
    return replace(checked, alongside=True)
