"""The result history: every bench, profile and sanitize result, in an embedded SQLite store.

Location: ``$KPROF_HISTORY`` if set, else ``$XDG_DATA_HOME/kprof/history.sqlite`` (default
``~/.local/share/kprof/history.sqlite``). Each row is one measured point, written as soon as it
is finished, so an interrupted sweep keeps every point it completed. WAL mode and a busy timeout
let several kprof processes write at once. Rows of one command share a ``run`` id.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
import uuid
from dataclasses import KW_ONLY, astuple, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kprof import inputs, proc
from kprof.errors import KprofError, OutputError, UsageError
from kprof.version import __version__

if TYPE_CHECKING:
    from kprof.stats import Summary

SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run TEXT NOT NULL,
    created REAL NOT NULL,
    kind TEXT NOT NULL,
    kernel TEXT NOT NULL,
    point TEXT NOT NULL,
    data TEXT NOT NULL,
    machine TEXT NOT NULL,
    version TEXT NOT NULL,
    git_commit TEXT
);
CREATE INDEX IF NOT EXISTS results_kernel ON results (kernel, created);
CREATE INDEX IF NOT EXISTS results_run ON results (run);
"""


def path() -> Path:
    if os.environ.get("KPROF_HISTORY"):
        return inputs.user_path(os.environ["KPROF_HISTORY"], "KPROF_HISTORY")
    if os.environ.get("XDG_DATA_HOME"):
        return inputs.user_path(os.environ["XDG_DATA_HOME"], "XDG_DATA_HOME") / "kprof" / "history.sqlite"
    return inputs.user_path("~/.local/share", "the history store (HOME)") / "kprof" / "history.sqlite"


def connect(db: Path | None = None) -> sqlite3.Connection:
    db = db or path()
    # a FIFO would block SQLite's reads
    if db.exists() and (why := inputs.regular_file_error(db)) is not None:
        raise UsageError(f"the history store {db}: {why} (set KPROF_HISTORY to a file)")
    deadline = time.monotonic() + 30
    while True:
        try:
            db.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(db, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(SCHEMA)
            return conn
        except sqlite3.OperationalError as exc:
            # Switching to WAL while another process creates the store can answer "locked" at once,
            # without the busy timeout: wait and try again.
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise UsageError(f"cannot open the history store {db}: {exc} (set KPROF_HISTORY to "
                                 "another file)") from None
            time.sleep(0.05)
        except (OSError, sqlite3.Error) as exc:
            raise UsageError(f"cannot open the history store {db}: {exc} (set KPROF_HISTORY to "
                             "another file)") from None


def connect_read(db: Path | None = None) -> sqlite3.Connection | None:
    """The store opened read-only, for history and compare (None when it does not exist yet):
    reading needs no write access and never turns a file into a database."""
    db = db or path()
    try:
        db.stat()
    # nothing stored yet (and nothing made by reading)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except inputs.PATH_ERRORS:
        pass  # said below
    # a folder, a FIFO or /dev/null is no empty history
    if (why := inputs.regular_file_error(db)) is not None:
        raise UsageError(f"the history store {db}: {why} (set KPROF_HISTORY to a file)")
    uri = db.resolve().as_uri()
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30)
        conn.execute("SELECT 1 FROM results LIMIT 1")
    except sqlite3.Error as exc:
        # A store in WAL mode is read through its -shm file, which a folder kprof may not write
        # (a read-only mount, a 0555 folder, a read-only HOME) cannot hold: read it as it stands
        # on disk, where no kprof can be writing it either.
        try:
            conn = sqlite3.connect(f"{uri}?immutable=1", uri=True, timeout=30)
            conn.execute("SELECT 1 FROM results LIMIT 1")
        except sqlite3.Error:
            raise UsageError(f"cannot read the history store {db}: {exc} (is it a kprof history "
                             "file?)") from None
    return conn


def new_run() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]


def provenance(root: Path | None = None) -> dict[str, object]:
    """What a result was measured at: the commit from ``KPROF_COMMIT`` when set (a source tree
    copied to a GPU machine may carry a stale ``.git``, or none; ``KPROF_DIRTY=1`` or ``0`` says
    whether it had uncommitted changes), else ``git rev-parse`` and ``git status`` of the
    checkout."""
    if os.environ.get("KPROF_COMMIT"):
        flag = os.environ.get("KPROF_DIRTY", "")
        return {"commit": os.environ["KPROF_COMMIT"], "source": "KPROF_COMMIT",
                "dirty": {"1": True, "0": False}.get(flag)}
    root = root or Path(__file__).resolve().parent.parent.parent
    head = _git(root, "rev-parse", "--short", "HEAD")
    if not head:
        return {"commit": None, "source": None, "dirty": None}
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return {"commit": head, "source": "git", "dirty": None if status is None else bool(status)}


