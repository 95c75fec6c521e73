"""The diagnosis's typed records: a cause with its evidence, line, change and gain; the whole
verdict.

A :class:`Gain` is an estimate with its basis (what it was computed from) until a try measures it;
``measured`` then holds the measured speedup, from the same run as the original's time. Rendering
(text, JSON, SARIF-like records) lives here so every caller prints the same thing.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from kprof.diagnosis.lines import Hot

# an estimated gain below this is no advice: "nothing to gain here" is said, not a cause
MIN_GAIN = 1.1


@dataclass(frozen=True)
class Line:
    file: str
    line: int
    why: str = ""  # what is on it: "the global atomic", "declares tile[32][32]"

    def show(self) -> str:
        return f"{Path(self.file).name}:{self.line}" if self.line else Path(self.file).name

    @property
    def measured(self) -> bool:
        """Whether the line was placed (a file and a line), not "line not measured"."""
        return bool(self.file and self.line)


@dataclass(frozen=True)
class Gain:
    estimate: float | None  # speedup of the kernel if the change is made; None: kprof cannot say
    basis: str  # how the estimate was made, or why there is none
    measured: float | None = None  # a try's measured speedup (same run as the original)
    tried: str = ""  # what the try changed: "PER=1"


@dataclass(frozen=True)
class Cause:
    rule: str  # the rule's id: "uncoalesced", "bank-conflicts", ...
    title: str  # one line: what is wrong
    evidence: tuple[tuple[str, str], ...]  # (what, value) pairs the rule read
    change: str  # what to change, one sentence
    gain: Gain
    _: KW_ONLY  # the rest by name
    line: Line | None = None
    also: tuple[Line, ...] = ()  # other lines the change touches (a declaration to pad, a launch)

    @property
    def rank_key(self) -> float:
        g = self.gain.measured or self.gain.estimate
        return g if g is not None else 1.0


@dataclass(frozen=True)
class Try:
    """One variant of the spec's defines, verified and timed in the same run as the original."""
    params: dict[str, str]
    status: Literal["ok", "failed-verification", "error"]
    seconds: float | None
    gain: float | None  # the original's time / this variant's
    message: str = ""

    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.params.items())


@dataclass(frozen=True)
class Diagnosis:
    kernel: str
    mode: Literal["counters", "counter-less"]  # Nsight Compute's counters, or none
    limiter: str  # the unit nearest its roof, or "latency" when none is busy
    units: dict[str, float]  # unit -> busy share of its peak, the roofline's levels kprof could see
    # measured time / time at the roof (the spec's work at kprof peak's ceilings)
    headroom: float | None
    _: KW_ONLY  # the rest by name
    seconds: float | None
    causes: list[Cause]
    cannot_see: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # the tries of the first cause, in the order timed
    tries: list[Try] = field(default_factory=list)
    # what the rules read beyond the build: replayable
    inputs: dict[str, object] = field(default_factory=dict)
    hot: list[Hot] = field(default_factory=list)  # the hottest source lines measured

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def first(self) -> Cause | None:
        return self.causes[0] if self.causes else None


def _pct(x: float) -> str:
    return f"{x:.0%}"


