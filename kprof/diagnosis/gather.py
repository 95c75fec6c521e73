"""Facts from kprof's own pipeline: a prepared spec, its profile, one timed run, the ceilings.

The command layer hands it the PTX (``kprof.build.build.ptx``); it reads the spec file (for the
launch line) and the source; the rules read only the :class:`~kprof.diagnosis.facts.Facts` it
returns.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kprof.diagnosis import ptxscan
from kprof.diagnosis.facts import Facts, SourceFiles
from kprof.launch.childresult import ChildResult, device_of
from kprof.launch.prepared import Prepared
from kprof.measure import ceilings
from kprof.measure.kernelprofile import KernelProfile

if TYPE_CHECKING:
    from kprof.spec import KernelSpec
from kprof.tools.nsight import sourcepage

MAX_SOURCE_BYTES = 4 * 1024 * 1024


def launch_line(spec: KernelSpec) -> int:
    try:
        text = spec.path.read_text(errors="replace")[:MAX_SOURCE_BYTES]
    except (OSError, AttributeError):
        return 0
    for k, line in enumerate(text.splitlines(), 1):
        if re.match(r"(launch|steps)\s*:", line):
            return k
    return 0


def facts_for(prepared: Prepared, profile: KernelProfile, *, counters: bool, ptx: str | None = None,
              timed: ChildResult | None = None,
              peak: ceilings.Ceilings | None = None, seconds: float | None = None,
              ptx_note: str = "", kernel_seconds: tuple[float, ...] = ()) -> Facts:
    """The facts of ``prepared`` (:class:`kprof.launch.prepared.Prepared`): ``timed`` a
    :class:`~kprof.launch.childresult.ChildResult` of one timed run (its time, the device's SM count
    and clock), ``peak`` kprof peak's ceilings, ``seconds`` a time measured elsewhere (kprof bench),
    and ``kernel_seconds`` each launch's own GPU time in that bench's timed call (CUPTI)."""
    r, built = prepared.resolved, prepared.built
    spec = r.spec
    notes: list[str] = [ptx_note] if ptx_note else []
    entry = None
    if ptx is not None:
        entries = ptxscan.scan(ptx)  # by symbol: a C++ kernel's is mangled
        main = built.symbol_of(spec.entry)
        # several kernels: the longest-running one is not known here; the last launched
        if len(r.steps) > 1:
            main = built.symbol_of(r.steps[-1].entry)
        name = main if main in entries else None  # never another kernel's lines
        entry = entries.get(name) if name else None
    if ptx is not None and profile.lines is not None and spec.source is not None and not spec.python:
        profile = replace(profile, lines=fold_headers(profile.lines, ptx, spec.source))
    source_lines: tuple[str, ...] = ()
    if spec.source is not None and not spec.python:
        try:
            source_lines = tuple(spec.source.read_text(errors="replace")[:MAX_SOURCE_BYTES].splitlines())
        except OSError:
            pass
    # a ChildResult's, or a recorded one's record
    device = device_of(timed.device if timed is not None else None)
    sm_count = (device.sm_count or None) if device else None
    sm_hz = (device.clock_khz * 1e3 or None) if device else None
    if seconds is None and timed is not None and timed.time_ms:
        seconds = timed.time_ms / 1e3
    if seconds is None:
        seconds = profile.duration_s
    mix = ceilings.mix_of((b.arg.role, b.nbytes) for b in r.buffers)
    ceiling = ceilings.ceiling(peak, ceilings.measured_mix(peak, mix)) if peak else None
    theory = ceilings.Theoretical.of_device({**device.to_dict(), "arch": built.arch.rstrip("af")}) if device else None
    if ceiling is None and profile.roofline.peak_bytes:
        ceiling = profile.roofline.peak_bytes
        notes.append("no kprof peak ceilings cached: the memory roof is the DRAM peak ncu reports")
    elif ceiling is None and theory and theory.dram_bytes_per_s:
        ceiling = theory.dram_bytes_per_s
        notes.append("no kprof peak ceilings cached: the memory roof is the theoretical DRAM "
                     "bandwidth")
    peak_flops = profile.roofline.peak_flops
    if peak_flops is None and theory:
        peak_flops = theory.tensor_flops_per_s if spec.work.math == "tensor" else theory.fp32_flops_per_s
    usage = None
    try:
        usage = built.usage_of(spec.entry)
    except (KeyError, AttributeError):
        pass
    kernel_steps = [s for s in r.steps if s.grid != (1, 1, 1) or s.block != (1, 1, 1)]
    return Facts(
        kernel=profile.kernel, arch=built.arch.rstrip("af"), profile=profile, counters=counters,
        seconds=seconds,
        sm_count=sm_count, blocks=r.grid[0] * r.grid[1] * r.grid[2],
        threads_per_block=r.threads_per_block,
        launches=max(1, len(kernel_steps)), spec_bytes=r.bytes, spec_flops=r.flops,
        math=spec.work.math,
        ceiling_bytes_per_s=ceiling, peak_flops=peak_flops, sm_hz=sm_hz, entry=entry,
        code=SourceFiles(path=spec.source, lines=source_lines,
                         entry_name=(entry.name if entry is not None else spec.entry)
                         or "", spec_path=spec.path, launch_line=launch_line(spec)),
        shared_static=usage.shared_static if usage else 0, shared_dynamic=r.shared_mem,
        registers=usage.registers if usage else profile.occupancy.registers,
        spill_bytes=(usage.spill_stores + usage.spill_loads) if usage else 0, notes=notes,
        kernel_seconds=tuple(kernel_seconds),
    )


def fold_headers(page: sourcepage.SourceLines, ptx: str, source: Path) -> sourcepage.SourceLines:
    """The page with what was measured inside a CUDA header's inlined function (``atomicAdd``'s
    body) counted on the user's line that called it
    (:func:`kprof.tools.nsight.sourcepage.fold_inlined`): the user's files are the spec's source and
    the local headers it includes."""
    from kprof.build import cusource
    from kprof.errors import KprofError

    try:
        mine = [str(p) for p, _ in cusource.local_sources(source)]
    except KprofError:
        mine = [str(source)]
    mine = mine or [str(source)]
    return sourcepage.fold_inlined(page, ptxscan.inline_sites(ptx),
                                   keep=lambda f: any(sourcepage.same_file(f, m) for m in mine))