def _git(root: Path, *args: str) -> str | None:
    import shutil

    git = shutil.which("git")
    if git is None:
        return None
    try:
        done = proc.run([git, "-C", str(root), *args], timeout=5)
    except (KprofError, OSError):  # git that cannot start: no commit, as without git
        return None
    return done.stdout.strip() if done.returncode == 0 and not done.timed_out else None


def git_commit() -> str | None:
    """The commit as history stores and shows it: ``abc1234``, or ``abc1234-dirty`` when the tree
    had uncommitted changes (git describe's convention)."""
    p = provenance()
    if p["commit"] is None:
        return None
    return f"{p['commit']}-dirty" if p["dirty"] else str(p["commit"])


def stored_text(text: str) -> str:
    """``text`` as SQLite can hold it: UTF-8. A name from a file whose name is not UTF-8 (Python
    keeps its bytes as surrogates) is stored with those bytes written out (``\\udcff``), the same
    each time."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def record(conn: sqlite3.Connection, run: str, kind: str, kernel: str, point: dict[str, object],
           data: dict[str, object], *, machine: dict[str, object], commit: str | None) -> int:
    """One measured point, committed at once: a run stopped later (Ctrl-C, a full disk) keeps it."""
    try:
        with conn:
            cur = conn.execute(
                "INSERT INTO results (run, created, kind, kernel, point, data, machine, version, "
                "git_commit) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (stored_text(run), time.time(), stored_text(kind), stored_text(kernel),
                 json.dumps(point, sort_keys=True),
                 json.dumps(data, default=str), json.dumps(machine, default=str), __version__,
                 commit),
            )
    except sqlite3.Error as exc:  # "database or disk is full", a read-only store, a damaged file
        raise OutputError(f"cannot record {kernel} in the history store {path()}: {exc}") from None
    return int(cur.lastrowid or 0)


def point_values(point: dict[str, Any]) -> dict[str, object]:
    """A stored point's sizes and parameters together (``{"sizes": {...}, "params": {...}}``), as
    tables show them."""
    return {**(point.get("sizes") or {}), **(point.get("params") or {})}


@dataclass(frozen=True)
class HistoryRow:
    """One stored result as kprof reads it back: its run, kernel and point, its timing summary
    (None: the point was not timed), and what was stored beside them as written (``data``,
    ``machine``)."""

    id: int
    run: str
    created: float
    kind: str
    kernel: str
    _: KW_ONLY  # the rest by name
    point: dict[str, Any]  # {"sizes": {...}, "params": {...}, ...} as kprof bench wrote it
    summary: Summary | None
    data: dict[str, Any]
    machine: dict[str, object]
    version: str
    commit: str | None
    # the point's status as kprof bench stored it (ok, failed, ...); "?" when none was
    status: str = "?"

    @property
    def values(self) -> dict[str, object]:
        """The point's sizes and parameters together, as a table shows them."""
        return point_values(self.point)

    @property
    def key(self) -> tuple[str, str]:
        """What two runs' rows share when they measured the same kernel at the same point."""
        return self.kernel, json.dumps(self.point, sort_keys=True)

    @property
    def gpu(self) -> str | None:
        gpu = self.machine.get("gpu")
        return str(gpu) if gpu else None

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "run": self.run, "created": self.created, "kind": self.kind,
                "kernel": self.kernel,
                "point": self.point, "data": self.data, "machine": self.machine,
                "version": self.version, "commit": self.commit}


@dataclass(frozen=True)
class RunChange:
    """One kernel and point two bench runs share: the median time before and after, and the verdict
    beyond the measured noise (:func:`kprof.stats.classify`)."""

    kernel: str
    point: dict[str, Any]
    before_s: float
    after_s: float
    change: float
    verdict: Literal["same", "faster", "slower"]

    @property
    def values(self) -> dict[str, object]:
        return point_values(self.point)

    def to_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "point": self.point, "before_s": self.before_s,
                "after_s": self.after_s, "change": self.change, "verdict": self.verdict}


def rows(conn: sqlite3.Connection, kernel: str | None = None, run: str | None = None,
         kind: str | None = None, limit: int = 50) -> list[HistoryRow]:
    query = "SELECT id, run, created, kind, kernel, point, data, machine, version, git_commit FROM results"
    args: list[str | int] = []
    where = []
    for col, val in (("kernel", kernel), ("run", run), ("kind", kind)):
        if val is not None:
            where.append(f"{col} = ?")
            args.append(stored_text(val))
    if where:
        query += " WHERE " + " AND ".join(where)
    query += " ORDER BY id DESC LIMIT ?"
    args.append(limit)
    out = []
    try:
        found = conn.execute(query, args).fetchall()
    except sqlite3.Error as exc:
        raise UsageError(f"cannot read the history store {path()}: {exc}") from None
    for r in found:
        row = _row(r)
        # a damaged row, or one of another shape, is skipped; the others still shown
        if row is not None:
            out.append(row)
    return out


