"""The small child program that every tool wraps: ``python -m kprof.child.runner JOB.json
RESULT.json``.

It reads one typed :class:`~kprof.launch.job.Job` (never the spec), loads the target into a
:class:`~kprof.child.workspace.Workspace`, and runs the job's mode: :func:`run_mode` (launch inside
an NVTX push/pop range in domain ``kprof`` named after the target, verify, time one launch),
:func:`values_mode` (the values detector) or :func:`kprof.child.timing.timing_mode` (``kprof
bench``'s loop). It never is the CLI: compute-sanitizer and ncu wrap this process, so a fault or a
hang takes down this child only. The result file is rewritten at each phase (``device``, ``loaded``,
``allocated``, ``launch``, ``launched``, ``verified``, ``timed``, ``done``), so the parent knows
how far a child got before it died.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kprof.child.workspace import Result

if TYPE_CHECKING:
    from kprof.child.workspace import Workspace
from kprof.launch.job import Job, RunMode, TimingMode, ValuesMode


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == "--batch":
        return batch(Path(args[1]))
    if len(args) != 2:
        print("usage: python -m kprof.child.runner JOB.json RESULT.json | --batch MANIFEST.json",
              file=sys.stderr)
        return 2
    return run_one(Path(args[0]), Path(args[1]))


def run_one(job_path: Path, result_path: Path, *, timed: bool = False) -> int:
    """One job: 0 done, 1 a wrong result, 3 an error (in the result file, with its type). ``timed``:
    the job's own wall time goes into its result as ``job_seconds`` (a batch's jobs share one
    process)."""
    import time

    result = Result(result_path)
    t0 = time.perf_counter()
    try:
        from kprof.launch import job as job_mod

        code = execute(job_mod.from_json(job_path.read_text()), result)
    except Exception as exc:  # noqa: BLE001 - reported to the parent in the result file, never lost
        from kprof.errors import CudaError, KprofError

        # what the error is (its kind) and its exit code: the parent acts on these, not on the class
        # name
        error: dict[str, object] = {"kind": "internal", "exit_code": None,
                                    "type": type(exc).__name__, "message": str(exc)}
        if isinstance(exc, KprofError):
            error.update(kind=exc.kind, exit_code=exc.exit_code)
        if isinstance(exc, CudaError):
            error.update(call=exc.call, result=exc.result)
        if not isinstance(exc, KprofError):
            error["traceback"] = traceback.format_exc()
        elif log := exc.log:
            error["log"] = log  # the user's own traceback, for an error in their reference
        result.data["status"] = "error"
        result.data["error"] = error
        code = 3
    if timed:
        result.data["job_seconds"] = round(time.perf_counter() - t0, 4)
    result.write()
    return code


def batch(manifest: Path) -> int:
    """Several jobs one after the other in this one process (kprof.launch.launch.run_batch): the
    manifest is ``{"jobs": [[JOB.json, RESULT.json], ...], "progress": FILE}``. Before each job a
    line ``INDEX MONOTONIC-SECONDS`` goes to the progress file, so the parent can hold each job to
    its own time limit. The batch stops after a job that ends in an error (a broken context fails
    every job after it): the parent runs the rest alone. ``"keep_context": DEVICE`` holds that GPU's
    primary context for the whole batch (a verification's sizes: one context, not one a size); no
    tool's batch asks for it, so a sanitizer still sees each job's context end."""
    import json
    import time
    from contextlib import nullcontext

    from kprof.child.device import primary_context_held

    plan = json.loads(manifest.read_text())
    progress = Path(plan["progress"])
    keep = plan.get("keep_context")
    with primary_context_held(keep) if isinstance(keep, int) and not isinstance(keep, bool) else nullcontext():
        for i, (job_path, result_path) in enumerate(plan["jobs"]):
            with progress.open("a") as out:
                out.write(f"{i} {time.monotonic():.3f}\n")
            if run_one(Path(job_path), Path(result_path), timed=True) == 3:
                return 3
    return 0


def execute(job: Job, result: Result) -> int:
    """Load the target and run the job's mode; the workspace is closed on every path that
    returns."""
    from kprof.child.workspace import Workspace

    target = job.target
    first = target.steps[0] if target.steps else None
    result.phase("init", kernel=target.name, sizes=target.sizes,
                 launch={"grid": first.grid, "block": first.block, "shared_mem": first.shared_mem}
                 if first else {})
    # Guard zones around every buffer where the run is verified and no tool watches the bounds
    # itself.
    ws = Workspace(target, result.phase, guard=isinstance(job.mode, RunMode) and job.mode.verify)
    if isinstance(job.mode, ValuesMode):
        code = values_mode(ws, job.mode, result)
    elif isinstance(job.mode, TimingMode):
        from kprof.child.timing import timing_mode

        code = timing_mode(ws, job.mode, result)
    else:
        code = run_mode(ws, job.mode, result)
    if ws.math_mode:  # a cuBLAS step, or the timed library routine
        result.data["math_mode"] = ws.math_mode
    ws.close()
    result.write()
    return code


def in_range(ws: Workspace, name: str) -> Any:
    """A callable that launches every step of the target inside the NVTX range ``kprof@name``."""
    from kprof.child.workspace import nvtx_module

    nvtx = nvtx_module()

    def launch() -> None:
        if nvtx is not None:
            nvtx.push_range(name, domain="kprof")
        try:
            ws.launch()
        finally:
            if nvtx is not None:
                nvtx.pop_range(domain="kprof")

    return nvtx is not None, launch


def upload_ready(ws: Workspace, **how: Any) -> None:
    """The inputs uploaded (outputs poisoned) and a Python operation prepared, outside the NVTX
    range, so that a profiler sees the launches of one call, not a compile's or an autotuner's. A
    ``prepare`` runs the operation on these buffers: they are uploaded again after it, so its
    results can hide neither an unwritten output nor an in-place update."""
    ws.upload(**how)
    if ws.ready():
        ws.upload(**how)


def run_mode(ws: Workspace, mode: RunMode, result: Result) -> int:
    has_nvtx, launch = in_range(ws, ws.target.name)
    result.data["nvtx"] = has_nvtx
    upload_ready(ws, poison=mode.poison)
    result.phase("launch")
    for _ in range(max(1, mode.repeat)):  # repeat: for a profiler that times every launch
        launch()
    ws.dev.synchronize()
    result.phase("launched", **ws.python_data)
    checks: list[dict[str, object]] = []
    if mode.verify:
        checks = ws.verify(ws.download(), frontier=mode.frontier, digest=mode.digest)
        result.phase("verified", checks=checks)
    if mode.time:
        start, end = ws.dev.event(), ws.dev.event()
        launch()  # warm-up: first-launch costs (module load, caches) stay out of the number
        ws.dev.synchronize()
        ws.dev.record(start)
        launch()
        ws.dev.record(end)
        result.phase("timed", time_ms=ws.dev.elapsed_ms(start, end))
    ok = all(c["ok"] for c in checks)
    result.finish("ok" if ok else "failed")
    return 0 if ok else 1


def values_mode(ws: Workspace, mode: ValuesMode, result: Result) -> int:
    from kprof.child import valuescheck as values

    has_nvtx, launch = in_range(ws, ws.target.name)
    result.data["nvtx"] = has_nvtx
    scrub = _scrubber(ws, mode.scrub_cubin)
    def one_run(alternate: bool) -> Any:
        upload_ready(ws, alternate=alternate)
        if scrub is not None:
            scrub(values.smem_pattern(alternate))
        result.phase("launch")
        launch()
        ws.dev.synchronize()
        return ws.download()

    runs = [(alternate, one_run(alternate)) for alternate in values.run_plan(mode.repeats)]
    shaken = []
    if ws.target.shaken_cubin and not ws.target.python:
        # the same buffers, the kernels with kprof's warp delays
        ws.use_cubin(ws.target.shaken_cubin)
        shaken = [one_run(False) for _ in range(mode.shaken_runs)]
    result.phase("launched")
    findings = values.analyse(ws.target, runs, ws.expected(), ws.scales(), shaken=shaken)
    result.finish("ok", findings=[f.to_dict() for f in findings], scrubbed=scrub is not None,
                  shaken=len(shaken))
    return 0


def _scrubber(ws: Workspace, cubin: str | None) -> Any:
    """A launcher that fills every SM's shared memory with a pattern, or None without its cubin.

    Shared memory is not cleared between kernels, so a kernel that reads shared memory it never
    wrote sees what the scrubber left: different patterns between runs make such reads visible.
    """
    if not cubin:
        return None
    dev, info = ws.dev, ws.info
    func = dev.function(dev.load_module(Path(cubin).read_bytes()), "kprof_scrub")
    smem = info.max_shared_per_block_optin
    dev.set_max_dynamic_shared(func, smem)

    def scrub(pattern: int) -> None:
        dev.launch(func, (info.sm_count * 2, 1, 1), (1024, 1, 1), smem,
                   [("uint32", pattern), ("uint32", smem // 4)])
        dev.synchronize()

    return scrub


if __name__ == "__main__":
    sys.exit(main())
