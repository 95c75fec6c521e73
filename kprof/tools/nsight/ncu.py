"""The only ncu caller: argv builder, CSV parser, and the thin run around them.

ncu wraps kprof's runner and profiles only the launch inside the runner's NVTX push/pop range
``kprof@NAME`` (``--nvtx-include "kprof@NAME/"``; a start/end range or a ``/`` in the name would
not match). ``--clock-control none`` leaves the clocks as they run, so numbers agree with kprof's
own timings. Output is ``--page raw --csv``: one row per profiled kernel, numbers with thousands
separators. A metric this ncu does not know is dropped and the run retried, so one renamed
metric never costs the whole profile.
"""

from __future__ import annotations

import csv
import io
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import KW_ONLY, dataclass, replace
from pathlib import Path

from kprof import outputs, proc
from kprof.errors import KprofError, NcuError, UsageError
from kprof.launch import launch
from kprof.launch.childresult import ChildResult
from kprof.launch.job import Job, RunMode
from kprof.tools.nsight import sourcepage

STALL_REASONS = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle",
    "long_scoreboard",
    "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction", "not_selected",
    "selected", "short_scoreboard", "sleeping", "tex_throttle", "wait",
)  # fmt: skip

METRICS = (
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg.per_second",
    "dram__cycles_elapsed.avg.per_second",
    # occupancy
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__block_size",
    "launch__grid_size",
    "launch__waves_per_multiprocessor",
    "launch__sm_count",
    # memory
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__bytes.sum.peak_sustained",
    "lts__t_sector_hit_rate.pct",
    "l1tex__t_sector_hit_rate.pct",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    # compute: FLOPs from the SASS instruction counters (an FMA is two)
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    # every tensor-core op: mma.sync and wgmma
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",  # Hopper's warpgroup MMA (wgmma), 0 elsewhere
    "device__attribute_multiprocessor_count",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    # what the diagnosis (kprof.diagnosis) reads beyond the numbers above
    # active threads per warp instruction (divergence)
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "smsp__inst_executed.sum",
    "smsp__sass_inst_executed_op_global_atom.sum",
    "smsp__sass_inst_executed_op_global_red.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "smsp__sass_inst_executed_op_local_ld.sum",
    "smsp__sass_inst_executed_op_local_st.sum",
    "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
    "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__cycles_active.avg",
    "sm__cycles_elapsed.avg",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_bytes.sum",
    "l1tex__t_bytes.sum",
    "smsp__warps_launched.sum",
) + tuple(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in STALL_REASONS)

SETS = ("quick", "full")
MAX_RETRIES = 8  # runs, each leaving out the metrics this ncu said it does not know
MIN_ARCH = 70  # Nsight Compute profiles Volta and newer; Pascal and older it does not support


def unsupported(arch: str) -> str | None:
    """Why ncu cannot profile a GPU of ``arch`` (Pascal: sm_60, sm_61, sm_62), else None. Pure."""
    from kprof.spec import arch_number

    number = arch_number(arch)
    if not number or number >= MIN_ARCH:
        return None
    return f"Nsight Compute does not support {arch} GPUs (it profiles sm_70 and newer)"


def nvtx_filter(name: str) -> str:
    """The include expression for the runner's push/pop range ``name`` in domain ``kprof``."""
    if "/" in name:
        raise UsageError(f"kernel name {name!r} has a '/', which ncu's NVTX filter reads as nesting")
    return f"kprof@{name}/"


def build_argv(ncu: str | Path, name: str, *, set_name: str = "quick",
               metrics: tuple[str, ...] = METRICS,
               report: str | Path | None = None, lines: bool = True) -> list[str]:
    """ncu's argv up to (not including) the target program."""
    head = [str(ncu), "--nvtx", "--nvtx-include", nvtx_filter(name), "--clock-control", "none",
            "--metrics", ",".join(metrics)]
    return head + _tail(set_name, report, lines=lines)


