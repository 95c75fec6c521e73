"""The only compiler caller: spec -> cubin, cached by content, with every kernel's resource usage
(the toolchain it runs, its argv and the probe are :mod:`kprof.build.toolchain`).

Two compilers, one build: nvcc where one is found (a system toolkit, ``KPROF_NVCC``, CUDA 13's pip
wheel), else NVRTC (:mod:`kprof.build.nvrtc`, which pip's CUDA 12 line has and its nvcc wheel
lacks).
:func:`compiler_for` picks the one that builds for the architecture and whose cubins the driver
loads; ``KPROF_COMPILER=nvcc|nvrtc`` chooses. Both get the same argv (NVRTC's child translates it),
so the defines, ``-lineinfo``, the spec's flags and ptxas's resource report are the same.

``build_argv()`` and ``parse_resource_usage()`` are pure and tested on recorded compiler output;
``build()`` is the thin part that runs the compiler through :mod:`kprof.proc`. Cubins are built with
``-lineinfo`` so compute-sanitizer and ncu can name source lines. The cache key is a hash of the
source (and the local headers it includes), the full argv and the compiler's version, so a rebuild
of unchanged sources runs nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import KW_ONLY, asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from kprof import inputs, outputs, proc
from kprof.build import cusource, entries, shake
from kprof.build.toolchain import Compiler, build_argv, check_arch, compiler_for, detect_arch
from kprof.errors import BuildError, SpecError, UnsupportedArchError, UsageError
from kprof.spec import KernelSpec

# a cache entry's JSON: ptxas's log and usage, kilobytes in practice
MAX_META_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class ResourceUsage:
    """What ptxas reported for one kernel."""

    registers: int = 0
    shared_static: int = 0  # bytes of static shared memory
    stack_frame: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    barriers: int = 0
    constant: int = 0  # bytes of cmem[0] (kernel parameters and constants)


@dataclass(frozen=True)
class BuildResult:
    spec_name: str
    cubin: Path
    arch: str
    usage: dict[str, ResourceUsage]  # entry name -> usage
    cached: bool
    _: KW_ONLY  # the rest by name
    log: str
    argv: tuple[str, ...]
    compiler: str = ""  # "nvcc 13.0.88", "NVRTC 12.9"; empty for a Python operation
    # each entry as the spec writes it -> its cubin symbol
    symbols: Mapping[str, str] = field(default_factory=dict)

    def symbol_of(self, entry: str) -> str:
        """The cubin's symbol of ``entry`` (``block_sum<float, 256>`` ->
        ``_Z9block_sumIfLi256EEvPKT_PS0_i``)."""
        return self.symbols.get(entry, entry)

    def usage_of(self, entry: str) -> ResourceUsage:
        """ptxas's report for ``entry`` (all zeros for a Python operation, which has no cubin)."""
        return self.usage.get(self.symbol_of(entry), ResourceUsage())


def cache_dir() -> Path:
    """``$KPROF_CACHE_DIR``, else ``$XDG_CACHE_HOME/kprof``, else ``~/.cache/kprof``."""
    if os.environ.get("KPROF_CACHE_DIR"):
        return inputs.user_path(os.environ["KPROF_CACHE_DIR"], "KPROF_CACHE_DIR")
    if os.environ.get("XDG_CACHE_HOME"):
        return inputs.user_path(os.environ["XDG_CACHE_HOME"], "XDG_CACHE_HOME") / "kprof"
    return inputs.user_path("~/.cache", "the build cache (HOME)") / "kprof"


# a temporary file of the cache this old was left by a process that was killed (SIGKILL)
STALE_S = 3600.0


@lru_cache(maxsize=4)
def sweep_stale(folder: Path) -> int:
    """Remove, once a process, the temporary files and folders (``.NAME-...``, ``.keep-...``) a
    killed kprof left in the build cache over :data:`STALE_S` ago; a fresh one may be another
    kprof's at work. Never raises; how many went."""
    import shutil
    import time

    gone = 0
    try:
        entries = list(folder.iterdir()) if folder.is_dir() else []
    except OSError:
        return 0
    for entry in entries:
        try:
            if not entry.name.startswith(".") or time.time() - entry.lstat().st_mtime < STALE_S:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink()
            gone += 1
        except OSError:
            continue
    return gone


