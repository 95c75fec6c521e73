"""The tightest tolerance each shipped spec passes with, measured on a GPU (docs/spec.md,
"Tolerances").

    python scripts/tolerances.py measure OUT.json     # on a GPU: every kernel, perf case and fixed
    twin,
                                                      # at every checked size, its default and
                                                      sanitize sizes
    python scripts/tolerances.py propose OUT.json [--apply]   # anywhere: the rule below, per spec
    python scripts/tolerances.py measure NEW.json --only SPEC... --merge OUT.json   # re-measure
    some

Each run is ``kprof run``'s verdict (kprof.child.verify.compare) with its frontier: for each rtol in
kprof.child.verify.FRONTIER_RTOLS, the smallest atol at which that output passes. The rule, per
float output, over every measured size:
- the smallest rtol, up to RTOL_CAP for its dtype, at which every size passes with atol 0; else
- the dtype's default rtol and the largest atol needed at it; a spec with a reduction size K gets
  ``c * K`` or ``c * sqrt(K)``, whichever fits the sizes more closely, with c the largest needed
  atol / K (or / sqrt(K)) over the sizes;
rounded up to two significant digits. Integer outputs are exact and need no tolerance. A spec whose
source uses atomicAdd runs three times at each size (float atomics add in a different order every
run, and the values detector compares runs with the same tolerance), and its tolerance is
ATOMIC_MARGIN times what those runs needed: an idle GPU runs the blocks in nearly the same order
every time, a busy one does not (on an H200 shared by twelve sanitizer jobs, global_race_fixed's
atomic total moved beyond the 5e-7 its idle runs had needed). A spec with a ``tolerance.scale``
(a matmul's ``abs(A) @ abs(B)``) gets SCALE_MARGIN times what its sizes needed: the error of a sum
relative to the size of its terms grows at most as sqrt(K) for rounding errors of either sign, so
4x holds for a K 16 times the largest checked, while a term added twice or left out (about 1/K of
the scale) still fails by orders of magnitude.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

RTOL_CAP = {"float32": 1e-5, "float64": 1e-7, "float16": 4e-3, "bfloat16": 1.6e-2}
REDUCTION_SIZE = "K"
ATOMIC_MARGIN = 10.0
SCALE_MARGIN = 4.0


def _size_sets(spec: Any) -> list[tuple[str, dict[str, int], tuple[tuple[str, Any], ...]]]:
    """The default and sanitize presets and every checked size (with its fills), each distinct set
    once."""
    sets, seen = [], set()
    for preset, sizes, fills in [("default", {}, ()), ("sanitize", {}, ())] + [("check", dict(c.sizes), c.fills)
                                                                               for c in spec.checks]:
        at = spec.resolve(sizes, preset="sanitize" if preset == "sanitize" else "default")
        key = (tuple(sorted(at.sizes.items())), fills)
        if key not in seen:
            seen.add(key)
            sets.append((preset, sizes, fills))
    return sets


def measure(out: Path, jobs: int, only: list[str], merge: Path | None) -> int:
    from dataclasses import asdict

    from kprof.commands import pipeline
    from kprof.errors import KprofError
    from kprof.launch import launch
    from kprof.launch.job import RunMode
    from kprof.spec import catalog

    specs = catalog.group("kernel") + catalog.group("perf")
    specs += [s.twin_spec() for s in catalog.group("case") if s.twin is not None]
    if only:
        specs = [s for s in specs if s.name in only]

    def one(item: tuple[Any, str, dict[str, int], tuple[tuple[str, Any], ...]]) -> dict[str, Any]:
        spec, preset, sizes, fills = item
        row: dict[str, Any] = {"spec": spec.name, "preset": preset, "sizes": sizes,
                               "fills": {k: str(f) for k, f in fills},
                               "dtypes": {b.name: b.dtype for b in spec.buffers}}
        try:
            prepared = pipeline.prepare(spec, sizes,
                                        preset="sanitize" if preset == "sanitize" else "default",
                                        fills=fills)
            result = launch.run_kernel(prepared.job(RunMode(time=False, frontier=True)),
                                       timeout=600)
            row.update(sizes=prepared.resolved.sizes, ok=result.ok,
                       checks=[asdict(c) for c in result.checks])
        except KprofError as exc:
            row.update(ok=False, error=str(exc))
        print(f"{spec.name} {row['sizes']}: {'ok' if row.get('ok') else row.get('error') or 'FAIL'}", flush=True)
        return row

    # Float atomics add in a different order every run: those specs run three times at each size.
    items = [(spec, preset, sizes, fills) for spec in specs
             for preset, sizes, fills in _size_sets(spec) for _ in range(3 if _atomic(spec) else 1)]
    with ThreadPoolExecutor(jobs) as pool:
        rows = list(pool.map(one, items))
    if merge is not None:  # an earlier measurement, with the specs measured now replaced
        measured = {s.name for s in specs}
        rows = [r for r in json.loads(merge.read_text()) if r["spec"] not in measured] + rows
    out.write_text(json.dumps(rows, indent=1))
    return 0 if all(r.get("ok") is not None and "error" not in r for r in rows) else 1


def _atomic(spec: Any) -> bool:
    return "atomicAdd" in spec.source.read_text()


def _base(name: str) -> str:
    """The shipped spec a measured name belongs to: a case's fixed twin (``NAME_fixed``) is
    NAME's."""
    return name[: -len("_fixed")] if name.endswith("_fixed") else name


