"""The exit codes of kprof, written into README.md and docs/limits.md from the one list in the code
(kprof.errors.EXIT_CODES; kprof --help prints the same list). `python scripts/exit_codes.py`
rewrites both between their markers; `--check` exits 1 where a file is out of date
(tests/test_exit_codes_script.py runs it)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kprof.errors import EXIT_CODES

ROOT = Path(__file__).resolve().parent.parent
BEGIN = "<!-- exit codes: generated from kprof/errors.py by scripts/exit_codes.py; edit there -->"
END = "<!-- end of exit codes -->"


def readme_text() -> str:
    """README's sentence: every code and its meaning."""
    return "Exit codes (`kprof --help`, `docs/limits.md`): " + "; ".join(f"{code} {meaning}" for code, meaning, _ in
                                                                        EXIT_CODES) + "."


def limits_table() -> str:
    """docs/limits.md's table: every code, its meaning and the rest of what it covers."""
    rows = ["| code | meaning | more |", "|---|---|---|"]
    rows += [f"| {code} | {meaning} | {detail} |" for code, meaning, detail in EXIT_CODES]
    return "\n".join(rows)


GENERATED = {"README.md": readme_text, "docs/limits.md": limits_table}


def rewritten(text: str, body: str, name: str) -> str:
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{name}: no exit-code markers ({BEGIN} ... {END}); add them where the "
                         "list goes")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{body}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true",
                        help="say which files are out of date; write nothing")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the repository (default: this script's)")
    opts = parser.parse_args(argv)
    stale = []
    for name, make in GENERATED.items():
        path = opts.root / name
        text = path.read_text()
        new = rewritten(text, make(), name)
        if new != text:
            stale.append(name)
            if not opts.check:
                path.write_text(new)
    if stale:
        print(("out of date: " if opts.check else "rewrote: ") + ", ".join(stale), file=sys.stderr)
    return 1 if stale and opts.check else 0


if __name__ == "__main__":
    sys.exit(main())
