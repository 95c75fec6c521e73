"""kprof sanitize on a real GPU: every seeded bug caught at its line, every twin clean, every
ladder kernel clean under every tool, and failures of the target reported, not fatal."""

import json

import pytest

from kprof import cases, catalog, cli, pipeline
from kprof import compute_sanitizer as sanitize
from kprof.job import RunMode

pytestmark = pytest.mark.gpu

CORPUS = cases.load_all(catalog.group("case"))
SCRUB = pipeline.scrubber(None)[0]
# The values detector's shared-memory scrub must not be overwritten by another worker's kernel while a
# buggy kernel runs (that could hide its uninitialised read); a correct twin reads only what it wrote.
CASES = [pytest.param(c, marks=pytest.mark.gpu_alone) if c.expect.tool == "values" else c for c in CORPUS]


def _describe(result):
    return {"bug": [f.to_dict() for f in result.bug.findings], "bug_status": result.bug.status,
            "bug_message": result.bug.message, "twin": [f.to_dict() for t in result.twins for f in t.findings],
            "twin_status": {t.tool: t.status for t in result.twins}, "twin_message": [t.message for t in result.twins],
            "logs": [result.bug.log[-2000:]] + [t.log[-1000:] for t in result.twins if t.status != "clean"]}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_seeded_bug_is_caught_and_twin_is_clean(case):
    bug, twin = pipeline.case_jobs(case, None)
    result = cases.run_case(case, bug, twin, scrub_cubin=SCRUB)
    detail = json.dumps(_describe(result), indent=1, default=str)
    if case.expect.caught:
        assert result.caught, f"{case.name}: expected {case.expect.tool} {case.expect.kind} at line {case.expect.line}\n{detail}"
    assert result.twin_clean, f"{case.name}_fixed is not clean under every tool: {result.twin_not_clean}\n{detail}"


LADDER = [e.name for e in catalog.entries() if e.group == "kernel"]


@pytest.mark.parametrize("name", LADDER)
@pytest.mark.parametrize("tool", sanitize.ALL_TOOLS)
def test_ladder_kernel_is_clean(name, tool):
    job = pipeline.prepare(catalog.load(name), preset="sanitize").job(RunMode(verify=False))
    (result,) = sanitize.run_all(job, [tool], scrub_cubin=SCRUB)
    assert result.status == "clean", _unclean(result)


def _unclean(result):
    """What a tool said of a run that should have been clean: its status, message, findings and log's end."""
    return json.dumps({"status": result.status, "message": result.message,
                       "findings": [f.to_dict() for f in result.findings], "log": result.log[-3000:]}, indent=1, default=str)


# Kernels whose sanitize size takes one of several paths: the others, each under every tool.
OTHER_PATHS = [("rmsnorm_bf16", {"R": 5, "C": 2056}, {}),  # one block per row (the sanitize size is a warp's)
               ("rmsnorm_onepass", {"R": 37, "C": 300}, {"WROWS": "8", "PER": "16", "BLOCK": "256"}),  # a warp per row
               ("softmax_online", {"R": 37, "C": 300}, {"WROWS": "8", "PER": "16", "BLOCK": "256"}),
               ("rmsnorm_onepass", {"R": 3, "C": 9000}, {}),  # a long row read twice, 16 bytes at a time
               ("softmax_online", {"R": 3, "C": 9000}, {})]


def _path_id(name, sizes, params):
    return "-".join([name, *(f"{k}{v}" for k, v in {**sizes, **params}.items())])


@pytest.mark.parametrize("name, sizes, params", OTHER_PATHS, ids=[_path_id(*p) for p in OTHER_PATHS])
@pytest.mark.parametrize("tool", sanitize.ALL_TOOLS)
def test_other_row_paths_are_clean(name, sizes, params, tool):
    job = pipeline.prepare(catalog.load(name), sizes, params=params).job(RunMode(verify=False))
    (result,) = sanitize.run_all(job, [tool], scrub_cubin=SCRUB)
    assert result.status == "clean", _unclean(result)


def test_cli_sanitize_tiled_matmul_is_clean(capsys):
    code = cli.main(["sanitize", "tiled_matmul", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["clean"] and data["findings"] == []
    assert [t["tool"] for t in data["tools"]] == list(sanitize.ALL_TOOLS)


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
    (plain,) = sanitize.run_all(job, ["memcheck"], scrub_cubin=None, padding=0)
    (padded,) = sanitize.run_all(job, ["memcheck"], scrub_cubin=None)
    assert plain.status == "clean", "without padding the write lands in the neighbour and memcheck is silent"
    assert any(cases.matches(case, f) for f in padded.findings)


def test_hanging_target_times_out_and_other_tools_still_run(data_dir):
    from kprof import spec as spec_mod

    spec = spec_mod.load(data_dir / "kernels" / "hang.yaml")
    job = pipeline.prepare(spec).job(RunMode(verify=False))
    results = sanitize.run_all(job, ["memcheck", "synccheck"], scrub_cubin=None, timeout=15)
    assert [r.status for r in results] == ["timeout", "timeout"]
    assert "did not finish within 15 s" in results[0].message