def generated_source(name: str, original: Path, text: str) -> Path:
    """A generated variant of ``original`` (a mutant) kept under the build cache at a path named by
    its text, written whole by a rename (two runs at once never read half a file): the same text has
    the same path, hence the same build key, in every run, so building it again is a cache hit."""
    digest = hashlib.sha256(f"{original}\0{text}".encode("utf-8", "surrogateescape")).hexdigest()[:20]
    path = cache_dir() / "generated" / name / digest / original.name
    try:
        if not (path.is_file() and path.read_text() == text):
            path.parent.mkdir(parents=True, exist_ok=True)
            outputs.replace_file(path, text)
    except OSError as exc:
        raise outputs.write_error(path, exc) from None
    return path


def _shell_safe_argv(argv: list[str]) -> None:
    """The last guard before nvcc: it runs its sub-steps through ``sh`` with every path and flag
    inside double quotes, where a backtick or ``$(...)`` still runs a command. The spec loader
    refuses such a source, flag or include folder by its field; this names whatever else would reach
    the shell."""
    for i, arg in enumerate(argv):
        inputs.shell_safe(arg, "nvcc's path" if i == 0 else "an nvcc argument", "refused")
    # nvcc writes its intermediate files there, and names them to the shell
    inputs.shell_safe(os.environ.get("TMPDIR", ""), "TMPDIR", "set TMPDIR to a plain folder")


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_FUNC_PROPS = re.compile(r"Function properties for (\S+)")
_STACK = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[0\]")


def parse_resource_usage(log: str) -> dict[str, ResourceUsage]:
    """Parse ``nvcc --resource-usage`` (ptxas info) output into usage per kernel entry."""
    result: dict[str, dict[str, int]] = {}
    current: str | None = None
    props_for: str | None = None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            current = m.group(1)
            result.setdefault(current, {})
            continue
        if m := _FUNC_PROPS.search(line):
            props_for = m.group(1)
            continue
        if (m := _STACK.search(line)) and props_for is not None:
            if props_for in result or props_for == current:
                entry = result.setdefault(props_for, {})
                entry["stack_frame"] = int(m.group(1))
                entry["spill_stores"] = int(m.group(2))
                entry["spill_loads"] = int(m.group(3))
            props_for = None
            continue
        if (m := _USED.search(line)) and current is not None:
            entry = result[current]
            entry["registers"] = int(m.group(1))
            if b := _BARRIERS.search(line):
                entry["barriers"] = int(b.group(1))
            if s := _SMEM.search(line):
                entry["shared_static"] = int(s.group(1))
            if c := _CMEM.search(line):
                entry["constant"] = int(c.group(1))
    return {name: ResourceUsage(**fields) for name, fields in result.items()}


def _check_defines_reach(spec: KernelSpec, sources: list[tuple[Path, bytes]]) -> None:
    """A define of the spec (or of ``--param``) that the source or a local header sets again without
    ``#ifndef`` would be overridden there, nvcc saying no more than a warning: refused, with the
    line to guard. ``sources``: what :func:`kprof.build.cusource.local_sources` read (a missing
    source is nvcc's error to report)."""
    values = dict(spec.defines)
    for path, data in sources if values else ():
        for name, line, code in cusource.unguarded_defines(data.decode("utf-8", errors="replace"), set(values))[:1]:
            raise SpecError(str(spec.path), f"defines.{name}",
                            f"{path.name} line {line} sets {name} itself "
                            f"({inputs.one_line(code)[:60]}), so {name}={values[name]} would not "
                            f"reach the kernel: put that line inside #ifndef {name} ... #endif")

