"""The launch tally's log (:mod:`kprof.hooks.launch_tally`) as typed events: its one reader. Pure.

Every Python process of a program appends JSON lines to one file; a process stopped while writing
leaves a cut line, which is skipped, as is anything that is not one of the tally's events. What each
event means is the hook's docstring; :mod:`kprof.tools.programs.coverage` (what a run launched) and
:mod:`kprof.tools.programs.launchsites`
(where from) read these, never the JSON.
"""

from __future__ import annotations

from dataclasses import dataclass

from kprof import inputs


@dataclass(frozen=True)
class Started:
    pid: int
    ok: bool
    why: str = ""  # why the tally could not start


@dataclass(frozen=True)
class Kernel:
    """A kernel's first launch in a process."""
    pid: int
    name: str  # as the launch call named it (mangled for C++)
    lineinfo: bool | None  # its module has line information (None: no module of the name was read)
    launches: int  # the process's launches so far, this one included


@dataclass(frozen=True)
class Site:
    """The first launch of a kernel from one place in the user's Python code (the site mode)."""
    pid: int
    name: str
    path: str | None  # None: no frame of the user's on the launching thread
    line: int | None
    func: str | None
    launches: int


@dataclass(frozen=True)
class Total:
    pid: int
    launches: int  # the process's launches, at its normal exit


Event = Started | Kernel | Site | Total


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _event(raw: dict[str, object]) -> Event | None:
    pid, kind = _int(raw.get("pid")), raw.get("event")
    if pid is None:
        return None
    if kind == "tally":
        return Started(pid, raw.get("ok") is True,
                       "" if raw.get("ok") is True else str(raw.get("why") or
                                                          "the tally did not start"))
    launches = _int(raw.get("launches"))
    if kind == "total" and launches is not None:
        return Total(pid, launches)
    name = _str(raw.get("name"))
    if kind == "kernel" and launches is not None:
        lines = raw.get("lineinfo")
        return Kernel(pid, name or "?", lines if isinstance(lines, bool) else None, launches)
    if kind == "site" and name is not None:
        return Site(pid, name, _str(raw.get("path")), _int(raw.get("line")), _str(raw.get("func")),
                    launches or 0)
    return None


def read(text: str) -> list[Event]:
    """The tally's events, in the order they were written (every process's, interleaved)."""
    return [e for e in map(_event, inputs.json_objects(text)) if e is not None]
