"""``kprof doctor``: what is installed, what is missing, and what to do about each.

Every check returns a :class:`Check`; none raises. The driver and GPU come from NVML (no CUDA
context), the CUDA driver API from ``cuInit``, the tools from the same finder the build,
sanitizer and profiler stages use.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from kprof import proc
from kprof.errors import KprofError, ToolNotFoundError
from kprof.version import __version__

LIBRARIES = (
    ("cuda-bindings", "cuda.bindings"),
    ("cuda-pathfinder", "cuda.pathfinder"),
    ("nvtx", "nvtx"),
    ("nvidia-ml-py", "pynvml"),
    ("numpy", "numpy"),
    ("PyYAML", "yaml"),
)


COMMANDS = ("build", "run", "sanitize", "profile", "bench")  # what kprof doctor --for asks about
GPU_COMMANDS = ("run", "sanitize", "profile", "bench")


@dataclass(frozen=True)
class Check:
    """One line of ``kprof doctor``: what was found, and where it is missing, what to do and which
    commands cannot run without it (``needed_by``; none for what only makes a command better, as
    CUPTI does)."""
    name: str
    ok: bool
    detail: str
    fix: str = ""
    needed_by: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        """What a command that needs this check exits with while it fails: 5 for the GPU, 3 for a
        tool."""
        from kprof.errors import EXIT_NO_GPU, EXIT_TOOL_MISSING

        return EXIT_NO_GPU if self.name in GPU_CHECKS else EXIT_TOOL_MISSING


GPU_CHECKS = ("NVIDIA driver", "CUDA driver API")


@dataclass(frozen=True)
class Readiness:
    """Whether a command can run here: the checks it lacks, and the exit code it would end with."""
    command: str
    missing: tuple[str, ...]
    exit_code: int

    @property
    def ready(self) -> bool:
        return not self.missing


def readiness(checks: list[Check], commands: tuple[str, ...] = COMMANDS) -> list[Readiness]:
    """Each of ``commands`` with what it lacks of ``checks``; the GPU's exit code (5) before a
    tool's (3)."""
    out = []
    for command in commands:
        lacking = [c for c in checks if not c.ok and command in c.needed_by]
        code = max((c.exit_code for c in lacking), default=0)
        out.append(Readiness(command, tuple(c.name for c in lacking), code))
    return out


def run_checks() -> list[Check]:
    checks = [Check("kprof", True, f"{__version__} on Python {sys.version.split()[0]}")]
    checks += [_library(dist, module) for dist, module in LIBRARIES]
    checks.append(_nvml())
    checks.append(_cuda_driver())
    gpu = checks[-1].ok
    # the compiler's own line below says whether a build needs it
    checks.append(_tool("nvcc", "--version"))
    sanitizer = _tool("compute-sanitizer", "--version", ("sanitize",))
    checks.append(sanitizer)
    from kprof.build.toolchain import detect_arch
    from kprof.tools.nsight import ncu

    checks.append(_tool("ncu", "--version",
                        ("profile",) if ncu.unsupported(detect_arch()) is None else ()))
    checks.append(_compiler())
    checks.append(_compile())
    checks += _platform(gpu, sanitizer.ok)
    checks.append(_counters())
    checks.append(_cupti())
    checks.append(_build_cache())
    return [replace(c, needed_by=NEEDED[c.name]) if c.name in NEEDED else c for c in checks]


# the checks every command or every GPU command needs, by name (the tools' own say theirs where they
# are made)
NEEDED: dict[str, tuple[str, ...]] = {
    **{dist: COMMANDS for dist, _ in LIBRARIES}, "NVIDIA driver": GPU_COMMANDS,
    "CUDA driver API": GPU_COMMANDS, "CUDA headers": COMMANDS, "build cache": COMMANDS,
}


def _build_cache() -> Check:
    """Where kprof build writes, tried as a build would (the folder made, a file written and removed):
    "ready" was said where kprof build then failed (a read-only HOME)."""
    import tempfile

    from kprof.build.build import cache_dir
    from kprof.errors import KprofError

    try:
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".doctor-", dir=folder)
        os.close(fd)
        os.unlink(name)
    except KprofError as exc:
        return Check("build cache", False, str(exc), "set KPROF_CACHE_DIR to a folder kprof may write")
    except OSError as exc:
        return Check("build cache", False, f"{folder}: {exc.strerror or exc}",
                     "set KPROF_CACHE_DIR to a folder kprof may write (kprof build keeps its cubins there)")
    return Check("build cache", True, str(folder), "set KPROF_CACHE_DIR to move it")


def _cupti() -> Check:
    from kprof.child import cupti_timer

    why = cupti_timer.unavailable()
    if why is None:
        return Check("CUPTI timer", True,
                     "cupti-python loads: kprof bench reads kernel start/end timestamps")
    from kprof.build.nvrtc import bindings_major

    get = ("pip install 'kprof[cuda13]' (it brings cupti-python)" if bindings_major() != 12 else
           "on the CUDA 12 line, cupti-python 12.8.0 pins cuda-bindings 12.8.0 (kprof's CUDA 12 "
           "runs used 12.9), so the [cuda12] extra leaves it out")
    return Check("CUPTI timer", False, why.split("; pip install")[0],
                 f"{get}; without it kprof bench times with CUDA "
                 "events, about 2.4 us more per sample")