def build(
    spec: KernelSpec,
    arch: str | None = None,
    *,
    force: bool = False,
    timeout: float = 600,
    shaken: bool = False,
) -> BuildResult:
    """Build ``spec``'s source into a cubin for ``arch`` (the GPU's, else sm_90). A Python operation
    (``python:``) has nothing to build: its result names the .py file and no kernels. ``shaken``:
    the warp-delay build of the values detector (:mod:`kprof.build.shake`), named NAME__shaken."""
    arch = check_arch(arch or detect_arch())
    if why := spec.unsupported_on(arch):
        raise UnsupportedArchError(why)
    # sm_90a for a kernel that needs Hopper's own instructions (wgmma)
    target = spec.target_arch(arch)
    if spec.python:
        return BuildResult(spec.name, spec.source, arch, {}, True, log="", argv=())
    merged = dict(spec.defines)
    sources = cusource.local_sources(spec.source)  # read once: the defines' check and the cache key
    _check_defines_reach(spec, sources)
    folder = cache_dir()  # checked before nvcc runs at all
    inputs.shell_safe(str(folder), "the build cache",
                      "set KPROF_CACHE_DIR to a folder whose path has none")
    sweep_stale(folder)
    compiler = compiler_for(target)
    # the warp-delay variant of the user's own file (its templates instantiated in its own build)
    if shaken:
        key = _cache_key(spec, compiler, target, tuple(merged.items()), sources)
        return build(_shaken_spec(spec, folder / "shaken" / f"{key}-{shake.key()}"), arch,
                     force=force, timeout=timeout)
    if (wrapped := _instantiating(spec)) is not spec:
        spec, sources = wrapped, cusource.local_sources(wrapped.source)
    key = _cache_key(spec, compiler, target, tuple(merged.items()), sources)
    cubin = folder / f"{spec.name[:64]}-{target}-{key}.cubin"  # the key tells long names apart
    if not force and (hit := _cached(spec, arch, cubin, compiler.version)) is not None:
        return hit
    with _one_builder(folder, cubin, timeout):
        # another kprof (a worker of the same pytest, a copy of the same job) may have built it
        # while this one waited
        if not force and (hit := _cached(spec, arch, cubin, compiler.version)) is not None:
            return hit
        return _compile(spec, arch, target=target, compiler=compiler, cubin=cubin, key=key,
                        timeout=timeout)


def _instantiating(spec: KernelSpec) -> KernelSpec:
    """``spec`` built from a wrapper that instantiates its template entries (``block_sum<float,
    256>``), its own file included unchanged (:func:`kprof.build.entries.wrapper_text`); ``spec``
    itself where it has none."""
    templates = [e for e in spec.entries if entries.is_template(e)]
    if not templates:
        return spec
    return replace(spec,
                   source=generated_source(spec.name, spec.source,
                                           entries.wrapper_text(str(spec.source), templates)))


def _compile(spec: KernelSpec, arch: str, *, target: str, compiler: Compiler, cubin: Path, key: str,
             timeout: float) -> BuildResult:
    """Run the compiler for one cache entry and write it: the cubin and its record, each by a
    rename."""
    merged = dict(spec.defines)
    folder, meta = cubin.parent, cubin.with_suffix(".json")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{spec.name[:64]}-", suffix=".cubin", dir=folder)
    except OSError as exc:
        raise UsageError(f"build cache {folder}: {exc.strerror or exc}; set KPROF_CACHE_DIR to a "
                         "writable folder") from None
    os.close(fd)
    tmp = Path(tmp_name)
    argv = build_argv(compiler.program, spec.source, tmp, target, tuple(merged.items()),
                      spec.nvcc_flags)
    kept = None
    try:
        if compiler.kind == "nvcc":  # NVRTC's child is no shell
            _shell_safe_argv(argv)
            _fits_a_shell(argv, merged)
            _check_tmpdir()
            # nvcc keeps the PTX it hands ptxas (for ptx(): no second compile); the same cubin; argv
            # recorded without it
            kept = Path(tempfile.mkdtemp(prefix=".keep-", dir=folder))
        for path in (cubin, meta):
            if path.is_dir() and not path.is_symlink():
                raise UsageError(f"the build cache has a folder at {path} where a file goes: "
                                 "remove it")
        with _compiler_scratch(compiler) as env:
            done = proc.run(argv + (["--keep", "--keep-dir", str(kept)] if kept else []),
                            timeout=timeout, env=env)
        log = (done.stdout + done.stderr).strip()
        if done.timed_out:
            raise BuildError(f"{compiler.kind} did not finish compiling {spec.source.name} in "
                             f"{timeout:g} s", log)
        if done.returncode != 0:
            errors = sum(1 for ln in log.splitlines() if ": error" in ln)
            what = f"{errors} error(s)" if errors else f"exit {done.returncode}"
            stop = cusource.compile_stop(log)
            raise BuildError(f"{compiler.version} failed to compile {spec.source} for {target}: "
                             + (f"{what}: {stop}" if stop else what), log)
        usage = parse_resource_usage(log)
        symbols = _symbols(spec, usage)
        digest_of_cubin = hashlib.sha256(tmp.read_bytes()).hexdigest()
        info = {"usage": {k: asdict(v) for k, v in usage.items()}, "log": log, "argv": argv,
                "sha256": digest_of_cubin}
        with proc.deferred_interrupts():  # the entry committed whole: its cubin, its record, its PTX
            try:
                os.replace(tmp, cubin)
            except OSError as exc:
                raise outputs.write_error(cubin, exc) from None
            outputs.replace_file(meta, json.dumps(dict(info, digest=_entry_digest(info)), indent=1))
            if kept is not None and (kept / f"{spec.source.stem}.ptx").is_file():
                os.replace(kept / f"{spec.source.stem}.ptx", _ptx_path(folder, spec, target, key))
        return BuildResult(spec.name, cubin, arch, usage, False, log=log, argv=tuple(argv),
                           compiler=compiler.version, symbols=symbols)
    finally:
        with proc.deferred_interrupts():  # a second Ctrl-C leaves no temporary file behind
            tmp.unlink(missing_ok=True)
            if kept is not None:
                shutil.rmtree(kept, ignore_errors=True)


