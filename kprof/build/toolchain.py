"""The CUDA toolchain a build runs: which architectures exist, the GPU's, the compiler that builds
for it (nvcc, else NVRTC; ``KPROF_COMPILER`` chooses) and that the driver loads, the compiler's
argv, and a probe that a kernel including CCCL and CUDA headers compiles here (``kprof doctor``).
:mod:`kprof.build.build` runs it."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from kprof import inputs, proc
from kprof.errors import BuildError, ToolNotFoundError, UsageError
from kprof.spec import arch_number

DEFAULT_ARCH = "sm_90"


# Every compute capability NVIDIA has shipped (the CUDA C++ Programming Guide's table), so that a
# made-up one (sm_99) is a bad input, said as such, not a compiler that is missing.
CUDA_ARCHS = (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120,
              121)


RETIRED_ARCHS = (20, 21, 30, 32, 35, 37)  # Fermi and Kepler: no CUDA 12 or 13 compiler builds them


def check_arch(arch: str) -> str:
    number = arch_number(arch)
    if not number:
        raise UsageError(f"--arch {arch!r}: write it as sm_XY, e.g. sm_90, sm_80, sm_89")
    if number in RETIRED_ARCHS:
        raise UsageError(f"{arch}: CUDA 12 and 13 build sm_50 and newer (Fermi and Kepler are "
                         "retired)")
    if number not in CUDA_ARCHS:
        known = ", ".join(f"sm_{n}" for n in CUDA_ARCHS)
        raise UsageError(f"{arch}: no GPU has that compute capability (known: {known})")
    return arch


def detect_arch() -> str:
    """The architecture of GPU 0 through NVML (no CUDA context), else sm_90."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
        finally:
            pynvml.nvmlShutdown()
        return f"sm_{major}{minor}"
    except Exception:  # noqa: BLE001 - no NVML, no driver, no GPU: build for the default target
        return DEFAULT_ARCH


@dataclass(frozen=True)
class Compiler:
    """The compiler a build runs: nvcc, or NVRTC in a child that takes nvcc's argv."""

    kind: Literal["nvcc", "nvrtc"]
    program: tuple[str, ...]  # what the argv starts with
    version: str  # "nvcc 13.0", "NVRTC 12.9"
    major: int  # its CUDA line (12, 13)
    # the real architectures it builds cubins for (75 for sm_75); empty: not known
    archs: tuple[int, ...]
    key: str = ""  # what the cache key holds of it: nvcc's build line, NVRTC's version

    def env(self) -> dict[str, str] | None:
        """NVRTC's child imports this kprof (:func:`kprof.proc.child_env`); nvcc gets the
        caller's."""
        return proc.child_env() if self.kind == "nvrtc" else None

    def builds(self, arch: str) -> bool:
        return not self.archs or arch_number(arch) in self.archs


COMPILERS = ("nvcc", "nvrtc")


COMPILER_HINT = ("pip install 'kprof[cuda12]' (NVRTC 12.9: sm_50 to sm_121, any CUDA 12 or 13 "
                 "driver) or 'kprof[cuda13]' (nvcc 13.0: sm_75 and newer, driver 580 or newer)")


_RELEASE = re.compile(r"(?:release |V|cuda_)(\d+)\.(\d+)")


def _nvcc_compiler() -> Compiler:
    nvcc = str(proc.find_tool("nvcc"))
    text = nvcc_version(nvcc)
    m = _RELEASE.search(text)
    major = int(m.group(1)) if m else 0
    return Compiler("nvcc", (nvcc,), f"nvcc {m.group(1)}.{m.group(2)}" if m else f"nvcc ({text})",
                    major, _nvcc_archs(nvcc), text)


@lru_cache(maxsize=4)
def _nvcc_archs(nvcc: str) -> tuple[int, ...]:
    """``nvcc --list-gpu-code``: sm_75 sm_80 ... (empty when this nvcc cannot say)."""
    done = proc.run([nvcc, "--list-gpu-code"], timeout=60)
    if done.returncode != 0:
        return ()
    return tuple(sorted({int(n) for n in re.findall(r"\bsm_(\d+)", done.stdout)}))


