"""The shim a sanitized program runs under:
``python -m kprof.tools.programs.exitcode STATUS.json [--tally TALLY.jsonl] -- CMD [ARG...]``.

compute-sanitizer's own exit code mixes its findings with the program's; this shim runs the program,
writes the program's exit code (or the signal that killed it) to STATUS.json, and exits the same
way. kprof then tells a clean run from a program that failed with nothing found.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


def wrap(cmd: list[str], status: Path, tally: Path | None = None) -> list[str]:
    """The user's command behind this shim, its exit code to ``status``; with ``tally``, the
    program's launches counted there (``KPROF_LAUNCH_TALLY``, set for the program only: the shim, a
    Python process itself, is not counted)."""
    return [sys.executable, "-m", "kprof.tools.programs.exitcode", str(status),
            *(["--tally", str(tally)] if tally else []), "--", *cmd]


@dataclass(frozen=True)
class Status:
    """How the program ended, as the shim wrote it."""

    returncode: int | None  # None: it did not start (``error`` says why)
    signal: str = ""  # the signal that killed it (SIGSEGV), where one did
    error: str = ""  # why it could not start

    def how(self) -> str:
        """``exited with code 1``, ``was killed by SIGSEGV``, or why it did not start."""
        return self.error or (f"was killed by {self.signal}" if self.signal
                              else f"exited with code {self.returncode}")


def read_status(status: Path) -> Status | None:
    """What the shim wrote, or None: the program never ran (or the file is not the shim's)."""
    try:
        data = json.loads(status.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    code, sig, error = data.get("returncode"), data.get("signal"), data.get("error")
    return Status(code if isinstance(code, int) and not isinstance(code, bool) else None,
                  sig if isinstance(sig, str) else "", error if isinstance(error, str) else "")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    env = None
    if len(args) >= 3 and args[1] == "--tally":
        env = {**os.environ, "KPROF_LAUNCH_TALLY": args[2]}
        args = [args[0], *args[3:]]
    if len(args) < 3 or args[1] != "--":
        print("usage: python -m kprof.tools.programs.exitcode STATUS.json [--tally TALLY.jsonl] -- "
              "CMD [ARG...]", file=sys.stderr)
        return 2
    status, cmd = Path(args[0]), args[2:]
    try:
        code = subprocess.call(cmd, env=env)
    except OSError as exc:
        status.write_text(json.dumps({"returncode": None,
                                      "error": f"{cmd[0]}: {exc.strerror or exc}"}))
        return 127
    record: dict[str, object] = {"returncode": code}
    if code < 0:
        try:
            record["signal"] = signal.Signals(-code).name
        except ValueError:
            record["signal"] = f"signal {-code}"
    status.write_text(json.dumps(record))
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
