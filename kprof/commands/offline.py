"""The API behind the commands that need no GPU run of a kernel: ``kprof list``, ``kprof new``,
``kprof doctor``, ``kprof build``, ``kprof occupancy``, ``kprof history`` and ``kprof compare``.
Each takes what the CLI's options hold and returns a typed report the CLI prints (as text or JSON),
so a notebook or a CI script gets what the terminal does."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kprof.commands.apitypes import checked
from kprof.errors import BuildError, KprofError, UnsupportedArchError, UsageError

if TYPE_CHECKING:
    from kprof.build.build import BuildResult, ResourceUsage
    from kprof.build.occupancy import Occupancy
    from kprof.results import history
    from kprof.spec import KernelSpec
    from kprof.spec.catalog import Listing
    from kprof.tools.machine.doctor import Check, Readiness


@checked
def list_kernels(*, arch: str | None = None) -> list[Listing]:
    """Every spec kprof can find (its kernels, the corpora, ``KPROF_PATH``), each with its
    description; with ``arch`` (``"sm_75"``), why a kernel does not run there. A spec that does not
    load is listed with its error."""
    from kprof.spec import catalog

    return catalog.listing(arch)


@checked
def new_kernel(name: str, folder: Path | str = ".", *,
               like: str | None = None) -> tuple[Path, Path]:
    """Write NAME.cu and NAME.yaml into ``folder``, a kernel to start from (``like``: a copy of a
    shipped one), never over a file that is there; the two paths written."""
    from kprof.commands import scaffold

    return scaffold.new(name, folder, like)


@checked
def doctor() -> list[Check]:
    """What this machine has for kprof: its libraries, the driver and GPU, nvcc, compute-sanitizer
    and ncu, and whether performance counters may be read; each check with what to do where it
    fails."""
    from kprof.tools.machine import doctor as checks

    return checks.run_checks()


@checked
def readiness(checks: list[Check], commands: tuple[str, ...] | None = None) -> list[Readiness]:
    """Whether each command (``build``, ``run``, ``sanitize``, ``profile``, ``bench``; default all)
    can run with what :func:`doctor` found: the checks it lacks and the exit code it would end with
    (5: no GPU, 3: a tool)."""
    from kprof.tools.machine import doctor as found

    return found.readiness(checks, commands or found.COMMANDS)


@dataclass(frozen=True)
class BuildReport:
    """What ``kprof build`` did: each spec built (or found in the cache), each skipped with its
    reason (an architecture the kernel cannot run on), each that failed with its error (its log in
    ``error.log``)."""
    arch: str
    built: tuple[tuple[KernelSpec, BuildResult], ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()
    failed: tuple[tuple[str, BuildError], ...] = ()

    def to_json(self) -> list[dict[str, object]]:
        return ([{"name": s.name, "entry": s.entry, "defines": dict(s.defines), "arch": b.arch,
                  "cubin": str(b.cubin), "cached": b.cached, "compiler": b.compiler,
                  "usage": asdict(b.usage_of(s.entry))} for s, b in self.built]
                + [{"name": n, "arch": self.arch, "skipped": why} for n, why in self.skipped]
                + [{"name": n, "error": str(e)} for n, e in self.failed])


@checked
def build_kernels(names: Sequence[str] = (), *, all: bool = False, params: Sequence[str] | Any = (),
                  arch: str | None = None, force: bool = False,
                  progress: Callable[[str, str, float, int], None] | None = None) -> BuildReport:
    """Build the named kernels (or ``all`` of kprof's catalog), each over the combinations of
    ``params`` (``["BM=64,128"]``, as ``kprof build --param`` writes them); a sanitizer case's fixed
    twin with it. With ``all`` a kernel that fails or cannot run on ``arch`` leaves the others; a
    named one raises. ``progress(name, how, seconds, total)`` after each (``total``: the builds of
    this call)."""
    from kprof import parallel
    from kprof.build import build, toolchain
    from kprof.spec import catalog, sweep

    if all == bool(names):
        raise UsageError("name the kernels to build, or give --all (not both)")
    given = params if isinstance(params, sweep.Sweep) else sweep.parse(
        [params] if isinstance(params, str) else list(params), "param")
    if all and given.axes:
        raise UsageError("--param builds the kernels you name with other defines: name them "
                         "instead of --all")
    specs = [catalog.load(e.name) for e in catalog.entries()] if all else [catalog.load(str(n)) for n in names]
    specs = [s for spec in specs
             for s in ((spec, spec.twin_spec()) if spec.twin is not None else (spec,))]
    if given.axes:  # each combination of the parameters, a build of its own (and a row)
        specs = [spec.with_defines(p) for spec in specs
                 for _, p in sweep.points(sweep.Sweep("size"), given, spec.size_names,
                                          dict(spec.defines), spec.name)]
    target = arch or toolchain.detect_arch()
    lock = threading.Lock()

    def one(spec: KernelSpec) -> tuple[str, BuildResult | KprofError]:
        t0 = time.monotonic()
        try:
            built = build.build(spec, target, force=force)
            out: tuple[str, BuildResult | KprofError] = ("cached" if built.cached else "built",
                                                         built)
        except UnsupportedArchError as exc:
            if not all:
                raise
            out = ("skipped", exc)  # named with its reason: not a failure
        except BuildError as exc:
            if not all:
                raise
            out = ("FAILED", exc)  # the other kernels still build
        if progress is not None:
            with lock:
                progress(spec.name, out[0], time.monotonic() - t0, len(specs))
        return out

    done = list(zip(specs, parallel.map_jobs(one, specs, parallel.build_jobs(len(specs)))))
    return BuildReport(target,
                       built=tuple((spec, what) for spec, (how, what) in done
                                   if isinstance(what, build.BuildResult)),
                       skipped=tuple((spec.name, str(what)) for spec, (how, what) in done
                                     if how == "skipped"),
                       failed=tuple((spec.name, what) for spec, (how, what) in done
                                    if how == "FAILED" and isinstance(what, BuildError)))


@dataclass(frozen=True)
class OccupancyReport:
    """``kprof occupancy``: the kernel's registers and shared memory on ``arch``, the occupancy of
    each block size asked (with advice), and the sweep over every block size."""
    kernel: str
    arch: str
    usage: ResourceUsage
    dynamic_smem: int
    launch: list[Occupancy]  # one a block size asked
    _: KW_ONLY  # the rest by name
    advice: list[str]
    sweep: list[Occupancy]

    def to_json(self) -> dict[str, object]:
        return {"kernel": self.kernel, "arch": self.arch, "registers": self.usage.registers,
                "static_smem": self.usage.shared_static, "dynamic_smem": self.dynamic_smem,
                "launch": [dict(asdict(o), advice=a) for o, a in zip(self.launch, self.advice)],
                "sweep": [asdict(o) for o in self.sweep]}


@checked
def occupancy_of(name: str, *, sizes: dict[str, int] | None = None, blocks: Sequence[int] = (),
                 dynamic_smem: int | None = None, arch: str | None = None) -> OccupancyReport:
    """The occupancy of a kernel from its build (no GPU run): at the spec's own launch, or at each
    of ``blocks`` threads a block, with ``dynamic_smem`` bytes (default: the spec's)."""
    from kprof.build import occupancy, toolchain
    from kprof.commands import pipeline
    from kprof.spec import catalog

    spec = catalog.load(name)
    if spec.python:
        raise UsageError(f"{spec.name} is a Python operation: kprof has no kernel of its own to "
                         "compute occupancy for (kprof profile reports the occupancy of the "
                         "kernels it launches)")
    target = arch or toolchain.detect_arch()
    # an architecture kprof has no model of is said before any build
    lim = occupancy.limits_for(target)
    prepared = pipeline.prepare(spec, sizes, arch=target)
    usage = prepared.built.usage_of(spec.entry)
    dynamic = prepared.resolved.shared_mem if dynamic_smem is None else dynamic_smem
    chosen = [occupancy.compute(lim, b, usage.registers, usage.shared_static, dynamic)
              for b in (list(blocks) or [prepared.resolved.threads_per_block])]
    advice = [occupancy.advice(lim, o, usage.registers, usage.shared_static, dynamic)
              for o in chosen]
    return OccupancyReport(spec.name, target, usage, dynamic, chosen, advice=advice,
                           sweep=occupancy.sweep(lim, usage.registers, usage.shared_static,
                                                 dynamic))


@checked
def bench_history(name: str | None = None, *, limit: int = 20) -> list[history.HistoryRow]:
    """The latest ``kprof bench`` rows of the history store (of one kernel, or all), newest first;
    none where nothing was measured yet."""
    from kprof.results import history

    conn = history.connect_read()
    return history.rows(conn, kernel=name, kind="bench", limit=limit) if conn else []


@dataclass(frozen=True)
class Comparison:
    """``kprof compare``: each kernel and size two bench runs share, before against after."""
    before: str
    after: str
    rows: list[history.RunChange]

    def to_json(self) -> dict[str, object]:
        return {"before": self.before, "after": self.after,
                "rows": [r.to_dict() for r in self.rows]}


@checked
def compare_runs(before: str = "last~1", after: str = "last") -> Comparison:
    """Two ``kprof bench`` runs of the history store side by side (a run id, or ``last``,
    ``last~1``, ...)."""
    from kprof.results import history

    conn = history.connect_read()
    if conn is None:
        raise UsageError(f"no bench runs yet in {history.path()}: run kprof bench first")
    before_id, after_id = history.resolve_run(conn, before), history.resolve_run(conn, after)
    rows = history.compare(conn, before_id, after_id)
    if not rows:
        raise UsageError(f"runs {before_id} and {after_id} have no kernel and size in common")
    return Comparison(before_id, after_id, rows)
