"""The command line: argv becomes options, then one call into the core per command.

Only :func:`main` turns a :class:`~kprof.errors.KprofError` into a one-line message and an exit
code; everything below raises. Nothing heavy is imported at module level, so ``kprof --help``
starts fast and loads no CUDA, nvtx or NumPy.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from kprof.commands import streams
from kprof.errors import (
    EXIT_CODES,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    ArgError,
    KprofError,
)  # fmt: skip
from kprof.version import __version__


def _exit_code_lines() -> str:
    """kprof --help's list of exit codes (kprof.errors.EXIT_CODES), wrapped to fit 80 columns."""
    import textwrap

    return "\n".join(textwrap.fill(f"{code:<4} {meaning}", width=78, initial_indent="  ",
                                   subsequent_indent=" " * 7)
                     for code, meaning, _ in EXIT_CODES)


EPILOG = "exit codes:\n" + _exit_code_lines() + """

A kernel is named by its spec's file name (kprof list) or given as a path to a
spec file.
"""


class _Parser(argparse.ArgumentParser):
    """argparse, with its usage errors turned into KprofError so main() reports them."""

    def error(self, message: str) -> NoReturn:
        # "argument --timeout: 0: give a positive number" reads as "--timeout 0: give a positive
        # number"
        message = re.sub(r"^argument (--[\w-]+): ", r"\1 ", message)
        raise ArgError(f"{message} (see `{self.prog} --help`)")

    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse drops a failed write of --help silently; a full disk must say so (exit 7)
        if message:
            (file or sys.stderr).write(message)


