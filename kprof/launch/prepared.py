"""What a built, launchable spec is, to the stages that take one (the diagnosis, the tries): its
spec at concrete sizes, its cubin, its PTX and the job of a mode; and what builds one for a stage
that orchestrates its own runs (mutation testing). :class:`kprof.commands.pipeline.Prepared` and
:class:`kprof.commands.pipeline.Preparer` are the
ones the command layer makes; a stage below it names these protocols, never the command layer's
classes nor ``Any``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pathlib import Path

    from kprof.build.build import BuildResult
    from kprof.launch.job import Job, RunMode, TimingMode
    from kprof.spec import Fill, KernelSpec, Resolved


@runtime_checkable
class Prepared(Protocol):
    """A spec resolved at concrete sizes (and parameters), built, ready to launch."""

    @property
    def resolved(self) -> Resolved: ...

    @property
    def built(self) -> BuildResult: ...

    def job(self, mode: RunMode | TimingMode, *, seed: int = 0, shaken: bool = False) -> Job: ...

    def ptx(self) -> tuple[str | None, str]:
        """The kernel's PTX: (text, "") or (None, why there is none)."""
        ...


class Preparer(Protocol):
    """Building and job-making for a stage that orchestrates runs itself (mutation testing): the
    command layer's
    :class:`kprof.commands.pipeline.Preparer`, handed down, as no stage below it may build."""

    def job(self, spec: KernelSpec, sizes: dict[str, int] | None, *, preset: str,
            fills: tuple[tuple[str, Fill], ...] = (), mode: RunMode, shaken: bool = False) -> Job:
        """``spec`` built and resolved at ``sizes`` of ``preset``, as a job of ``mode``."""
        ...

    def cubin(self, spec: KernelSpec) -> Path:
        """``spec``'s cubin, built (a :class:`~kprof.errors.KprofError` when it does not build)."""
        ...

    def variant(self, spec: KernelSpec, name: str, text: str) -> KernelSpec:
        """``spec`` with ``text`` as its source, kept in the build cache under a path named by the
        text."""
        ...

    def scrubber(self) -> tuple[str | None, str]:
        """The values detector's scrubber: (cubin, "") or (None, why)."""
        ...