def _tail(set_name: str, report: str | Path | None, *, lines: bool = True) -> list[str]:
    """What both argvs (a spec's, a program's) end with: the full set where asked (every section,
    for the GUI; ~2 s a kernel), the Source page's section where a report is exported (each line's
    counters, the source kept to read it), and how ncu gives its numbers: the raw page as CSV on
    stdout, or, exporting ``report``, nothing printed (then :func:`table` reads the report back)."""
    if set_name not in SETS:
        raise UsageError(f"--set {set_name!r}: use quick or full")
    out = ["--set", "full"] if set_name == "full" else []
    if report is None:
        return out + ["--csv", "--page", "raw", "--print-units", "base"]
    if lines:
        out += ["--section", "SourceCounters", "--import-source", "yes"]
    return out + ["--export", str(report), "--force-overwrite"]


def table(ncu: str | Path, report: Path | None, printed: str) -> str:
    """ncu's raw page as CSV: read back from ``report`` where it exported one (an empty one, of a
    run that ended before it wrote any, has none), else what it ``printed``."""
    if report is None or not report.stat().st_size:
        return printed
    return proc.run(import_argv(ncu, report), timeout=120).stdout


def import_argv(ncu: str | Path, report: str | Path) -> list[str]:
    """Read a saved report back. ``--print-units base`` said outright: ``--csv`` implies it when
    profiling, but a report read back with ``--import`` came out scaled (ms, Mbyte, Ghz) on an H200
    with ncu 2025.3.1."""
    return [str(ncu), "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]


@dataclass(frozen=True)
class Value:
    value: float | str | None
    unit: str


# Units a metric may come in when ncu scales it (--print-units auto), to the base unit kprof reads:
# a time in nanoseconds, anything else without its SI prefix (Mbyte -> byte, Ghz -> hz, Kinst ->
# inst, Tbyte/second -> byte/second).
_TIME_NS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6,
            "s": 1e9, "second": 1e9}
