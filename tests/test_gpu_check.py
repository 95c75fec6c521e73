"""scripts/gpu-check.sh on a machine with no GPU, as a dry run (DRY_RUN=1: every step's command
written, none run): measure runs the bench lists of scripts/benches/, one line one kprof bench, and
every list names kernels kprof has and baselines that exist, so a list never goes stale before a GPU
run."""

from __future__ import annotations

import ast
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from kprof.spec import catalog

ROOT = Path(__file__).resolve().parent.parent
LISTS = ROOT / "scripts" / "benches"


def _lines(path: Path) -> list[tuple[str, list[str]]]:
    out = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, *args = shlex.split(line)
            out.append((name, args))
    return out


def test_measure_runs_each_line_of_its_lists_once(tmp_path):
    env = dict(os.environ, DRY_RUN="1", OUT=str(tmp_path),
               MEASURE_STEPS="bench-ladder bench-fused frameworks table",
               TABLE_RUNS="2", KPROF_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run(["bash", str(ROOT / "scripts" / "gpu-check.sh"), "measure"], env=env,
                          capture_output=True, text=True, timeout=300)
    steps = (tmp_path / "logs" / "steps.txt").read_text().splitlines()
    assert steps, done.stdout + done.stderr
    got = {line.split(" dry-run: ")[0]: line.split(" dry-run: ")[1] for line in steps}
    want = dict(_lines(LISTS / "ladder.txt") + _lines(LISTS / "frameworks.txt"))
    want.update({f"table/{r}-{name}": args for r in (1, 2)
                 for name, args in _lines(LISTS / "table.txt")})
    assert sorted(got) == sorted(want)
    for name, args in want.items():
        assert f"-m kprof bench {' '.join(args)} --json > " in got[name], (name, got[name])


def _baselines() -> set[str]:
    import kprof

    # the installed one
    tree = ast.parse((Path(kprof.__file__).parent / "baselines" / "torch_ops.py").read_text())
    return {f"kprof.baselines.torch_ops:{n.name}" for n in tree.body
            if isinstance(n, ast.FunctionDef)}


def _file_function(ref: str) -> bool:
    """FILE.py:FUNCTION relative to the project root (as gpu-check.sh runs): the file defines the
    function."""
    file, _, func = ref.rpartition(":")
    path = ROOT / file
    return file.endswith(".py") and path.is_file() and any(
        isinstance(n, ast.FunctionDef) and n.name == func for n in ast.parse(path.read_text()).body)


@pytest.mark.parametrize("path", sorted(LISTS.glob("*.txt")), ids=lambda p: p.name)
def test_every_list_names_kernels_and_baselines_that_exist(path):
    known, functions = {e.name for e in catalog.entries()}, _baselines()
    for name, args in _lines(path):
        kernels = args[:next((i for i, a in enumerate(args) if a.startswith("--")), len(args))]
        assert kernels and all(k in known for k in kernels), (path.name, name, kernels)
        # a spec's named baselines (flash, cudnn, ...)
        own = {n for k in kernels for n, _ in catalog.load(k).baselines}
        for i, a in enumerate(args):
            if a == "--baseline":
                for b in args[i + 1].split(","):
                    assert b in functions or b in known or b in own or b in ("auto", "torch.compile", "cublas_sgemm") \
                        or _file_function(b), (path.name, name, b)


def test_racelib_runs_racecheck_with_and_without_kprofs_filters(tmp_path):
    """The racelib section: each racecheck run of the half nn.Linear once with every kernel checked
    and once with kprof's library filters (each --kernel-name-exclude its own word), and initcheck
    at two record limits."""
    from kprof.tools.sanitizers import kernelpolicy

    env = dict(os.environ, DRY_RUN="1", OUT=str(tmp_path), KPROF_CACHE_DIR=str(tmp_path / "cache"),
               CS_NEW="/x/cs-new")
    done = subprocess.run(["bash", str(ROOT / "scripts" / "gpu-check.sh"), "racelib"], env=env,
                          capture_output=True, text=True, timeout=300)
    steps = (tmp_path / "logs" / "steps.txt").read_text().splitlines()
    got = {line.split(" dry-run: ")[0]: line.split(" dry-run: ")[1] for line in steps}
    assert "racelib-new-float16-all" in got and "racelib-machine-float16-filtered" in got, done.stdout + done.stderr
    assert "--kernel-name-exclude" not in got["racelib-machine-float16-all"]
    assert " ".join(kernelpolicy.exclude_args()) in got["racelib-machine-float16-filtered"]
    assert got["racelib-new-suite-filtered"].startswith("/x/cs-new --tool racecheck")
    assert {"initlimit-5", "initlimit-1000"} <= set(got)


def test_newchecks_runs_the_new_cases_and_the_corpus_under_both_compute_sanitizers(tmp_path):
    """The newchecks section: each of its cases (all corpus cases) and its twin run, recorded raw
    under this machine's compute-sanitizer and CS_NEW, the corpus under both, each probe shape
    fenced and not under both, the tensor-core kernels under both; PROBES=0 and an empty TC_KERNELS
    leave theirs out."""
    from kprof.corpus import cases

    def steps(**extra):
        env = dict(os.environ, DRY_RUN="1", OUT=str(tmp_path),
                   KPROF_CACHE_DIR=str(tmp_path / "cache"), CS_NEW="/x/cs-new", **extra)
        subprocess.run(["bash", str(ROOT / "scripts" / "gpu-check.sh"), "newchecks"], env=env,
                       capture_output=True, text=True, timeout=300)
        lines = (tmp_path / "logs" / "steps.txt").read_text().splitlines()
        (tmp_path / "logs" / "steps.txt").unlink()
        return {line.split(" dry-run: ")[0]: line.split(" dry-run: ")[1] for line in lines
                if " dry-run: " in line}

    got = steps()
    named = [k.removeprefix("run-") for k in got if k.startswith("run-")
             and not k.endswith("_fixed") and "rank1" not in k]
    assert named and all(cases.load_case(catalog.load(n)).expect.tool for n in named)
    assert got["record-cases-new"].endswith("--cases " + " ".join(named) + " --exe /x/cs-new")
    assert ("KPROF_COMPUTE_SANITIZER=/x/cs-new" in got["cases-new"]
            and "KPROF_COMPUTE_SANITIZER" not in got["cases-machine"])
    assert ({f"proxy-{v}-{f}-{w}" for v in "1234" for f in "01" for w in ("machine", "new")} <= set(got))
    assert "sanitize-wgmma_matmul-new" in got and "tensormap-rank1" in got
    lean = steps(PROBES="0", TC_KERNELS=" ")
    assert (not [k for k in lean if k.startswith(("proxy-", "sanitize-", "tensormap-"))]
            and "cases-new" in lean)


def test_ranks_runs_the_two_rank_job_plain_sanitized_and_profiled(tmp_path):
    """The ranks section: the two-rank torchrun job plain, under kprof sanitize (seeded and fixed),
    and the fixed one under kprof profile, JSON and text; kprof's options stand before --, the job's
    after it."""
    env = dict(os.environ, DRY_RUN="1", OUT=str(tmp_path), KPROF_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run(["bash", str(ROOT / "scripts" / "gpu-check.sh"), "ranks"], env=env,
                          capture_output=True, text=True, timeout=300)
    lines = (tmp_path / "logs" / "steps.txt").read_text().splitlines()
    got = {line.split(" dry-run: ")[0]: line.split(" dry-run: ")[1] for line in lines
           if " dry-run: " in line}
    assert {"ranks-plain", "ranks-plain-fixed", "ranks-sanitize", "ranks-sanitize-fixed",
            "ranks-profile",
            "ranks-profile-text", "ranks-profile-count"} <= set(got), done.stdout + done.stderr
    assert "profile --json --launch-count 2 -- python3" in got["ranks-profile-count"]
    assert (got["ranks-nccl-plain"].endswith("two_ranks.py --fixed --nccl")
            and "sanitize --json --" in got["ranks-nccl-sanitize"])
    assert ("profile --json -- python3 -m torch.distributed.run --standalone --nproc_per_node 2" in got["ranks-profile"])
    assert got["ranks-profile-text"].endswith("examples/two_ranks.py --fixed")
    assert "--fixed" not in got["ranks-sanitize"]
    # an mpiexec on PATH (pip's mpich, the dev extra's): the job as MPI launches it
    if "mpi-sanitize" in got:
        assert ("sanitize --json -- " in got["mpi-sanitize"]
                and "-n 2 python3 examples/two_ranks.py >" in got["mpi-sanitize"])
        assert "--fixed" in got["mpi-sanitize-fixed"] and "profile --json -- " in got["mpi-profile"]
    else:
        assert "mpi-*: skipped (no mpiexec" in "\n".join(lines)
