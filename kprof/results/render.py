"""Text layout every renderer shares: the width to wrap to, tables, wrapped lines, progress, and the
small formats of numbers (percent, microseconds). What a record says is rendered beside its kind:
build and run (:mod:`render_build`), sanitizers and corpora (:mod:`render_sanitize`), bench and
ceilings (:mod:`render_bench`), profiles and diagnoses (:mod:`render_profile`). Pure functions;
nothing here measures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MIN_WIDTH = 60  # no wrapping narrower than this: a column of a few characters helps nobody
# text that goes to a file or a pipe: what a pager, an editor or a CI log shows whole
PIPE_WIDTH = 100
NO_WRAP = 1 << 20  # --width 0: one line a row, for grep
_chosen_width: int | None = None  # --width, set once by the command line (kprof.commands.cli)


def choose_width(width: int | None) -> None:
    """The width every command wraps to from here on (``--width N``; 0: no wrapping), over COLUMNS
    and the terminal's own."""
    global _chosen_width
    _chosen_width = width


def terminal_width() -> int:
    """The width lines are wrapped to: ``--width`` where given (0: not wrapped), else COLUMNS where
    it is set, else the terminal's own on a terminal and :data:`PIPE_WIDTH` for a file or a pipe."""
    import os
    import shutil
    import sys

    if _chosen_width is not None:
        return NO_WRAP if _chosen_width == 0 else max(MIN_WIDTH, _chosen_width)
    if (env := os.environ.get("COLUMNS", "")).isascii() and env.isdigit() and int(env) > 0:
        return max(MIN_WIDTH, int(env))
    if not getattr(sys.stdout, "isatty", lambda: False)():
        return PIPE_WIDTH
    return max(MIN_WIDTH, shutil.get_terminal_size((80, 24)).columns)


def wrap(text: str, width: int, indent: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, every line after the first indented by
    ``indent`` spaces (which count toward the width); a word longer than a line is broken."""
    import textwrap

    return textwrap.wrap(text, width=width, subsequent_indent=" " * indent, break_on_hyphens=False) or [""]


def fit(lines: Sequence[str], width: int, hang: int) -> list[str]:
    """Report lines wrapped to ``width``, each continuation under its line's own indentation plus
    ``hang``."""
    return [piece for line in lines
            for piece in wrap(line, width, len(line) - len(line.lstrip()) + hang)]


MIN_COLUMN = 12  # a column is not wrapped narrower than this


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], align: str = "",
          width: int | None = None) -> str:
    """A plain text table. ``align`` has one character per column, 'l' or 'r' (default 'l'). Where
    the rows would pass ``width`` (default: :func:`terminal_width`), the widest left-aligned columns
    are narrowed, widest first, and their cells wrap under themselves."""
    cells = [[str(h) for h in headers]] + [[" ".join(str(c).split()) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align.ljust(len(headers), "l")
    width = width or terminal_width()
    gaps = 2 * (len(widths) - 1)
    narrowable = [i for i, a in enumerate(align) if a == "l"]
    while narrowable and sum(widths) + gaps > width:
        i = max(narrowable, key=lambda k: widths[k])
        if widths[i] <= MIN_COLUMN:
            break
        widths[i] -= 1

    def fmt(row: list[str]) -> str:
        pieces = [wrap(c, w, 0) if len(c) > w else [c] for c, w in zip(row, widths)]
        height = max(len(p) for p in pieces)
        out = []
        for k in range(height):
            parts = [(p[k] if k < len(p) else "").strip() for p in pieces]
            out.append("  ".join(c.rjust(w) if a == "r" else c.ljust(w)
                                 for c, w, a in zip(parts, widths, align)).rstrip())
        return "\n".join(out)

    lines = [fmt(cells[0]), "  ".join("-" * w for w in widths)]
    lines += [fmt(r) for r in cells[1:]]
    return "\n".join(lines)


class Progress:
    """``[3/12] name`` while a step runs, and how it ended: on a terminal one line rewritten in
    place, elsewhere (a CI log) a line per step, with the seconds it took and, once known, an
    ETA."""

    def __init__(self, total: int, stream: Any, *, enabled: bool = True) -> None:
        import time

        self.total, self.stream, self.enabled = total, stream, enabled
        self.tty = enabled and bool(getattr(stream, "isatty", lambda: False)())
        self.count, self.name, self.begun, self.first = 0, "", 0.0, time.monotonic()

    def start(self, name: str) -> None:
        import time

        self.count, self.name, self.begun = self.count + 1, name, time.monotonic()
        if self.tty:
            self.stream.write(f"\r\x1b[K[{self.count}/{self.total}] {name} ...")
            self.stream.flush()

    def done(self, outcome: str) -> None:
        import time

        if not self.enabled:
            return
        now = time.monotonic()
        left = (now - self.first) / self.count * (self.total - self.count)
        eta = f", about {left:.0f} s left" if self.count < self.total and now - self.first > 2 else ""
        line = f"[{self.count}/{self.total}] {self.name}: {outcome} in {now - self.begun:.1f} s{eta}"
        self.stream.write(f"\r\x1b[K{line}" if self.tty else line + "\n")
        self.stream.flush()

    def finished(self, name: str, outcome: str, seconds: float) -> None:
        """A step that ran beside others: counted and said when it ends (``start`` and ``done`` in
        one)."""
        import time

        self.start(name)
        self.begun = time.monotonic() - seconds
        self.done(outcome)

    def close(self) -> None:
        if self.tty and self.count:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def dims(t: tuple[int, ...] | None) -> str:
    return "(" + ",".join(str(v) for v in t) + ")" if t else "-"


def file_name(path: str | None) -> str:
    return path.rsplit("/", 1)[-1] if path else "-"


def percent(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def number(x: float | None, fmt: str = ".2f") -> str:
    return "-" if x is None else format(x, fmt)


def micros(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:,.1f}"


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


