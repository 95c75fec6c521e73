"""The typed reports the API returns (:mod:`kprof.commands.api`) and the CLI prints: a target's tool
results, one run of a kernel, a ``kprof bench`` run, the cheat corpus's verdicts. Each says what its
``--json`` is."""

from __future__ import annotations

from dataclasses import KW_ONLY, asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

# annotations only: the reports import nothing heavy (kprof.commands.api imports them at its top)
if TYPE_CHECKING:
    from kprof.build.build import BuildResult
    from kprof.corpus.benchcases import CheatResult
    from kprof.errors import OutputError
    from kprof.findings import Finding
    from kprof.launch.childresult import ChildResult
    from kprof.launch.job import TimingModeName
    from kprof.measure.ceilings import Ceilings
    from kprof.measure.points import PointResult
    from kprof.spec import Resolved
    from kprof.stats import StopRule
    from kprof.tools.sanitizers.toolrun import ToolResult


@dataclass(frozen=True)
class SanitizeReport:
    """What the tools found in one target: one :class:`~kprof.tools.sanitizers.toolrun.ToolResult`
    per tool."""

    target: str
    results: list[ToolResult]
    notes: list[str] = field(default_factory=list)  # the allocator switches set for a program

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.results for f in r.findings]

    @property
    def clean(self) -> bool:
        return not self.findings and all(r.ok for r in self.results)

    def to_json(self) -> dict[str, object]:
        from kprof import findings

        data = findings.to_json(self.results, self.target)
        data["notes"] = self.notes
        return data

    def to_sarif(self, root: str | None = None) -> dict[str, object]:
        from kprof import findings
        from kprof.version import __version__

        return findings.to_sarif(self.results, __version__, root=root or str(Path.cwd()))


@dataclass(frozen=True)
class RunReport:
    """One run of a spec's kernel (``kprof run``): what the child measured and verified, the sizes
    it resolved and the build it ran. ``ok`` is the verdict on every output."""

    result: ChildResult
    resolved: Resolved
    built: BuildResult
    entry: str  # the kernel's entry point, whose resource usage the report gives

    @property
    def ok(self) -> bool:
        return bool(self.result.ok)

    def to_json(self) -> dict[str, object]:
        """What ``kprof run --json`` prints."""
        from kprof.results import history

        r = self.result
        data: dict[str, object] = {
            "kernel": r.kernel, "sizes": r.sizes, "ok": r.ok,
            "checks": [asdict(c) for c in r.checks], "time_ms": r.time_ms,
            "device": r.device.to_dict() if r.device else {}, "launch": r.launch,
            "registers": r.registers,
            "allocations": [asdict(a) for a in r.allocations], "nvtx": r.nvtx,
            "driver_blocks_per_sm": r.driver_blocks_per_sm,
            "operation": asdict(r.operation) if r.operation else None}
        data["usage"] = asdict(self.built.usage_of(self.entry))
        data["flops"], data["bytes"] = self.resolved.flops, self.resolved.bytes
        data["provenance"] = history.provenance()
        return data


@dataclass
class BenchReport:
    """A ``kprof bench`` run: every point measured, in order, with the ceilings it was judged
    against. ``interrupted`` (Ctrl-C, SIGTERM) and ``lost`` (the history store could not take a
    point: a full disk) say why it stopped early; what was measured before is kept either way."""

    points: list[PointResult]
    planned: int
    run: str
    mode: TimingModeName
    rule: StopRule
    _: KW_ONLY  # the rest by name
    peak: Ceilings | None
    machine: dict[str, object]
    commit: str | None
    recorded: bool  # written to the history store, point by point
    interrupted: bool = False
    lost: OutputError | None = None

    def to_json(self) -> dict[str, object]:
        """What ``kprof bench --json`` prints."""
        from kprof.measure import bench as bench_mod
        from kprof.results import history

        return {"version": bench_mod.BENCH_VERSION, "run": self.run, "mode": self.mode,
                "rule": asdict(self.rule),
                "peak": self.peak.to_dict() if self.peak else None, "machine": self.machine,
                "commit": self.commit, "interrupted": self.interrupted,
                "provenance": history.provenance(), "points": [r.to_dict() for r in self.points]}


@dataclass(frozen=True)
class BenchCasesReport:
    """``kprof cases --bench``: the honest operation's integrity flags (none, or it is a false
    alarm) and each cheat's (:mod:`kprof.corpus.benchcases`), all from one ``kprof bench`` run."""

    honest: tuple[str, ...]
    results: list[CheatResult]
    point: PointResult  # the bench point that timed them

    @property
    def ok(self) -> bool:
        return not self.honest and all(r.caught for r in self.results) and self.point.status == "ok"

    def to_json(self) -> dict[str, object]:
        return {"version": 1, "ok": self.ok, "honest_flags": list(self.honest),
                "status": self.point.status,
                "cheats": [r.to_dict() for r in self.results], "point": self.point.to_dict()}
