"""What a benchmark point is timed against (:class:`Baseline`): one typed value, parsed once here
from ``--baseline`` or a spec's ``baseline:`` (:func:`of_option`: names spelled as the spec's
``baselines:``, another spec loaded and checked, a Python callable read without running it),
labelled once for reports.

Three kinds: a library routine on the kernel's own buffers (``cublas_sgemm``), another kernel spec
at the same sizes (an unfused version), or a Python callable on the kernel's own buffers
(``torch.compile`` from the spec's ``baselines:``, ``FILE.py:FUNCTION``). The JSON of ``kprof
bench`` and the history keep the string :meth:`Baseline.stored` gives (the routine, the spec's name,
the resolved Python reference), as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from kprof.errors import KprofError, UsageError
from kprof.spec import BASELINES, CUBLAS_SGEMM, pyref

if TYPE_CHECKING:
    from kprof.spec import KernelSpec

Kind = Literal["library", "spec", "python"]
KINDS: tuple[Kind, ...] = ("library", "spec", "python")


@dataclass(frozen=True)
class Baseline:
    kind: Kind
    name: str  # the routine, the spec's name, or the Python reference's stored form (pyref)
    # how reports name it: the name it was asked by (torch.compile), else the routine, spec,
    # FILE.py:FN
    label: str
    # kind "spec": the spec, loaded and checked
    spec: KernelSpec | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"baseline kind {self.kind!r}: one of {', '.join(KINDS)}")

    @property
    def ref(self) -> pyref.Ref:
        """A Python baseline's reference (file or module, function)."""
        if self.kind != "python":
            raise ValueError(f"baseline {self.label} is a {self.kind}, not a Python callable")
        return pyref.Ref.from_stored(self.name)

    def stored(self) -> str:
        """What ``kprof bench --json`` and the history say the baseline was."""
        return self.name


def library(name: str, label: str | None = None) -> Baseline:
    if name not in BASELINES:
        raise ValueError(f"{name!r} is not a library routine ({', '.join(BASELINES)})")
    return Baseline("library", name, label or name)


def python(stored: str, label: str | None = None) -> Baseline:
    """A Python callable, from its stored reference (``pyref``: resolved, checked at load)."""
    return Baseline("python", stored, label or pyref.Ref.from_stored(stored).label())


def of_spec(spec: KernelSpec, label: str | None = None) -> Baseline:
    return Baseline("spec", spec.name, label or spec.name, spec)


def kind_of(text: str) -> Kind:
    """The kind a resolved baseline string names: a routine, a stored Python reference, else a
    spec."""
    if text in BASELINES:
        return "library"
    return "python" if pyref.is_stored(text) else "spec"


def label_of(stored: str | None, asked: str | None = None) -> str:
    """How a report names a baseline kept as its stored string (a point's JSON): the name it was
    asked by, else the Python reference's FILE.py:FUNCTION, the routine or the spec; "-" for
    none."""
    if asked:
        return asked
    if stored and kind_of(stored) == "python":
        return pyref.Ref.from_stored(stored).label()
    return stored or "-"


def of_option(spec: KernelSpec, option: str, find: Callable[[str], KernelSpec]) -> list[Baseline]:
    """``--baseline`` (``auto``, ``none``, names joined by commas: the spec's own, ``cublas_sgemm``,
    another spec, ``FILE.py:FUNCTION``) as typed baselines, parsed once: every name checked, Python
    callables read without running them, other specs found (``find``: the catalog's lookup, which
    the command layer owns) and checked against ``spec``; duplicates dropped."""
    out: dict[str, Baseline] = {}
    for asked in (o.strip() for o in option.split(",") if o.strip()):
        text = python_ref(spec, asked_for(spec, asked))
        if not text or text in out:
            continue
        label = named(spec, asked)
        kind = kind_of(text)
        if kind == "library":
            out[text] = library(text, label)
        elif kind == "python":
            out[text] = python(text, label)
        else:
            out[text] = of_spec(_other_spec(spec, text, option, find), label)
    return list(out.values())


def asked_for(spec: KernelSpec, option: str) -> str | None:
    """The baseline one word of ``--baseline`` names: the spec's (``auto``), none, or the one
    named."""
    name = named(spec, option)
    found = spec.baseline if option == "auto" else None if option == "none" else \
        dict(spec.baselines)[name] if name else option
    if found == CUBLAS_SGEMM and spec.baseline != CUBLAS_SGEMM:
        raise UsageError(f"{spec.name}: --baseline cublas_sgemm needs a matmul spec (buffers A, B, "
                         "C; sizes M, N, K)")
    return found


def named(spec: KernelSpec, option: str) -> str | None:
    """The name in the spec's ``baselines:`` that ``option`` spells (torch_compile: torch.compile),
    or None."""
    return next((n for n, _ in spec.baselines if _spelling(n) == _spelling(option)), None)


def _spelling(name: str) -> str:
    """A baseline name with '_' and '-' read as '.': torch_compile finds torch.compile."""
    return name.replace("_", ".").replace("-", ".")


def check_spec(spec: KernelSpec, other: KernelSpec) -> None:
    """A baseline spec takes the kernel's sizes."""
    missing = [k for k in spec.size_names if k not in other.size_names]
    if missing:
        raise UsageError(f"{spec.name}: baseline {other.name} has no size {missing[0]!r}; a "
                         f"baseline spec takes the kernel's sizes ({', '.join(spec.size_names)})")


def _other_spec(spec: KernelSpec, name: str, option: str,
                find: Callable[[str], KernelSpec]) -> KernelSpec:
    """The spec a baseline names, checked against ``spec``."""
    where = f"--baseline {name!r}" if name == option else f"{spec.name}: baseline {name!r}"
    try:
        other = find(name)
    except KprofError:
        own = f", {spec.name}'s own ({', '.join(n for n, _ in spec.baselines)})" if spec.baselines else ""
        raise UsageError(f"{where}: not a kernel spec kprof can find; use auto, none, "
                         f"{', '.join(BASELINES)}{own}, a name from kprof list, or a Python "
                         "callable (FILE.py:FUNCTION)") from None
    check_spec(spec, other)
    return other


def python_ref(spec: KernelSpec, text: str | None) -> str | None:
    """``--baseline FILE.py:FUNCTION`` (relative to here) or ``package.module:FUNCTION``, read
    without running it, as the spec's own ``baseline:`` is at load; anything else unchanged."""
    if not text or (not pyref.is_stored(text) and not pyref.looks_like(text)):
        return text
    stored = text
    if not pyref.is_stored(text):
        from kprof.spec import input_names

        known = input_names(spec.args) | set(spec.size_names) | set(spec.numeric_defines())
        try:
            stored = pyref.check(text, Path.cwd(), known).stored()
        except ValueError as exc:
            raise UsageError(f"--baseline {text}: {exc}") from None
    import importlib.util

    ref = pyref.Ref.from_stored(stored)
    shipped = Path(__file__).resolve().parent.parent / "baselines" / "torch_ops.py"
    if ref.path == shipped and importlib.util.find_spec("torch") is None:
        raise UsageError(f"{spec.name}: baseline torch_ops.py:{ref.func} needs PyTorch, which is "
                         "not installed here (pip install 'kprof[torch]')")
    return stored