LOCK_POLL_S = 0.05  # how often a kprof waiting for another's build of the same entry looks again


@contextmanager
def _one_builder(folder: Path, cubin: Path, timeout: float) -> Iterator[None]:
    """Hold the entry's lock (``.NAME-ARCH-KEY.lock``, an advisory ``flock``) while building it:
    kprofs that build one entry at once (pytest-xdist's workers, the copies of a job, two terminals)
    compile it once, and the others read what it wrote. The wait is at most ``timeout`` (the
    compiler's own limit, so a holder ends by then); a lock that cannot be had (no ``fcntl``, an
    unwritable cache, a lock path that is not a regular file) builds without one: never fewer builds
    than before, and the cache takes writers side by side. The lock ends with its process (a killed
    kprof holds none); its file goes when the build is done, or with the hour-old temporary
    files."""
    lock = folder / f".{cubin.stem}.lock"
    fd = _lock_file(lock)
    try:
        if fd is not None:
            _wait_for_lock(fd, timeout)
        yield
    finally:
        if fd is not None:
            with proc.deferred_interrupts(), suppress(OSError):
                if os.fstat(fd).st_ino == lock.lstat().st_ino:
                    # a waiter on this file rechecks the cache; a newcomer makes a new one
                    lock.unlink()
            os.close(fd)


def _lock_file(lock: Path) -> int | None:
    """The lock's file, open, or None where there is none to be had: no ``fcntl`` (not POSIX), an
    unwritable cache, or something other than a regular file at its path (a link, a pipe or a device
    is never opened nor removed)."""
    try:
        import fcntl  # noqa: F401  (POSIX only)
    except ImportError:
        return None
    flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        if lock.is_symlink() or (lock.exists() and not lock.is_file()):
            return None
        fd = os.open(lock, flags, 0o600)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # put there between the look and the open
        os.close(fd)
        return None
    return fd


def _wait_for_lock(fd: int, timeout: float) -> None:
    """Take the lock, waiting at most ``timeout``; past it, build beside the holder (the same work
    twice, never a wrong entry: each writes by a rename)."""
    import fcntl

    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError:
            if time.monotonic() >= deadline:
                return
            time.sleep(LOCK_POLL_S)


@contextmanager
def _compiler_scratch(compiler: Compiler) -> Iterator[dict[str, str] | None]:
    """The environment the compiler runs in: for nvcc, a TMPDIR of its own under the user's, removed
    afterwards whatever happened. nvcc removes its tmpxft_* files on SIGINT once it is running, not
    when the signal comes as it starts a step (seen on an interrupted kprof build --all): the folder
    takes them with it."""
    if compiler.kind != "nvcc":
        yield compiler.env()
        return
    try:
        scratch = Path(tempfile.mkdtemp(prefix="kprof-nvcc-"))
    except OSError:  # the TMPDIR check said what it could; nvcc then uses TMPDIR as it is
        yield compiler.env()
        return
    try:
        yield dict(compiler.env() or os.environ, TMPDIR=str(scratch))
    finally:
        with proc.deferred_interrupts():
            shutil.rmtree(scratch, ignore_errors=True)


