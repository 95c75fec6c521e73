"""What a built, launchable spec is, to the stages that take one (the diagnosis, the tries): its spec at concrete
sizes, its cubin, and the job of a mode. :class:`kprof.commands.pipeline.Prepared` is the one the command layer
makes; a stage below it names this protocol, never the command layer's class nor ``Any``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from kprof.build.build import BuildResult
    from kprof.launch.job import Job, RunMode, TimingMode
    from kprof.spec import Resolved


@runtime_checkable
class Prepared(Protocol):
    """A spec resolved at concrete sizes (and parameters), built, ready to launch."""

    @property
    def resolved(self) -> Resolved: ...

    @property
    def built(self) -> BuildResult: ...

    def job(self, mode: RunMode | TimingMode, *, seed: int = 0, shaken: bool = False) -> Job: ...