def render(d: Diagnosis) -> str:
    """The diagnosis as the terminal shows it."""
    out = [f"diagnosis of {d.kernel} ({d.mode}):"]
    units = ", ".join(f"{u} {_pct(v)}"
                      for u, v in sorted(d.units.items(), key=lambda kv: -kv[1])[:5])
    head = f"  limiter: {d.limiter}" + (f" ({units})" if units else "")
    if d.headroom is not None:
        head += f"; {d.headroom:.2f}x from its roof"
    out.append(head)
    if not d.causes:
        among = " among those kprof can see" if d.cannot_see else ""
        out.append(f"  no cause with a gain of 10% or more found{among}")
    for k, c in enumerate(d.causes, 1):
        where = f" at {c.line.show()}" if c.line and c.line.file else ""
        out.append(f"  {k}. {c.title}{where}")
        if c.line and c.line.why:
            out.append(f"     line: {c.line.why}")
        for extra in c.also:
            out.append(f"     also {extra.show()}: {extra.why}")
        out.append("     evidence: " + "; ".join(f"{a} {b}" for a, b in c.evidence))
        out.append(f"     change: {c.change}")
        g = c.gain
        if g.measured is not None:
            out.append(f"     gain: {g.measured:.2f}x measured ({g.tried}), estimated "
                       + (f"{g.estimate:.2f}x" if g.estimate else "none") + f" from {g.basis}")
        elif g.estimate is not None:
            out.append(f"     gain: {g.estimate:.2f}x estimated from {g.basis} (not measured)")
        else:
            out.append(f"     gain: not estimated ({g.basis})")
    if d.hot:
        out.append("  hot lines (share of the stall samples, top reasons):")
        for h in d.hot:
            reasons = ", ".join(f"{r} {v:.0%}" for r, v in h.reasons)
            text = h.text if len(h.text) <= 60 else h.text[:59] + "…"
            tail = f"  [{reasons}]" if reasons else ""
            out.append(f"    {h.share:4.0%}  {Path(h.file).name}:{h.line}  {text}{tail}")
    for t in d.tries:
        if t.status == "ok" and t.gain and t.seconds:
            out.append(f"  try {t.label()}: verified, {t.seconds * 1e6:.1f} us, {t.gain:.2f}x the "
                       "original (same run)")
        else:
            out.append(f"  try {t.label()}: {t.status}" + (f" ({t.message})" if t.message else ""))
    for what in d.cannot_see:
        out.append(f"  cannot see: {what}")
    for note in d.notes:
        out.append(f"  note: {note}")
    return "\n".join(out)


def sarif_results(d: Diagnosis, root: str | None = None) -> list[dict[str, Any]]:
    """One SARIF result per cause (its rule ``kprof.perf.RULE``, a warning, the change and the gain
    in the message, the line as its location; the lines the change also touches as related
    locations)."""
    from kprof.findings import sarif_location

    results = []
    for c in d.causes:
        g = c.gain
        gain = (f"{g.measured:.2f}x measured ({g.tried})" if g.measured is not None else
                f"{g.estimate:.2f}x estimated" if g.estimate is not None else "gain not estimated")
        result: dict[str, Any] = {"ruleId": f"kprof.perf.{c.rule}", "level": "warning",
                                  "message": {"text": f"{d.kernel}: {c.title}. {c.change} ({gain}; "
                                                      f"{g.basis})"},
                                  "properties": {"kernel": d.kernel, "estimate": g.estimate,
                                                 "measured": g.measured,
                                                 "evidence": dict(c.evidence)}}
        loc = sarif_location(c.line.file, c.line.line, root) if c.line and c.line.file else None
        result["locations"] = [loc] if loc else []
        related = [dict(x, id=k, message={"text": extra.why}) for k, extra in enumerate(c.also, 1)
                   if (x := sarif_location(extra.file, extra.line, root))]
        if related:
            result["relatedLocations"] = related
        results.append(result)
    return results


def to_sarif(diagnoses: list[Diagnosis], tool_version: str,
             root: str | None = None) -> dict[str, object]:
    """SARIF 2.1.0 of ``kprof profile``'s diagnoses: one run, a rule per cause kind, a result per
    cause."""
    results = [r for d in diagnoses for r in sarif_results(d, root)]
    ids = sorted({r["ruleId"] for r in results})
    for r in results:
        r["ruleIndex"] = ids.index(r["ruleId"])
    run: dict[str, object] = {"tool": {"driver": {"name": "kprof", "version": tool_version,
                                               "rules": [{"id": i, "name": i} for i in ids]}}, "results": results}
    if root:
        run["originalUriBaseIds"] = {"SRCROOT": {"uri": Path(root).resolve().as_uri() + "/"}}
    return {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
            "runs": [run]}
