"""kprof mutants: how strong a spec's verdict is. Mutant generation and scoring without a GPU,
building with nvcc, and the whole command with a stand-in for the GPU's verdict."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kprof import proc
from kprof.commands import api, cli, corpora
from kprof.corpus import mutants
from kprof.launch import launch
from kprof.launch.childresult import ChildResult
from kprof.spec import catalog

ROOT = Path(__file__).resolve().parent.parent.parent


def _source(name: str) -> str:
    return (ROOT / "kernels" / f"{name}.cu").read_text()


def test_a_matmul_gets_at_least_ten_mutants_each_one_change_of_one_code_line():
    text = _source("tiled_matmul")
    made = mutants.generate(text)
    assert len(made) >= 10 and len({m.source for m in made}) == len(made)
    assert {"<= for <", "missing barrier", "swapped indices", "overwrite for accumulate (= for +=)",
            "wrong initial value (0 -> 1)", "missing tail (bound - 1)"} <= {m.operator for m in made}
    lines = text.splitlines()
    for m in made:
        mutated = m.source.splitlines()
        assert len(mutated) == len(lines), m.id  # a report's line is still the source's
        changed = [i for i, (a, b) in enumerate(zip(lines, mutated)) if a != b]
        assert changed == [m.line - 1] and lines[m.line - 1] == m.before.rstrip("\n"), m.id
        # code, not comments or the preprocessor
        assert not m.before.lstrip().startswith(("#", "//")), m.id
    barrier = next(m for m in made if m.operator == "missing barrier")
    assert "__syncthreads" not in barrier.after and "// the tile is complete" in barrier.after
    assert not any("k0 = TILE" in m.after for m in made), "a for header's increment would hang the kernel"


def test_the_reduction_and_softmax_operators_have_their_places():
    assert any(m.operator == "skipped reduction level (>>= 2)"
               for m in mutants.generate(_source("reduce_sum")))
    flushed = [m for m in mutants.generate(_source("softmax_online"))
               if m.operator == "flushed small value"]
    assert flushed and all("< 1e-6f ? 0.0f :" in m.after for m in flushed)
    assert len(mutants.generate(_source("softmax_online"), limit=7)) == 7


def test_a_verdict_kills_at_the_first_failing_size_and_the_score_counts_only_non_equivalent_mutants():
    assert mutants.judge([("sanitize", True, ""), ("M127-N131", False, "3 of 16,637 elements exceed")]) == (
        "killed", "M127-N131: 3 of 16,637 elements exceed")
    assert mutants.judge([("sanitize", True, ""), ("N1", True, "")])[0] == "survived"
    m = mutants.generate(_source("vector_add"))[0]
    results = [mutants.MutantResult(m, v)
               for v in ("killed", "killed", "survived", "equivalent", "not-built")]
    assert mutants.score(results) == (2, 3, 2 / 3) and mutants.score([]) == (0, 0, None)
    assert results[2].to_dict()["diff"].startswith(f"@@ line {m.line} ({m.operator})\n-")


def _cubin(folder: Path, text: str) -> bytes:
    folder.mkdir(parents=True)
    (folder / "k.cu").write_text(text)
    subprocess.run([str(proc.find_tool("nvcc")), "-cubin", "-arch=sm_90", "-lineinfo", "-o",
                    str(folder / "k.cubin"),
                    str(folder / "k.cu")], check=True, capture_output=True, timeout=120)
    return (folder / "k.cubin").read_bytes()


@pytest.mark.nvcc
def test_a_mutant_with_the_originals_machine_code_is_equivalent(tmp_path):
    text = _source("tiled_matmul")
    same = _cubin(tmp_path / "a", text)
    # the same source elsewhere: other line information, same code
    moved = _cubin(tmp_path / "b", text)
    assert same != moved and mutants.equivalent(same, moved)
    wrong = _cubin(tmp_path / "c", mutants.generate(text)[0].source)
    assert not mutants.equivalent(same, wrong) and mutants.text_sections(b"not an elf") is None


@pytest.mark.nvcc
def test_kprof_mutants_dry_run_lists_and_builds_every_mutant(capsys):
    assert cli.main(["mutants", "tiled_matmul", "--dry-run", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["dry_run"] and len(data["mutants"]) >= 10
    assert all(m["verdict"] in ("built", "equivalent") for m in data["mutants"]), data["mutants"]
    assert (data["sizes"][0] == "sanitize"
            and len(data["sizes"]) == 1 + len(catalog.load("tiled_matmul").checks))


def _fake_result(job, ok: bool, rel_err: float = 1e-7) -> ChildResult:
    from kprof.launch.childresult import OutputCheck

    checks = [OutputCheck(name="C", ok=ok,
                          message="fine" if ok else "12 of 16,637 elements exceed 1e-05 x |ref|",
                          rel_err=rel_err, max_abs_err=rel_err, digest=f"as if {rel_err}")]
    return ChildResult(status="ok" if ok else "failed", kernel=job.target.name,
                       sizes=job.target.sizes, checks=tuple(checks), nvtx=True)


@pytest.mark.nvcc
@pytest.mark.parametrize("racecheck_sees_it", [True, False])
def test_each_mutant_is_killed_by_the_verdict_or_a_tool_or_survives_and_survivors_are_shown(monkeypatch, capsys,
                                                                                          racecheck_sees_it):
    """The GPU's verdict and tools stood in for. The spec's own kernel passes (initcheck reports
    something on it, so initcheck kills no mutant); a mutant that faults is killed; one missing a
    barrier passes the verdict and racecheck kills it; the k-loop run once more over a zero tile
    passes with the original's results and every tool clean (a survivor, said to have the original's
    results); a bound off by one on the write passes with other results and every tool clean (a
    survivor); every other fails its verdict. Where no tool sees the missing barrier, it survives
    too."""
    from kprof.errors import TargetError
    from kprof.findings import Finding
    from kprof.tools.sanitizers import checkers
    from kprof.tools.sanitizers.toolrun import ToolResult

    monkeypatch.setattr(api, "require_gpu", lambda tool: None)

    def kind(job):
        source = Path(job.target.source).read_text()
        if job.target.name == "tiled_matmul":
            return "original"
        if "__syncthreads();  // everyone is done" not in source:
            return "barrier"
        if "k0 <= K" in source:
            return "same"
        if "if (row <= M && col < N)" in source:
            return "survivor"
        return "wrong"

    big = []  # the kinds that ran the 4096^3 check

    def run_kernels(jobs, timeout):
        # a probe: the k-loop's bound is met
        if "KPROF_BOUNDARY" in Path(jobs[0].target.source).read_text():
            assert ("(KPROF_BOUNDARY((k0) == (K)), k0 < K)" in Path(jobs[0].target.source).read_text())
            raise TargetError(f"{jobs[0].target.name}: CUDA_ERROR_LAUNCH_FAILED (an illegal "
                              "instruction: the trap)")
        if jobs[0].target.name.endswith("__m1"):
            raise TargetError(f"{jobs[0].target.name}: CUDA_ERROR_ILLEGAL_ADDRESS")
        k = kind(jobs[0])
        big.extend(k for job in jobs if job.target.sizes.get("M") == 4096)
        return [_fake_result(job, k != "wrong", 2e-7 if k == "survivor" else 1e-7) for job in jobs]

    tool_runs = []

    def run_all(job, tools, settings, progress=None):
        (tool,) = tools
        tool_runs.append((kind(job), tool))
        found = (kind(job), tool) == ("original", "initcheck") or (racecheck_sees_it and (kind(job), tool) == ("barrier", "racecheck"))
        f = Finding(tool, "race" if tool == "racecheck" else "uninitialized", "tiled_matmul",
                    "tiled_matmul.cu", 21, thread=None, block=None, count=1, message="a hazard")
        return [ToolResult(tool, "findings" if found else "clean", [f] if found else [], 0.1)]

    monkeypatch.setattr(launch, "run_kernels", run_kernels)
    monkeypatch.setattr(checkers, "run_all", run_all)
    report = corpora.run_mutants("tiled_matmul", jobs=3)
    # initcheck is not clean on the original
    assert report.tools == ("memcheck", "racecheck", "values", "synccheck")
    # killed at the small sizes, never run large
    assert "wrong" not in big and {"original", "same", "survivor"} <= set(big)
    got = {r.mutant.id: (r.verdict, r.by) for r in report.results}
    assert got["M1"] == ("killed", "verdict") and "ILLEGAL_ADDRESS" in report.results[0].why
    by_kind = {}
    for r in report.results:
        by_kind.setdefault(r.verdict + "/" + r.by, []).append(r.mutant.operator)
    assert by_kind["survived/"] == ["<= for <"]  # the write's bound: other results
    # the zero tile more: its probe stopped, so the checked sizes meet k0 == K, where it computed
    # the same
    assert by_kind["equivalent/results at its boundary"] == ["<= for <"]
    (eq,) = [r for r in report.results if r.by == "results at its boundary"]
    assert "its boundary ((k0) == (K)) is met at the checked sizes" in eq.why
    if not racecheck_sees_it:
        assert (by_kind["survived/same results"] == ["missing barrier"]
                and "killed/racecheck" not in by_kind)
        return
    assert (by_kind["killed/racecheck"] == ["missing barrier"]
            and "survived/same results" not in by_kind)
    # the first finding stops
    assert ("barrier", "memcheck") in tool_runs and ("barrier", "values") not in tool_runs
    assert not any(t == "initcheck" for k, t in tool_runs if k != "original")
    killed, counted, share = report.score
    assert counted == len(report.results) - 1 and killed == counted - 1
    assert report.strict_score == (killed, counted + 1, killed / (counted + 1))
    data = report.to_json()
    assert (data["version"] == 3 and data["killed"] == killed
            and data["killed_by_verdict"] == killed - 1)
    assert data["score_strict"] == killed / (counted + 1)
    assert sum(m["by"] == "results at its boundary" for m in data["mutants"]) == 1
    code = cli.main(["mutants", "tiled_matmul", "--jobs", "2"])
    out = capsys.readouterr().out
    assert code == 1  # a survivor: exit 1
    assert (f"score: {killed} of {counted} non-equivalent mutants killed" in out
            and f"{killed - 1} by the verdict, 1 by a tool" in out)
    assert "1 equivalent by their results at a boundary the checked sizes meet" in out
    assert f"({killed} of {counted + 1}, " in out and "counting those as survivors" in out
    assert "killed (racecheck)" in out and "equivalent (results at its boundary)" in out
    assert "survived M" in out and "+    if (row <= M && col < N)" in out


def test_the_scores_table_counts_a_same_results_survivor_against_the_score(tmp_path, capsys):
    """scripts/mutant_scores.py over two folders: the later file of a spec wins, a mutant with the
    original's machine code is left out, a survivor with the original's results counts against the
    score (also in the JSON written before that rule, as ``equivalent`` ``by: results``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("mutant_scores",
                                                  ROOT / "scripts" / "mutant_scores.py")
    scores = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scores)

    def mutant(i, verdict, by=""):
        return {"id": f"M{i}", "line": i, "operator": "<= for <", "verdict": verdict, "by": by}

    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir(), new.mkdir()
    (old / "mutants-k.json").write_text(json.dumps({"spec": "k",
                                                    "mutants": [mutant(1, "survived")]}))
    (new / "mutants-k.json").write_text(json.dumps({"spec": "k", "mutants": [
        mutant(1, "killed", "verdict"), mutant(2, "killed", "memcheck"),
        mutant(3, "equivalent", "machine code"),
        mutant(4, "equivalent", "results"), mutant(5, "survived", "same results"),
        mutant(6, "not-built"),
        mutant(7, "equivalent", "results at its boundary"),
        mutant(8, "survived", "boundary not met")]}))
    (new / "mutants-stopped.json").write_text("")  # a run stopped at its deadline
    assert scores.main([str(old), str(new)]) == 0
    row = capsys.readouterr().out.splitlines()[-1]
    assert row.startswith("| k | 8 | 1 | 1 | 1 | 1 | 3 | 2 | 2 of 5 (40%) | 2 of 6 (33%) | M4 line "
                          "4"), row
    assert "M8 line 8 (<= for <), boundary not met" in row


