"""Which kernels of a user's program each compute-sanitizer tool checks: the user's kernels first.
Pure.

A program's tests call libraries whose kernels the user did not write: cuBLAS's GEMMs, cuDNN's
convolutions, CUTLASS, NCCL, PyTorch's own ATen kernels, CUB, Thrust and cuRAND. racecheck and
synccheck instrument every shared-memory access and barrier of a kernel, and on a library's large
GEMM they cost most of a suite's time (racecheck on one 2048^3 SGEMM: 55.8 s of an 80.7 s suite on
an H200) while they can only report the library's own hazards, which the user cannot fix. memcheck
and initcheck stay on for every kernel: they catch what the user hands a library (a pointer past an
allocation, an input nothing wrote).

So by default, for a program or a test suite (never a spec: its kernel is the user's), racecheck and
synccheck skip the kernels whose mangled name is a library's (:data:`LIBRARIES`, compute-sanitizer's
``--kernel-name-exclude regex=``), and the report counts and names what they skipped, from the
launch tally's names (:func:`skipped`). ``--all-kernels`` checks everything.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from kprof.findings import Finding
from kprof.tools.programs.coverage import Coverage
from kprof.tools.sanitizers.toolrun import ToolResult, with_coverage

POLICY = ("user kernels first: racecheck and synccheck skip library kernels (cuBLAS, cuDNN, "
          "CUTLASS, NCCL, PyTorch's ATen, CUB, Thrust, cuRAND); memcheck and initcheck check every "
          "kernel; --all-kernels checks all")


@dataclass(frozen=True)
class Library:
    name: str
    # regular expressions, each found at the start of a kernel's mangled name
    prefixes: tuple[str, ...]

    @property
    def pattern(self) -> str:
        """One regular expression for them all (compute-sanitizer's ``regex=`` key)."""
        return "^(" + "|".join(self.prefixes) + ")"

    def less(self, prefix: str | None) -> Library:
        """The library without one of its prefixes (its kernels a tool checks all the same:
        :func:`checks_anyway`)."""
        return replace(self, prefixes=tuple(p for p in self.prefixes if p != prefix))


LIBRARIES: tuple[Library, ...] = (
    # cuBLAS and cuBLASLt: Hopper's nvjet GEMMs, the xmma/sm90 kernels, the named SGEMM families,
    # GEMV
    Library("cuBLAS",
            ("nvjet_", r"sm\d+_xmma_", "cublas", "_ZN8cublasLt",
             "(ampere|volta|turing|maxwell|hopper)_[a-z0-9]*gemm",
             r"_Z\d+gemv", r"_Z\d+gemmk", r"_Z\d+splitKreduce", r"_ZN\d+cublas")),
    Library("cuDNN",
            ("cudnn", r"_ZN\d+cudnn", "_ZN5cudnn", r"sm\d+_xmma_(fprop|dgrad|wgrad)",
             "xmma_cudnn")),
    Library("CUTLASS", ("_ZN7cutlass", "cutlass_")),
    Library("NCCL", ("ncclKernel", "ncclDevKernel", r"_Z\d+ncclKernel", r"_Z\d+ncclDevKernel")),
    Library("PyTorch",
            ("_ZN2at", "_ZN3c10", "_ZN7pytorch_flash", "_ZN5torch", r"_ZN\d+at_cuda_detail")),
    Library("CUB/Thrust", ("_ZN3cub", "_ZN6thrust", "_ZN4cuda3std")),
    # CuPy's and others' random arrays
    Library("cuRAND", (r"_Z\d+(init_curand|execute_dist|generate_seed_pseudo)",)),
)  # fmt: skip
_COMPILED = tuple((lib.name, re.compile(lib.pattern)) for lib in LIBRARIES)
# The same libraries by a demangled name (a tool's record names the device function, sometimes
# demangled).
_DEMANGLED = (("PyTorch", re.compile(r"^(void )?(at|c10|pytorch_flash|torch)::")),
              ("CUTLASS", re.compile(r"^(void )?cutlass::")),
              ("CUB/Thrust", re.compile(r"^(void )?(cub|thrust)(::|_)")),
              ("NCCL", re.compile(r"^(void )?nccl")), ("cuDNN", re.compile(r"^(void )?cudnn")))
# Kernels whose stores initcheck does not see: cuBLAS's nvjet GEMMs on Hopper and later store their
# result through TMA. Measured on an H200 (compute-sanitizer 2025.3.1 and 2026.4.0,
# examples/gemm_initcheck.py): a half GEMM (nvjet_sm90_hsh_...) into torch.empty, then .float() of
# its result: uninitialized reads in PyTorch's copy kernel; the same GEMM into torch.zeros, or a
# float32 one (sm80_xmma_...): none; the results right each time.
UNSEEN_WRITERS = re.compile(r"^nvjet_sm(9\d|1\d\d)")
# racecheck and cuBLAS's TMA GEMMs (nvjet_*) before compute-sanitizer 2026.4. Measured on an H200
# (driver 580.159.04, 787eb2f, gpu-check.sh racelib: examples/gemm_initcheck.py --out linear in half
# precision): 2025.3.1 checking the GEMM reports a WAR hazard inside it (512 hazards) that 2026.4.0
# does not report on the same launch; 2025.3.1 with the GEMM excluded (--kernel-name-exclude) fails
# ("Internal Sanitizer Error: The Sanitizer failed to handle a hardware exception") and the
# program's next CUDA call returns an illegal address; 2026.4.0 is clean both ways. So before 2026.4
# racecheck checks them all the same (:func:`checks_anyway`) and its hazards inside them are set
# aside (:func:`tool_false_reports`).
TMA_GEMMS = "nvjet_"  # cuBLAS's prefix for them
RACECHECK_SEES_TMA = (2026, 4)
NEWER_TOOL = "nvidia-cuda-sanitizer-api>=13.5.25 (compute-sanitizer 2026.4; kprof[cuda13] installs it)"
# NCCL's known over-read (NVIDIA/nccl#265): a read up to 16 bytes past a buffer's end
NCCL_OVERREAD_BYTES = 16
# NCCL's probe of its own kernels at its first collective (NCCL 2.28.9 with PyTorch 2.11 on an
# H200): an API error compute-sanitizer reports on every rank, which NCCL expects and handles
NCCL_PROBE = "cudaFuncGetAttributes -> cudaErrorNoKernelImageForDevice"


def library_of(name: str) -> str | None:
    """The library a kernel (or device function) belongs to, by its mangled name as the launch call
    names it, or demangled; None: the user's."""
    found = next((lib for lib, rx in _COMPILED if rx.search(name)), None)
    return found or next((lib for lib, rx in _DEMANGLED if rx.search(name)), None)


# A library's own native modules: the code that launched a kernel whose name a record gives only in
# short (with host frames only, initcheck on an H200 named PyTorch's copy kernel
# "unrolled_elementwise_kernel", launched from libtorch_cuda.so), in the host stack saved at its
# launch.
_MODULES = (("PyTorch", re.compile(r"/lib(torch|torch_cuda|torch_cpu|c10|c10_cuda)\.so")),
            ("cuBLAS", re.compile(r"/libcublas(Lt)?\.so")),
            ("cuDNN", re.compile(r"/libcudnn[a-z_]*\.so")),
            ("NCCL", re.compile(r"/libnccl\.so")), ("cuRAND", re.compile(r"/libcurand\.so")))
# the CUDA runtime and driver: the launch call itself
_LAUNCH_RUNTIME = re.compile(r"/lib(cudart|cuda)\.so")


def launched_by(modules: Iterable[str | None]) -> str | None:
    """The library whose code launched a kernel, from the native modules of the host stack saved at
    its launch (innermost first): the first frame past the CUDA runtime's and driver's, when it is a
    library's module; None for the user's code (their extension, Triton's launcher, CuPy, a Python
    frame). Pure."""
    for module in modules:
        if module and _LAUNCH_RUNTIME.search(module):
            continue
        return next((lib for lib, rx in _MODULES if module and rx.search(module)), None)
    return None


def libraries_own(findings: list[Finding]) -> tuple[list[Finding], list[str]]:
    """A program's findings inside a library's kernel said to be that library's (``extra.library``:
    not the user's code, though the user's input may cause them); NCCL's known over-read of up to 16
    bytes (NVIDIA/nccl#265) and its probe of the kernels it carries for other GPUs
    (:data:`NCCL_PROBE`) set aside as a note, not a finding."""
    out: list[Finding] = []
    notes: list[str] = []
    for f in findings:
        lib = (library_of(f.kernel) if f.kernel else None) or f.extra.launched_by
        if lib is None:
            out.append(f)
        elif lib == "NCCL" and f.kind == "out-of-bounds-read" and (f.size or 0) <= NCCL_OVERREAD_BYTES:
            notes.append(f"set aside: {f.tool} {f.kind} of {f.size} bytes in NCCL's {f.kernel} "
                         f"({f.count} record(s)): NCCL's known over-read past a buffer's end "
                         "(NVIDIA/nccl#265), not the program's")
        elif lib == "NCCL" and f.kind == "api-error" and f.detail == NCCL_PROBE:
            notes.append(f"set aside: {f.tool} {f.detail} ({f.count} record(s)) in NCCL's own "
                         "code: NCCL asks for the attributes of kernels it carries for other GPUs "
                         "and takes the answer as 'not here', not the program's")
        else:
            out.append(replace(f, extra=replace(f.extra, library=lib)))
    return out, notes


def older(version: str, than: tuple[int, int]) -> bool:
    """Whether a compute-sanitizer version ("2025.3.1") is older than ``than`` (year, release); an
    unknown one ('') counts as older: the policies then keep to what the oldest measured tool needs.
    Pure."""
    parts = version.split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        return True
    return (int(parts[0]), int(parts[1])) < than


def checks_anyway(tool: str, version: str) -> str | None:
    """The prefix of the library kernels a tool that skips libraries checks all the same, under this
    tool version: racecheck before 2026.4 cannot leave cuBLAS's TMA GEMMs out without failing
    (:data:`TMA_GEMMS`). Pure."""
    return TMA_GEMMS if tool == "racecheck" and older(version, RACECHECK_SEES_TMA) else None


def exclude_args(tool: str = "", version: str = "") -> list[str]:
    """compute-sanitizer's options that keep ``tool`` (of compute-sanitizer ``version``) off library
    kernels: one ``--kernel-name-exclude regex=`` a library, less what it checks anyway
    (:func:`checks_anyway`). Which tools take them is the checkers' registry's
    (``Needs.user_kernels``). Pure."""
    keep = checks_anyway(tool, version)
    left_out = [lib.less(keep) for lib in LIBRARIES]
    return [arg for lib in left_out if lib.prefixes
            for arg in ("--kernel-name-exclude", f"regex={lib.pattern}")]


@dataclass(frozen=True)
class Skipped:
    """The library kernels one tool did not check in a run, by library."""
    kernels: tuple[tuple[str, str], ...] = ()  # (library, mangled name), in launch order

    def text(self, limit: int = 3) -> str:
        """``library kernels not checked: 7 (PyTorch 5, cuBLAS 2: nvjet_sm90_tst_..., ...)``, or
        ''."""
        if not self.kernels:
            return ""
        from kprof.demangle import short

        counts: dict[str, int] = {}
        for lib, _ in self.kernels:
            counts[lib] = counts.get(lib, 0) + 1
        more = ", ..." if len(self.kernels) > limit else ""
        names = ", ".join(short(n, 40) for _, n in self.kernels[:limit]) + more
        by = ", ".join(f"{lib} {n}" for lib, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        return f"library kernels not checked: {len(self.kernels)} ({by}: {names})"


@dataclass
class SkipTally:
    """What each tool that skips library kernels left out over a session's tests (the pytest
    plugin's summary: a test that passes prints no report, so its skipped kernels are said here,
    never silently clean)."""

    # tool -> {mangled name: library}
    kernels: dict[str, dict[str, str]] = field(default_factory=dict)
    tests: dict[str, int] = field(default_factory=dict)  # tool -> tests with at least one left out

    def add(self, results: Iterable[ToolResult], skips: Callable[[str], bool]) -> None:
        """One test's results; ``skips(tool)``: whether that tool skipped library kernels in this
        run."""
        for r in results:
            if r.checked is None or not skips(r.tool):
                continue
            left = skipped(r.checked.names, True, checks_anyway(r.tool, r.version)).kernels
            if left:
                self.kernels.setdefault(r.tool, {}).update({n: lib for lib, n in left})
                self.tests[r.tool] = self.tests.get(r.tool, 0) + 1

    def text(self) -> str:
        """``racecheck left out 23 library kernels in 15 tests (PyTorch 17, cuBLAS 4, cuDNN 2);
        synccheck ...``, or '' when none was left out."""
        parts = []
        for tool, names in self.kernels.items():
            counts: dict[str, int] = {}
            for lib in names.values():
                counts[lib] = counts.get(lib, 0) + 1
            by = ", ".join(f"{lib} {n}"
                           for lib, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
            parts.append(f"{tool} left out {len(names)} library kernel(s) in {self.tests[tool]} "
                         f"test(s) ({by})")
        return "; ".join(parts)


def skipped(names: Iterable[str], skips: bool, keep: str | None = None) -> Skipped:
    """What a tool that ``skips`` library kernels left out of the kernels a run launched (``names``:
    the launch tally's), but those it checks anyway (``keep``: :func:`checks_anyway`)."""
    if not skips:
        return Skipped()
    return Skipped(tuple((lib, n) for n in dict.fromkeys(names)
                         if (lib := library_of(n)) is not None
                         and not (keep is not None and re.match(keep, n))))


def applied(checked: Coverage | None, skips: bool, keep: str | None = None) -> Coverage | None:
    """What a run launched (``checked``), with what a tool that ``skips`` library kernels left out
    of it."""
    if checked is None:
        return None
    left_out = skipped(checked.names, skips, keep).text()
    return replace(checked, skipped=left_out) if left_out else checked


def unseen_writes(result: ToolResult, names: Iterable[str]) -> ToolResult:
    """initcheck's reads inside a library's kernel, in a process that also ran a kernel whose stores
    initcheck does not see (:data:`UNSEEN_WRITERS`), set aside as notes, not findings: the memory is
    most likely that kernel's output, which the tool never saw written. A read in the user's own
    kernel stays a finding. Pure."""
    if result.tool != "initcheck" or not result.findings:
        return result
    writer = next((n for n in names if UNSEEN_WRITERS.search(n)), None)
    if writer is None:
        return result
    aside = [f for f in result.findings if f.kind == "uninitialized-read" and f.extra.library]
    if not aside:
        return result
    kept = [f for f in result.findings if f not in aside]
    notes = [f"set aside: initcheck {f.kind} in {f.extra.library}'s {f.kernel} ({f.count} "
             f"record(s)): this process also ran {writer}, a GEMM whose stores (TMA) initcheck "
             "does not see, so the memory read is most likely its output; to be sure, write the "
             "GEMM into torch.zeros (or run its test on a GPU before Hopper)"
             for f in aside]
    status = "clean" if not kept and result.status == "findings" else result.status
    return replace(result, findings=kept, status=status, notes=[*result.notes, *notes])


def tool_false_reports(result: ToolResult) -> ToolResult:
    """racecheck's hazards inside cuBLAS's TMA GEMMs (:data:`TMA_GEMMS`) from a compute-sanitizer
    before 2026.4, set aside as notes: that tool reports them where 2026.4 reports none on the same
    launches. Pure."""
    if result.tool != "racecheck" or not result.findings or not older(result.version, RACECHECK_SEES_TMA):
        return result
    aside = [f for f in result.findings if f.kernel and re.match(TMA_GEMMS, f.kernel)]
    if not aside:
        return result
    kept = [f for f in result.findings if f not in aside]
    tool = f"compute-sanitizer {result.version}" if result.version else "this compute-sanitizer"
    notes = [f"set aside: racecheck {f.kind} inside cuBLAS's {f.kernel} ({f.count} record(s)): "
             f"{tool} reports hazards inside cuBLAS's TMA GEMMs that 2026.4 does not report on the "
             f"same launches; for a tool that sees them right: {NEWER_TOOL}" for f in aside]
    status = "clean" if not kept and result.status == "findings" else result.status
    return replace(result, findings=kept, status=status, notes=[*result.notes, *notes])


def settle(result: ToolResult, checked: Coverage | None, skips: bool) -> ToolResult:
    """A sanitizer's run of a program (or of one test) with what the program launched beside it:
    coverage (:func:`kprof.tools.sanitizers.toolrun.with_coverage`), the library kernels a tool that
    ``skips`` them left out (less those its version checks anyway), initcheck's reads of memory
    written where it cannot see (:func:`unseen_writes`), and what the tool's version is known to
    report falsely (:func:`tool_false_reports`). Pure."""
    keep = checks_anyway(result.tool, result.version) if skips else None
    done = tool_false_reports(with_coverage(result, applied(checked, skips, keep)))
    return unseen_writes(done, checked.names) if checked is not None else done