MAX_ROW_TEXT = 4 * 1024 * 1024  # one stored point's JSON: a few KB in practice


def _row(r: tuple[object, ...]) -> HistoryRow | None:
    """One stored result, or None when it is not of the shape kprof writes (damaged JSON, a list
    where a mapping goes, a summary without numbers, a text where a number goes)."""
    texts = [r[i] for i in (1, 4, 5, 6, 7)]
    created = r[2]
    if not all(isinstance(t, str) for t in texts) or not isinstance(created, (int, float)):
        return None
    run, kernel, *stored = (str(t) for t in texts)
    if any(len(t) > MAX_ROW_TEXT for t in stored):
        return None
    try:
        point, data, machine = (inputs.parse_json(t, "history row") for t in stored)
    except UsageError:
        return None
    if not (isinstance(point, dict) and isinstance(data, dict) and isinstance(machine, dict)):
        return None
    if not all(isinstance(point.get(k, {}), dict) for k in ("sizes", "params")):
        return None
    try:
        summary = _summary(data.get("summary"))
    except ValueError:
        return None
    commit = r[9] if isinstance(r[9], str) else None
    stored = data.get("status", "?")  # the one reader of a stored point's status
    return HistoryRow(int(r[0]) if isinstance(r[0], int) else 0, run, float(created), str(r[3]),
                      kernel, point=point,
                      summary=summary, data=data, machine=machine, version=str(r[8]), commit=commit,
                      status=stored if isinstance(stored, str) and stored else "?")


def _summary(stored: object) -> Summary | None:
    """A stored timing summary; None where the point was not timed. ValueError where it is not one
    kprof wrote (a field missing or not a number, a time of 0 or below: compare divides by it)."""
    from kprof import stats

    if stored is None:
        return None
    try:
        summary = stats.summary_of(stored)
    except (TypeError, ValueError, OverflowError):
        summary = None
    if summary is None:
        raise ValueError("not a timing summary")
    if not all(math.isfinite(v) and v >= 0 for v in astuple(summary)) or summary.median <= 0:
        raise ValueError("a time of 0 or below, or not a number")
    return summary


def runs(conn: sqlite3.Connection, kind: str = "bench") -> list[str]:
    """Run ids, newest first."""
    try:
        found = conn.execute(
            "SELECT run, MAX(id) AS last FROM results WHERE kind = ? GROUP BY run ORDER BY last "
            "DESC", (kind,)).fetchall()
    except sqlite3.Error as exc:
        raise UsageError(f"cannot read the history store {path()}: {exc}") from None
    return [str(r[0]) for r in found]


def resolve_run(conn: sqlite3.Connection, ref: str) -> str:
    """A run id, or ``last``, ``last~1``, ... for the newest bench runs."""
    known = runs(conn)
    if not known:
        raise UsageError(f"no bench runs yet in {path()}: run kprof bench first")
    if ref == "last" or ref.startswith("last~"):
        back_text = ref[5:] if ref.startswith("last~") else "0"
        if not (back_text.isascii() and back_text.isdigit()):
            raise UsageError(f"{ref!r}: write last, or last~N with N a whole number (last~1 is the "
                             "run before the last)")
        back = int(back_text)
        if back >= len(known):
            raise UsageError(f"{ref}: there are only {len(known)} bench runs in {path()}")
        return known[back]
    if ref not in known:
        hint = f"recent runs: {', '.join(known[:3])}" if known else "no bench runs yet"
        raise UsageError(f"no bench run '{ref}' in {path()} ({hint}; `kprof history` lists them)")
    return ref


def compare(conn: sqlite3.Connection, before_id: str, after_id: str) -> list[RunChange]:
    """Every kernel and point the two runs share: same, faster or slower, beyond the measured
    noise."""
    from kprof import stats

    before = {r.key: r for r in rows(conn, run=before_id, limit=100000)}
    after = {r.key: r for r in rows(conn, run=after_id, limit=100000)}
    out = []
    for k in sorted(set(before) & set(after)):
        b, a = before[k].summary, after[k].summary
        if b is not None and a is not None:
            verdict, change = stats.classify(b, a)
            out.append(RunChange(k[0], before[k].point, b.median, a.median, change, verdict))
    return out
