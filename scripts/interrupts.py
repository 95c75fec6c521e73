"""Interrupts, kills and concurrent runs of kprof on a real GPU: what each leaves behind.

    python3 scripts/interrupts.py OUTDIR [--only NAME ...] [--kprof "python3 -m kprof"]

Each scenario runs kprof commands with a marker in their environment and their own TMPDIR, sends the
signal a user or a batch system would (Ctrl-C reaches the whole foreground process group; ``timeout``
and a batch system's SIGTERM reach kprof alone; the OOM killer's SIGKILL too), then looks for what is
left: any process still carrying the marker (found through ``/proc/*/environ``), any file in the
scenario's TMPDIR, any temporary (dot) file in the build cache, and whether the history and the cache
still answer the next command. ``OUTDIR/interrupts.json`` holds every run; ``interrupts.md`` a table.
A scenario passes when the exit code is the documented one (130 for SIGINT, 143 for SIGTERM), nothing
is left, and what was measured before the signal is still there (a bench's JSON and history rows).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

MARK = "KPROF_INTERRUPT_MARK"
SIZES = "N=" + ",".join(str(1 << k) for k in range(12, 26)) + "," + ",".join(str(3 << k) for k in range(12, 25))


@dataclass
class Run:
    """One kprof process of a scenario: how it ended and what it left."""

    name: str
    argv: list[str]
    rc: int | None = None
    wall_s: float = 0.0
    stdout_tail: str = ""
    stderr_tail: str = ""
    signalled: bool | None = None  # a signal was sent while it ran (None: no signal meant for it)


@dataclass
class Outcome:
    scenario: str
    passed: bool
    says: str
    runs: list[Run] = field(default_factory=list)
    left_processes: list[str] = field(default_factory=list)
    left_temp_files: list[str] = field(default_factory=list)
    checks: dict[str, bool] = field(default_factory=dict)


def marked_processes(mark: str) -> list[tuple[int, str]]:
    """Every process whose environment holds ``MARK=mark``: (pid, command line)."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                found.append((int(entry.name), cmd[:200]))
        except OSError:
            continue
    return found


def leftovers(mark: str, grace_s: float = 3.0) -> list[str]:
    """The marked processes still alive ``grace_s`` after kprof ended (then killed, so the next
    scenario starts clean)."""
    deadline = time.monotonic() + grace_s
    while True:
        alive = marked_processes(mark)
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for pid, _ in alive:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + 5.0
    while alive and marked_processes(mark) and time.monotonic() < deadline:  # a kill is delivered, not done, at once
        time.sleep(0.1)
    return [f"{pid} {cmd}" for pid, cmd in alive]


def files_under(folder: Path, dot_only: bool = False) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if (p.name.startswith(".") or not dot_only) and not p.is_dir())


class Scenario:
    """The environment a scenario's kprof processes share: marker, TMPDIR, cache and history."""

    def __init__(self, out: Path, name: str, kprof: list[str], cache: Path, history: Path):
        self.name, self.kprof, self.cache, self.history = name, kprof, cache, history
        self.mark = uuid.uuid4().hex
        cache.mkdir(parents=True, exist_ok=True)
        seed = Path(os.environ.get("KPROF_CACHE_DIR", "/nonexistent"))
        for peak in seed.glob("peak-*.json"):  # the GPU's ceilings, measured before: no bench measures them again
            shutil.copy(peak, cache / peak.name)
        self.tmp = out / "tmp" / name
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.logs = out / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.env = dict(os.environ,
                        **{MARK: self.mark, "TMPDIR": str(self.tmp), "KPROF_CACHE_DIR": str(cache),
                           "KPROF_HISTORY": str(history), "PYTHONUNBUFFERED": "1"})

    def start(self, label: str, args: list[str]) -> tuple[Run, subprocess.Popen]:
        run = Run(label, self.kprof + args)
        with open(self.logs / f"{self.name}-{label}.out", "wb") as out, \
                open(self.logs / f"{self.name}-{label}.err", "wb") as err:  # the child keeps its own copies
            proc = subprocess.Popen(run.argv, env=self.env, stdout=out, stderr=err,
                                    start_new_session=True)
        proc._kprof_t0 = time.monotonic()  # type: ignore[attr-defined]
        return run, proc

    def finish(self, run: Run, proc: subprocess.Popen, timeout_s: float = 400) -> Run:
        try:
            run.rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            run.rc = proc.wait()
        run.wall_s = round(time.monotonic() - proc._kprof_t0, 2)  # type: ignore[attr-defined]
        run.stdout_tail = (self.logs / f"{self.name}-{run.name}.out").read_text(errors="replace")[-600:]
        run.stderr_tail = (self.logs / f"{self.name}-{run.name}.err").read_text(errors="replace")[-600:]
        return run

    def run(self, label: str, args: list[str], timeout_s: float = 400) -> Run:
        return self.finish(*self.start(label, args), timeout_s=timeout_s)

    def signalled(self, label: str, args: list[str], sig: signal.Signals, after_s: float,
                  group: bool) -> Run:
        """Start kprof, send ``sig`` after ``after_s`` (to its process group as a terminal's Ctrl-C does, or
        to kprof alone as ``timeout`` does), wait for it to end."""
        run, proc = self.start(label, args)
        try:
            proc.wait(timeout=after_s)
            run.signalled = False  # it ended before the signal: no test of it
        except subprocess.TimeoutExpired:
            (os.killpg if group else os.kill)(proc.pid, sig)
            run.signalled = True
        return self.finish(run, proc)

    def outcome(self, passed_before: bool, says: str, runs: list[Run],
                checks: dict[str, bool]) -> Outcome:
        left = leftovers(self.mark)
        # Nsight Compute's own lock (TMPDIR/nvidia/nsight_compute/lock): it serialises every ncu on the machine and
        # outlives each run by design, interrupted or not, so it is not kprof's leftover
        temps = [p for p in files_under(self.tmp) if not p.startswith("nvidia/nsight_compute/")]
        temps += [f"cache/{p}" for p in files_under(self.cache, dot_only=True)]
        ok = passed_before and not left and not temps and all(checks.values())
        return Outcome(self.name, ok, says, runs, left, temps, checks)