def _mutant_of(source: str, operator: str, line: int) -> mutants.Mutant:
    # the line's first
    return next(m for m in mutants.generate(source) if m.operator == operator and m.line == line)


SCAN = (ROOT / "kernels" / "exclusive_scan.cu").read_text()


@pytest.mark.parametrize("operator, line, met, guarded", [
    ("> for >=", 7, "(r) == (rows)", "if ((KPROF_BOUNDARY((r) == (rows)), r >= rows)) {"),
    ("<= for <", 14, "(base) == (cols)",
     "for (int base = 0; (KPROF_BOUNDARY((base) == (cols)), base < cols); base += blockDim.x) {"),
    ("missing tail (bound - 1)", 14, "(base) == (cols) - 1",
     "for (int base = 0; (KPROF_BOUNDARY((base) == (cols) - 1), base < cols); base += blockDim.x) {"),
    ("<= for <", 16, "(c) == (cols)",
     "int v = (KPROF_BOUNDARY((c) == (cols)), c < cols) ? xr[c] : 0;"),
    ("> for >=", 20, "(t) == (off)",
     "int add = (KPROF_BOUNDARY((t) == (off)), t >= off) ? s[t - off] : 0;"),
])
def test_a_moved_bound_gets_a_probe_that_traps_where_the_mutant_and_the_original_part(operator, line, met, guarded):
    """The probe is the original (not the mutant) with the comparison's two operands compared first,
    on a line of its own macro; every other line as it was."""
    m = _mutant_of(SCAN, operator, line)
    probe, got = mutants.boundary_probe(m)
    assert got == met
    lines = probe.splitlines()
    assert lines[0] == mutants.PROBE_MACRO.strip() and "__trap()" in lines[0]
    assert lines[line].strip() == guarded  # shifted by the macro's line
    assert (lines[1:line] + lines[line + 1:] == SCAN.splitlines()[:line - 1] + SCAN.splitlines()[line:])