def _nvrtc_compiler() -> Compiler:
    from kprof.build import nvrtc

    major, minor = nvrtc.version()
    return Compiler("nvrtc", (sys.executable, "-m", "kprof.build.nvrtc"), f"NVRTC {major}.{minor}",
                    major, nvrtc.supported_archs(), f"NVRTC {major}.{minor}")


@lru_cache(maxsize=1)
def driver_cuda_version() -> int | None:
    """The CUDA version of the installed driver (13000 for 580.x), from NVML; None with no
    driver."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlSystemGetCudaDriverVersion())
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no NVML or no driver: building for another machine is allowed
        return None


def driver_cuda_major() -> int | None:
    """The CUDA line of the installed driver (13 for 580.x); None with no driver."""
    version = driver_cuda_version()
    return None if version is None else version // 1000


def compiler_for(arch: str) -> Compiler:
    """The compiler for ``arch``: ``KPROF_COMPILER`` when set, else nvcc when it builds for ``arch``
    and the driver (if any) loads its cubins, else NVRTC. A ToolNotFoundError says why neither
    fits."""
    choice = os.environ.get("KPROF_COMPILER", "").strip().lower()
    if choice not in ("", "auto", *COMPILERS):
        raise UsageError(f"KPROF_COMPILER={inputs.one_line(choice)[:40]}: write nvcc, nvrtc or auto")
    driver = driver_cuda_major()
    why: list[str] = []
    for kind in (choice,) if choice in COMPILERS else COMPILERS:
        try:
            found = _nvcc_compiler() if kind == "nvcc" else _nvrtc_compiler()
        except BuildError as exc:  # a compiler that cannot say its version
            why.append(f"{kind}: {exc}")
            continue
        except ToolNotFoundError as exc:
            detail = str(exc).split(": ", 1)[-1]
            why.append(f"{kind}: {'not found' if detail == proc.INSTALL_HINTS.get(kind) else detail}")
            continue
        if not found.builds(arch):
            low = min(found.archs)
            dropped = "; CUDA 13 dropped Maxwell, Pascal and Volta" if found.major >= 13 and low >= 75 else ""
            why.append(f"{found.version} does not build {arch} (it builds sm_{low} to "
                       f"sm_{max(found.archs)}{dropped})")
            continue
        if driver is not None and found.major > driver:
            why.append(f"{found.version} makes cubins the CUDA {driver} driver does not load")
            continue
        return found
    raise ToolNotFoundError("a CUDA compiler",
                            f"none builds {arch} here: {'; '.join(why)}; {compiler_hint(arch)}")


def compiler_hint(arch: str) -> str:
    """What to install to build ``arch``: one extra where only one builds it (CUDA 13 has no sm_50
    to sm_72)."""
    if arch_number(arch) < 75:
        return "pip install 'kprof[cuda12]' (NVRTC 12.9 builds it)"
    return COMPILER_HINT


def build_argv(
    nvcc: str | Path | Sequence[str],
    source: Path,
    output: Path,
    arch: str,
    defines: tuple[tuple[str, str], ...] = (),
    flags: tuple[str, ...] = (),
    kind: str = "cubin",
) -> list[str]:
    """The compiler's argv; ``kind`` "ptx" asks for the PTX (with its ``.loc`` line table)
    instead."""
    program = [str(nvcc)] if isinstance(nvcc, (str, Path)) else list(nvcc)
    argv = program + [
        f"-{kind}",
        f"-arch={arch}",
        "-lineinfo",  # source lines in sanitizer and profiler reports
        "--resource-usage",  # registers, shared memory, stack and spills of every kernel
        "-std=c++17",
        # a file kept as a tutorial wrote it can keep host-only code out: #ifndef KPROF_BUILD
        "-DKPROF_BUILD=1",
    ]
    argv += [f"-D{k}={v}" for k, v in defines]
    argv += list(flags)
    argv += ["-o", str(output), str(source)]
    return argv


@lru_cache(maxsize=4)
def nvcc_version(nvcc: str) -> str:
    done = proc.run([nvcc, "--version"], timeout=60)
    if done.returncode != 0:
        raise BuildError(f"{nvcc} --version failed (exit {done.returncode}): {done.tail(3)}")
    lines = [ln for ln in done.stdout.splitlines() if ln.strip()]
    return lines[-1] if lines else done.stdout


PROBE_SOURCE = """#include <nv/target>
#include <cuda/std/cstdint>
#include <cuda_bf16.h>
extern "C" __global__ void kprof_probe(cuda::std::uint32_t* out) {
    NV_IF_TARGET(NV_PROVIDES_SM_80, (out[threadIdx.x] = threadIdx.x;))
}
"""


_MISSING_HEADER = re.compile(r"fatal error: ([^:\s]+): No such file or directory")


_NVRTC_MISSING_HEADER = re.compile(r'catastrophic error: cannot open source file "([^"]+)"')


TMPDIR_FIX = "nvcc writes its intermediate files there; set TMPDIR to a writable folder, or unset it"
TMPDIR_ROOM = 128  # bytes nvcc adds to TMPDIR for a file of its own (tmpxft_0000abcd_00000000-6_name.cpp1.ii)


def tmpdir_problem() -> str | None:
    """Why nvcc could not write its intermediate files under ``$TMPDIR`` (None: it can, or TMPDIR is
    unset): a path longer than the file system takes once nvcc's own names are added, no such
    folder, a folder kprof may not write. One line, for ``kprof build`` and ``kprof doctor`` alike."""
    from kprof import inputs
    from kprof.errors import UsageError

    given = os.environ.get("TMPDIR")
    if not given:
        return None
    shown = inputs.one_line(given)[:100] + ("..." if len(given) > 100 else "")
    fix = TMPDIR_FIX
    try:
        where = inputs.user_path(given, "TMPDIR")
    except UsageError as exc:
        return f"{exc}; {fix}"
    if len(os.fsencode(given)) + TMPDIR_ROOM > inputs.MAX_PATH_BYTES:
        return (f"TMPDIR {shown}: a path of {len(os.fsencode(given)):,} bytes leaves no room for "
                f"nvcc's file names (the file system takes {inputs.MAX_PATH_BYTES:,}); {fix}")
    try:
        folder = where.is_dir()
    except OSError as exc:
        return f"TMPDIR {shown}: {exc.strerror or exc}; {fix}"
    if not folder:
        return f"TMPDIR {shown}: no such folder; {fix}"
    if not os.access(where, os.W_OK | os.X_OK):
        return f"TMPDIR {shown}: not writable; {fix}"
    return None


def probe_compile(arch: str = DEFAULT_ARCH, timeout: float = 120) -> str | None:
    """Compile a tiny kernel that includes CCCL and CUDA headers, as the shipped kernels do: None
    when it builds, else what is missing (the header's name, or nvcc's first error line)."""
    compiler = compiler_for(check_arch(arch))
    return _probe(compiler, arch, timeout)


# nvcc without the host compiler it preprocesses and compiles the host side with (an empty PATH, no
# g++)
_NO_HOST_COMPILER = re.compile(r"host compiler properties|(?:g\+\+|gcc|c\+\+|cl\.exe)[^\n]*(?:not "
                               r"found|No such file)")


# one toolchain's answer does not change within a process (kprof doctor asks it each run)
@lru_cache(maxsize=8)
def _probe(compiler: Compiler, arch: str, timeout: float) -> str | None:
    with tempfile.TemporaryDirectory(prefix="kprof-probe-") as tmp:
        source, out = Path(tmp) / "probe.cu", Path(tmp) / "probe.cubin"
        source.write_text(PROBE_SOURCE)
        done = proc.run(build_argv(compiler.program, source, out, arch), timeout=timeout,
                        env=compiler.env())
    if done.returncode == 0 and not done.timed_out:
        return None
    text = done.stdout + done.stderr
    if m := _MISSING_HEADER.search(text) or _NVRTC_MISSING_HEADER.search(text):
        return f"the header {m.group(1)} is missing from {compiler.version}'s include path"
    first = next((ln for ln in text.splitlines() if "error" in ln),
                 text.strip().splitlines()[-1] if text.strip() else "")
    if _NO_HOST_COMPILER.search(text):
        return f"{compiler.version} found no host C++ compiler (g++) on PATH ({first.strip().rstrip('.')})"
    return f"{compiler.version} could not compile a CUDA kernel: {first.strip()}"

