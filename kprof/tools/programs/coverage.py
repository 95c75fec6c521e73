"""What one tool's run checked (:class:`Coverage`): how many kernel launches it saw, how many
kernels had line information, whether the frameworks' pools were off. Pure.

A clean verdict means something only with these beside it: a tool that saw no launch checked nothing
(``NOT CHECKED``, never clean), and a kernel without line information gets findings without a source
line. For a program (``kprof sanitize -- CMD``) the numbers come from kprof's launch tally
(:mod:`kprof.hooks.launch_tally`, loaded into every Python process of the program, its log read by
:func:`from_tally`); for a spec from the job kprof launched (:func:`of_spec`: kprof builds with
``-lineinfo``). compute-sanitizer itself reports neither, for a clean run (its session details name
the program and the driver only: tests/data/programs/session.memcheck.xml).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kprof.tools.programs.launchlog import Launch

NOT_PYTHON = ("kprof counts launches in Python programs (its site hook); this program started no "
              "Python process kprof could count in")


@dataclass(frozen=True)
class Coverage:
    # kernel launches the run saw (a CUDA graph's launch is one); None: not counted
    launches: int | None
    kernels: int = 0  # kernels launched, by name
    with_lines: int = 0  # of them, in a module with line information
    unknown_lines: int = 0  # of them, in no module kprof could read
    # every counted process reached its exit: ``launches`` is the total, else at least that
    complete: bool = True
    pools_off: bool | None = None  # the frameworks' memory pools were off (None: not a program)
    why: str = ""  # why the launches were not counted
    # False: the run did not look for line information (the values detector)
    lines_read: bool = True
    # counted in a run of the program beside the tool's (kprof.tools.programs.launchcount)
    alongside: bool = False
    # the kernels launched, by the launch calls' (mangled) names, first launched first
    names: tuple[str, ...] = ()
    # what this tool left out by kprof's policy (kprof.tools.sanitizers.kernelpolicy.Skipped.text)
    skipped: str = ""

    @property
    def counted(self) -> bool:
        return self.launches is not None

    @property
    def saw_nothing(self) -> bool:
        """The run ended normally and launched no kernel: nothing was checked."""
        return self.launches == 0 and self.complete

    def text(self) -> str:
        """One line for the report: ``12 launches of 3 kernels, 3 with line information, pools
        off``."""
        pools = {True: ", pools off", False: ", pools left on", None: ""}[self.pools_off]
        if self.launches is None:
            return f"launches not counted ({self.why}){pools}"
        at_least = "" if self.complete else "at least "
        lines = f", {self.with_lines} with line information" if self.lines_read else ""
        if self.unknown_lines and self.lines_read:
            lines += f", {self.unknown_lines} unknown"
        where = " (counted in a run beside the tool's)" if self.alongside else ""
        skipped = f"; {self.skipped}" if self.skipped else ""
        return (f"{at_least}{self.launches:,} launch{'es' if self.launches != 1 else ''} of "
                f"{self.kernels:,} "
                f"kernel{'s' if self.kernels != 1 else ''}{where}{lines}{pools}{skipped}")

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def from_tally(text: str, *, pools_off: bool | None = None) -> Coverage:
    """The launch tally's log (every process's lines, in any interleaving) as one :class:`Coverage`.
    No line at all: the program ran no Python process with kprof's hook (a C++ binary, a shell
    loop)."""
    from kprof.tools.programs import tallylog

    started: dict[int, bool] = {}
    why: list[str] = []
    totals: dict[int, int] = {}
    seen: dict[int, int] = {}  # pid -> the launches its last kernel line counted
    kernels: dict[str, bool | None] = {}
    for event in tallylog.read(text):
        if isinstance(event, tallylog.Started):
            started[event.pid] = event.ok
            if not event.ok:
                why.append(event.why)
        elif isinstance(event, tallylog.Kernel):
            seen[event.pid] = max(seen.get(event.pid, 0), event.launches)
            known, lines = kernels.get(event.name), event.lineinfo
            kernels[event.name] = True if (known or lines is True) else (
                False if (known is False or lines is False) else None)
        elif isinstance(event, tallylog.Total):
            totals[event.pid] = event.launches
    counting = [pid for pid, ok in started.items() if ok]
    if not counting:
        return Coverage(None, pools_off=pools_off, why=why[0] if why else NOT_PYTHON)
    launches = sum(totals.get(pid, seen.get(pid, 0)) for pid in counting)
    return Coverage(launches, kernels=len(kernels),
                    with_lines=sum(v is True for v in kernels.values()),
                    unknown_lines=sum(v is None for v in kernels.values()),
                    complete=all(pid in totals for pid in counting), pools_off=pools_off,
                    names=tuple(kernels))


def of_launches(launches: Sequence[Launch], *, cut: int | None, pools_off: bool | None) -> Coverage:
    """The values detector's first run of a program: the launches its recorder hashed (driver API
    only; from the first ``cut`` on, not hashed), by kernel name; line information is not its
    concern."""
    return Coverage(len(launches) if cut is None else max(cut, len(launches)),
                    kernels=len({launch.kernel for launch in launches}), complete=cut is None,
                    pools_off=pools_off, lines_read=False)


def of_spec(launches: int, kernels: int) -> Coverage:
    """A spec's run: the launches its job made (kprof builds every kernel with ``-lineinfo``)."""
    return Coverage(launches, kernels=kernels, with_lines=kernels)
