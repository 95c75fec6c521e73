"""``kprof new NAME [--dir DIR] [--like KERNEL]``: a kernel and its spec to start from.

Writes ``NAME.cu`` and ``NAME.yaml``: kprof's template (y = alpha * x + y, with a comment on every
spec field), or a copy of a shipped kernel renamed to NAME. Both build and verify as written, so
the first ``kprof run NAME.yaml`` passes and every later change is the user's.
"""

from __future__ import annotations

import re
from pathlib import Path

from kprof import catalog
from kprof.errors import UsageError

TEMPLATES = Path(__file__).resolve().parent / "templates"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def new(name: str, folder: Path, like: str | None = None) -> tuple[Path, Path]:
    """Write NAME.cu and NAME.yaml into ``folder``; never overwrite."""
    if not _IDENT.match(name) or len(name) > 100:
        raise UsageError(f"kprof new {name[:60]!r}: a kernel name is an identifier (letters, digits, _), "
                         "e.g. kprof new my_scale")
    cu, yaml_path = folder / f"{name}.cu", folder / f"{name}.yaml"
    for path in (cu, yaml_path):
        if path.exists():
            raise UsageError(f"{path} exists: pick another name or --dir, or remove it")
    if like is None:
        source = (TEMPLATES / "kernel.cu").read_text().replace("NAME", name)
        spec = (TEMPLATES / "kernel.yaml").read_text().replace("NAME", name)
    else:
        source, spec = _renamed(like, name)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        cu.write_text(source)
        yaml_path.write_text(spec)
    except OSError as exc:
        raise UsageError(f"kprof new: cannot write into {folder}: {exc.strerror or exc}") from None
    return cu, yaml_path


def _renamed(like: str, name: str) -> tuple[str, str]:
    """A shipped kernel's source and spec with its kernel renamed to ``name``."""
    spec = catalog.load(like)
    if spec.twin is not None or spec.expect is not None:
        raise UsageError(f"--like {like}: a sanitizer or performance case; start from a kernel of `kprof list`")
    source, text = spec.source.read_text(), spec.path.read_text()
    if not spec.steps:  # one kernel: rename it, in the source and in the spec's entry
        source = re.sub(rf"\b{re.escape(spec.entry)}\b", name, source)
        text = re.sub(rf"^entry:\s*{re.escape(spec.entry)}\s*$", f"entry: {name}", text, flags=re.M)
    text = re.sub(r"^name:.*$", f"name: {name}", text, flags=re.M)
    text = re.sub(r"^source:.*$", f"source: {name}.cu", text, flags=re.M)
    if spec.baseline and spec.baseline not in ("cublas_sgemm",):
        text = re.sub(r"^baseline:.*$", f"baseline: {spec.baseline}  # the shipped kernel it was compared with",
                      text, flags=re.M)
    return source, text
