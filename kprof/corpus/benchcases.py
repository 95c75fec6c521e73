"""The cheat corpus of ``kprof bench`` (``bench_cases/``, ``kprof cases --bench``), as the
seeded-bug corpus is the sanitizers': an honest operation and cheating twins of it, each playing one
exploit that benchmark leaderboards have seen, each with the integrity flags
(:mod:`kprof.child.integrity`) of which one must be raised. All are timed in one ``kprof bench``
run, the cheats as the honest operation's baselines. Loading and judging are pure; the run is
:func:`kprof.commands.corpora.run_bench_cases`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kprof import inputs
from kprof.child import integrity
from kprof.errors import SpecError
from kprof.spec.loader import YAML_VALUE_ERRORS, value_problem

if TYPE_CHECKING:
    from kprof.measure.points import PointResult

MAX_BYTES = 64 * 1024

# The flags a cheat may be caught by (docs/bench.md), and "verdict": it failed its verdict.
CATCHES = ("no-kernel", "varying-kernels", "other-stream", "outside-window", "timer",
           "changed-input", "stale-output", "ignores-input", "extra-work", "other-dtype", "verdict")


@dataclass(frozen=True)
class Cheat:
    name: str  # a baseline of the corpus's spec
    exploit: str
    catch: tuple[str, ...]  # any one of these caught it


@dataclass(frozen=True)
class Corpus:
    spec: Path
    cheats: tuple[Cheat, ...]


@dataclass(frozen=True)
class CheatResult:
    cheat: Cheat
    flags: tuple[str, ...]  # the integrity flags its timing raised ("kind: ...")
    failed_verdict: str = ""  # the warning, when the cheat failed its verdict and was not timed

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(integrity.kinds(self.flags)) + (("verdict",) if self.failed_verdict else ())

    @property
    def caught(self) -> bool:
        return any(k in self.cheat.catch for k in self.kinds)

    def to_dict(self) -> dict[str, object]:
        return {"name": self.cheat.name, "exploit": self.cheat.exploit,
                "catch": list(self.cheat.catch),
                "flags": list(self.flags), "failed_verdict": self.failed_verdict,
                "caught": self.caught}


def load(folder: Path) -> Corpus:
    """``folder/cases.yaml``: the spec and each cheat, every field checked (one-line errors)."""
    import yaml

    path = folder / "cases.yaml"
    try:
        data = yaml.safe_load(inputs.read_text(path, "the cheat corpus", limit=MAX_BYTES))
    except yaml.YAMLError as exc:
        raise SpecError(str(path), "", f"not valid YAML: {str(exc).splitlines()[0]}") from None
    except YAML_VALUE_ERRORS as exc:
        raise SpecError(str(path), "", f"not valid YAML: {value_problem(exc)}") from None
    if not isinstance(data, dict) or not isinstance(data.get("spec"), str) or not isinstance(data.get("cheats"), list):
        raise SpecError(str(path), "",
                        "needs 'spec: FILE.yaml' and 'cheats: [{name, exploit, catch}, ...]'")
    cheats = []
    for i, c in enumerate(data["cheats"]):
        where = f"cheats[{i}]"
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not isinstance(c.get("exploit"), str):
            raise SpecError(str(path), where, "needs a name and an exploit (text)")
        catch = c.get("catch")
        if not isinstance(catch, list) or not catch or any(k not in CATCHES for k in catch):
            raise SpecError(str(path), f"{where}.catch", f"list flags among {', '.join(CATCHES)}")
        cheats.append(Cheat(c["name"], c["exploit"], tuple(catch)))
    return Corpus(folder / data["spec"], tuple(cheats))


def judge(corpus: Corpus, point: PointResult) -> tuple[tuple[str, ...], list[CheatResult]]:
    """(the honest operation's flags, each cheat's result) from the bench point that timed them all
    (``kprof.measure.points.PointResult``: the cheats are its baselines, by name)."""
    by_name = {b.baseline_name: b for b in point.baselines}
    results = []
    for cheat in corpus.cheats:
        b = by_name.get(cheat.name)
        failed = next((w for w in point.warnings if w.startswith(f"baseline {cheat.name} failed")),
                      "")
        results.append(CheatResult(cheat, tuple(b.baseline_integrity) if b else (), failed))
    return tuple(point.integrity), results