@pytest.mark.parametrize("code, operator, met", [
    ("    if (row < M && k0 + tx < K) x = 1;", "<= for <", "(row) == (M)"),
    ("    y = (a + b * 2 < n - 1) ? 1 : 0;", "<= for <", "(a + b * 2) == (n - 1)"),
    ("    return idx[i] >= (count << 2);", "> for >=", "(idx[i]) == ((count << 2))"),
    ("    while (p->len > lim) p = p->next;", ">= for >", "(p->len) == (lim)"),
    ("    if (!done && i <= last) go();", "< for <=", "(i) == (last)"),
])
def test_the_operands_of_a_comparison_end_at_what_binds_looser(code, operator, met):
    source = "__global__ void k() {\n" + code + "\n}\n"
    m = _mutant_of(source, operator, 2)
    assert mutants.boundary_probe(m)[1] == met


def test_only_a_moved_bound_has_a_probe():
    assert all(mutants.boundary_probe(m) is None for m in mutants.generate(SCAN)
               if m.operator not in mutants.BOUNDARY_OPERATORS)
    assert mutants.score([mutants.MutantResult(_mutant_of(SCAN, "<= for <", 14), "equivalent", "",
                                               mutants.BY_BOUNDARY),
                          mutants.MutantResult(_mutant_of(SCAN, "<= for <", 16), "killed", "", "verdict")]) == (1, 1, 1.0)
    assert mutants.score([mutants.MutantResult(_mutant_of(SCAN, "<= for <", 14), "equivalent", "",
                                               mutants.BY_BOUNDARY),
                          mutants.MutantResult(_mutant_of(SCAN, "<= for <", 16), "killed", "",
                                               "verdict")],
                         strict=True) == (1, 2, 0.5)