def _positive(text: str) -> float:
    """A positive, finite number (a fraction, a count of seconds): checked once, here."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"{text}: give a positive number")
    return value


def _seconds(text: str) -> float:
    """A positive number of seconds, at most a week."""
    from kprof.inputs import MAX_SECONDS

    value = _positive(text)
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{text}: give at most {MAX_SECONDS:.0f} seconds (a week)")
    return value


def _timeout(text: str) -> float:
    """--timeout: seconds a child may take, at least :data:`kprof.inputs.MIN_TIMEOUT` (it takes
    about that to start; --timeout 1e-300 reported every kernel as one that may hang)."""
    from kprof.inputs import MIN_TIMEOUT

    value = _seconds(text)
    if value < MIN_TIMEOUT:
        raise argparse.ArgumentTypeError(f"{text}: give {MIN_TIMEOUT:g} second or more (a child "
                                         "takes about that to start, before the kernel runs at all)")
    return value


def _count(minimum: int) -> Callable[[str], int]:
    from kprof.inputs import MAX_COUNT

    def parse(text: str) -> int:
        if not (text.strip().lstrip("+-").isascii() and text.strip().lstrip("+-").isdigit()):
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
        if len(text.strip()) > 12:
            raise argparse.ArgumentTypeError(f"{text[:20]}{'...' if len(text) > 20 else ''}: give "
                                             f"at most {MAX_COUNT:,}")
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text}: give {minimum} or more")
        if value > MAX_COUNT:
            raise argparse.ArgumentTypeError(f"{text}: give at most {MAX_COUNT:,}")
        return value

    return parse


def _arch(text: str) -> str:
    from kprof.build.toolchain import check_arch

    try:
        return check_arch(text)
    except KprofError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kprof",
        description="Build, launch, verify and measure CUDA kernels described by a small YAML spec.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kprof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for add in (_list, _new, _build, _run, _sanitize, _cases, _mutants, _profile, _occupancy,
                _bench, _peak, _history, _compare, _doctor):
        add(sub)
    from kprof.results.render import PIPE_WIDTH

    width_help = ("wrap text to N columns (0: one line a row; default: COLUMNS, else the "
                  f"terminal's width, or {PIPE_WIDTH} to a file or a pipe)")
    parser.add_argument("--width", type=_count(0), metavar="N", help=width_help)
    for p in sub.choices.values():  # after the command too, where it is usually typed
        p.add_argument("--width", type=_count(0), metavar="N", default=argparse.SUPPRESS,
                       help=width_help)
    return parser


def _common(p: argparse.ArgumentParser, *, arch: str | None = None, timeout: float | None = None,
            json_help: str = "print JSON") -> None:
    if arch is not None:
        p.add_argument("--arch", type=_arch, help=f"target, e.g. sm_90 (default: {arch})")
    if timeout is not None:
        p.add_argument("--timeout", type=_timeout, default=timeout,
                       help=f"seconds before the target counts as hung (default {timeout:g})")
    p.add_argument("--json", action="store_true", help=json_help)


def _size_args(p: argparse.ArgumentParser, sweep: bool = False) -> None:
    help_text = ("sizes to sweep, e.g. --size M=1024,2048 N=512, or M,N,K=1024,2048 to move "
                 "together" if sweep
                 else "override sizes, e.g. --size M=127 N=131 K=97 (or M,N,K=127)")
    p.add_argument("--size", action="append", nargs="+", default=[], metavar="K=V", help=help_text)


def _param_args(p: argparse.ArgumentParser, sweep: bool = False) -> None:
    help_text = ("compile-time parameters (the spec's defines) to sweep, e.g. --param "
                 "BLOCK=64,128,256" if sweep
                 else "a compile-time parameter (one of the spec's defines), e.g. --param BK=16")
    p.add_argument("--param", action="append", nargs="+", default=[], metavar="P=V", help=help_text)


def _list(sub: Any) -> None:
    _common(sub.add_parser("list", help="list kernels and sanitizer cases"),
            arch="none; with it, the kernels that need a newer architecture are marked")


def _new(sub: Any) -> None:
    p = sub.add_parser("new",
                       help="write NAME.cu and NAME.yaml to start a kernel (a "
                            "template, or a copy of a kernel)")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--dir", default=".", help="where to write them (default: here)")
    p.add_argument("--like", metavar="KERNEL",
                   help="start from this kernel of `kprof list`, renamed to NAME")
    _common(p)


def _build(sub: Any) -> None:
    p = sub.add_parser("build", help="compile kernels with nvcc and show their resource usage")
    p.add_argument("names", nargs="*", metavar="NAME|SPEC")
    p.add_argument("--all", action="store_true", help="every kernel and sanitizer case")
    p.add_argument("--force", action="store_true", help="rebuild even if the cache is fresh")
    p.add_argument("--param", action="append", nargs="+", default=[], metavar="P=V",
                   help="build with other defines, each combination a row: --param "
                        "VPT=2,4,8 (no GPU needed)")
    _common(p, arch="the GPU's, else sm_90")


def _run(sub: Any) -> None:
    p = sub.add_parser("run",
                       help="build, launch, verify against the reference and time one launch")
    p.add_argument("name", metavar="NAME|SPEC")
    _size_args(p)
    p.add_argument("--sanitize-sizes", action="store_true",
                   help="start from the spec's small sanitize sizes")
    p.add_argument("--seed", type=int, default=0, help="input seed (default 0)")
    _common(p, arch="the GPU's", timeout=300.0)


def _sanitize(sub: Any) -> None:
    p = sub.add_parser(
        "sanitize",
        help="run compute-sanitizer (memcheck, racecheck, initcheck, synccheck) "
             "and kprof's values detector",
        usage="kprof sanitize [options] NAME|SPEC\n       kprof sanitize [options] -- CMD [ARG...]",
        description="Find memory errors, races, uninitialised reads and barrier "
                    "errors, with the source line, "
        "thread, block and buffer. A spec runs at its small sanitize sizes. After --, any program "
        "runs under each tool with framework memory pools off (PyTorch, CuPy, JAX), and each "
        "finding names the launch site in your files. Exit 0 when clean, 1 when anything was "
        "found, 6 when a tool or the target failed with nothing found.",
    )  # fmt: skip
    p.add_argument("name", nargs="?", metavar="NAME|SPEC")
    p.add_argument("--tool", default="all",
                   help="one of kprof's checkers (kprof sanitize --list-tools "
                   "names them) or all (default)")
    _size_args(p)
    p.add_argument("--memcheck-padding", type=_count(0), default=256, metavar="BYTES",
                   help="padding after each allocation, so an overflow into a neighbour is caught "
                   "(default 256; 0 is memcheck's own default)")
    p.add_argument("--sarif", metavar="FILE", help="also write SARIF 2.1.0 to FILE")
    p.add_argument("--from-xml", metavar="FILE",
                   help="report a compute-sanitizer --xml --save file instead of running")
    p.add_argument("--allocations", metavar="RESULT.json",
                   help="with --from-xml: the runner's result file, to name buffers")
    p.add_argument("--list-tools", action="store_true",
                   help="name each checker, what it finds and what it needs, and stop")
    p.add_argument("--keep-pools", action="store_true",
                   help="with -- CMD: leave framework memory pools on (accesses "
                        "inside a pool then go unseen)")
    p.add_argument("--all-kernels", action="store_true",
                   help="with -- CMD: racecheck and synccheck check library kernels too (cuBLAS, "
                        "cuDNN, CUTLASS, NCCL, "
                   "PyTorch's own); by default they check the program's own kernels, "
                   "memcheck and initcheck all")
    p.add_argument("--jobs", type=_count(1), default=None,
                   help="with -- CMD: run N of the program's copies (one a tool) side by side, "
                        "where you know they "
                   "share no file, port or most of the GPU's memory (default: one after another)")
    _common(p, arch="the GPU's", timeout=300.0,
            json_help="print one JSON object with a findings list")


def _cases(sub: Any) -> None:
    p = sub.add_parser("cases", help="run the seeded-bug corpus and print the detection matrix")
    p.add_argument("names", nargs="*", metavar="CASE")
    p.add_argument("--list", action="store_true",
                   help="list the cases and what each expects (no GPU)")
    p.add_argument("--jobs", type=_count(1), default=None,
                   help="tool runs at once (default: what the GPU's free memory and the CPUs allow)")
    p.add_argument("--bench", action="store_true",
                   help="the cheat corpus of kprof bench (bench_cases/): each cheat "
                        "timed beside the honest "
                   "operation, caught or missed by the integrity checks (PyTorch and a GPU)")
    p.add_argument("--perf", action="store_true",
                   help="the performance corpus (perf_cases/): each kernel benched beside its "
                        "fixed twin, profiled "
                   "and diagnosed; first cause, line and estimated gain against "
                   "the twin's measured gain")
    p.add_argument("--save-report", metavar="DIR",
                   help="with --perf: keep each case's .ncu-rep (Nsight Compute's full set) in DIR")
    _common(p, arch="the GPU's", timeout=300.0)


def _mutants(sub: Any) -> None:
    p = sub.add_parser("mutants",
                       help="how strong a spec's verdict is: mutants of its "
                            "kernel, killed or survived",
                       description="Make mutants of the kernel's source (a bound off by one, a "
                                   "missing barrier, an "
                       "overwritten accumulator, swapped indices, ...), build each (one with the "
                       "original's machine code is equivalent), and run each other one through the "
                       "spec's verdict at its sanitize size and every size it checks; one the "
                       "verdict passes goes under memcheck, racecheck, the values detector, "
                       "synccheck and initcheck at the sanitize size. Prints the score (what "
                       "killed each mutant: the verdict or a tool) and each survivor's diff.")
    p.add_argument("name", metavar="NAME", help="a kernel spec (kprof list)")
    p.add_argument("--dry-run", action="store_true",
                   help="list and build the mutants, run none (no GPU needed)")
    p.add_argument("--limit", type=_count(1), default=None,
                   help="at most this many mutants (default 60)")
    p.add_argument("--jobs", type=_count(1), default=None,
                   help="mutants built and run at once (default: what the GPU's free memory and "
                        "the CPUs allow)")
    p.add_argument("--timeout", type=_timeout, default=None,
                   help="seconds a mutant's run may take before it counts as hung, and killed "
                        "(default: four "
                   "times the original's run, at least 20)")
    _common(p, arch="the GPU's, else sm_90")


def _profile(sub: Any) -> None:
    p = sub.add_parser(
        "profile",
        help="Nsight Compute: occupancy, DRAM bandwidth, caches, bank conflicts, roofline, stalls",
        usage="kprof profile [options] NAME|SPEC [NAME|SPEC ...]\n       kprof profile [options] "
              "-- CMD [ARG...]",
        description="Profile kernels with ncu through kprof's runner (selected by its "
                    "NVTX range). Several names "
        "are profiled one after another and compared in one table. After --, any program: kernels "
        "picked by --kernel and/or --range, at most --launch-count of them.",
    )  # fmt: skip
    p.add_argument("names", nargs="*", metavar="NAME|SPEC")
    p.add_argument("--kernel", metavar="REGEX",
                   help="with -- CMD: profile kernels whose name matches")
    p.add_argument("--range", dest="nvtx_range", metavar="NAME",
                   help="with -- CMD: only kernels inside this NVTX range (the program's, torch's, "
                        "or kprof.range)")
    p.add_argument("--launch-skip", type=_count(0), default=0,
                   help="with -- CMD: matching launches to skip first")
    p.add_argument("--launch-count", type=_count(1), default=10,
                   help="with -- CMD: matching launches to profile (default 10), "
                        "then the program is stopped")
    _size_args(p)
    _param_args(p)
    p.add_argument("--baseline", default=None, metavar="NAME[,NAME]",
                   help="also profile what these baselines launch, at the same sizes, beside each "
                        "kernel: a name from the spec's baselines: (torch, torch.compile, cublaslt "
                        "for the shipped kernels) or a Python callable (FILE.py:FUNCTION, "
                        "package.module:FUNCTION)")
    p.add_argument("--set", dest="set_name", default="quick", choices=["quick", "full"],
                   help="quick: kprof's metrics only (default); full: also every "
                        "ncu section, for the GUI")
    p.add_argument("--metrics", default="",
                   help="extra ncu metrics, comma-separated (shown under 'extra')")
    p.add_argument("--save-report", metavar="DIR",
                   help="keep the .ncu-rep files in DIR for the Nsight Compute GUI")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw the roofline with each kernel as a point (needs matplotlib)")
    p.add_argument("--try", dest="tries", action="append", nargs="+", default=[], metavar="P=V,V",
                   help="variants of a define to verify and time beside the original in the same "
                        "run, e.g. --try BLOCK=128,256 (the diagnosis reports "
                        "each one's measured gain)")
    p.add_argument("--no-try", dest="no_try", action="store_true",
                   help="no tries of kprof's own choosing for the first cause "
                        "(only those --try names)")
    p.add_argument("--sarif", metavar="FILE",
                   help="also write the diagnosis's causes as SARIF 2.1.0 (one result per "
                   "cause, at its line), for code review tools")
    _common(p, arch="the GPU's", timeout=600.0, json_help="print the typed report as JSON")


def _occupancy(sub: Any) -> None:
    p = sub.add_parser("occupancy",
                       help="theoretical occupancy and its limiter, from the cubin (no GPU needed)")
    p.add_argument("name", metavar="NAME|SPEC")
    p.add_argument("--block", type=_count(1), action="append", default=[],
                   help="block size(s) to report (default: the spec's)")
    p.add_argument("--dynamic-smem", type=_count(0), default=None,
                   help="dynamic shared memory per block in bytes (default: the spec's)")
    _size_args(p)
    _common(p,
            arch="the GPU's, else sm_90; any of sm_61, sm_70, sm_75, sm_80, sm_86, sm_87, sm_89, "
                 "sm_90, sm_100, sm_103, sm_120, sm_121")


BENCH_DESCRIPTION = (
    "Verify each kernel, then time it until the noise is low (or a timeout): one launch per "
    "sample, held behind a blocking kernel so no host gap is timed, with the L2 flushed first "
    "(--cold, default) or not (--warm); or each kernel inside a replayed CUDA graph of many "
    "launches (--hot). The time is the kernel's own GPU start-to-end from CUPTI's activity records "
    "when cupti-python is installed, else CUDA events around the launch (--timer). Sweeps: --size "
    "M=1024,2048 and --param BLOCK=64,128 (parameters are the spec's defines). Every point is kept "
    "in the history store (kprof history)."
)


def _bench(sub: Any) -> None:
    p = sub.add_parser("bench",
                       help="time kernels (median and spread), against the GPU's ceilings and "
                            "cuBLAS, in one run",
                       description=BENCH_DESCRIPTION)
    p.add_argument("names", nargs="+", metavar="NAME|SPEC")
    _size_args(p, sweep=True)
    _param_args(p, sweep=True)
    p.add_argument("--baseline", default="auto",
                   help="auto (the spec's, e.g. cublas_sgemm), none, cublas_sgemm, a name from the "
                        "spec's baselines: (torch, torch.compile, cublaslt for the shipped "
                        "kernels), another spec's name, or a Python callable (FILE.py:FUNCTION, "
                        "package.module:FUNCTION); several, comma-separated, in the same run")
    mode = p.add_mutually_exclusive_group()
    for flag, text in (("cold", "one launch per sample, L2 flushed before it (default)"),
                       ("warm", "one launch per sample, caches left warm"),
                       ("hot",
                        "replay a CUDA graph of many launches, so launch overhead is not timed "
                        "(for very short kernels)")):
        mode.add_argument(f"--{flag}", dest="mode", action="store_const", const=flag, help=text)
    p.add_argument("--timer", choices=("auto", "cupti", "events"), default="auto",
                   help="cupti: kernel start/end timestamps (needs "
                        "cupti-python); events: CUDA events; "
                   "auto (default): cupti when it works, else events, saying why")
    p.add_argument("--rel-stdev", type=_positive, default=0.005,
                   help="stop when the relative stddev is below this (default 0.005)")
    p.add_argument("--min-time", type=_seconds, default=0.5,
                   help="seconds of samples before the noise rule may stop (default 0.5)")
    p.add_argument("--max-time", type=_seconds, default=10.0,
                   help="seconds of samples at most per point (default 10)")
    p.add_argument("--plot", metavar="FILE.png",
                   help="throughput against the swept size or parameter (needs matplotlib)")
    p.add_argument("--no-history", action="store_true", help="do not record the results")
    p.add_argument("--strict", action="store_true",
                   help="fail (exit 1) when a benchmark-integrity check flags the kernel or a "
                        "baseline: work outside "
                   "the timed window or on another stream, a result that does not follow its "
                   "input, ... (docs/bench.md)")
    _common(p, arch="the GPU's", timeout=300.0, json_help="print versioned JSON")


def _peak(sub: Any) -> None:
    p = sub.add_parser("peak",
                       help="measure this GPU's copy bandwidth and FP32 FMA rate "
                            "(cached per GPU and driver)")
    p.add_argument("--refresh", action="store_true",
                   help="measure again instead of using the cache")
    p.add_argument("--thorough", action="store_true",
                   help="with --refresh: also try 4-byte accesses (twice the time; they lost every "
                        "mix on an H200)")
    _common(p)


def _history(sub: Any) -> None:
    p = sub.add_parser("history", help="past bench results from the history store")
    p.add_argument("name", nargs="?", metavar="NAME", help="one kernel (default: the recent runs)")
    p.add_argument("--limit", type=_count(1), default=20, help="rows (default 20)")
    _common(p)


def _compare(sub: Any) -> None:
    p = sub.add_parser("compare",
                       help="compare two bench runs: same, faster or slower, "
                            "beyond the measured noise")
    p.add_argument("before", metavar="RUN", help="a run id from kprof history, or last~1")
    p.add_argument("after", metavar="RUN", nargs="?", default="last", help="default: last")
    _common(p)


def _doctor(sub: Any) -> None:
    p = sub.add_parser("doctor",
                       help="check the driver, GPU, nvcc, compute-sanitizer, ncu and libraries")
    _common(p)
    p.add_argument("--for", dest="for_commands", type=_doctor_commands, default="all",
                   metavar="CMD[,CMD]",
                   help="the commands to check for: build, run, sanitize, profile, bench or all "
                        "(default); exit 0 when each can run here, else the exit code the first "
                        "that cannot would end with (5: no GPU, 3: a tool missing)")


def _doctor_commands(text: str) -> tuple[str, ...]:
    from kprof.tools.machine.doctor import COMMANDS

    asked = tuple(dict.fromkeys(w.strip() for w in text.split(",") if w.strip()))
    if asked == ("all",):
        return COMMANDS
    unknown = [w for w in asked if w not in COMMANDS]
    if unknown or not asked:
        raise argparse.ArgumentTypeError(f"{text!r}: give any of {', '.join(COMMANDS)}, or all")
    return asked


def main(argv: Sequence[str] | None = None) -> int:
    if (closed := streams.closed_streams()) is not None:
        return closed
    streams.tolerant_streams()
    with streams.clean_terminal():
        try:
            with streams.terminate_as_interrupt():
                code = _main(argv)
            if code == EXIT_INTERRUPTED and streams.TERMINATED:
                code = EXIT_TERMINATED
        except SystemExit as exc:  # --help and --version print, then exit through argparse
            code = exc.code if isinstance(exc.code, int) else (EXIT_OK if exc.code is None
                                                               else EXIT_USAGE)
        code = streams.flushed(code)
    try:
        sys.stderr.flush()
    except (OSError, ValueError):  # 2>/dev/full: the exit code is the message
        streams.quiet(2)
    return code


def _main(argv: Sequence[str] | None) -> int:
    try:
        return main_inner(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt:
        streams.say("kprof: terminated (SIGTERM)" if streams.TERMINATED else "kprof: interrupted")
        return EXIT_INTERRUPTED
    except KprofError as exc:
        # nvcc's messages, the target's last lines, the traceback of the user's own reference
        if log := exc.log:
            streams.say(log.rstrip())
        from kprof.inputs import one_line

        streams.say(f"kprof: error: {one_line(str(exc))}")
        return exc.exit_code
    except BrokenPipeError:
        streams.quiet_stdout()
        return EXIT_OK
    except OSError as exc:
        from kprof.outputs import OUTPUT_ERRNOS

        return streams.output_failed(exc) if exc.errno in OUTPUT_ERRNOS else _internal(exc)
    except Exception as exc:  # noqa: BLE001 - a bug in kprof: one line, traceback on request
        return _internal(exc)


def _internal(exc: BaseException) -> int:
    if os.environ.get("KPROF_DEBUG"):
        raise exc
    streams.say(f"kprof: internal error: {type(exc).__name__}: {exc} (set KPROF_DEBUG=1 for the "
                "traceback)")
    return EXIT_INTERNAL


def _no_output_over_an_input(opts: argparse.Namespace) -> None:
    """An output that names a file this command reads (a report, the allocations, a spec or its
    kernel), or the other output, is refused before anything runs: the write would replace what was
    read."""
    from pathlib import Path

    from kprof import inputs

    read: list[tuple[str, str]] = [(flag, getattr(opts, attr)) for attr, flag in
                                   (("from_xml", "--from-xml"), ("allocations", "--allocations"))
                                   if getattr(opts, attr, None)]
    xml = Path(getattr(opts, "from_xml", None) or "")
    if xml.name:  # the text report read beside it (FILE.txt for FILE.xml)
        read.append(("the text report read with --from-xml", str(xml.with_suffix(".txt"))))
    names = getattr(opts, "names", None) or ([opts.name]
                                             if isinstance(getattr(opts, "name", None), str)
                                             else [])
    for name in names:
        if isinstance(name, str) and name.endswith((".yaml", ".yml")):
            read += [("the spec", name), ("the spec's kernel", str(Path(name).with_suffix(".cu")))]
    written = [(flag, getattr(opts, attr))
               for attr, flag in (("sarif", "--sarif"), ("plot", "--plot"))
               if getattr(opts, attr, None)]
    for i, (flag, out) in enumerate(written):
        for other, given in read + written[i + 1:]:
            if inputs.same_file(Path(out), Path(given)):
                raise ArgError(f"{flag} {out}: {other} {given} is that file, and writing it would "
                               f"replace it; give {flag} another file")


def main_inner(argv: list[str]) -> int:
    parser = _parser()
    program = None
    # kprof sanitize [options] -- CMD [ARG...]: everything after -- is the user's program
    if "--" in argv:
        cut = argv.index("--")
        argv, program = argv[:cut], argv[cut + 1:]
    opts = parser.parse_args(argv)
    if program is not None and opts.command not in ("sanitize", "profile"):
        raise ArgError(f"`-- CMD` is for kprof sanitize and kprof profile, not kprof {opts.command}")
    if program is not None and not program:
        raise ArgError(f"name the program after --, e.g. kprof {opts.command} -- python train.py")
    opts.program = program
    from kprof.results import render

    render.choose_width(opts.width)
    if opts.command is None:
        parser.print_help()
        return EXIT_USAGE
    from kprof import outputs
    from kprof.commands import commands, options
    from kprof.spec import sweep

    # checked before anything runs, not after
    for attr, flag in (("plot", "--plot"), ("sarif", "--sarif")):
        if getattr(opts, attr, None):
            setattr(opts, attr, str(outputs.output_file(getattr(opts, attr), flag)))
    _no_output_over_an_input(opts)
    if getattr(opts, "plot", None):
        from kprof.results import plot

        plot.require(opts.plot)  # matplotlib, and a kind of file it draws
    handler = getattr(commands, f"cmd_{opts.command}")
    for what in ("size", "param"):  # one grammar for every command: kprof.spec.sweep
        if hasattr(opts, what):
            parsed = sweep.parse([item for group in getattr(opts, what) for item in group], what)
            if parsed.deprecated:
                print(f"kprof: warning: {parsed.deprecated}", file=sys.stderr)
            setattr(opts, what, parsed)
    code: int = handler(options.from_namespace(opts.command, opts))
    return code


if __name__ == "__main__":
    sys.exit(main())