def read_json(path: Path) -> dict | list | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def history_rows(sc: Scenario, check: str) -> tuple[int, Run]:
    run = sc.run(check, ["history", "--limit", "200", "--json"])
    rows = read_json(sc.logs / f"{sc.name}-{check}.out")
    return (len(rows) if isinstance(rows, list) else -1), run


def interrupted_bench(sc: Scenario, sig: signal.Signals, group: bool, code: int) -> Outcome:
    run = sc.signalled("bench", ["bench", "vector_add", "--size", SIZES, "--json"], sig, 15.0,
                       group)
    data = read_json(sc.logs / f"{sc.name}-bench.out")
    points = len(data.get("points", [])) if isinstance(data, dict) else 0
    rows, hist = history_rows(sc, "history")
    checks = {f"exit {code}": run.rc == code,
              "JSON says interrupted": isinstance(data, dict) and data.get("interrupted") is True,
              "points kept": points >= 1, "history holds them": rows >= 1 and hist.rc == 0}
    return sc.outcome(True, f"{points} points in the JSON, {rows} history rows", [run, hist],
                      checks)


def killed_bench(sc: Scenario) -> Outcome:
    run = sc.signalled("bench", ["bench", "vector_add", "--size", SIZES, "--json"], signal.SIGKILL,
                       15.0, False)
    # SIGKILL reaches kprof alone: its children must end by themselves (the marker finds any that did not)
    rows, hist = history_rows(sc, "history")
    again = sc.run("run-after", ["run", "vector_add"])
    checks = {"killed": run.rc == -9, "history readable": hist.rc == 0 and rows >= 0,
              "next run works": again.rc == 0}
    return sc.outcome(True, f"{rows} history rows after the kill", [run, hist, again], checks)


def interrupted(sc: Scenario, args: list[str], sig: signal.Signals, after_s: float, group: bool,
                code: int) -> Outcome:
    run = sc.signalled("cmd", args, sig, after_s, group)
    err = (sc.logs / f"{sc.name}-cmd.err").read_text(errors="replace")
    last = err.strip().splitlines()[-1:] or [""]
    # the progress lines before the signal stay; the signal adds one line that says so, and no traceback
    checks = {f"exit {code}": run.rc == code, "signalled while running": bool(run.signalled),
              "its last line says interrupted": "interrupted" in last[0],
              "no traceback": "Traceback" not in err}
    return sc.outcome(True,
                      run.stderr_tail.strip().splitlines()[-1:][0] if run.stderr_tail.strip()
                      else "", [run], checks)


