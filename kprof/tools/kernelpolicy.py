"""Which kernels of a user's program each compute-sanitizer tool checks: the user's kernels first. Pure.

A program's tests call libraries whose kernels the user did not write: cuBLAS's GEMMs, cuDNN's
convolutions, CUTLASS, NCCL, PyTorch's own ATen kernels, CUB, Thrust and cuRAND. racecheck and synccheck
instrument every shared-memory access and barrier of a kernel, and on a library's large GEMM they cost
most of a suite's time (racecheck on one 2048^3 SGEMM: 55.8 s of an 80.7 s suite on an H200) while they
can only report the library's own hazards, which the user cannot fix. memcheck and initcheck stay on for
every kernel: they catch what the user hands a library (a pointer past an allocation, an input nothing
wrote).

So by default, for a program or a test suite (never a spec: its kernel is the user's), racecheck and
synccheck skip the kernels whose mangled name is a library's (:data:`LIBRARIES`, compute-sanitizer's
``--kernel-name-exclude regex=``), and the report counts and names what they skipped, from the launch
tally's names (:func:`skipped`). ``--all-kernels`` checks everything.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from kprof.findings import Finding
from kprof.tools.coverage import Coverage
from kprof.tools.toolrun import ToolResult, with_coverage

POLICY = ("user kernels first: racecheck and synccheck skip library kernels (cuBLAS, cuDNN, CUTLASS, NCCL, "
          "PyTorch's ATen, CUB, Thrust, cuRAND); memcheck and initcheck check every kernel; --all-kernels checks all")


@dataclass(frozen=True)
class Library:
    name: str
    pattern: str  # a regular expression found in a kernel's mangled name (compute-sanitizer's regex= key)


LIBRARIES: tuple[Library, ...] = (
    # cuBLAS and cuBLASLt: Hopper's nvjet GEMMs, the xmma/sm90 kernels, the named SGEMM families, GEMV
    Library("cuBLAS", r"^(nvjet_|sm\d+_xmma_|cublas|_ZN8cublasLt|(ampere|volta|turing|maxwell|hopper)_[a-z0-9]*gemm|"
                      r"_Z\d+gemv|_Z\d+gemmk|_Z\d+splitKreduce|_ZN\d+cublas)"),
    Library("cuDNN", r"^(cudnn|_ZN\d+cudnn|_ZN5cudnn|sm\d+_xmma_(fprop|dgrad|wgrad)|xmma_cudnn)"),
    Library("CUTLASS", r"^(_ZN7cutlass|cutlass_)"),
    Library("NCCL", r"^(ncclKernel|ncclDevKernel|_Z\d+ncclKernel|_Z\d+ncclDevKernel)"),
    Library("PyTorch", r"^(_ZN2at|_ZN3c10|_ZN7pytorch_flash|_ZN5torch|_ZN\d+at_cuda_detail)"),
    Library("CUB/Thrust", r"^(_ZN3cub|_ZN6thrust|_ZN4cuda3std)"),
    Library("cuRAND", r"^_Z\d+(init_curand|execute_dist|generate_seed_pseudo)"),  # CuPy's and others' random arrays
)  # fmt: skip
_COMPILED = tuple((lib.name, re.compile(lib.pattern)) for lib in LIBRARIES)
# The same libraries by a demangled name (a tool's record names the device function, sometimes demangled).
_DEMANGLED = (("PyTorch", re.compile(r"^(void )?(at|c10|pytorch_flash|torch)::")),
              ("CUTLASS", re.compile(r"^(void )?cutlass::")), ("CUB/Thrust", re.compile(r"^(void )?(cub|thrust)(::|_)")),
              ("NCCL", re.compile(r"^(void )?nccl")), ("cuDNN", re.compile(r"^(void )?cudnn")))
# Kernels whose stores initcheck does not see: cuBLAS's nvjet GEMMs on Hopper and later store their result
# through TMA. Measured on an H200 (compute-sanitizer 2025.3.1 and 2026.4.0, examples/gemm_initcheck.py): a half
# GEMM (nvjet_sm90_hsh_...) into torch.empty, then .float() of its result: uninitialized reads in PyTorch's copy
# kernel; the same GEMM into torch.zeros, or a float32 one (sm80_xmma_...): none; the results right each time.
UNSEEN_WRITERS = re.compile(r"^nvjet_sm(9\d|1\d\d)")
NCCL_OVERREAD_BYTES = 16  # NCCL's known over-read (NVIDIA/nccl#265): a read up to 16 bytes past a buffer's end


def library_of(name: str) -> str | None:
    """The library a kernel (or device function) belongs to, by its mangled name as the launch call names
    it, or demangled; None: the user's."""
    found = next((lib for lib, rx in _COMPILED if rx.search(name)), None)
    return found or next((lib for lib, rx in _DEMANGLED if rx.search(name)), None)


