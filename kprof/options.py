"""What each command was asked: one frozen options class per command, built once by :mod:`kprof.cli`
from the checked command line (every value already of its type: sizes and parameters parsed into a
:class:`~kprof.sweep.Sweep`, output paths checked, seconds positive). :mod:`kprof.commands` takes
these, never argparse's namespace. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from kprof.sweep import Sweep


def _sweep() -> Sweep:
    from kprof import sweep

    return sweep.parse([], "size")


@dataclass(frozen=True, kw_only=True)
class _Output:
    """What every command has: --json."""

    json: bool = False


@dataclass(frozen=True, kw_only=True)
class _OnGpu(_Output):
    """A command that builds for a GPU and runs a child: --arch, --timeout."""

    arch: str | None = None
    timeout: float = 300.0


@dataclass(frozen=True, kw_only=True)
class ListOptions(_Output):
    arch: str | None = None


@dataclass(frozen=True, kw_only=True)
class NewOptions(_Output):
    name: str
    dir: str = "."
    like: str | None = None


@dataclass(frozen=True, kw_only=True)
class BuildOptions(_Output):
    names: list[str] = field(default_factory=list)
    all: bool = False
    force: bool = False
    param: Sweep = field(default_factory=_sweep)
    arch: str | None = None


@dataclass(frozen=True, kw_only=True)
class RunOptions(_OnGpu):
    name: str
    size: Sweep = field(default_factory=_sweep)
    sanitize_sizes: bool = False
    seed: int = 0


@dataclass(frozen=True, kw_only=True)
class SanitizeOptions(_OnGpu):
    name: str | None = None
    program: list[str] | None = None
    tool: str = "all"
    size: Sweep = field(default_factory=_sweep)
    memcheck_padding: int = 256
    sarif: str | None = None
    from_xml: str | None = None
    allocations: str | None = None
    keep_pools: bool = False
    jobs: int | None = None
    timeout: float = 600.0


@dataclass(frozen=True, kw_only=True)
class CasesOptions(_OnGpu):
    names: list[str] = field(default_factory=list)
    list: bool = False
    jobs: int | None = None


@dataclass(frozen=True, kw_only=True)
class ProfileOptions(_OnGpu):
    names: list[str] = field(default_factory=list)
    program: list[str] | None = None
    kernel: str | None = None
    nvtx_range: str | None = None
    launch_skip: int = 0
    launch_count: int = 10
    baseline: str | None = None
    set_name: str = "quick"
    metrics: str = ""
    save_report: str | None = None
    plot: str | None = None
    size: Sweep = field(default_factory=_sweep)
    param: Sweep = field(default_factory=_sweep)
    timeout: float = 600.0


@dataclass(frozen=True, kw_only=True)
class OccupancyOptions(_Output):
    name: str
    block: list[int] = field(default_factory=list)
    dynamic_smem: int | None = None
    size: Sweep = field(default_factory=_sweep)
    arch: str | None = None


@dataclass(frozen=True, kw_only=True)
class BenchOptions(_OnGpu):
    names: list[str]
    size: Sweep = field(default_factory=_sweep)
    param: Sweep = field(default_factory=_sweep)
    baseline: str = "auto"
    mode: str | None = None
    timer: str = "auto"
    rel_stdev: float = 0.005
    min_time: float = 0.5
    max_time: float = 10.0
    plot: str | None = None
    no_history: bool = False


@dataclass(frozen=True, kw_only=True)
class PeakOptions(_Output):
    refresh: bool = False
    thorough: bool = False


@dataclass(frozen=True, kw_only=True)
class HistoryOptions(_Output):
    name: str | None = None
    limit: int = 20


@dataclass(frozen=True, kw_only=True)
class CompareOptions(_Output):
    before: str
    after: str = "last"


@dataclass(frozen=True, kw_only=True)
class DoctorOptions(_Output):
    """kprof doctor asks nothing more."""


BY_COMMAND: dict[str, type] = {
    "list": ListOptions, "new": NewOptions, "build": BuildOptions, "run": RunOptions, "sanitize": SanitizeOptions,
    "cases": CasesOptions, "profile": ProfileOptions, "occupancy": OccupancyOptions, "bench": BenchOptions,
    "peak": PeakOptions, "history": HistoryOptions, "compare": CompareOptions, "doctor": DoctorOptions,
}


def from_namespace(command: str, namespace: Any) -> Any:
    """The command's options from argparse's checked namespace: each field the value the parser left
    (a field the parser does not have keeps its default, which the CLI's tests keep from happening)."""
    cls = BY_COMMAND[command]
    given = vars(namespace)
    return cls(**{f.name: given[f.name] for f in fields(cls) if f.name in given})