def _library(dist: str, module: str) -> Check:
    from importlib import metadata

    try:
        version = metadata.version(dist)
    except metadata.PackageNotFoundError:
        return Check(dist, False, "not installed", f"pip install {dist}")
    return Check(dist, True, version)


def _nvml() -> Check:
    try:
        import pynvml
    except ImportError:
        return Check("NVIDIA driver", False, "nvidia-ml-py is not installed",
                     "pip install nvidia-ml-py")
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - doctor reports any NVML failure instead of crashing
        return Check(
            "NVIDIA driver", False, f"NVML did not start ({exc})",
            "install the NVIDIA driver on a machine with a GPU; build, list "
            "and doctor work without one",
        )  # fmt: skip
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
            mem = pynvml.nvmlDeviceGetMemoryInfo(h).total
            gpus.append(f"GPU {i}: {_text(pynvml.nvmlDeviceGetName(h))} sm_{major}{minor} "
                        f"{mem / 2**30:.0f} GiB")
        detail = f"driver {driver} (CUDA {cuda // 1000}.{cuda % 1000 // 10}); " + ("; ".join(gpus) or "no GPU")
        return Check("NVIDIA driver", bool(gpus), detail)
    finally:
        pynvml.nvmlShutdown()


def _cuda_driver() -> Check:
    from kprof.child import device

    reason = device.probe()
    if reason:
        return Check("CUDA driver API", False, reason,
                     "kprof run, sanitize, profile and bench need a GPU")
    return Check("CUDA driver API", True, "cuInit succeeded")


def _tool(name: str, flag: str, needed_by: tuple[str, ...] = ()) -> Check:
    try:
        path = proc.find_tool(name)
    except ToolNotFoundError as exc:
        return Check(name, False, "not found", str(exc).split(": ", 1)[1], needed_by)
    done = proc.run([str(path), flag], timeout=60)
    text = (done.stdout + done.stderr).strip()
    version = _version_line(text)
    return Check(name, done.returncode == 0,
                 f"{version} ({path})" + (_sanitizer_advice(text) if name == "compute-sanitizer"
                                         else ""), needed_by=needed_by)


def _sanitizer_advice(text: str) -> str:
    """What an older compute-sanitizer means for kprof's checks
    (kprof.tools.sanitizers.kernelpolicy), said beside its version."""
    from kprof.tools.sanitizers import compute_sanitizer, kernelpolicy

    version = compute_sanitizer.parse_version(text)
    if not version or not kernelpolicy.older(version, kernelpolicy.RACECHECK_SEES_TMA):
        return ""
    return ("; older than 2026.4, whose racecheck sees cuBLAS's TMA GEMMs on Hopper right (kprof "
            "checks them with this one and sets its hazards there aside): "
            f"{kernelpolicy.NEWER_TOOL}")


def _compile() -> Check:
    """nvcc builds a kernel that includes CCCL (<nv/target>, <cuda/std/...>) and cuda_bf16.h, as the
    shipped kernels do: a toolchain without its CCCL headers is named here, not at the first
    build."""
    from kprof.build import toolchain

    arch = toolchain.detect_arch()
    if (problem := toolchain.tmpdir_problem()) is not None:  # the compiler's files, not the headers
        what = problem.removesuffix(f"; {toolchain.TMPDIR_FIX}")
        return Check("CUDA headers", False, f"not checked: {what}", toolchain.TMPDIR_FIX)
    try:
        missing = toolchain.probe_compile(arch)
    except ToolNotFoundError as exc:
        return Check("CUDA headers", False, "no compiler", str(exc).split(": ", 1)[1])
    if missing is None:
        return Check("CUDA headers", True,
                     f"a kernel with CCCL and cuda_bf16.h compiles for {arch}")
    if "host C++ compiler" in missing:
        return Check("CUDA headers", False, missing,
                     "install g++ and put it on PATH (nvcc compiles a kernel's host side "
                     "with it), or build with NVRTC: KPROF_COMPILER=nvrtc")
    return Check("CUDA headers", False, missing,
                 "pip install 'kprof[cuda13]' (it pins nvcc and the matching nvidia-cuda-cccl), or "
                 "a full CUDA toolkit")


def _compiler() -> Check:
    """Which compiler builds for this GPU (or sm_90 with none), and why: nvcc, else NVRTC."""

    from kprof.build import toolchain
    arch = toolchain.detect_arch()
    try:
        found = toolchain.compiler_for(arch)
    except (ToolNotFoundError, KprofError) as exc:
        return Check(f"compiler for {arch}", False,
                     str(exc).split(": ", 1)[-1].removesuffix(f"; {toolchain.COMPILER_HINT}"),
                     toolchain.COMPILER_HINT, COMMANDS)
    where = " ".join(found.program[-1:]) if found.kind == "nvcc" else "cuda.bindings.nvrtc, in a child"
    return Check(f"compiler for {arch}", True,
                 f"{found.version} ({where}); KPROF_COMPILER=nvcc|nvrtc chooses",
                 needed_by=COMMANDS)


