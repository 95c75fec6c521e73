"""kprof sanitize on a real GPU: every seeded bug caught at its line, every twin clean, every
ladder kernel clean under every tool, and failures of the target reported, not fatal."""

import json

import pytest

from kprof.commands import cli, pipeline
from kprof.corpus import cases
from kprof.launch.job import RunMode
from kprof.spec import catalog
from kprof.tools.sanitizers import checkers
from kprof.tools.sanitizers.checker import Settings

pytestmark = pytest.mark.gpu

CORPUS = cases.load_all(catalog.group("case"))
SCRUB = pipeline.scrubber(None)[0]
BUGS = [c for c in CORPUS if c.expect.caught and c.expect.tool != "values"]
# The values detector's shared-memory scrub must not be overwritten by another worker's kernel while
# a buggy kernel runs (that could hide its uninitialised read); a correct twin reads only what it
# wrote.
VALUES_BUGS = [c for c in CORPUS if c.expect.caught and c.expect.tool == "values"]


def _unclean(result):
    """What a tool said of a run that should have been clean: its status, message, findings and
    log's end."""
    return json.dumps({"status": result.status, "message": result.message,
                       "findings": [f.to_dict() for f in result.findings], "log": result.log[-3000:]}, indent=1, default=str)


@pytest.mark.parametrize("case", BUGS, ids=lambda c: c.name)
def test_seeded_bug_is_caught(case):
    bug, _ = pipeline.case_jobs(case, None)
    (result,) = checkers.run_all(bug, [case.expect.tool], Settings(scrub_cubin=SCRUB))
    # a bug only a newer compute-sanitizer checks (expect.since)
    if cases.CaseResult(case, result, ()).unseen:
        pytest.skip(f"{case.name} needs compute-sanitizer {case.expect.since}; "
                    f"{result.version or 'an unknown one'} ran")
    assert any(cases.matches(case, f) for f in result.findings), (
        f"{case.name}: expected {case.expect.tool} {case.expect.kind} at line {case.expect.line}\n"
        f"{_unclean(result)}")


@pytest.mark.gpu_alone
def test_the_values_detectors_seeded_bugs_are_caught():
    """Every values case's bug, in one child (each job's own findings), with the GPU to itself."""
    results = checkers.run_many([pipeline.case_jobs(c, None)[0] for c in VALUES_BUGS], "values",
                                Settings(scrub_cubin=SCRUB))
    missed = {c.name: _unclean(r) for c, r in zip(VALUES_BUGS, results)
              if not any(cases.matches(c, f) for f in r.findings)}
    assert len(VALUES_BUGS) >= 5 and not missed, "\n".join(f"{n}: {d}" for n, d in missed.items())


def _all_clean(named_jobs, tool):
    """Every job under ``tool``, in as few children as the tool allows
    (kprof.tools.sanitizers.checkers.run_many: one child for all, each job alone only where that
    child reported something): each job's own result, and the unclean ones named."""
    results = checkers.run_many([j for _, j in named_jobs], tool, Settings(scrub_cubin=SCRUB))
    assert len(results) == len(named_jobs)
    # each compute-sanitizer result says which version checked it (kprof's own detector has none)
    if tool != "values":
        assert all(r.version.count(".") == 2 for r in results), {r.version for r in results}
    return {name: _unclean(r) for (name, _), r in zip(named_jobs, results) if r.status != "clean"}


@pytest.mark.parametrize("half", [0, 1])
@pytest.mark.parametrize("tool", checkers.names())
def test_every_twin_is_clean(tool, half):
    """Each tool over the twins, in two children of half the corpus each (one took 49 s on an
    H200)."""
    mine = CORPUS[half::2]
    unclean = _all_clean([(f"{c.name}_fixed", pipeline.case_jobs(c, None)[1]) for c in mine], tool)
    assert not unclean, f"not clean under {tool}: {', '.join(unclean)}\n" + "\n".join(unclean.values())


LADDER = [e.name for e in catalog.entries() if e.group == "kernel"]
# Kernels whose sanitize size takes one of several paths: the others, each under every tool.
# one block per row (the sanitize size is a warp's)
OTHER_PATHS = [("rmsnorm_bf16", {"R": 5, "C": 2056}, {}),
               ("rmsnorm_onepass", {"R": 37, "C": 300},
                {"WROWS": "8", "PER": "16", "BLOCK": "256"}),  # a warp per row
               ("softmax_online", {"R": 37, "C": 300}, {"WROWS": "8", "PER": "16", "BLOCK": "256"}),
               # a long row read twice, 16 bytes at a time
               ("rmsnorm_onepass", {"R": 3, "C": 9000}, {}),
               ("softmax_online", {"R": 3, "C": 9000}, {})]


def _path_id(name, sizes, params):
    return "-".join([name, *(f"{k}{v}" for k, v in {**sizes, **params}.items())])


@pytest.mark.parametrize("tool", checkers.names())
def test_every_ladder_kernel_and_row_path_is_clean(tool):
    jobs = [(name,
             pipeline.prepare(catalog.load(name), preset="sanitize").job(RunMode(verify=False)))
            for name in LADDER]
    jobs += [(_path_id(*path),
              pipeline.prepare(catalog.load(path[0]), path[1], params=path[2]).job(RunMode(verify=False)))
             for path in OTHER_PATHS]
    unclean = _all_clean(jobs, tool)
    assert not unclean, f"not clean under {tool}: {', '.join(unclean)}\n" + "\n".join(unclean.values())


def test_cli_sanitize_tiled_matmul_is_clean(capsys):
    code = cli.main(["sanitize", "tiled_matmul", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["clean"] and data["findings"] == []
    assert [t["tool"] for t in data["tools"]] == list(checkers.names())


def test_cli_names_line_and_buffer_of_missing_bounds_check(capsys):
    code = cli.main(["sanitize", "tiled_matmul_no_bounds", "--tool", "memcheck"])
    out = capsys.readouterr().out
    assert code == 1
    assert "out-of-bounds-write" in out and "tiled_matmul_no_bounds.cu:15" in out
    assert "past the end of C" in out and "(C is 67 x 61 float32, 16,348 bytes)" in out


def test_overflow_into_neighbour_needs_padding():
    """memcheck's blind spot, and kprof's default that closes it."""
    case = next(c for c in CORPUS if c.name == "neighbour_overflow")
    job = pipeline.prepare(case.spec, preset="sanitize").job(RunMode(verify=False))
    (plain,) = checkers.run_all(job, ["memcheck"], Settings(padding=0))
    (padded,) = checkers.run_all(job, ["memcheck"], Settings())
    assert plain.status == "clean", "without padding the write lands in the neighbour and memcheck is silent"
    assert any(cases.matches(case, f) for f in padded.findings)


def test_hanging_target_times_out_and_other_tools_still_run(data_dir):
    from kprof import spec as spec_mod

    spec = spec_mod.load(data_dir / "kernels" / "hang.yaml")
    job = pipeline.prepare(spec).job(RunMode(verify=False))
    results = checkers.run_all(job, ["memcheck", "synccheck"], Settings(timeout=15))
    assert [r.status for r in results] == ["timeout", "timeout"]
    assert "did not finish within 15 s" in results[0].message
