"""The only NVRTC caller: the compiler kprof builds with where no nvcc is found.

pip's CUDA 12 compiler wheel ships ptxas and NVVM but no ``nvcc`` driver, and CUDA 13's nvcc cannot
build for Maxwell, Pascal or Volta at all; NVRTC (``nvidia-cuda-nvrtc-cu12``, through
``cuda.bindings.nvrtc``) compiles CUDA C++ to a cubin for sm_50 and up. kprof drives it with the
same options it gives nvcc, so a build is the same whichever compiler makes it: the same defines,
``-lineinfo``, the spec's flags, and ptxas's resource report (``--ptxas-options=-v`` prints the
lines ``nvcc --resource-usage`` prints, which :func:`kprof.build.build.parse_resource_usage` reads).

A compile runs in a child (``python -m kprof.build.nvrtc`` with nvcc's argv), as nvcc does: a
compiler that hangs or crashes on a source is stopped by the build's timeout and never takes kprof
down.
:func:`translate` (nvcc options to NVRTC's) is pure; :func:`version` and :func:`supported_archs`
load the library in the parent, which compiles nothing.
"""

from __future__ import annotations

import os
import re
import sys
from functools import lru_cache
from pathlib import Path

from kprof import proc
from kprof.errors import BuildError, ToolNotFoundError, UsageError

# nvcc option -> NVRTC option, for every option kprof's build or a spec's nvcc_flags may pass
_RENAMED = {"-lineinfo": "--generate-line-info", "-G": "--device-debug", "-w": "--disable-warnings",
            "-restrict": "--restrict", "-use_fast_math": "--use_fast_math",
            "--resource-usage": "--ptxas-options=-v",
            "--use_fast_math": "--use_fast_math",
            "--extra-device-vectorization": "--extra-device-vectorization",
            "--restrict": "--restrict"}  # fmt: skip
# nvcc prefix -> NVRTC prefix, the value after it kept (-D, -U and -I are the same in both)
_PREFIXES = {"-arch=": "--gpu-architecture=", "-std=": "--std=", "--std=": "--std=",
             "--include-path=": "-I",
             "-maxrregcount=": "--maxrregcount=", "--maxrregcount=": "--maxrregcount=",
             "-Xptxas=": "--ptxas-options=", "--ptxas-options=": "--ptxas-options=",
             **{f"{dash}{flag}=": f"--{flag}=" for dash in ("-", "--")
                for flag in ("ftz", "prec-div", "prec-sqrt", "fmad")},
             "-D": "-D", "-U": "-U", "-I": "-I"}  # fmt: skip
# -cubin: NVRTC makes a cubin whenever the target is a real architecture (sm_XY). -O0..-O3: nvcc's
# -O sets the host compiler's level only, and NVRTC compiles no host code. The two lambda and
# constexpr options let host code and device code call each other; NVRTC's code is all device code.
_DROPPED = ("-cubin", "-O0", "-O1", "-O2", "-O3", "--expt-relaxed-constexpr",
            "--expt-extended-lambda")
# nvcc's implicit INFINITY and NAN
PRELUDE = Path(__file__).parent.parent / "templates" / "nvrtc_prelude.h"


def translate(argv: list[str]) -> tuple[list[str], Path, Path]:
    """nvcc's argv as :func:`kprof.build.toolchain.build_argv` writes it (without the program) ->
    (NVRTC options, source, output). Pure. An option NVRTC has no equivalent for is a UsageError
    that names it."""
    options: list[str] = []
    output: Path | None = None
    source: Path | None = None
    it = iter(argv)
    for arg in it:
        prefix = next((p for p in _PREFIXES if arg.startswith(p)), None)
        if arg == "-o":
            output = Path(next(it, ""))
        elif arg in _DROPPED:
            continue
        elif arg in _RENAMED:
            options.append(_RENAMED[arg])
        elif prefix is not None:
            options.append(_PREFIXES[prefix] + arg[len(prefix):])
        elif arg.startswith("-"):
            raise UsageError(f"NVRTC has no equivalent of the nvcc option {arg}: remove it from "
                             "nvcc_flags, or build with nvcc")
        elif source is None:
            source = Path(arg)
        else:
            raise UsageError(f"two sources given to NVRTC: {source} and {arg}")
    if source is None or output is None:
        raise UsageError("NVRTC needs one source and -o OUTPUT")
    return options, source, output


