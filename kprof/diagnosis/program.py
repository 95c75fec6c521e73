"""``kprof profile -- CMD``: where to spend the week. The profiled launches grouped by kernel,
ranked by their share of the profiled GPU time, each with its limiter (the roofline level nearest
its peak), its headroom to that roof, the whole program's gain if that kernel reached its roof
(Amdahl), and the user's Python lines that launched it (:mod:`kprof.tools.programs.launchsites`,
matched to ncu's kernel names here).

The share's denominator is the GPU time of the launches ncu profiled
(``--launch-skip``/``--launch-count`` choose them), not the program's wall time; the headroom is 1 /
the busiest unit's share of its peak (a kernel at its roof has some unit near 100%), an estimate.
Pure: profiles in, a ranking out.
"""

from __future__ import annotations

import re
from dataclasses import KW_ONLY, asdict, dataclass
from functools import lru_cache

from kprof import demangle
from kprof.diagnosis.facts import LATENCY_BELOW, profile_units
from kprof.measure.kernelprofile import KernelProfile
from kprof.tools.programs.launchsites import LaunchSite, Sites

MAX_HEADROOM = 100.0  # a unit below 1% busy says little about its roof: the headroom is capped here


@dataclass(frozen=True)
class Ranked:
    kernel: str
    launches: int
    seconds: float  # their GPU time, summed
    share: float  # of the profiled launches' GPU time
    limiter: str
    _: KW_ONLY  # the rest by name
    busiest: float | None  # the limiter's share of its peak
    headroom: float | None  # 1 / busiest, at most MAX_HEADROOM (an estimate)
    # the program's speedup (over the profiled launches) if this kernel reached its roof
    program_gain: float | None
    # the user's lines that launched it (path:line (function)), first launched first
    sites: tuple[str, ...] = ()
    # how the launches were matched to this kernel: "name", "function name" (a guess), ""
    sites_by: str = ""
    # the ranks of a multi-process job whose profiled launches these are
    ranks: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class ProgramProfile:
    """``kprof profile -- CMD``: ncu's report of each profiled launch, the ranking, and the launch
    sites."""
    profiles: list[KernelProfile]
    ranking: list[Ranked]
    sites: Sites


def profiled_names(profiles: list[KernelProfile]) -> tuple[str, ...]:
    """The bare function names of the profiled kernels (what the sites run waits to have seen)."""
    return tuple(sorted({demangle.base_name(_base_name(p.kernel)) for p in profiles} - {""}))


def _base_name(label: str) -> str:
    """``ampere_sgemm_128x64_nn#12`` -> ``ampere_sgemm_128x64_nn``: the kernel, not the launch."""
    return re.sub(r"#\d+$", "", label)


_LAMBDA = re.compile(r"\[lambda\(([^)]*)\)\(instance(\d+)\)\]")  # ncu's [lambda(float)(instance1)]
# the demangler's 2ul, 32u
_LITERAL_SUFFIX = re.compile(r"(?<![\w.])(\d+)(?:ull|ul|ll|u|l)(?![\w])")
_ENUM_CAST = re.compile(r"\(\w+\)(-?\d+)")  # the demangler's (SortOrder)0 where ncu writes 0


@lru_cache(maxsize=8192)
def _key(name: str) -> str:
    """A kernel's name as both ncu and the C++ demangler can be brought to write it: no ``void``, no
    parameter list, no namespaces (ncu shortens them: ``at::<unnamed>::`` for the demangler's
    ``at::native::(anonymous namespace)::``), no ``const`` (``const float*`` / ``float const*``),
    lambdas, integer literals, enum casts and bools written one way (``[lambda()(instance3)]`` /
    ``{lambda()#3}``, ``2`` / ``2ul``, ``0`` / ``(SortOrder)0``, ``1`` / ``true``), no spaces;
    template arguments kept."""
    text = demangle.short(demangle.demangle(name), 100_000).replace("(anonymous namespace)", "<unnamed>")
    text = _LAMBDA.sub(r"{lambda(\1)#\2}", text)
    text = re.sub(r"(\w+|<unnamed>)::", "", text)
    text = re.sub(r"\bconst\b", "", text).replace(" ", "")
    text = _ENUM_CAST.sub(r"\1", _LITERAL_SUFFIX.sub(r"\1", text))
    return re.sub(r"(?<![\w])true(?![\w])", "1", re.sub(r"(?<![\w])false(?![\w])", "0", text))


@lru_cache(maxsize=8192)
def _function(name: str) -> str:
    return demangle.base_name(demangle.demangle(name))


def match_sites(kernel: str, sites: Sites) -> tuple[tuple[LaunchSite, ...], str]:
    """The launch sites of the kernel ncu named ``kernel``: the launches of the kernel of the same
    name (the demangled name, template arguments and all), else of every kernel with the same bare
    function name (two instantiations are then not told apart: said as "function name"). Pure."""
    want = _key(kernel)
    exact = [s for name, ss in sites.by_kernel.items() if _key(name) == want for s in ss]
    if exact:
        return tuple(exact), "name"
    base = _function(kernel)
    loose = [s for name, ss in sites.by_kernel.items() if _function(name) == base for s in ss]
    return tuple(loose), "function name" if loose else ""


def _site_texts(found: tuple[LaunchSite, ...]) -> tuple[str, ...]:
    ordered = sorted(found, key=lambda s: (s.path is None, s.first_launch))
    return tuple(dict.fromkeys(s.where() for s in ordered))


def rank(profiles: list[KernelProfile], sites: Sites | None = None) -> list[Ranked]:
    """The kernels of the profiled launches, most GPU time first, each with its launch sites where
    ``sites`` has them."""
    groups: dict[str, list[KernelProfile]] = {}
    for p in profiles:
        groups.setdefault(_base_name(p.kernel), []).append(p)
    total = sum(p.duration_s or 0.0 for p in profiles)
    out = []
    for name, ps in groups.items():
        secs = sum(p.duration_s or 0.0 for p in ps)
        weights = [(p.duration_s or 0.0) for p in ps]
        merged: dict[str, float] = {}
        for p, w in zip(ps, weights):
            for unit, v in profile_units(p).items():
                merged[unit] = merged.get(unit, 0.0) + v * (w / secs if secs else 1 / len(ps))
        if merged:
            unit, busy = max(merged.items(), key=lambda kv: kv[1])
            head = min(MAX_HEADROOM, 1.0 / busy) if busy > 0 else MAX_HEADROOM
            limiter = unit if busy >= LATENCY_BELOW else f"latency (busiest: {unit} {busy:.0%})"
        else:
            busy, head, limiter = None, None, "unknown (no counters)"
        share = secs / total if total else 0.0
        gain = 1.0 / ((1 - share) + share / head) if head else None
        found, by = match_sites(name, sites) if sites is not None else ((), "")
        job = tuple(sorted({p.rank for p in ps if p.rank is not None}))
        out.append(Ranked(name, len(ps), secs, share, limiter, busiest=busy, headroom=head,
                          program_gain=gain,
                   sites=_site_texts(found), sites_by=by, ranks=job))
    return sorted(out, key=lambda r: -r.seconds)
