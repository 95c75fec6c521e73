"""Helpers the tests share: a typed job for a spec without building it (the cubin is named, not
made)."""

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


def failing_nvcc(folder: Path, error: str, monkeypatch) -> Path:
    """A stand-in nvcc 13.0 for sm_90 that fails every compile with ``error`` on stderr, chosen as
    kprof's compiler (``KPROF_NVCC``, ``KPROF_COMPILER=nvcc``): a toolchain that builds nothing,
    whatever the kernel."""
    folder.mkdir(parents=True, exist_ok=True)
    fake = folder / "nvcc"
    fake.write_text("#!/bin/sh\ncase \"$1\" in --version) echo 'Cuda compilation tools, release "
                    "13.0, V13.0.88';;\n--list-gpu-code) echo sm_90;;\n"
                    f"*) echo '{error}' >&2; exit 1;; esac\n")
    fake.chmod(0o755)
    monkeypatch.setenv("KPROF_NVCC", str(fake))
    monkeypatch.setenv("KPROF_COMPILER", "nvcc")
    return fake