# Where pip's wheels put NVRTC and the headers, under a folder of sys.path: the CUDA 12 wheels one
# folder each, the CUDA 13 wheels one cu13 folder.
_WHEEL_LIBS = {12: "nvidia/cuda_nvrtc/lib/libnvrtc.so.12", 13: "nvidia/cu13/lib/libnvrtc.so.13"}
_WHEEL_HEADERS = {12: ("nvidia/cuda_runtime/include", "nvidia/cuda_cccl/include"),
                  13: ("nvidia/cu13/include", None)}


def bindings_major() -> int:
    try:
        from cuda.bindings import __version__ as bindings_version

        return int(str(bindings_version).split(".")[0])
    except (ImportError, ValueError):
        return 0


def _load() -> object:
    """``cuda.bindings.nvrtc`` with libnvrtc of the bindings' CUDA line loaded: a pip wheel's copy
    on sys.path first (a ``pip install --target`` folder on PYTHONPATH is one cuda-pathfinder does
    not search), then what cuda-pathfinder finds (site-packages, conda, CUDA_HOME, the system; a
    plain dlopen by name would not see a wheel's). ToolNotFoundError names what to install."""
    import ctypes

    major = bindings_major()
    why = ""
    found = proc.in_sys_path(_WHEEL_LIBS[major]) if major in _WHEEL_LIBS else None
    if found is not None:
        try:
            ctypes.CDLL(str(found), mode=ctypes.RTLD_GLOBAL)
        except OSError as err:
            why = f"{found} does not load ({err})"
    else:
        try:
            from cuda.pathfinder import load_nvidia_dynamic_lib

            load_nvidia_dynamic_lib("nvrtc")
        except ImportError:
            pass  # an old cuda-pathfinder: cuda.bindings looks by name
        except Exception as exc:  # noqa: BLE001 - DynamicLibNotFoundError and kin: said as one line
            why = "no libnvrtc.so.12 or .13" if "libnvrtc" in str(exc) else str(exc).splitlines()[0][:120]
    if why:
        raise ToolNotFoundError("NVRTC", why)
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:
        raise ToolNotFoundError("NVRTC", f"cuda.bindings.nvrtc does not import ({exc})") from None
    return nvrtc


def _check(result: object, what: str) -> None:
    code = getattr(result, "value", result)
    if code != 0:
        raise BuildError(f"NVRTC: {what} failed ({getattr(result, 'name', code)})")


@lru_cache(maxsize=1)
def version() -> tuple[int, int]:
    """NVRTC's (major, minor). ToolNotFoundError where there is none."""
    nvrtc = _load()
    try:
        err, major, minor = nvrtc.nvrtcVersion()  # type: ignore[attr-defined]
    except RuntimeError as exc:  # the bindings raise this when the library cannot be loaded
        raise ToolNotFoundError("NVRTC", f"libnvrtc could not be loaded ({exc})") from None
    _check(err, "nvrtcVersion")
    bindings = bindings_major()
    # seen: pathfinder found a toolkit's NVRTC 13 for cuda-bindings 12
    if bindings and int(major) != bindings:
        raise ToolNotFoundError("NVRTC",
                                f"the NVRTC found is {major}.{minor} but cuda-bindings is "
                                f"{bindings}.x; install NVRTC of the bindings' line")
    return int(major), int(minor)


@lru_cache(maxsize=1)
def supported_archs() -> tuple[int, ...]:
    """The real architectures this NVRTC builds cubins for: (50, 52, ..., 90, 100, 120, ...)."""
    nvrtc = _load()
    err, archs = nvrtc.nvrtcGetSupportedArchs()  # type: ignore[attr-defined]
    _check(err, "nvrtcGetSupportedArchs")
    return tuple(int(a) for a in archs)


_CUDART_VERSION = re.compile(rb"#define\s+CUDART_VERSION\s+(\d+)")


def _cudart_major(include: Path) -> int | None:
    """The CUDA line of a folder of runtime headers (CUDART_VERSION in cuda_runtime_api.h), else
    None."""
    try:
        with open(include / "cuda_runtime_api.h", "rb") as f:
            m = _CUDART_VERSION.search(f.read(256 * 1024))
    except OSError:
        return None
    return int(m.group(1)) // 1000 if m else None


