"""Old import paths that keep working: the modules of the 0.1.0 layout (``kprof.bench``, ``kprof.cli``, ...)
moved into the stage folders (``kprof.measure.bench``, ``kprof.commands.cli``). Importing an old path gives
the module at its new one, with a :class:`~kprof.errors.KprofDeprecationWarning` naming it. Installed by
``import kprof`` (a finder on ``sys.meta_path`` that answers only for the names below); nothing else is
imported until an old name is asked for.

The public surface is ``kprof`` itself (:data:`kprof.__all__`): the API functions and the types they
return; module paths are the layout, and may move again.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

# old path -> new path: every module the stage folders took in, and the tools stage's modules from before its
# rooms. Not here: the old names that are in use again (kprof.build, kprof.launch, kprof.commands and
# kprof.spec are folders now) and kprof.sanitize and kprof.profile, the API's functions since 0.1.0 (their
# modules were compute_sanitizer and profiling by then).
MOVED = {
    "kprof.addr2line": "kprof.tools.programs.addr2line", "kprof.allocators": "kprof.tools.programs.allocators",
    "kprof.api": "kprof.commands.api", "kprof.baseline": "kprof.spec.baseline", "kprof.bench": "kprof.measure.bench",
    "kprof.benchcases": "kprof.corpus.benchcases", "kprof.cases": "kprof.corpus.cases",
    "kprof.catalog": "kprof.spec.catalog", "kprof.ceilings": "kprof.measure.ceilings",
    "kprof.childresult": "kprof.launch.childresult", "kprof.cli": "kprof.commands.cli",
    "kprof.commands.doctor": "kprof.tools.machine.doctor",
    "kprof.compute_sanitizer": "kprof.tools.sanitizers.compute_sanitizer",
    "kprof.coverage": "kprof.tools.programs.coverage", "kprof.cublas": "kprof.child.cublas",
    "kprof.cupti_timer": "kprof.child.cupti_timer",
    "kprof.device": "kprof.child.device", "kprof.doctor": "kprof.tools.machine.doctor",
    "kprof.embedded": "kprof.tools.sanitizers.embedded", "kprof.exitcode": "kprof.tools.programs.exitcode",
    "kprof.framework": "kprof.child.framework", "kprof.history": "kprof.results.history",
    "kprof.hostdata": "kprof.child.hostdata", "kprof.hostframes": "kprof.tools.programs.hostframes",
    "kprof.job": "kprof.launch.job", "kprof.launchcount": "kprof.tools.programs.launchcount",
    "kprof.launchlog": "kprof.tools.programs.launchlog", "kprof.mutants": "kprof.corpus.mutants",
    "kprof.ncu": "kprof.tools.nsight.ncu", "kprof.nvrtc": "kprof.build.nvrtc",
    "kprof.occupancy": "kprof.build.occupancy", "kprof.options": "kprof.commands.options",
    "kprof.pipeline": "kprof.commands.pipeline", "kprof.plot": "kprof.results.plot",
    "kprof.profiling": "kprof.measure.profiling", "kprof.pyref": "kprof.spec.pyref",
    "kprof.pytest_child": "kprof.tools.suites.pytest_child", "kprof.reference": "kprof.spec.reference",
    "kprof.render": "kprof.results.render", "kprof.results.findings": "kprof.findings",
    "kprof.runner": "kprof.child.runner", "kprof.safeexpr": "kprof.spec.safeexpr",
    "kprof.scaffold": "kprof.commands.scaffold", "kprof.sizeexpr": "kprof.spec.sizeexpr",
    "kprof.suite": "kprof.tools.suites.suite", "kprof.sweep": "kprof.spec.sweep",
    "kprof.timing": "kprof.child.timing", "kprof.toolrun": "kprof.tools.sanitizers.toolrun",
    "kprof.tools.addr2line": "kprof.tools.programs.addr2line",
    "kprof.tools.allocators": "kprof.tools.programs.allocators",
    "kprof.tools.checker": "kprof.tools.sanitizers.checker",
    "kprof.tools.checkers": "kprof.tools.sanitizers.checkers",
    "kprof.tools.compute_sanitizer": "kprof.tools.sanitizers.compute_sanitizer",
    "kprof.tools.copies": "kprof.tools.sanitizers.copies", "kprof.tools.coverage": "kprof.tools.programs.coverage",
    "kprof.tools.programs.copies": "kprof.tools.sanitizers.copies",
    "kprof.tools.sanitizers.coverage": "kprof.tools.programs.coverage",
    "kprof.tools.sanitizers.demangle": "kprof.demangle",
    "kprof.tools.cupti_timer": "kprof.child.cupti_timer", "kprof.tools.demangle": "kprof.demangle",
    "kprof.tools.doctor": "kprof.tools.machine.doctor", "kprof.tools.embedded": "kprof.tools.sanitizers.embedded",
    "kprof.tools.exitcode": "kprof.tools.programs.exitcode",
    "kprof.tools.hostframes": "kprof.tools.programs.hostframes",
    "kprof.tools.kernelpolicy": "kprof.tools.sanitizers.kernelpolicy",
    "kprof.tools.launchcount": "kprof.tools.programs.launchcount",
    "kprof.tools.launchlog": "kprof.tools.programs.launchlog",
    "kprof.tools.launchsites": "kprof.tools.programs.launchsites", "kprof.tools.ncu": "kprof.tools.nsight.ncu",
    "kprof.tools.pytest_child": "kprof.tools.suites.pytest_child", "kprof.tools.ranks": "kprof.tools.programs.ranks",
    "kprof.tools.suite": "kprof.tools.suites.suite", "kprof.tools.suiteevents": "kprof.tools.suites.suiteevents",
    "kprof.tools.tallylog": "kprof.tools.programs.tallylog", "kprof.tools.toolrun": "kprof.tools.sanitizers.toolrun",
    "kprof.tools.values": "kprof.tools.sanitizers.values", "kprof.values": "kprof.tools.sanitizers.values",
    "kprof.verify": "kprof.child.verify", "kprof.workspace": "kprof.child.workspace",
}  # fmt: skip


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.new)

    def exec_module(self, module: ModuleType) -> None:
        pass


class Finder(importlib.abc.MetaPathFinder):
    """Answers an old path with the module at its new one, warning once per path."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        from kprof.errors import warn_moved

        warn_moved(fullname, new, hint="import it from there (or use the API from kprof itself: kprof.run, "
                   "kprof.sanitize, ...)")
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(f, Finder) for f in sys.meta_path):
        sys.meta_path.append(Finder())
