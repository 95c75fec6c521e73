"""What a program's kernel launches wrote, run after run: the values detector for any program (the
races in global memory no sanitizer sees). Pure: the log format, the comparison of runs, and the
verdict on the two copies of the first output that differs.

kprof's launch recorder (:mod:`kprof.hooks.launch_recorder`, loaded into the program) writes one
JSON line per event to ``$KPROF_LAUNCH_LOG``:

- ``{"event": "recorder", "ok": true}`` first, or ``"ok": false`` with ``"why"`` when it could not
start;
- ``{"event": "launch", "seq": N, "kernel": NAME, "site": "file:line" | null, "args": [[INDEX,
BYTES,
  HASH], ...]}`` after each launch, once the kernel has finished: for every argument that points
  into device memory, the size of that allocation and a hash of all of it;
- ``{"event": "capture", "seq": N, "arg": INDEX, "path": FILE}`` where ``$KPROF_LAUNCH_CAPTURE``
asked
  for one allocation's bytes (``"N:INDEX"``);
- ``{"event": "cut", "after": N}`` when the recorder stopped hashing after its first N launches;
- ``{"event": "error", "seq": N, "why": TEXT}`` for a launch it could not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kprof import inputs
from kprof.errors import InputError

MAX_LOG_BYTES = 64 * 1024 * 1024
ROUNDING = 1e-3  # relative differences at most this are a float sum in another order, not a race


@dataclass(frozen=True)
class Launch:
    """One launch the recorder read: its kernel, the user's line, and each device-memory argument's
    allocation after the kernel (argument index, bytes, hash)."""

    seq: int
    kernel: str
    site: str | None
    args: tuple[tuple[int, int, str], ...] = ()


def _launch(event: dict[str, Any]) -> Launch:
    site = event.get("site")
    args = tuple((item[0], item[1], str(item[2])) for item in event["args"]
                 if isinstance(item, list) and len(item) == 3 and isinstance(item[0], int)
                 and isinstance(item[1], int))
    return Launch(event["seq"], str(event.get("kernel", "?")),
                  site if isinstance(site, str) else None, args)


@dataclass(frozen=True)
class Run:
    """One run's log: whether the recorder started (and why not), its launches in order, its
    captures."""

    ok: bool
    why: str
    launches: list[Launch]
    captures: dict[tuple[int, int], str]
    # the launches hashed, where the recorder stopped there (the rest are not compared)
    cut: int | None
    errors: tuple[str, ...] = ()  # launches the recorder could not read, the first few


def read(text: str) -> Run:
    """A run's log lines; a line that is not a JSON object of a known event is skipped."""
    ok, why = False, NEVER_STARTED
    launches: list[Launch] = []
    captures: dict[tuple[int, int], str] = {}
    cut: int | None = None
    errors: list[str] = []
    for event in inputs.json_objects(text):
        kind = event.get("event")
        if kind == "recorder":
            ok, why = bool(event.get("ok")), str(event.get("why", ""))
        elif kind == "launch" and isinstance(event.get("seq"), int) and isinstance(event.get("args"), list):
            launches.append(_launch(event))
        elif kind == "capture" and isinstance(event.get("seq"), int) and isinstance(event.get("arg"), int):
            captures[event["seq"], event["arg"]] = str(event.get("path", ""))
        elif kind == "cut" and isinstance(event.get("after"), int):
            cut = event["after"]
        elif kind == "error" and len(errors) < 3:
            errors.append(str(event.get("why", "")))
    return Run(ok, why, launches, captures, cut, tuple(errors))


NEVER_STARTED = ("kprof's launch recorder never started in the program: it is loaded by Python's "
                 "site hooks (kprof's sitecustomize on PYTHONPATH), so it needs a "
                 "Python program that runs them")


def read_file(path: str) -> Run:
    """A run's log; one the recorder never wrote says so."""
    try:
        return read(inputs.read_text(path, "the launch log", limit=MAX_LOG_BYTES, errors="replace"))
    except InputError as exc:
        return Run(False, NEVER_STARTED if exc.reason == "no such file" else str(exc), [], {}, None)


