"""Where kernels and sanitizer cases live, and how a name on the command line becomes a spec.

A name is looked up in the project's ``kernels/`` and ``sanitizer_cases/`` folders and in any
folder listed in ``KPROF_PATH`` (separated by ``os.pathsep``); anything that looks like a path
(ends in ``.yaml``/``.yml`` or exists on disk) is loaded as a spec file directly, so a user's
own kernel anywhere on disk works the same way as the built-in ones.
"""

from __future__ import annotations

import os
from dataclasses import KW_ONLY, dataclass
from pathlib import Path

from kprof import inputs
from kprof import spec as spec_mod
from kprof.errors import UnknownKernelError, UsageError

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = Path(__file__).resolve().parent.parent


def _shipped(name: str) -> Path:
    """An installed wheel carries the folder inside the package (kprof/kernels); a source checkout
    (and an editable install) keeps it at the top of the repository."""
    inside = PACKAGE / name
    return inside if inside.is_dir() else ROOT / name


KERNELS_DIR = _shipped("kernels")
CASES_DIR = _shipped("sanitizer_cases")
PERF_DIR = _shipped("perf_cases")
BENCH_CASES_DIR = _shipped("bench_cases")  # the cheat corpus of kprof bench (kprof cases --bench)
BUILTIN_DIR = Path(__file__).resolve().parent.parent / "builtin"  # kprof's own kernels, shipped in the package


@dataclass(frozen=True)
class Entry:
    name: str
    path: Path
    group: str  # "kernel", "case" or "user"


def search_dirs() -> list[tuple[Path, str]]:
    dirs = [(KERNELS_DIR, "kernel"), (CASES_DIR, "case"), (PERF_DIR, "perf")]
    for extra in os.environ.get("KPROF_PATH", "").split(os.pathsep):
        if extra.strip():
            dirs.append((inputs.user_path(extra, "KPROF_PATH"), "user"))
    return dirs


def entries() -> list[Entry]:
    """Every spec file in the search folders, by file stem (specs are named after their file)."""
    out: list[Entry] = []
    seen: set[str] = set()
    for folder, group in search_dirs():
        if not folder.is_dir():
            continue
        for path in _spec_files(folder):
            if path.stem not in seen:
                seen.add(path.stem)
                out.append(Entry(path.stem, path, group))
    return out


MAX_FOLDERS = 10_000  # folders walked under one search folder: KPROF_PATH=/ is an error, not a walk of the disk


def _spec_files(folder: Path) -> list[Path]:
    """The ``*.yaml`` files under ``folder``, sorted. A folder that vanishes or cannot be read while it
    is walked (``/proc``) is passed over; more than MAX_FOLDERS folders is one line."""
    found: list[Path] = []
    for count, (top, dirs, files) in enumerate(os.walk(folder)):
        if count >= MAX_FOLDERS:
            raise UsageError(f"KPROF_PATH: {folder} holds more than {MAX_FOLDERS:,} folders; name "
                             "the folder of your specs instead")
        dirs.sort()
        found += [Path(top) / f for f in files if f.endswith(".yaml")]
    return sorted(found)


def find(name: str) -> Path:
    """The spec file for a name or a path."""
    if not (name.endswith((".yaml", ".yml")) or os.sep in name or name.startswith("~")) and \
            len(os.fsencode(name)) > inputs.MAX_NAME_BYTES:  # a name no file can have: a kernel name or nothing
        raise UnknownKernelError(name, [e.name for e in entries()])
    as_path = inputs.user_path(name, "spec")
    try:
        is_file = as_path.is_file()
    except (OSError, ValueError):  # a name longer than the file system allows, or with a NUL
        is_file = False
    if name.endswith((".yaml", ".yml")) or os.sep in name or is_file:
        return as_path  # spec.load() reports a missing file with its name
    known = entries()
    for entry in known:
        if entry.name == name:
            return entry.path
    raise UnknownKernelError(name, [e.name for e in known])


TWIN_SUFFIX = "_fixed"


def load(name: str) -> spec_mod.KernelSpec:
    """A spec by name or path; ``CASE_fixed`` is the fixed twin of sanitizer case ``CASE``."""
    if name.endswith(TWIN_SUFFIX) and not name.endswith((".yaml", ".yml")):
        base = name[: -len(TWIN_SUFFIX)]
        if base in {e.name for e in entries()}:
            spec = spec_mod.load(find(base))
            if spec.twin is not None:
                return spec.twin_spec()
    return spec_mod.load(find(name))


def builtin(name: str) -> spec_mod.KernelSpec:
    """One of kprof's own kernels (``kprof/builtin``): the values scrubber, the bench spin and flush
    kernels, the peak kernels."""
    return spec_mod.load(BUILTIN_DIR / f"{name}.yaml")


def group(group_name: str) -> list[spec_mod.KernelSpec]:
    """Every spec of one group (``kernel``, ``case``, ``perf``, ``user``)."""
    return [spec_mod.load(e.path) for e in entries() if e.group == group_name]


@dataclass(frozen=True)
class Listing:
    """One spec of the catalog as ``kprof list`` shows it: where it is, what it does, and with an architecture
    asked about, why it does not run there (``unsupported``; None where it does or none was asked)."""
    name: str
    group: str
    path: Path
    description: str  # "INVALID SPEC: ..." for a spec that does not load
    requires: tuple[str, str] | None = None  # (arch, why) of the spec's requires:
    _: KW_ONLY  # the rest by name
    unsupported: str | None = None
    arch: str | None = None  # the architecture asked about

    def to_dict(self) -> dict[str, object]:
        row: dict[str, object] = {"name": self.name, "group": self.group, "path": str(self.path),
                                  "description": self.description,
                                  "requires": {"arch": self.requires[0], "why": self.requires[1]}
                                  if self.requires else None, "unsupported": self.unsupported}
        if self.arch:
            row["arch"] = self.arch
        return row


def listing(arch: str | None = None) -> list[Listing]:
    """Every spec of the search folders; a spec that does not load is listed with its error, not raised."""
    from kprof.errors import KprofError

    out = []
    for entry in entries():
        requires, unsupported = None, None
        try:
            loaded = spec_mod.load(entry.path)
            description = loaded.description
            if (req := loaded.requires) is not None:
                requires = (req.arch, req.why)
                if arch and loaded.unsupported_on(arch):
                    unsupported = f"needs {req.arch}: {req.why}"
        except KprofError as exc:  # listed with its error, never the end of the list
            description = f"INVALID SPEC: {exc}"
        out.append(Listing(entry.name, entry.group, entry.path, description, requires,
                           unsupported=unsupported, arch=arch))
    return out
