"""What a benchmark point is timed against (:class:`Baseline`): one typed value, parsed once where
``--baseline`` or a spec's ``baseline:`` is read (:func:`kprof.commands.pipeline.baselines_of`), labelled once
for reports. Pure.

Three kinds: a library routine on the kernel's own buffers (``cublas_sgemm``), another kernel spec at
the same sizes (an unfused version), or a Python callable on the kernel's own buffers (``torch.compile``
from the spec's ``baselines:``, ``FILE.py:FUNCTION``). The JSON of ``kprof bench`` and the history keep
the string :meth:`Baseline.stored` gives (the routine, the spec's name, the resolved Python reference),
as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from kprof.spec import BASELINES, pyref

if TYPE_CHECKING:
    from kprof.spec import KernelSpec

Kind = Literal["library", "spec", "python"]
KINDS: tuple[Kind, ...] = ("library", "spec", "python")


@dataclass(frozen=True)
class Baseline:
    kind: Kind
    name: str  # the routine, the spec's name, or the Python reference's stored form (pyref)
    label: str  # how reports name it: the name it was asked by (torch.compile), else the routine, spec, FILE.py:FN
    spec: KernelSpec | None = field(default=None, compare=False)  # kind "spec": the spec, loaded and checked

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
    """The kind a resolved baseline string names: a routine, a stored Python reference, else a spec."""
    if text in BASELINES:
        return "library"
    return "python" if pyref.is_stored(text) else "spec"


def label_of(stored: str | None, asked: str | None = None) -> str:
    """How a report names a baseline kept as its stored string (a point's JSON): the name it was asked by,
    else the Python reference's FILE.py:FUNCTION, the routine or the spec; "-" for none."""
    if asked:
        return asked
    if stored and kind_of(stored) == "python":
        return pyref.Ref.from_stored(stored).label()
    return stored or "-"
