"""A ``kprof bench`` run's loop: each planned point measured in order, judged against the ceilings,
and written to the history store as soon as it is measured, so an interrupted sweep keeps what it
measured."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from kprof import telemetry
from kprof.errors import OutputError
from kprof.launch.job import TimingModeName
from kprof.measure import bench
from kprof.measure.ceilings import Ceilings
from kprof.results import history as history_mod
from kprof.results.reports import BenchReport
from kprof.stats import StopRule

P = TypeVar("P")


def run(points: Sequence[P], plan_of: Callable[[P], bench.PointPlan], peak: Ceilings | None, *,
        mode: TimingModeName,
        rule: StopRule, history: bool, timeout: float,
        progress: Callable[[int, int, P], None] | None = None) -> BenchReport:
    """Every point of ``points`` (``plan_of(point)``: its jobs, built by the command layer) measured
    in turn. ``progress(i, n, point)`` before each. A Ctrl-C (or SIGTERM) ends the run with what was
    measured, marked ``interrupted``; a history store that cannot take a point (a full disk) ends it
    with ``lost``."""
    conn = history_mod.connect() if history else None
    snap = telemetry.snapshot()
    report = BenchReport([], len(points), history_mod.new_run(), mode, rule, peak=peak,
                         machine={"gpu": snap.gpu if snap else None,
                                  "driver": snap.driver if snap else None},
                         commit=history_mod.git_commit(), recorded=conn is not None)
    try:
        for i, point in enumerate(points, 1):
            if progress is not None:
                progress(i, len(points), point)
            result = bench.run_point(plan_of(point), peak, timeout=timeout)
            report.points.append(result)
            if conn is not None:  # written as soon as it is measured
                history_mod.record(conn, report.run, "bench", result.kernel,
                                   {"sizes": result.sizes, "params": result.params,
                                   "mode": mode}, result.to_dict(), machine=report.machine, commit=report.commit)
    # Ctrl-C, or SIGTERM (kprof.commands.cli): what was measured is still returned
    except KeyboardInterrupt:
        report.interrupted = True
    except OutputError as exc:  # the history store could not take a point: stop, keep the rest
        report.lost = exc
    return report
