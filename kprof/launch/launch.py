"""Run a built kernel in a child process and bring back what it measured.

The parent never touches the GPU for a launch: it writes a job file, starts
``python -m kprof.child.runner`` through :mod:`kprof.proc` with a timeout, and reads the result
file. A kernel that faults (illegal address kills the CUDA context), hangs or crashes the
interpreter takes down the child only; the parent reports what happened, with the child's output.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from kprof import proc
from kprof.errors import NoGPUError, TargetError, UsageError
from kprof.launch import childresult
from kprof.launch.childresult import ChildError, ChildResult
from kprof.launch.job import Job

DEFAULT_TIMEOUT = 300.0


def runner_argv(job_path: Path, result_path: Path) -> list[str]:
    return [sys.executable, "-m", "kprof.child.runner", str(job_path), str(result_path)]


def run(job: Job, *, timeout: float = DEFAULT_TIMEOUT,
        wrapper: list[str] | None = None) -> tuple[proc.Completed, ChildResult]:
    """Run the child (optionally under ``wrapper``, e.g. compute-sanitizer's argv) and read its
    result."""
    with tempfile.TemporaryDirectory(prefix="kprof-") as tmp:
        job_path = Path(tmp) / "job.json"
        result_path = Path(tmp) / "result.json"
        job_path.write_text(job.to_json())
        argv = (wrapper or []) + runner_argv(job_path, result_path)
        done = proc.run(argv, timeout=timeout, env=proc.child_env())
        data = childresult.read(result_path)
    return done, data


def batch_argv(manifest: Path) -> list[str]:
    return [sys.executable, "-m", "kprof.child.runner", "--batch", str(manifest)]


def run_batch(jobs: list[Job], *, timeout: float = DEFAULT_TIMEOUT,
              wrapper: list[str] | None = None,
              keep_context: bool = False) -> tuple[proc.Completed, list[ChildResult]]:
    """Run several jobs in one child, one after the other (kprof.child.runner.batch), each held to
    ``timeout`` of its own: the child, its start and every job that came back. A job the child
    never reached, or did not finish, has an empty or unfinished result; the caller runs it again
    alone. ``keep_context``: one CUDA context for the batch (only where no tool wraps the child)."""
    import time

    with tempfile.TemporaryDirectory(prefix="kprof-") as tmp:
        folder = Path(tmp)
        pairs = [(folder / f"job-{i}.json", folder / f"result-{i}.json") for i in range(len(jobs))]
        for (job_path, _), job in zip(pairs, jobs):
            job_path.write_text(job.to_json())
        progress = folder / "progress.txt"
        progress.write_text("")
        manifest = folder / "batch.json"
        plan: dict[str, object] = {"jobs": [[str(a), str(b)] for a, b in pairs],
                                   "progress": str(progress)}
        if keep_context and not wrapper and jobs:
            plan["keep_context"] = jobs[0].target.device
        manifest.write_text(json.dumps(plan))

        def too_long() -> bool:
            """The job now running started more than ``timeout`` ago (the child's start counts as
            the first job's)."""
            lines = progress.read_text(errors="replace").split("\n")[-2:] if progress.stat().st_size < 1 << 20 else []
            started = next((float(line.split()[1]) for line in reversed(lines) if len(line.split()) == 2), None)
            return started is not None and time.monotonic() - started > timeout

        # The whole batch: every job's limit, plus one for the child's start before the first job.
        done = proc.run((wrapper or []) + batch_argv(manifest), timeout=timeout * (len(jobs) + 1),
                        env=proc.child_env(), watch=too_long)
        datas = [childresult.read(result_path) for _, result_path in pairs]
    return done, datas


def run_kernel(job: Job, *, timeout: float = DEFAULT_TIMEOUT) -> ChildResult:
    """Run a job in :class:`~kprof.launch.job.RunMode` and return what the child measured; a hang, a
    fault or a crash is a :class:`~kprof.errors.TargetError`."""
    done, data = run(job, timeout=timeout)
    raise_for_child(job.target.name, done, data, timeout)
    return _run_result(job, data)


def run_kernels(jobs: list[Job], *, timeout: float = DEFAULT_TIMEOUT) -> list[ChildResult]:
    """Several :class:`~kprof.launch.job.RunMode` jobs in one child (:func:`run_batch`: one
    interpreter, one CUDA context, each job held to its own ``timeout``), each with what the child
    measured for it, in order: the same as :func:`run_kernel` of each, without a child start per
    job. A job the child did not finish (a fault broke its context, it hung, the child died) runs
    again alone, so its error is
    :func:`run_kernel`'s; the jobs after it too."""
    _, datas = run_batch(jobs, timeout=timeout, keep_context=True)
    out = []
    for job, data in zip(jobs, datas):
        if data.judged:
            out.append(_run_result(job, data))
        else:
            out.append(run_kernel(job, timeout=timeout))
    return out


def _run_result(job: Job, data: ChildResult) -> ChildResult:
    return replace(data, kernel=job.target.name)


def raise_for_child(name: str, done: proc.Completed, data: ChildResult, timeout: float) -> None:
    """Turn a child that hung, crashed or hit a CUDA error into one clear error."""
    phase = data.phase
    if done.timed_out:
        raise TargetError(
            f"{name} did not finish within {timeout:g} s (last phase: {phase}); the kernel may "
            "hang: check its loop bounds, or raise --timeout",
            done.tail(),
        )
    if data.status in ("ok", "failed"):
        return
    if data.status == "error":
        err = data.error or ChildError("internal", "")
        kind, message = err.kind, err.message
        if kind == "no-gpu":
            raise NoGPUError(f"{message}; `kprof build`, `kprof list` and `kprof doctor` still work")
        if kind == "usage":
            raise UsageError(message)
        if kind == "user-code":
            from kprof.errors import UserCodeError

            raise UserCodeError(f"{name}: {message}", err.log)
        if kind == "cuda":
            hint = ""
            if err.result in ("CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_MISALIGNED_ADDRESS",
                              "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_LAUNCH_FAILED"):
                hint = f"; the kernel faulted: `kprof sanitize {name} --tool memcheck` shows where"
            raise TargetError(f"{name}: {message} (phase: {phase}){hint}", done.tail())
        raise TargetError(f"{name}: runner failed in phase {phase}: {err.type or kind}: {message}",
                          err.traceback or done.tail())
    how = f"was killed by {done.signal_name}" if done.signal_name else f"exited with code {done.returncode}"
    raise TargetError(f"{name}: the runner {how} during phase {phase} without a result",
                      done.tail())