@pytest.mark.parametrize("name, mutant",
                         [("softmax", "M9"), ("rmsnorm", "M1"), ("exclusive_scan", "M1"),
                          ("prefix_max", "M1"), ("rmsnorm_unfused", "M2")])
def test_a_row_guard_no_launch_of_its_spec_meets_is_equivalent_under_the_spec(name, mutant):
    """`row > rows` for `row >= rows`, where row is the block index and the grid has rows blocks
    (one of rmsnorm_unfused's five steps): on an H200 no checked size met it (the probe never
    stopped); the launch says none can."""
    spec = catalog.load(name)
    m = {m.id: m for m in mutants.generate(spec.source.read_text())}[mutant]
    why = mutants.unreachable_by_launch(m, spec)
    assert why is not None and "is never met" in why and "below the grid's R blocks" in why
    # these are the only mutants of the five specs it decides
    assert ([x.id for x in mutants.generate(spec.source.read_text()) if mutants.unreachable_by_launch(x, spec)] == [mutant])


def test_the_launch_decides_nothing_it_cannot_prove(tmp_path):
    """Another grid, a row index that changes, a bound that is not the grid's: no decision."""
    from dataclasses import replace

    spec = catalog.load("softmax")
    source = spec.source.read_text()
    m9 = {m.id: m for m in mutants.generate(source)}["M9"]
    assert (mutants.unreachable_by_launch(m9, replace(spec, launch=replace(spec.launch, grid=("ceil(R / 2)", "1", "1")))) is None)
    moved = source.replace("if (row >= rows) return;", "if (row >= rows) return;\n    row += 1;") \
        .replace("const int row = blockIdx.x;", "int row = blockIdx.x;")
    m = next(m for m in mutants.generate(moved) if m.operator == "> for >="
             and "row >= rows" in m.before)
    assert mutants.unreachable_by_launch(m, spec) is None
    tiled = catalog.load("tiled_matmul")
    assert not [m for m in mutants.generate(tiled.source.read_text())
                if mutants.unreachable_by_launch(m, tiled)]


