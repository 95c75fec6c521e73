"""What each command was asked: one frozen options class per command, built once by
:mod:`kprof.commands.cli`
from the checked command line (every value already of its type: sizes and parameters parsed into a
:class:`~kprof.spec.sweep.Sweep`, output paths checked, seconds positive).
:mod:`kprof.commands.commands` takes
these, never argparse's namespace. No field has a default: the parser's are the only ones, and every
field is one the parser sets (tests/test_architecture_records.py). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

from kprof.spec.sweep import Sweep


@dataclass(frozen=True, kw_only=True)
class _Output:
    """What every command has: --json."""

    json: bool


@dataclass(frozen=True, kw_only=True)
class _OnGpu(_Output):
    """A command that builds for a GPU and runs a child: --arch, --timeout."""

    arch: str | None
    timeout: float


@dataclass(frozen=True, kw_only=True)
class ListOptions(_Output):
    arch: str | None


@dataclass(frozen=True, kw_only=True)
class NewOptions(_Output):
    name: str
    dir: str
    like: str | None


@dataclass(frozen=True, kw_only=True)
class BuildOptions(_Output):
    names: list[str]
    all: bool
    force: bool
    param: Sweep
    arch: str | None


@dataclass(frozen=True, kw_only=True)
class RunOptions(_OnGpu):
    name: str
    size: Sweep
    sanitize_sizes: bool
    seed: int


@dataclass(frozen=True, kw_only=True)
class SanitizeOptions(_OnGpu):
    name: str | None
    program: list[str] | None
    tool: str
    size: Sweep
    memcheck_padding: int
    sarif: str | None
    from_xml: str | None
    allocations: str | None
    keep_pools: bool
    all_kernels: bool
    jobs: int | None
    list_tools: bool


@dataclass(frozen=True, kw_only=True)
class CasesOptions(_OnGpu):
    names: list[str]
    list: bool
    jobs: int | None
    bench: bool  # the cheat corpus of kprof bench instead of the seeded bugs
    perf: bool  # the performance corpus: kprof profile's diagnosis against fixed twins
    save_report: str | None = None  # with perf: keep each case's .ncu-rep there


@dataclass(frozen=True, kw_only=True)
class MutantsOptions(_Output):
    name: str
    dry_run: bool
    limit: int | None
    jobs: int | None
    arch: str | None
    timeout: float | None  # None: four times the original's run, at least 20 s


@dataclass(frozen=True, kw_only=True)
class ProfileOptions(_OnGpu):
    names: list[str]
    program: list[str] | None
    kernel: str | None
    nvtx_range: str | None
    launch_skip: int
    launch_count: int
    baseline: str | None
    set_name: Literal["quick", "full"]
    metrics: str
    save_report: str | None
    plot: str | None
    size: Sweep
    param: Sweep
    tries: list[list[str]]
    no_try: bool
    sarif: str | None


@dataclass(frozen=True, kw_only=True)
class OccupancyOptions(_Output):
    name: str
    block: list[int]
    dynamic_smem: int | None
    size: Sweep
    arch: str | None


@dataclass(frozen=True, kw_only=True)
class BenchOptions(_OnGpu):
    names: list[str]
    size: Sweep
    param: Sweep
    baseline: str
    mode: Literal["cold", "warm", "hot"] | None
    timer: Literal["auto", "cupti", "events"]
    rel_stdev: float
    min_time: float
    max_time: float
    plot: str | None
    no_history: bool
    strict: bool  # a benchmark-integrity flag fails the command (exit 1), not only a warning


@dataclass(frozen=True, kw_only=True)
class PeakOptions(_Output):
    refresh: bool
    thorough: bool


@dataclass(frozen=True, kw_only=True)
class HistoryOptions(_Output):
    name: str | None
    limit: int


@dataclass(frozen=True, kw_only=True)
class CompareOptions(_Output):
    before: str
    after: str


@dataclass(frozen=True, kw_only=True)
class DoctorOptions(_Output):
    """kprof doctor: the commands it says whether this machine can run (its exit code)."""
    for_commands: tuple[str, ...] = ("build", "run", "sanitize", "profile", "bench")


BY_COMMAND: dict[str, type] = {
    "list": ListOptions, "new": NewOptions, "build": BuildOptions, "run": RunOptions,
    "sanitize": SanitizeOptions,
    "cases": CasesOptions, "mutants": MutantsOptions, "profile": ProfileOptions,
    "occupancy": OccupancyOptions,
    "bench": BenchOptions, "peak": PeakOptions, "history": HistoryOptions,
    "compare": CompareOptions, "doctor": DoctorOptions,
}


def from_namespace(command: str, namespace: object) -> object:
    """The command's options from argparse's checked namespace: each field the value the parser
    left."""
    cls = BY_COMMAND[command]
    given = vars(namespace)
    return cls(**{f.name: given[f.name] for f in fields(cls)})