def include_dirs(major: int | None = None) -> list[str]:
    """The CUDA headers a kernel includes (cuda_bf16.h, cooperative_groups.h, <cuda/std/...>): NVRTC
    brings only its built-ins. Only runtime headers of NVRTC's own CUDA line (``major``; its version
    when None): CUDA 13's cuda_bf16.h does not compile under NVRTC 12. Looked for in the wheels on
    sys.path, then where cuda-pathfinder finds them, then a toolkit's (CUDA_HOME, CUDA_PATH,
    /usr/local/cuda); CCCL from the same place (a toolkit's and CUDA 13's wheel's ``include/cccl``,
    CUDA 12's ``nvidia-cuda-cccl-cu12``)."""
    major = version()[0] if major is None else major
    runtime_wheel, cccl_wheel = _WHEEL_HEADERS.get(major, (None, None))
    runtime = [d for d in (proc.in_sys_path(runtime_wheel) if runtime_wheel else None,
                           _pathfinder_headers("cudart")) if d is not None]
    runtime += [Path(b) / "include"
                for b in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                          "/usr/local/cuda")
                if b]
    chosen = next((d for d in runtime if _cudart_major(d) == major), None)
    if chosen is None:
        return []
    cccl = chosen / "cccl" if (chosen / "cccl").is_dir() else \
        (proc.in_sys_path(cccl_wheel) if cccl_wheel else None) or _pathfinder_headers("cccl")
    return [str(chosen)] + ([str(cccl)] if cccl is not None and cccl.is_dir() else [])


def _pathfinder_headers(lib: str) -> Path | None:
    try:
        from cuda.pathfinder import find_nvidia_header_directory

        where = find_nvidia_header_directory(lib)
    except Exception:  # noqa: BLE001 - no cuda-pathfinder, or an old one that does not know this library
        return None
    return Path(where) if where else None


def compile_to_cubin(options: list[str], source: Path, output: Path) -> tuple[bool, str]:
    """Compile ``source`` with NVRTC; write the cubin to ``output`` when it builds. (built, log)."""
    nvrtc = _load()
    text = source.read_bytes()
    err, prog = nvrtc.nvrtcCreateProgram(text, str(source).encode(), 0, [], [])  # type: ignore[attr-defined]
    _check(err, "nvrtcCreateProgram")
    try:
        opts = [o.encode() for o in options] + [f"-I{d}".encode() for d in include_dirs()]
        opts.append(f"--pre-include={PRELUDE}".encode())
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)  # type: ignore[attr-defined]
        err, size = nvrtc.nvrtcGetProgramLogSize(prog)  # type: ignore[attr-defined]
        buf = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, buf)  # type: ignore[attr-defined]
        log = buf.rstrip(b"\0 ").decode(errors="replace")
        if getattr(result, "value", result) != 0:
            return False, log
        err, size = nvrtc.nvrtcGetCUBINSize(prog)  # type: ignore[attr-defined]
        _check(err, "nvrtcGetCUBINSize")
        if size == 0:
            return False, log + "\nNVRTC made no cubin: the target must be a real architecture (sm_XY)"
        cubin = b" " * size
        (err,) = nvrtc.nvrtcGetCUBIN(prog, cubin)  # type: ignore[attr-defined]
        _check(err, "nvrtcGetCUBIN")
        output.write_bytes(cubin)
        return True, log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    """The child: ``python -m kprof.build.nvrtc [nvcc options] -o OUT SOURCE``; the log on stderr,
    exit 0 when the cubin was written, 1 when the source does not compile, 2 on a bad option."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:
        major, minor = version()
        print(f"NVRTC {major}.{minor}, architectures "
              f"{', '.join(f'sm_{a}' for a in supported_archs())}")
        return 0
    try:
        options, source, output = translate(args)
        built, log = compile_to_cubin(options, source, output)
    except (UsageError, ToolNotFoundError) as exc:
        print(f"kprof.build.nvrtc: {exc}", file=sys.stderr)
        return 2
    except (BuildError, OSError) as exc:
        print(f"kprof.build.nvrtc: {exc}", file=sys.stderr)
        return 1
    if log:
        print(log, file=sys.stderr)
    return 0 if built else 1


if __name__ == "__main__":
    sys.exit(main())