def libraries_own(findings: list[Finding]) -> tuple[list[Finding], list[str]]:
    """A program's findings inside a library's kernel said to be that library's (``extra.library``: not the
    user's code, though the user's input may cause them); NCCL's known over-read of up to 16 bytes
    (NVIDIA/nccl#265) set aside as a note, not a finding."""
    out: list[Finding] = []
    notes: list[str] = []
    for f in findings:
        lib = library_of(f.kernel) if f.kernel else None
        if lib is None:
            out.append(f)
        elif lib == "NCCL" and f.kind == "out-of-bounds-read" and (f.size or 0) <= NCCL_OVERREAD_BYTES:
            notes.append(f"set aside: {f.tool} {f.kind} of {f.size} bytes in NCCL's {f.kernel} ({f.count} record(s)): "
                         "NCCL's known over-read past a buffer's end (NVIDIA/nccl#265), not the program's")
        else:
            out.append(replace(f, extra={**f.extra, "library": lib}))
    return out, notes


def exclude_args() -> list[str]:
    """compute-sanitizer's options that keep a tool off library kernels: one ``--kernel-name-exclude
    regex=`` a library. Which tools take them is the checkers' registry's (``Needs.user_kernels``)."""
    return [arg for lib in LIBRARIES for arg in ("--kernel-name-exclude", f"regex={lib.pattern}")]


@dataclass(frozen=True)
class Skipped:
    """The library kernels one tool did not check in a run, by library."""
    kernels: tuple[tuple[str, str], ...] = ()  # (library, mangled name), in launch order

    def text(self, limit: int = 3) -> str:
        """``library kernels not checked: 7 (PyTorch 5, cuBLAS 2: nvjet_sm90_tst_..., ...)``, or ''."""
        if not self.kernels:
            return ""
        from kprof.tools.demangle import short

        counts: dict[str, int] = {}
        for lib, _ in self.kernels:
            counts[lib] = counts.get(lib, 0) + 1
        names = ", ".join(short(n, 40) for _, n in self.kernels[:limit]) + (", ..." if len(self.kernels) > limit else "")
        by = ", ".join(f"{lib} {n}" for lib, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        return f"library kernels not checked: {len(self.kernels)} ({by}: {names})"


def skipped(names: Iterable[str], skips: bool) -> Skipped:
    """What a tool that ``skips`` library kernels left out of the kernels a run launched (``names``: the
    launch tally's)."""
    if not skips:
        return Skipped()
    return Skipped(tuple((lib, n) for n in dict.fromkeys(names) if (lib := library_of(n)) is not None))


def applied(checked: Coverage | None, skips: bool) -> Coverage | None:
    """What a run launched (``checked``), with what a tool that ``skips`` library kernels left out of it."""
    if checked is None:
        return None
    left_out = skipped(checked.names, skips).text()
    return replace(checked, skipped=left_out) if left_out else checked


def unseen_writes(result: ToolResult, names: Iterable[str]) -> ToolResult:
    """initcheck's reads inside a library's kernel, in a process that also ran a kernel whose stores initcheck
    does not see (:data:`UNSEEN_WRITERS`), set aside as notes, not findings: the memory is most likely that
    kernel's output, which the tool never saw written. A read in the user's own kernel stays a finding. Pure."""
    if result.tool != "initcheck" or not result.findings:
        return result
    writer = next((n for n in names if UNSEEN_WRITERS.search(n)), None)
    if writer is None:
        return result
    aside = [f for f in result.findings if f.kind == "uninitialized-read" and f.extra.get("library")]
    if not aside:
        return result
    kept = [f for f in result.findings if f not in aside]
    notes = [f"set aside: initcheck {f.kind} in {f.extra['library']}'s {f.kernel} ({f.count} record(s)): this process "
             f"also ran {writer}, a GEMM whose stores (TMA) initcheck does not see, so the memory read is most likely "
             "its output; to be sure, write the GEMM into torch.zeros (or run its test on a GPU before Hopper)"
             for f in aside]
    status = "clean" if not kept and result.status == "findings" else result.status
    return replace(result, findings=kept, status=status, notes=[*result.notes, *notes])


def settle(result: ToolResult, checked: Coverage | None, skips: bool) -> ToolResult:
    """A sanitizer's run of a program (or of one test) with what the program launched beside it: coverage
    (:func:`kprof.tools.toolrun.with_coverage`), the library kernels a tool that ``skips`` them left out, and
    initcheck's reads of memory written where it cannot see (:func:`unseen_writes`). Pure."""
    done = with_coverage(result, applied(checked, skips))
    return unseen_writes(done, checked.names) if checked is not None else done
