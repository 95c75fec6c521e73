"""The checker protocol: what every check kprof runs over a kernel or a program is, to the commands.

A checker is a name, what it needs, and how it runs one spec's job, several jobs, a user's program,
and a pytest suite's child (``pytest --kprof-sanitize``).
The four compute-sanitizer tools (:class:`kprof.tools.sanitizers.compute_sanitizer.SanitizerTool`)
and kprof's own values detector (:class:`kprof.tools.sanitizers.values.ValuesDetector`) are
checkers; :mod:`kprof.tools.sanitizers.checkers` holds the one registry that ``kprof sanitize``, the
pytest plugin, ``kprof cases``, ``kprof mutants`` and the reports iterate. A new checker is a class
with these members in its own module, and one line in that registry (docs/architecture.md, "Add a
checker").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from kprof.launch.job import Job
    from kprof.proc import Completed
    from kprof.tools.sanitizers.toolrun import ToolResult


@dataclass(frozen=True)
class Needs:
    """What a checker needs and how it behaves, for those that schedule and report it."""

    # runs under compute-sanitizer: the tool must be found, it writes XML, a launch count says what
    # it saw
    sanitizer: bool
    # its runs need the GPU to themselves (they compare runs, so another load changes nothing but
    # time)
    alone: bool = False
    # its first finding stops the child's kernel (a suite keeps a spare child beside it)
    stops: bool = False
    # it runs the warp-delay build and the shared-memory scrubber beside the kernel's own
    shaken: bool = False
    # its findings are wrong values in outputs, which a memory error found beside it may cause
    effects: bool = False
    # among ``all`` for a program (False: a program is checked by it only when named)
    in_all_programs: bool = True
    not_for_tests: str = ""  # why it cannot check a pytest suite's tests ("": it can)
    # in a program, only the user's kernels unless --all-kernels
    # (kprof.tools.sanitizers.kernelpolicy)
    user_kernels: bool = False
    # it checks a spec's job (False: programs only; not among a spec's ``all``, the corpora's)
    for_specs: bool = True

    def skips_libraries(self, all_kernels: bool) -> bool:
        """Whether a program's library kernels are left out of this checker's run
        (kprof.tools.sanitizers.kernelpolicy)."""
        return self.user_kernels and not all_kernels


@dataclass(frozen=True)
class Settings:
    """How a check runs: the same for every checker of one command."""

    timeout: float = 300.0  # seconds one child may take
    padding: int = 256  # memcheck's bytes after each allocation
    # the shared-memory scrubber (the values detector), built by the caller
    scrub_cubin: str | None = None
    scrub_note: str = ""  # why there is none
    # a program's library kernels under every tool too (kprof.tools.sanitizers.kernelpolicy)
    all_kernels: bool = False


@dataclass(frozen=True)
class Program:
    """A user's program to check: its argv, environment and folder, and whether its memory pools are
    off."""

    cmd: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | Path | None = None
    pools_off: bool | None = None  # None: kprof did not set the allocators


@dataclass(frozen=True)
class SuiteChild:
    """How a suite's pytest child runs under a checker (:mod:`kprof.tools.suites.suite`): its
    environment and folder, what the suite watches while it runs, and the checker's settings for a
    program."""

    env: dict[str, str]
    cwd: str | Path
    watch: Callable[[], bool] | None = None
    padding: int = 256
    all_kernels: bool = False
    print_limit: int = 200


@runtime_checkable
class Checker(Protocol):
    """One check kprof runs. ``name`` is what users type (``--tool NAME``) and what records
    carry."""

    @property
    def name(self) -> str: ...

    @property
    def needs(self) -> Needs: ...

    @property
    def summary(self) -> str: ...  # one line: what it finds

    def check_job(self, job: Job, settings: Settings) -> ToolResult:
        """One spec's job in a child of its own; never raises for the target's sake."""
        ...

    def check_jobs(self, jobs: list[Job], settings: Settings) -> list[ToolResult]:
        """Several jobs, a result each in order, as :meth:`check_job` gives them (in fewer children
        where it can)."""
        ...

    def check_program(self, program: Program, settings: Settings) -> ToolResult:
        """The user's whole program; never raises for its sake."""
        ...

    def check_suite_child(self, argv: list[str], child: SuiteChild) -> tuple[Completed, str]:
        """A pytest child of a suite (``argv``) run under this checker: the finished process and the
        report the suite gives test by test (compute-sanitizer's XML; "" for none). A checker that
        cannot check tests says why in ``needs.not_for_tests`` and raises UsageError here."""
        ...