def platform_lines(arch: str, driver_cuda: int | None, bindings: str | None, *,
                   sanitizer: bool = True) -> list[Check]:
    """What works on a GPU of ``arch`` with a driver of CUDA version ``driver_cuda`` (12040 for
    12.4),
    with cuda-bindings ``bindings`` installed (``sanitizer``: and compute-sanitizer found). Said
    only for a GPU that is there (:func:`_platform`). Pure: the fake-device tests call it for sm_61
    and sm_75."""
    from kprof.spec import arch_number
    from kprof.tools.nsight import ncu

    number = arch_number(arch)
    out: list[Check] = []
    if driver_cuda:
        major, minor = driver_cuda // 1000, driver_cuda % 1000 // 10
        lines = ["12", "13"] if major >= 13 else ["12"]
        line_ok = bindings is not None and bindings.split(".")[0] in lines
        out.append(Check("CUDA line", line_ok,
                         f"the driver is CUDA {major}.{minor}: it runs the CUDA "
                         f"{' and '.join(lines)} line"
                         + (f"; cuda-bindings {bindings} is installed" if bindings
                            else "; cuda-bindings is missing"),
                         "" if line_ok else ("pip install 'kprof[cuda12]'" if major < 13 else
                                             "pip install 'kprof[cuda13]'")))
    cuda13 = number >= 75
    features = [f"build: {'CUDA 12 or 13' if cuda13 else 'CUDA 12 only (CUDA 13 builds sm_75 and newer)'}",
                "run, bench, sanitize (compute-sanitizer supports it)" if sanitizer else
                "run, bench; sanitize once compute-sanitizer is installed (above)"]
    features.append("profile: " + ("Nsight Compute" if ncu.unsupported(arch) is None else
                                   "no Nsight Compute (it profiles sm_70 and newer): event timing, "
                                   "the driver's occupancy, registers and spills instead"))
    from kprof.errors import SpecError
    from kprof.spec import catalog

    needs = []
    for entry in catalog.entries():
        try:
            spec = catalog.load(entry.name)
        except (SpecError, KprofError):
            continue
        if spec.requires is not None and spec.unsupported_on(arch):
            needs.append(f"{spec.name} ({spec.requires.arch})")
    if needs:
        features.append(f"not on {arch}: {', '.join(needs)}")
    out.append(Check(f"features on {arch}", True, "; ".join(features)))
    return out


def _platform(gpu: bool, sanitizer: bool) -> list[Check]:
    """The CUDA line of the driver and what works on the GPU here; with no GPU, no feature is
    claimed."""
    from importlib import metadata

    from kprof.build import toolchain

    try:
        bindings: str | None = metadata.version("cuda-bindings")
    except metadata.PackageNotFoundError:
        bindings = None
    driver = toolchain.driver_cuda_version()
    arch = toolchain.detect_arch()
    lines = platform_lines(arch, driver, bindings, sanitizer=sanitizer)
    if gpu:
        return lines
    return [c for c in lines if not c.name.startswith("features on")] + [
        Check("GPU features", True,
              f"no GPU seen, so none claimed; kprof builds for {arch} (--arch chooses) and "
              "`kprof list --arch ARCH` marks what an architecture cannot run")]


def _version_line(text: str) -> str:
    for line in text.splitlines():
        if m := re.search(r"(release \S+|Version \S+|V\d+\.\d+\.\d+|\d{4}\.\d+\.\d+\S*)", line):
            return m.group(1).rstrip(",")
    return text.splitlines()[-1] if text else "no version output"


def _counters() -> Check:
    """Whether ncu may read performance counters (ERR_NVGPUCTRPERM otherwise)."""
    params = Path("/proc/driver/nvidia/params")
    fix = (
        "run as root, or load the driver with NVreg_RestrictProfilingToAdminUsers=0 "
        "(see https://developer.nvidia.com/ERR_NVGPUCTRPERM); without counters kprof profile "
        "falls back to event timing and theoretical occupancy"
    )
    if not params.is_file():
        return Check("GPU counters", False,
                     "no NVIDIA kernel driver here (/proc/driver/nvidia/params)",
                     "needs the NVIDIA driver on a machine with a GPU")
    text = params.read_text(errors="replace")
    m = re.search(r"RmProfilingAdminOnly:\s*(\d+)", text)
    admin_only = bool(m and m.group(1) != "0")
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if admin_only and not is_root:
        return Check("GPU counters", False,
                     "restricted to administrators (RmProfilingAdminOnly: 1)", fix)
    why = "running as root" if admin_only else "RmProfilingAdminOnly: 0"
    return Check("GPU counters", True, f"allowed ({why})")


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