def _shipped(name: str) -> Any:
    """The shipped spec ``name`` (a case's ``NAME_fixed``: its twin), or None for a name kprof does
    not ship."""
    from kprof.errors import KprofError
    from kprof.spec import catalog

    base = _base(name)
    try:
        spec = catalog.load(base)
        return spec.twin_spec() if base != name else spec
    except (KprofError, OSError):
        return None


def spec_is_atomic(name: str) -> bool:
    """Whether the shipped spec ``name`` adds with atomicAdd, from its source."""
    spec = _shipped(name)
    return spec is not None and _atomic(spec)


def _round_up(x: float) -> float:
    """Up to two significant digits: 3.21e-6 -> 3.3e-6."""
    if x <= 0:
        return 0.0
    e = math.floor(math.log10(x)) - 1
    return float(f"{math.ceil(x / 10**e - 1e-9) * 10**e:.2g}")


def spec_has_scale(name: str) -> bool:
    """Whether the shipped spec ``name`` judges an output against a ``tolerance.scale``."""
    spec = _shipped(name)
    return spec is not None and bool(spec.tolerance.scale)


def _margin(name: str, atomic: Callable[[str], bool], scaled: Callable[[str], bool]) -> float:
    return max(ATOMIC_MARGIN if atomic(name) else 1.0, SCALE_MARGIN if scaled(name) else 1.0)


def propose(rows: list[dict[str, Any]], atomic: Callable[[str], bool] = spec_is_atomic,
            scaled: Callable[[str], bool] = spec_has_scale) -> dict[str, dict[str, Any]]:
    from kprof.child import verify

    by_spec: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_spec.setdefault(r["spec"], []).append(r)
    out: dict[str, dict[str, Any]] = {}
    for name, runs in by_spec.items():
        checks = [(r, c) for r in runs for c in r.get("checks", []) if c.get("frontier")]
        if not checks:
            out[name] = {"exact": True}
            continue
        dtype = runs[0]["dtypes"][checks[0][1]["name"]]
        cap = RTOL_CAP.get(dtype, 1e-5)
        margin = _margin(name, atomic, scaled)
        exact_at = [r for r in verify.FRONTIER_RTOLS if r <= cap
                    and all(_atol_at(c, r) == 0 for _, c in checks)]
        # with a margin: the first listed rtol that is margin times the needed one, at most the cap
        if exact_at:
            out[name] = {"rtol": min((r for r in exact_at if r >= margin * exact_at[0]),
                                     default=exact_at[-1]),
                         "atol": 0.0}
        else:
            rtol = verify.tolerance_for(dtype, None, None)[0]
            rtol = min((r for r in verify.FRONTIER_RTOLS if r >= rtol), default=rtol)
            needed = [(r, margin * _atol_at(c, rtol)) for r, c in checks]
            if all(REDUCTION_SIZE in r["sizes"] for r, _ in needed):
                out[name] = {"rtol": rtol, "atol": _growing(needed)}
            else:
                out[name] = {"rtol": rtol, "atol": _round_up(max(a for _, a in needed))}
        if margin != 1.0:
            out[name].update(margin=margin, cap=cap)
        out[name]["sizes"] = len(runs)
        out[name]["failed_before"] = sum(1 for r in runs if not r.get("ok"))
    return out


