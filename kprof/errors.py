"""Every error kprof raises, each with its exit code and a message that says how to fix it.

Only ``kprof.commands.cli.main`` turns these into exit codes; everything below it raises. Findings
and failed verifications are results with a status, not exceptions: they never appear here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

# Exit codes, documented in ``kprof --help``.
EXIT_OK = 0
EXIT_FAILED = 1  # the command ran and found a problem (a verification failed, a bug found)
EXIT_USAGE = 2  # bad command line, unknown kernel, invalid spec
EXIT_TOOL_MISSING = 3  # nvcc, compute-sanitizer or ncu not found
EXIT_BUILD = 4  # nvcc rejected the source
EXIT_NO_GPU = 5  # no CUDA driver or no GPU
EXIT_CUDA = 6  # a CUDA call failed, or the target crashed or hung
EXIT_OUTPUT = 7  # an output could not be written (a full disk, standard output closed or full)
EXIT_NOT_CHECKED = 8  # a sanitizer saw no CUDA call of the program: nothing was checked
EXIT_INTERNAL = 70  # a bug in kprof
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, as a shell reports it

# The one list of exit codes: what each means in a line, and where a line is not enough, the rest.
# kprof --help, README.md and docs/limits.md show it as generated from here (scripts/exit_codes.py;
# tests/test_errors.py holds that they agree).
EXIT_CODES: tuple[tuple[int, str, str], ...] = (
    (EXIT_OK, "success: verified, clean, measured", ""),
    (EXIT_FAILED,
     "the command ran and found a problem: a verification failed, a sanitizer found something", ""),
    (EXIT_USAGE, "bad input: unknown kernel, invalid spec, bad option or size",
     "also a run the history does not have; said before anything is built"),
    (EXIT_TOOL_MISSING, "a tool is missing: nvcc, compute-sanitizer or ncu",
     "`kprof doctor` says how to install it"),
    (EXIT_BUILD, "nvcc could not compile the kernel (its messages are shown)", ""),
    (EXIT_NO_GPU, "no CUDA driver or no GPU",
     "`run`, `bench`, `peak`, `sanitize`, `cases`, `profile`; `build`, `list` and `doctor` still "
     "work. Said before anything is built, and before a missing tool (3): with no GPU the tool is "
     "not what to install first. (`pytest --kprof-sanitize` says the same line as pytest's usage "
     "error, exit 4: a pytest plugin ends a run with pytest's codes)"),
    (EXIT_CUDA, "a CUDA call failed, the kernel faulted, hung or crashed, or a tool failed",
     "with nothing found"),
    (EXIT_OUTPUT, "an output could not be written (a full disk); what was measured is kept",
     "a full disk or quota, an I/O error, standard output full (`> /dev/full`)"),
    (EXIT_NOT_CHECKED, "kprof sanitize -- CMD: the program launched no kernel, nothing checked",
     "kprof's launch count, or a tool saw no CUDA call of it (it could not attach): `NOT CHECKED`, "
     "and nothing else failed"),
    (EXIT_INTERNAL, "a bug in kprof (set KPROF_DEBUG=1 for the traceback)", ""),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C); what was already measured is kept", ""),
    (EXIT_TERMINATED,
     "terminated (SIGTERM: a job's time limit, kill); what was already measured is kept",
     "the running child's process group, and every process below it (in a session of its own too), "
     "is ended and kprof's temporary files removed, as for Ctrl-C"),
)

# The kinds of error a child reports (its exception's ``kind``); "internal": not one of kprof's own
ErrorKind = Literal["usage", "user-code", "no-gpu", "cuda", "internal"]


class KprofError(Exception):
    """Base class. ``str(err)`` is the one-line message shown to the user; ``log``, where an error
    has one, the output behind it that ``kprof`` prints above that line (nvcc's messages, a target's
    last lines, the traceback of the user's own reference)."""

    exit_code = EXIT_USAGE
    log = ""
    # What the error is, across the child's boundary (kprof.launch.childresult.ChildError.kind): the
    # parent turns the child's error into its own by this and the exit code, never by a class name.
    kind: ErrorKind = "internal"


class UsageError(KprofError):
    exit_code = EXIT_USAGE
    kind: ErrorKind = "usage"


class ArgError(UsageError):
    """A command line kprof's argument parser refused: the message says what to write instead."""


class UnsupportedArchError(UsageError):
    """A kernel needs a newer architecture than the one it is built for (its spec's ``requires``):
    ``kprof build --all`` skips it with this reason; every other command stops on it."""


class InputError(UsageError):
    """An input file that cannot be read as one: ``reason`` says why, for a caller that words the
    line itself (a spec's error names the spec file). Raised by :mod:`kprof.inputs`."""

    def __init__(self, message: str, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(message)


class JobError(KprofError):
    """A job file the child cannot take: unreadable, or written by another kprof version."""

    kind: ErrorKind = "usage"


class UserCodeError(KprofError):
    """The user's reference raised: their error, with their traceback in ``log``."""

    exit_code = EXIT_USAGE
    kind: ErrorKind = "user-code"

    def __init__(self, message: str, log: str = "") -> None:
        self.log = log
        super().__init__(message)


class SpecError(KprofError):
    """A spec file is malformed or invalid. The message names the file and the field."""

    exit_code = EXIT_USAGE
    kind: ErrorKind = "usage"

    def __init__(self, where: str, field: str, problem: str) -> None:
        self.where = where
        self.field = field
        self.problem = problem
        loc = f"{where}: {field}: " if field else f"{where}: "
        super().__init__(loc + problem)


class UnknownKernelError(KprofError):
    exit_code = EXIT_USAGE

    def __init__(self, name: str, known: list[str]) -> None:
        import difflib

        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}?" if close else "`kprof list` shows the known names"
        super().__init__(
            f"unknown kernel '{name}': {hint} (or give the path of a spec file, e.g. "
            "path/to/my_kernel.yaml)"
        )


class ToolNotFoundError(KprofError):
    exit_code = EXIT_TOOL_MISSING

    def __init__(self, tool: str, hint: str) -> None:
        self.tool = tool
        super().__init__(f"{tool} not found: {hint}")


class BuildError(KprofError):
    """nvcc failed. ``log`` carries nvcc's own ``file:line`` messages."""

    exit_code = EXIT_BUILD

    def __init__(self, message: str, log: str = "") -> None:
        self.log = log
        super().__init__(message)


class OutputError(KprofError):
    """An output could not be written: a full disk, a quota, an I/O error, a full standard output.
    What was measured before it is kept (the history store commits each point as it is measured)."""

    exit_code = EXIT_OUTPUT


class NoGPUError(KprofError):
    exit_code = EXIT_NO_GPU
    kind: ErrorKind = "no-gpu"


class CudaError(KprofError):
    """A CUDA driver call returned an error. ``result`` is the CUresult name."""

    exit_code = EXIT_CUDA
    kind: ErrorKind = "cuda"

    def __init__(self, call: str, result: str, detail: str = "") -> None:
        self.call = call
        self.result = result
        extra = f" ({detail})" if detail else ""
        super().__init__(f"{call} -> {result}{extra}")


class TargetError(KprofError):
    """The child process that ran a kernel crashed, hung or reported a CUDA fault.

    ``log`` keeps the child's output so nothing it printed is lost.
    """

    exit_code = EXIT_CUDA

    def __init__(self, message: str, log: str = "") -> None:
        self.log = log
        super().__init__(message)


class ResultError(TargetError):
    """The child's result cannot be read as this kprof's: written by another version of it."""


class NcuError(KprofError):
    """ncu ran but could not profile (counters not permitted, nothing matched, a crash)."""

    exit_code = EXIT_CUDA

    def __init__(self, message: str, log: str = "", reason: str = "") -> None:
        self.log = log
        self.reason = reason
        super().__init__(message)


# Not KprofErrors: the pure expression checkers raise these, and the spec loader turns each into a
# SpecError that names the file and the field (the checkers know neither).
class SizeExprError(ValueError):
    """The expression is not valid size arithmetic (:mod:`kprof.spec.sizeexpr`). The message says
    what to change."""


class ReferenceExprError(ValueError):
    """The expression uses something outside the reference vocabulary
    (:mod:`kprof.spec.reference`)."""