def interrupted_build(sc: Scenario, twice: bool) -> Outcome:
    """``kprof build --all --force`` stopped by Ctrl-C while nvcc runs (twice: a second Ctrl-C 0.3 s
    later, while kprof is cleaning up): nvcc's tmpxft files gone from TMPDIR, no temporary file, lock
    or half entry in the cache, and the next build finds every kernel or builds it."""
    run, proc = sc.start("build", ["build", "--all", "--force"])
    try:
        proc.wait(timeout=1.5)
        run.signalled = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGINT)
        if twice:
            time.sleep(0.3)
            try:
                os.killpg(proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        run.signalled = True
    run = sc.finish(run, proc)
    again = sc.run("build-again", ["build", "--all", "--json"])
    checks = {"exit 130": run.rc == 130, "signalled while running": bool(run.signalled),
              "no traceback": "Traceback" not in run.stderr_tail, "the next build works": again.rc == 0}
    return sc.outcome(True, run.stderr_tail.strip().splitlines()[-1:][0] if run.stderr_tail.strip() else "",
                      [run, again], checks)


def concurrent(sc: Scenario) -> Outcome:
    jobs = [("build", ["build", "--all"]), ("run-a", ["run", "tiled_matmul"]),
            ("run-b", ["run", "tiled_matmul"]),
            ("run-c", ["run", "softmax"]), ("run-d", ["run", "vector_add"]),
            ("bench-a", ["bench", "vector_add", "--size", "N=1048576,4194304", "--json"]),
            ("bench-b", ["bench", "vector_add_vec4", "--size", "N=1048576,4194304", "--json"]),
            ("bench-c", ["bench", "tiled_matmul", "--json"])]
    started = [sc.start(label, args) for label, args in jobs]
    runs = [sc.finish(run, proc) for run, proc in started]
    rows, hist = history_rows(sc, "history")
    again = sc.run("build-again", ["build", "--all", "--json"])
    built = read_json(sc.logs / f"{sc.name}-build-again.out")
    cached = [k.get("cached") for k in built] if isinstance(built, list) else []
    checks = {"every run exits 0": all(r.rc == 0 for r in runs),
              "history holds the three benches": rows >= 3,
              "a second build --all finds every kernel cached": bool(cached) and all(cached)
              and again.rc == 0}
    return sc.outcome(True,
                      f"{len(runs)} at once; {rows} history rows; "
                      f"{sum(map(bool, cached))}/{len(cached)} cached after",
                      runs + [hist, again], checks)


SCENARIOS = {
    "bench-ctrl-c": lambda sc: interrupted_bench(sc, signal.SIGINT, True, 130),
    "bench-sigterm": lambda sc: interrupted_bench(sc, signal.SIGTERM, False, 143),
    "bench-sigkill": killed_bench,
    # kprof sanitize tiled_matmul took 5.1 s and kprof profile tiled_matmul 4.6 s on an H200: signalled half way
    "sanitize-ctrl-c": lambda sc: interrupted(sc, ["sanitize", "tiled_matmul"], signal.SIGINT, 2.5,
                                              True, 130),
    "sanitize-sigterm": lambda sc: interrupted(sc, ["sanitize", "tiled_matmul"], signal.SIGTERM,
                                               2.5, False, 143),
    "program-ctrl-c": lambda sc: interrupted(sc,
                                             ["sanitize", "--", sys.executable,
                                              "examples/cuda_python_sum.py"],
                                             signal.SIGINT, 5.0, True, 130),
    "program-sigterm": lambda sc: interrupted(sc,
                                              ["sanitize", "--", sys.executable,
                                               "examples/cuda_python_sum.py"],
                                              signal.SIGTERM, 5.0, False, 143),
    "profile-ctrl-c": lambda sc: interrupted(sc, ["profile", "tiled_matmul"], signal.SIGINT, 2.5,
                                             True, 130),
    "profile-sigterm": lambda sc: interrupted(sc, ["profile", "tiled_matmul"], signal.SIGTERM, 2.5,
                                              False, 143),
    "cases-sigterm": lambda sc: interrupted(sc, ["cases"], signal.SIGTERM, 10.0, False, 143),
    # no GPU needed: nvcc alone
    "build-ctrl-c": lambda sc: interrupted_build(sc, twice=False),
    "build-ctrl-c-twice": lambda sc: interrupted_build(sc, twice=True),
    "concurrent": concurrent,
}


def table(outcomes: list[Outcome]) -> str:
    lines = ["| scenario | passed | exit codes | left processes | left temporary files | failed "
             "checks | says |",
             "|---|---|---|---|---|---|---|"]
    for o in outcomes:
        failed = ", ".join(k for k, v in o.checks.items() if not v) or "-"
        rcs = " ".join(str(r.rc) for r in o.runs)
        lines.append(f"| {o.scenario} | {'yes' if o.passed else 'NO'} | {rcs} | "
                     f"{len(o.left_processes)} | {len(o.left_temp_files)} | {failed} | "
                     f"{o.says.replace('|', '/')[:120]} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", nargs="*", choices=sorted(SCENARIOS))
    parser.add_argument("--kprof", default=f"{sys.executable} -m kprof")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    outcomes = []
    for name in args.only or SCENARIOS:
        root = args.out / "state" / name
        sc = Scenario(args.out, name, shlex.split(args.kprof), root / "cache",
                      root / "history.sqlite")
        if name != "concurrent":  # the kernels built before the signal, so it lands in the work, not nvcc
            sc.run("prebuild", ["build", "vector_add", "tiled_matmul"])
        t0 = time.monotonic()
        outcome = SCENARIOS[name](sc)
        print(f"{name}: {'passed' if outcome.passed else 'FAILED'} in {time.monotonic() - t0:.1f} "
              f"s; {outcome.says}", flush=True)
        outcomes.append(outcome)
        # after each scenario: a run stopped at its time limit keeps the scenarios it finished
        (args.out / "interrupts.json").write_text(json.dumps([asdict(o) for o in outcomes],
                                                             indent=1))
        (args.out / "interrupts.md").write_text(table(outcomes))
    return 0 if all(o.passed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