def _atol_at(check: dict[str, Any], rtol: float) -> float:
    """The smallest atol at which a measured check passes at ``rtol`` (from its frontier)."""
    return float(dict(check["frontier"])[rtol])


def _growing(needed: list[tuple[dict[str, Any], float]]) -> str:
    """``c * K`` or ``c * sqrt(K)``, whichever lies closer above the needed atols (geometric mean of
    tolerance / needed over the sizes that need one): the error of a float32 dot product grows
    between the two, with the length and with the size of the partial sums."""
    best: tuple[float, str] | None = None
    for text, grow in ((REDUCTION_SIZE, float), (f"sqrt({REDUCTION_SIZE})", math.sqrt)):
        c = _round_up(max(a / grow(r["sizes"][REDUCTION_SIZE]) for r, a in needed))
        ratios = [math.log(c * grow(r["sizes"][REDUCTION_SIZE]) / a) for r, a in needed if a > 0]
        score = sum(ratios) / len(ratios) if ratios else 0.0
        if best is None or score < best[0]:
            best = (score, f"{c:g} * {text}")
    assert best is not None
    return best[1]


def _yaml(t: dict[str, Any], scale: tuple[tuple[str, str], ...] = ()) -> str:
    """The spec's tolerance line; a ``scale`` it has is kept (the frontier was measured against
    it)."""
    atol = t["atol"]
    atol_text = f'"{atol}"' if isinstance(atol, str) else f"{atol:g}"
    kept = (", scale: {" + ", ".join(f'{k}: "{v}"' for k, v in scale) + "}") if scale else ""
    return f"tolerance: {{rtol: {t['rtol']:g}, atol: {atol_text}{kept}}}"


def apply(proposals: dict[str, dict[str, Any]]) -> None:
    from kprof.spec import catalog

    for name, t in proposals.items():
        if t.get("exact"):
            continue
        base = _base(name)
        path = catalog.find(base)
        text = path.read_text()
        why = ("the tightest that passes on the H200" if not t.get("margin")
               else f"{t['margin']:g} x the tightest that passes on the H200, at most "
                    f"{t['cap']:g}: "
                    + ("float atomics" if t["margin"] == ATOMIC_MARGIN
                       else "headroom beyond the checked sizes"))
        line = _yaml(t, catalog.load(base).tolerance.scale) + f"  # {why} (scripts/tolerances.py)"
        if re.search(r"^tolerance:.*$", text, flags=re.M):
            text = re.sub(r"^tolerance:.*$", line, text, count=1, flags=re.M)
        else:
            text = text.rstrip("\n") + "\n" + line + "\n"
        path.write_text(text)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    m = sub.add_parser("measure")
    m.add_argument("out", type=Path)
    m.add_argument("--jobs", type=int, default=4)
    m.add_argument("--only", nargs="*", default=[], help="measure only these specs")
    m.add_argument("--merge", type=Path, help="an earlier measurement to keep the other specs from")
    p = sub.add_parser("propose")
    p.add_argument("raw", type=Path)
    p.add_argument("--apply", action="store_true")
    args = parser.parse_args(argv)
    if args.what == "measure":
        return measure(args.out, args.jobs, args.only, args.merge)
    proposals = propose(json.loads(args.raw.read_text()))
    for name, t in sorted(proposals.items()):
        print(f"{name:32} " + ("exact (integers)" if t.get("exact") else _yaml(t))
              + (f"  ({t['failed_before']} of {t['sizes']} sizes failed before)"
                 if t.get("failed_before") else ""))
    if args.apply:
        apply(proposals)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