# Linux's limit on one argument (MAX_ARG_STRLEN): nvcc runs its steps through a shell, ``sh -c
# "<the whole step>"``, so the step's command line is one argument; past it the shell exits 127 and
# nvcc says nothing.
MAX_SHELL_COMMAND = 128 * 1024
SHELL_MARGIN = 8 * 1024  # what nvcc adds to a step's command line of its own (its paths and flags)


def _fits_a_shell(argv: list[str], defines: dict[str, str]) -> None:
    """nvcc's argv as one shell command, refused in one line where it is too long for one (20,000
    defines made nvcc exit 127 with no message)."""
    size = sum(len(os.fsencode(str(a))) + 1 for a in argv)
    if size + SHELL_MARGIN > MAX_SHELL_COMMAND:
        raise UsageError(f"the compiler's command line would be {size / 1024:,.0f} KiB ({len(defines):,} "
                         f"defines), and nvcc runs each step through a shell that takes at most "
                         f"{MAX_SHELL_COMMAND // 1024} KiB in one command: put the defines in a header "
                         "the kernel includes, or build with NVRTC (KPROF_COMPILER=nvrtc)")


def _check_tmpdir() -> None:
    """nvcc writes its intermediate files under TMPDIR: one it cannot use failed every build as
    "nvcc failed to compile ... exit 1" (or, for a name too long, an internal error). Said in one
    line instead (:func:`kprof.build.toolchain.tmpdir_problem`)."""
    from kprof.build.toolchain import tmpdir_problem

    if (problem := tmpdir_problem()) is not None:
        raise UsageError(problem)


def _cached(spec: KernelSpec, arch: str, cubin: Path, version: str) -> BuildResult | None:
    """The cache's entry for ``cubin`` where it is whole, else None (rebuilt): its record's checksum
    holds and the cubin is the one it recorded (an empty or damaged file, or one not a regular file
    of a cubin's size, such as a link to a 7 GB file, is rebuilt and never read whole)."""
    meta = cubin.with_suffix(".json")
    if not (cubin.is_file() and meta.is_file()):
        return None
    try:
        info = inputs.read_json(meta, "cache entry", limit=MAX_META_BYTES)
        if info.get("digest") != _entry_digest(info):
            return None  # edited, damaged or from an older kprof: rebuilt, never trusted
        usage = {k: _usage(v) for k, v in info["usage"].items()}
        held = inputs.read_bytes(cubin, "cached cubin", limit=MAX_CUBIN_BYTES)
        if info["sha256"] == hashlib.sha256(held).hexdigest():
            return BuildResult(spec.name, cubin, arch, usage, True, log=info.get("log", ""),
                               argv=tuple(info["argv"]),
                               compiler=version, symbols=_symbols(spec, usage))
    except (UsageError, BuildError, KeyError, TypeError, AttributeError, OSError):
        pass  # a damaged cache entry is rebuilt (unreadable, oversized, not JSON, of another shape)
    return None


def _entry_digest(info: Mapping[str, object]) -> str:
    """A cache entry's checksum over what it records (the resources, the log, the argv, the cubin's
    digest): an entry edited or cut short reads as damaged, so a register count of 0 written into
    one is rebuilt, not shown."""
    body = {k: info.get(k) for k in ("usage", "log", "argv", "sha256")}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _symbols(spec: KernelSpec, usage: Mapping[str, ResourceUsage]) -> dict[str, str]:
    """Each of the spec's entries -> the symbol of the kernel ptxas compiled for it (an ``extern
    "C"`` name, a C++ kernel's mangled one, a template's instantiation), or the one line naming the
    entry it lacks."""
    out = {}
    for entry in spec.entries:
        symbol = entries.resolve(entry, usage, dict(spec.defines))
        if symbol is None:
            raise BuildError(f"{spec.source.name} has no kernel '{inputs.one_line(entry)[:200]}' "
                             f"(its kernels: {inputs.one_line(entries.listing(usage))[:400]}); set "
                             "'entry:' in the spec to one of them as the source writes it (a "
                             "template with its arguments: name<float, 256>)", "")
        out[entry] = symbol
    return out


def _ptx_path(folder: Path, spec: KernelSpec, target: str, key: str) -> Path:
    return folder / f"{spec.name[:64]}-{target}-{key}.ptx"