_PREFIX = {"K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_SCALED = re.compile(r"^([KkMGTP])(byte|hz|inst|sector|request|warp|cycle|thread|block|wavefront|transaction)$")


def base_unit(value: float | str | None, unit: str) -> Value:
    """A metric's value in its base unit (nanoseconds for a time, per second for a rate): what ncu
    prints with ``--print-units base``. Pure."""
    if not isinstance(value, float):
        return Value(value, unit)
    if unit in _TIME_NS:
        return Value(value * _TIME_NS[unit], "ns")
    numerator, slash, per = unit.partition("/")
    if slash and per in _TIME_NS:  # cycle/nsecond, Gbyte/msecond: per second
        value, per = value * 1e9 / _TIME_NS[per], "second"
    m = _SCALED.match(numerator)
    if m:
        value, numerator = value * _PREFIX[m.group(1)], m.group(2)
    return Value(value, numerator + (f"/{per}" if slash else ""))


def parse_number(text: str) -> float | str | None:
    """``"1,073,741,824"`` -> 1073741824.0; ``"n/a"`` and empty -> None; words stay words."""
    text = text.strip()
    if not text or text.lower() in ("n/a", "nan", "-"):
        return None
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return text


def parse_csv(text: str) -> list[dict[str, Value]]:
    """Rows of ``--page raw --csv`` output (the header row, then units, then one row per kernel)."""
    start = text.find('"ID"')
    if start < 0:
        return []
    rows = list(csv.reader(io.StringIO(text[start:])))
    if len(rows) < 2:
        return []
    header, units = rows[0], rows[1]
    out = []
    for row in rows[2:]:
        if len(row) != len(header):
            continue
        out.append({h: base_unit(parse_number(v), u) for h, u, v in zip(header, units, row)})
    return out


_UNKNOWN_METRIC = re.compile(r"Failed to find metric\s+'?([A-Za-z0-9_.]+)'?")


def diagnose(text: str) -> tuple[str, str] | None:
    """(reason, message) for ncu output that means nothing was measured, else None."""
    if "ERR_NVGPUCTRPERM" in text:
        return ("counters",
                "ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM): run as "
                "root, or load the driver with NVreg_RestrictProfilingToAdminUsers=0 "
                "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)")
    if "No kernels were profiled" in text:
        return ("no-match",
                "ncu profiled no kernel: nothing ran inside the NVTX range the filter names "
                "(is the nvtx package installed where the runner runs?)")
    return None


def unknown_metrics(text: str) -> list[str]:
    return _UNKNOWN_METRIC.findall(text)


@dataclass(frozen=True)
class Measured:
    """What one ncu run over the runner gave: a raw row per kernel launched (in launch order) and,
    where the report had them, each one's Source page (:mod:`kprof.tools.nsight.sourcepage`; None:
    no line measured)."""

    rows: list[dict[str, Value]]
    pages: list[sourcepage.SourceLines | None]  # each row's (:func:`pages_for`)


def profile_rows(job: Job, *, set_name: str = "quick", extra_metrics: tuple[str, ...] = (),
                 report_dir: Path | None = None, timeout: float = 600.0) -> list[dict[str, Value]]:
    """Run ncu over the runner; one raw row per kernel launched in the target's NVTX range
    ``kprof@NAME`` (several for a spec with steps), in launch order."""
    return measure(job, set_name=set_name, extra_metrics=extra_metrics, report_dir=report_dir,
                   timeout=timeout, lines=False).rows


def measure(job: Job, *, set_name: str = "quick", extra_metrics: tuple[str, ...] = (),
            report_dir: Path | None = None, timeout: float = 600.0, lines: bool = True) -> Measured:
    """:func:`profile_rows` with each kernel's measured source lines (``lines``): ncu then exports a
    report (kept in ``report_dir``, else in a temporary folder) with the SourceCounters section, and
    its Source page is read back."""
    if lines and report_dir is None:
        with tempfile.TemporaryDirectory(prefix="kprof-ncu-") as tmp:
            return measure(job, set_name=set_name, extra_metrics=extra_metrics,
                           report_dir=Path(tmp), timeout=timeout)
    if lines:
        try:
            return _measure(job, set_name, extra_metrics, report_dir, timeout, lines=True)
        # an ncu that cannot take the section here (no PC sampling): the numbers without lines
        except NcuError as exc:
            if exc.reason != "tool":
                raise
    return _measure(job, set_name, extra_metrics, report_dir, timeout, lines=False)


def _measure(job: Job, set_name: str, extra_metrics: tuple[str, ...], report_dir: Path | None,
             timeout: float, *, lines: bool) -> Measured:
    name = job.target.name
    exe = proc.find_tool("ncu")
    metrics = tuple(dict.fromkeys(METRICS + extra_metrics))
    job = replace(job, mode=RunMode(verify=False, time=False))
    report = report_dir / f"{name}.ncu-rep" if report_dir else None
    with saved_report(report) as made:
        for _attempt in range(MAX_RETRIES):
            done, data = launch.run(job, timeout=timeout,
                                    wrapper=build_argv(exe, name, set_name=set_name,
                                                       metrics=metrics, report=made, lines=lines))
            text = done.stdout + "\n" + done.stderr
            unknown = unknown_metrics(text)
            if not (unknown and done.returncode != 0):
                break
            # one renamed metric never costs the profile
            metrics = tuple(m for m in metrics if m not in unknown)
        _raise_for_run(name, done, data, text, timeout)
        text = table(exe, made, text)
    rows = parse_csv(text)
    if not rows:
        raise NcuError(f"{name}: ncu printed no metrics", done.tail(30), "no-match")
    pages = source_pages(exe, report, timeout=timeout) if lines and report is not None else None
    return Measured(rows, pages_for(rows, pages))


def pages_for(rows: list[dict[str, Value]],
              pages: list[sourcepage.SourceLines] | None) -> list[sourcepage.SourceLines | None]:
    """Each profiled launch's Source page, in the rows' order; None for each where the report's
    pages do not match its launches one to one (no line is then measured, never another launch's).
    Pure."""
    return list(pages) if pages is not None and len(pages) == len(rows) else [None] * len(rows)


def report_pages(report: Path, *, timeout: float = 120.0) -> list[sourcepage.SourceLines] | None:
    """:func:`source_pages` of a kept report, with the ncu kprof finds; None where there is none."""
    try:
        exe = proc.find_tool("ncu")
    except KprofError:
        return None
    return source_pages(exe, report, timeout=timeout)


def source_pages(exe: str | Path, report: Path, *,
                 timeout: float = 120.0) -> list[sourcepage.SourceLines] | None:
    """The Source page of each kernel in ``report`` (:mod:`kprof.tools.nsight.sourcepage`), in the
    report's order; None where ncu cannot give it (an ncu without the page, a report without source
    counters): no line measured."""
    if not report.is_file():
        return None
    try:
        done = proc.run(sourcepage.argv(exe, report), timeout=timeout)
    except KprofError:
        return None
    if done.timed_out or done.returncode != 0:
        return None
    try:
        return sourcepage.parse(done.stdout[:sourcepage.MAX_PAGE_CHARS]) or None
    except Exception:  # noqa: BLE001 - a page of a layout kprof does not know costs the lines, never the profile
        return None


@contextmanager
def saved_report(report: Path | None) -> Iterator[Path | None]:
    """Where ncu exports a report that goes to ``report`` (``--save-report``): a fresh file beside
    it (ncu's ``--force-overwrite`` then writes only kprof's own file, never through a link or over
    a device at the report's name), put at ``report`` once the run is over
    (:func:`kprof.outputs.place_file`), even one ncu failed (the GUI shows what it got), never one an
    interrupt cut short (the earlier report stays); what is at ``report`` is checked first, so a
    folder there is one line before ncu runs. None: no report kept."""
    if report is None:
        yield None
        return
    # a folder, a socket or a block device at the report's name: one line, now
    outputs.make_dir(report.parent, "--save-report")  # checked before the run, made with its first report
    outputs.output_kind(report)
    try:
        fd, name = tempfile.mkstemp(prefix=f".{report.stem[:64]}-", suffix=".ncu-rep",
                                    dir=report.parent)
    except OSError as exc:
        raise outputs.write_error(report, exc) from None
    os.close(fd)
    made = Path(name)
    try:
        yield made
    except NcuError:
        _place(made, report)  # what ncu got before it failed, for the GUI
        raise
    except BaseException:
        made.unlink(missing_ok=True)  # interrupted: a report cut short never replaces the one there
        raise
    _place(made, report)


def _place(made: Path, report: Path) -> None:
    if made.is_file() and made.stat().st_size:
        outputs.place_file(made, report)
    made.unlink(missing_ok=True)


def _raise_for_run(name: str, done: proc.Completed, data: ChildResult, text: str,
                   timeout: float) -> None:
    if done.timed_out:
        raise NcuError(f"{name}: ncu did not finish within {timeout:g} s (the kernel may hang, or "
                       "--set full replays it dozens of times)", done.tail(30), "timeout")
    if (why := diagnose(text)) is not None:
        raise NcuError(f"{name}: {why[1]}", done.tail(30), why[0])
    if data.status == "error":
        message = data.error.message if data.error else "?"
        raise NcuError(f"{name}: the kernel failed under ncu: {message}", done.tail(30), "target")
    if done.returncode != 0:
        how = done.signal_name or f"exit code {done.returncode}"
        said = ncu_errors(text)
        raise NcuError(f"{name}: ncu ended with {how}" + (f" ({said})" if said else ""),
                       done.tail(30), "tool")


def ncu_errors(text: str) -> str:
    """ncu's own ``==ERROR==`` lines (the last two, distinct), so the one-line error says what ncu
    said."""
    lines = list(dict.fromkeys(line.removeprefix("==ERROR==").strip() for line in text.splitlines()
                               if line.startswith("==ERROR==")))
    return "; ".join(lines[-2:])


def program_argv(ncu: str | Path, *, kernel: str | None = None, nvtx_range: str | None = None,
                 launch_skip: int = 0,
                 launch_count: int = 10, set_name: str = "quick",
                 metrics: tuple[str, ...] = METRICS, report: str | Path | None = None) -> list[str]:
    """ncu's argv for the user's program (up to, not including, the command). Kernels are picked by
    name (a regular expression) and/or NVTX range: ``NAME`` in the default domain (the program's own
    push/pop ranges, torch's ``record_function``) or in kprof's (``kprof.range``). At most
    ``launch_count`` launches are profiled, and then ncu stops the program, so a long one is not
    profiled end to end. ``report``: saved there for the GUI (``--save-report``), read back with
    :func:`import_argv`."""
    argv = [str(ncu), "--target-processes", "all", "--clock-control", "none", "--metrics",
            ",".join(metrics),
            "--launch-skip", str(launch_skip), "--launch-count", str(launch_count), "--kill", "1"]
    if kernel:
        argv += ["--kernel-name", f"regex:{kernel}"]
    if nvtx_range:
        argv += ["--nvtx", "--nvtx-include", f"{nvtx_range}/", "--nvtx-include",
                 f"kprof@{nvtx_range}/"]
    # a kept report: each launch's Source page in it (its lines measured)
    return argv + _tail(set_name, report)


def profile_program(cmd: list[str], *, kernel: str | None = None, nvtx_range: str | None = None,
                    launch_skip: int = 0, launch_count: int = 10, set_name: str = "quick",
                    extra_metrics: tuple[str, ...] = (), timeout: float = 600.0,
                    env: dict[str, str] | None = None,
                    report: Path | None = None) -> list[dict[str, Value]]:
    """ncu over the user's program: one raw row per profiled kernel launch, in order (``Process ID``
    says whose, every process followed). ``report``: the ``.ncu-rep`` kept there, and the rows read
    back from it."""
    exe = proc.find_tool("ncu")
    metrics = tuple(dict.fromkeys(METRICS + extra_metrics))
    with saved_report(report) as made:
        for _attempt in range(MAX_RETRIES):
            argv = program_argv(exe, kernel=kernel, nvtx_range=nvtx_range, launch_skip=launch_skip,
                                launch_count=launch_count, set_name=set_name, metrics=metrics,
                                report=made)
            done = proc.run(argv + cmd, timeout=timeout, env=env)
            text = done.stdout + "\n" + done.stderr
            unknown = unknown_metrics(text)
            if not (unknown and done.returncode != 0):
                break
            metrics = tuple(m for m in metrics if m not in unknown)
        name = " ".join(cmd)
        if done.timed_out:
            raise NcuError(f"{name}: ncu did not finish within {timeout:g} s; lower --launch-count "
                           "or raise --timeout",
                           done.tail(30), "timeout")
        if (why := diagnose(text)) is not None:
            hint = (" (check --kernel and --range against the kernels the program launches)"
                    if why[0] == "no-match" else "")
            raise NcuError(f"{name}: {why[1]}{hint}", done.tail(30), why[0])
        printed = table(exe, made, done.stdout)
    rows = parse_csv(printed)
    if not rows:
        how = done.signal_name or f"exit code {done.returncode}"
        raise NcuError(f"{name}: ncu printed no metrics (the program ended with {how})",
                       done.tail(30), "tool")
    return rows


@dataclass(frozen=True)
class RuleResult:
    """One of Nsight Compute's guided-analysis rules for one kernel (``--page details``)."""
    kernel: str
    section: str
    rule: str  # SharedMemoryConflicts, UncoalescedGlobalAccess, LaunchConfiguration, ...
    kind: str  # OPT (an optimisation it proposes), INF, WRN, ERR
    speedup_type: str  # local or global
    _: KW_ONLY  # the rest by name
    speedup: float | None  # its "Est. Speedup", percent of the kernel's time it expects to save
    text: str


def parse_rules(text: str) -> list[RuleResult]:
    """The rule rows of ``--page details --csv`` output, in ncu's order."""
    start = text.find('"ID"')
    if start < 0:
        return []
    rows = list(csv.reader(io.StringIO(text[start:])))
    if not rows or "Rule Name" not in rows[0]:
        return []
    h = {name: k for k, name in enumerate(rows[0])}
    out = []
    for row in rows[1:]:
        if len(row) != len(rows[0]) or not row[h["Rule Name"]]:
            continue
        speed = parse_number(row[h["Estimated Speedup"]]) if "Estimated Speedup" in h else None
        out.append(RuleResult(row[h.get("Kernel Name", 0)], row[h.get("Section Name", 0)],
                              row[h["Rule Name"]],
                              row[h["Rule Type"]],
                              row[h.get("Estimated Speedup Type", 0)]
                              if "Estimated Speedup Type" in h
                              else "", speedup=speed if isinstance(speed, float) else None,
                              text=row[h["Rule Description"]]))
    return out


def details_argv(ncu: str | Path, report: str | Path) -> list[str]:
    return [str(ncu), "--import", str(report), "--csv", "--page", "details"]


def rules_of(report: Path, timeout: float = 120.0) -> list[RuleResult]:
    """Nsight Compute's rules for the kernels of a saved report (``--set full`` gives every rule);
    none where there is no report or ncu cannot read it back (the rules are a comparison, never the
    result)."""
    if not report.is_file():
        return []
    try:
        done = proc.run(details_argv(proc.find_tool("ncu"), report), timeout=timeout)
    except KprofError:
        return []
    return parse_rules(done.stdout)