def test_the_dry_run_names_the_launchs_equivalents(capsys):
    assert cli.main(["mutants", "softmax", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "equivalent (the launch)" in out and "its boundary (row == rows) is never met" in out


@pytest.mark.nvcc
def test_memcheck_also_runs_at_the_small_checked_sizes_clean_on_the_original(monkeypatch):
    """A bound that reads one element too far changes no result (the element meets a padded zero, or
    its output is never stored) and the sanitize size may not meet it: memcheck at every checked
    size of at most MEMCHECK_BYTES where the original is clean kills it there. A size where memcheck
    finds something on the original is left out; the 4096^3 check is too big to be one."""
    from kprof.findings import Finding
    from kprof.tools.sanitizers import checkers
    from kprof.tools.sanitizers.toolrun import ToolResult

    monkeypatch.setattr(api, "require_gpu", lambda tool: None)
    monkeypatch.setattr(launch, "run_kernels", lambda jobs,
                        timeout: [_fake_result(j, True) for j in jobs])
    memchecked = []

    def run_all(job, tools, settings, progress=None):
        (tool,) = tools
        mutant = "if (row <= M && col < N)" in Path(job.target.source).read_text()
        if tool == "memcheck":
            memchecked.append((job.target.name, dict(job.target.sizes)))
        found = tool == "memcheck" and (job.target.sizes.get("K") == 257
                                        or (mutant and job.target.sizes.get("M") == 127))
        f = Finding(tool, "out-of-bounds-read", job.target.entry, "tiled_matmul.cu", 18,
                    thread=None, block=None, count=1, message="read")
        return [ToolResult(tool, "findings" if found else "clean", [f] if found else [], 0.1)]

    monkeypatch.setattr(checkers, "run_all", run_all)
    report = corpora.run_mutants("tiled_matmul", jobs=2)
    original = [s for n, s in memchecked if n == "tiled_matmul"]
    assert ({"M": 4096, "N": 4096, "K": 4096} not in original
            and {"M": 127, "N": 131, "K": 97} in original)
    (write,) = [r for r in report.results if "if (row <= M && col < N)" in r.mutant.source]
    assert ((write.verdict, write.by) == ("killed", "memcheck")
            and "memcheck at M127-N131-K97" in write.why)
    # K=257 finds something on the original: no mutant is memchecked there
    assert not [s for n, s in memchecked if n != "tiled_matmul" and s.get("K") == 257]
    others = [r for r in report.results if r is not write and r.verdict != "equivalent"]
    # every verdict passed, memcheck clean on them
    assert others and all(r.verdict == "survived" for r in others)


@pytest.mark.parametrize("name, mutant", [("rmsnorm_onepass", "M37"), ("softmax_online", "M58")])
def test_a_grid_that_is_the_row_count_under_the_defines_decides_the_row_guard(name, mutant):
    """`where(FIT * WROWS * le(C, 32 * PER), cdiv(R, WROWS), R)` is R when WROWS is 0: the guard's
    boundary is never met, as where the grid is written R; with WROWS 8 it is not decided."""
    from dataclasses import replace

    spec = catalog.load(name)
    m = {m.id: m for m in mutants.generate(spec.source.read_text())}[mutant]
    why = mutants.unreachable_by_launch(m, spec)
    assert (why is not None and "which with the spec's defines is rows's R" in why
            and "400 sizes tried" in why)
    assert mutants.unreachable_by_launch(m, spec.with_defines({"WROWS": "8"})) is None
    assert (mutants.unreachable_by_launch(m, replace(spec, launch=replace(spec.launch, grid=("R + 1", "1", "1")))) is None)
    assert (not mutants._same_function("cdiv(R, 2)", "R", spec)
            and mutants._same_function("max(R, 1)", "R", spec))


def test_a_line_the_source_notes_as_equivalent_covers_only_its_moved_bounds():
    """`// kprof-mutants: equivalent: WHY` on a line: its bounds moved by one are equivalent, by the
    source's note, with the reason; a note without a reason is none, and no other operator's mutant
    is covered. The strict score counts them as survivors."""
    src = ("extern \"C\" __global__ void k(float* y, int rows, int n) {\n"
           "    if (rows <= 4) y[0] = 1.0f;  // kprof-mutants: equivalent: the larger body "
           "computes these rows too\n    if (n <= 8) y[1] = 2.0f + 1.0f;  // kprof-mutants: "
           "equivalent\n}\n")
    made = mutants.generate(src)
    noted = {m.id: mutants.note_of(m) for m in made if mutants.note_of(m)}
    assert ([m.line for m in made if m.id in noted] == [2]
            and set(noted.values()) == {"the larger body computes these rows too"})
    assert all(mutants.note_of(m) is None for m in made if m.line == 3)  # no reason: no note
    r = [mutants.MutantResult(m, "equivalent", "", mutants.BY_NOTE) for m in made if m.id in noted]
    r.append(mutants.MutantResult(made[-1], "killed", "", "verdict"))
    assert (mutants.score(r) == (1, 1, 1.0)
            and mutants.score(r, strict=True) == (1, 1 + len(noted), 1 / (1 + len(noted))))
    shipped = catalog.load("linear_bias_relu")
    assert [m.id for m in mutants.generate(shipped.source.read_text(), mutants.MAX_MUTANTS) if mutants.note_of(m)] == \
        ["M57", "M58", "M59", "M60"]  # the four dispatch thresholds, each one mutant
