"""Helpers the tests share: a typed job for a spec without building it (the cubin is named, not made)."""

from __future__ import annotations

from pathlib import Path

from kprof.commands import pipeline
from kprof.launch import childresult
from kprof.launch.childresult import ChildResult
from kprof.launch.job import Job, RunMode, TimingMode, ValuesMode, target_of
from kprof.spec import KernelSpec


def job_for(spec: KernelSpec, cubin: str | Path, sizes: dict[str, int] | None = None, *,
            mode: RunMode | ValuesMode | TimingMode | None = None, preset: str = "default",
            params: dict[str, str] | None = None, seed: int = 0) -> Job:
    resolved = pipeline.resolve(spec, sizes, params=params, preset=preset)
    return Job(target_of(resolved, cubin, seed=seed), mode or RunMode())


def child(data: dict | None = None, **fields: object) -> ChildResult:
    """A child's result as the runner writes it (its version added), read as the parent reads it."""
    return childresult.from_data({"version": childresult.RESULT_VERSION, **(data or {}), **fields})