@dataclass(frozen=True)
class Divergence:
    """The first place two runs of the same program part: a launch whose output differs (``arg``),
    or where they launched different kernels or a different number of them (``arg`` None)."""

    seq: int
    kernel: str
    site: str | None
    arg: int | None
    what: str  # "output", "kernel" or "count"
    detail: str


def compare(first: Run, second: Run) -> Divergence | None:
    """The first launch at which ``second`` parts from ``first``, or None when they agree
    throughout."""
    for a, b in zip(first.launches, second.launches):
        if a.kernel != b.kernel:
            return Divergence(a.seq, a.kernel, a.site, None, "kernel",
                              f"launch {a.seq} was {a.kernel} in one run "
                              f"and {b.kernel} in the other")
        hashes = {i: (n, h) for i, n, h in b.args}
        for index, nbytes, digest in a.args:
            if hashes.get(index, (nbytes, digest))[1] != digest:
                return Divergence(a.seq, a.kernel, a.site, index, "output",
                                  f"argument {index} of launch {a.seq} ({nbytes:,} bytes) differs "
                                  "after the kernel")
    if len(first.launches) != len(second.launches) and first.cut is None and second.cut is None:
        n = min(len(first.launches), len(second.launches))
        both = first.launches or second.launches
        last = both[max(n - 1, 0)] if both else None
        return Divergence(n, last.kernel if last else "?", last.site if last else None, None,
                          "count",
                          f"one run launched {len(first.launches):,} kernels and the other "
                          f"{len(second.launches):,}")
    return None


@dataclass(frozen=True)
class Difference:
    """Two copies of one allocation after the same launch in two runs, compared."""

    words: int  # 4-byte words compared
    differing: int
    first: int | None  # index of the first differing word
    as_float: tuple[float, float] | None  # that word in each copy, as float32
    as_int: tuple[int, int] | None  # and as int32
    # the largest relative difference of the differing words as float32 (None: not
    max_rel: float | None
    # floats: a non-finite value, or one below float32's normal range, as integers are when read as
    # floats)

    @property
    def rounding(self) -> bool:
        """Every difference a float32 one within ROUNDING of its value: a float sum added up in
        another order (atomics), nondeterministic on purpose, not a race."""
        return self.differing > 0 and self.max_rel is not None and self.max_rel <= ROUNDING

    def text(self) -> str:
        if not self.differing:
            return "the two copies agree (the difference did not happen again)"
        out = f"{self.differing:,} of {self.words:,} 4-byte words differ, the first at word {self.first}"
        if self.as_int and self.as_float:
            (i, j), (x, y) = self.as_int, self.as_float
            out += f" ({i} vs {j} as int32, {x:.9g} vs {y:.9g} as float32)"
        if self.max_rel is not None:
            out += f"; the largest relative difference as float32 is {self.max_rel:.2g}"
        return out


def difference(a: bytes, b: bytes) -> Difference:
    """The two copies' 4-byte words compared (a tail of fewer than 4 bytes is left out)."""
    import numpy as np

    n = min(len(a), len(b)) // 4
    x, y = np.frombuffer(a[: 4 * n], dtype="<u4"), np.frombuffer(b[: 4 * n], dtype="<u4")
    where = np.flatnonzero(x != y)
    if where.size == 0:
        return Difference(n, 0, None, None, None, None)
    i = int(where[0])
    fx, fy = x.view("<f4")[where].astype(np.float64), y.view("<f4")[where].astype(np.float64)
    max_rel = None
    normal = 2.0**-126  # the smallest normal float32: integers read as float32 are far below it
    if np.isfinite(fx).all() and np.isfinite(fy).all() and all(
            ((v == 0) | (np.abs(v) >= normal)).all() for v in (fx, fy)):
        scale = np.maximum(np.abs(fx), np.abs(fy))
        max_rel = float(np.max(np.abs(fx - fy) / np.where(scale > 0, scale, 1.0)))
    return Difference(n, int(where.size), i, (float(x.view("<f4")[i]), float(y.view("<f4")[i])),
                      (int(x.view("<i4")[i]), int(y.view("<i4")[i])), max_rel)