def ptx(spec: KernelSpec, arch: str | None = None, *, built: BuildResult | None = None,
        timeout: float = 300) -> str | None:
    """The PTX of ``spec``'s source for ``arch``, with ``-lineinfo``'s ``.loc`` lines: what
    :mod:`kprof.diagnosis.ptxscan` reads to name source lines without counters. Cached beside the
    cubin. None where it cannot be had: a Python operation, or NVRTC as the compiler (its child
    builds cubins only: also when ``built``, the spec's cubin, came from NVRTC); a compile error
    raises as
    :func:`build` does."""
    arch = check_arch(arch or detect_arch())
    target = spec.target_arch(arch)
    if spec.python or (built is not None and built.compiler.lower().startswith("nvrtc")):
        return None
    compiler = compiler_for(target)
    if compiler.kind != "nvcc":
        return None
    spec = _instantiating(spec)  # the same source as the cubin's, so the same key
    sources = cusource.local_sources(spec.source)
    key = _cache_key(spec, compiler, target, tuple(dict(spec.defines).items()), sources)
    folder = cache_dir()
    out = _ptx_path(folder, spec, target, key)
    if out.is_file():
        return out.read_text(errors="replace")
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{spec.name[:64]}-", suffix=".ptx", dir=folder)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        argv = build_argv(compiler.program, spec.source, tmp, target,
                          tuple(dict(spec.defines).items()), spec.nvcc_flags, kind="ptx")
        _shell_safe_argv(argv)
        with _compiler_scratch(compiler) as env:
            done = proc.run(argv, timeout=timeout, env=env)
        if done.timed_out or done.returncode != 0:
            raise BuildError(f"{compiler.version} failed to compile {spec.source} to PTX for "
                             f"{target}",
                             (done.stdout + done.stderr).strip())
        os.replace(tmp, out)
        return out.read_text(errors="replace")
    finally:
        with proc.deferred_interrupts():
            tmp.unlink(missing_ok=True)


MAX_CUBIN_BYTES = 256 * 1024 * 1024  # one cached cubin; the largest shipped one is under 1 MB


def _usage(raw: object) -> ResourceUsage:
    """A cache entry's usage of one kernel, every field a whole number in ptxas's range, or
    TypeError (the entry is then rebuilt): a damaged entry never prints "True registers per
    thread"."""
    if not isinstance(raw, dict) or set(raw) - set(ResourceUsage.__dataclass_fields__):
        raise TypeError("not a usage record")
    for key, value in raw.items():
        top = 255 if key == "registers" else 1 << 40
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
            raise TypeError(f"{key}: {value!r}")
    return ResourceUsage(**raw)


def _cache_key(spec: KernelSpec, compiler: Compiler, arch: str,
               defines: tuple[tuple[str, str], ...], sources: list[tuple[Path, bytes]]) -> str:
    """What names a build in the cache: the compiler, its arguments, the source and its local
    headers."""
    key_argv = build_argv(compiler.kind, spec.source, Path("out.cubin"), arch, defines,
                          spec.nvcc_flags)
    digest = hashlib.sha256()
    digest.update(compiler.key.encode())
    digest.update("\0".join(key_argv).encode("utf-8", "surrogateescape"))
    for path, data in sources:
        digest.update(os.fsencode(str(path)) + b"\0" + data)
    return digest.hexdigest()[:20]


def _shaken_spec(spec: KernelSpec, folder: Path) -> KernelSpec:
    """The spec of ``spec``'s warp-delay build, its source written once into ``folder`` (named by
    the original's cache key, so an edit of the source or a header makes a new one)."""
    path = folder / spec.source.name
    if not path.is_file():
        text = inputs.read_text(spec.source, "the kernel's source", limit=cusource.MAX_SOURCE_BYTES)
        out = shake.shaken(text, str(spec.source))
        if out is None:
            raise BuildError(f"{spec.source.name} has no kernel body kprof can put its warp delays "
                             "in")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise outputs.write_error(folder, exc) from None
        outputs.replace_file(path, out)
    return replace(spec, name=f"{spec.name[:56]}{shake.SUFFIX}", source=path,
                   nvcc_flags=(*spec.nvcc_flags, f"-I{spec.source.parent}"))


