"""Several jobs in one child (kprof.launch.launch.run_batch,
kprof.tools.sanitizers.compute_sanitizer.run_batch and run_many,
kprof.tools.sanitizers.values.run_batch), on CPU: a clean report clears every job, anything else
sends each job the batch could not clear to a child of its own; each job is held to its own time
limit."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from helpers import child

from kprof import proc
from kprof.launch import launch
from kprof.tools.sanitizers import compute_sanitizer as san
from kprof.tools.sanitizers import values
from kprof.tools.sanitizers.toolrun import ERROR_EXITCODE, ToolResult

DATA = Path(__file__).parent.parent / "data" / "sanitizer"
CLEAN = (DATA / "tiled_matmul.memcheck.xml").read_text()
WITH_RECORD = (DATA / "rec_oob.memcheck.xml").read_text()


def _done(code=0, seconds=3.0, timed_out=False):
    return proc.Completed(("compute-sanitizer",), None if timed_out else code, "", "", seconds,
                          timed_out)


def _ok(seconds=0.5):
    return {"status": "ok", "phase": "done", "job_seconds": seconds}


@pytest.fixture
def batch_with(monkeypatch):
    """compute_sanitizer.run_batch over a stand-in child: writes ``xml`` where the tool would save
    it and returns ``(done, datas)``; records the jobs it was handed."""
    handed = []

    def use(xml, done, datas):
        def fake(jobs, *, timeout, wrapper):
            handed.append(list(jobs))
            if xml is not None:
                Path(wrapper[wrapper.index("--save") + 1]).write_text(xml)
            return done, [child(d) for d in datas]

        monkeypatch.setattr(launch, "run_batch", fake)
        return handed

    monkeypatch.setattr(proc, "find_tool", lambda name: "/usr/bin/compute-sanitizer")
    return use


def _jobs(n, tmp_path):
    from helpers import job_for

    from kprof.spec import catalog

    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(b"")
    return [job_for(catalog.load("vector_add"), cubin, {"N": 100 + i}) for i in range(n)]


def test_a_clean_report_clears_every_job_and_shares_the_tools_start(batch_with, tmp_path):
    handed = batch_with(CLEAN, _done(0, seconds=4.0), [_ok(0.5), _ok(1.5)])
    results = san.run_batch(_jobs(2, tmp_path), "memcheck")
    assert [r.status for r in results] == ["clean", "clean"]
    # each job's own time + half of the 2 s start
    assert [round(r.seconds, 3) for r in results] == [1.5, 2.5]
    assert all(not j.mode.verify and j.mode.poison for j in handed[0])  # the sanitizer's run mode


@pytest.mark.parametrize("xml, done, datas, why", [
    (WITH_RECORD, _done(ERROR_EXITCODE), [_ok(), _ok()], "a record: whose job is it?"),
    (CLEAN, _done(0), [_ok(), {"status": "error", "phase": "loaded", "job_seconds": 0.1}],
     "a job that failed"),
    (CLEAN, _done(3), [_ok(), {}], "a job the child never reached"),
    (CLEAN, _done(0), [_ok(), {"status": "started", "phase": "launch"}],
     "a job that did not finish"),
    (None, _done(0), [_ok(), _ok()], "no report"),
    (CLEAN, _done(ERROR_EXITCODE), [_ok(), _ok()], "the tool's error exit with nothing parsed"),
    (CLEAN, _done(timed_out=True), [_ok(), _ok()], "a time limit"),
    (CLEAN, _done(-9), [_ok(), _ok()], "a crash after the last job"),
])  # fmt: skip
def test_anything_but_a_clean_report_clears_no_job(batch_with, tmp_path, xml, done, datas, why):
    batch_with(xml, done, datas)
    assert san.run_batch(_jobs(2, tmp_path), "memcheck") is None, why


def test_run_many_runs_alone_each_job_the_batch_could_not_clear(monkeypatch, tmp_path):
    from kprof.tools.sanitizers import checkers
    from kprof.tools.sanitizers.checker import Settings

    alone = []
    monkeypatch.setattr(san, "run_tool", lambda job, tool,
                        **kw: alone.append(job.target.sizes["N"]) or
                        ToolResult(tool, "findings", [], 1.0))
    monkeypatch.setattr(values, "run", lambda job, **kw: alone.append(job.target.sizes["N"]) or
                        ToolResult("values", "findings", [], 1.0))
    monkeypatch.setattr(san, "run_batch", lambda jobs, tool, **kw: None)
    jobs = _jobs(3, tmp_path)
    assert [r.status for r in checkers.run_many(jobs, "racecheck", Settings())] == ["findings"] * 3
    assert alone == [100, 101, 102]
    alone.clear()
    monkeypatch.setattr(san, "run_batch", lambda jobs, tool,
                        **kw: [ToolResult(tool, "clean", [], 1.0)] * len(jobs))
    assert ([r.status for r in checkers.run_many(jobs, "racecheck", Settings())] == ["clean"] * 3
            and alone == [])
    # one job: its own child straight away, as before
    assert ([r.status for r in checkers.run_many(jobs[:1], "racecheck", Settings())] == ["findings"] and alone == [100])
    assert checkers.run_many([], "racecheck", Settings()) == []  # no job, no child
    # the values detector: each finished job's own result; only the others alone
    alone.clear()
    monkeypatch.setattr(values, "run_batch", lambda jobs,
                        **kw: [ToolResult("values", "clean", [], 1.0), None, None])
    assert ([r.status for r in checkers.run_many(jobs, "values", Settings())] == ["clean", "findings", "findings"])
    assert alone == [101, 102]


def test_values_batch_gives_each_finished_job_its_own_findings(monkeypatch, tmp_path):
    race = {"tool": "values", "kind": "race", "kernel": "vector_add", "file": None, "line": None,
            "thread": None,
            "block": None, "count": 3, "message": "differs between runs", "buffer": "c"}
    datas = [dict(_ok(0.2), findings=[race]), dict(_ok(0.3), findings=[]),
             {"status": "error", "phase": "device"}]
    monkeypatch.setattr(launch, "run_batch", lambda jobs,
                        **kw: (_done(3, seconds=2.0), [child(d) for d in datas]))
    got = values.run_batch(_jobs(3, tmp_path), scrub_cubin="scrub.cubin")
    assert [r and r.status for r in got] == ["findings", "clean", None]
    assert got[0].findings[0].kind == "race" and got[1].seconds == 0.3


def test_the_batch_child_runs_its_jobs_and_reports_each(tmp_path):
    """The real child, on a machine without a GPU: the first job ends in an error (no device), so
    the batch stops there; the second was never reached."""
    done, datas = launch.run_batch(_jobs(2, tmp_path), timeout=60)
    assert done.returncode == 3 and not done.timed_out, done.tail()
    assert datas[0].status == "error" and datas[0].job_seconds is not None and not datas[1].wrote


def test_each_job_of_a_batch_is_held_to_its_own_time_limit(monkeypatch, tmp_path):
    """A job that hangs is stopped at its own limit, not the whole batch's (jobs x limit)."""
    script = tmp_path / "hang.py"
    script.write_text("import json, sys, time\nplan = json.load(open(sys.argv[1]))\n"
                      "open(plan['progress'], 'a').write(f'0 "
                      "{time.monotonic():.3f}\\n')\ntime.sleep(60)\n")
    monkeypatch.setattr(launch, "batch_argv",
                        lambda manifest: [sys.executable, str(script), str(manifest)])
    t0 = time.monotonic()
    done, datas = launch.run_batch(_jobs(20, tmp_path), timeout=1.0)
    assert (done.timed_out and time.monotonic() - t0 < 15 and not any(d.wrote for d in datas)
            and len(datas) == 20)


def test_run_kernels_gives_each_job_its_result_and_runs_alone_what_the_child_did_not_finish(monkeypatch, tmp_path):
    """Several verifications in one child (kprof.launch.launch.run_kernels, the GPU suite's
    per-kernel sizes): a job that passed or failed its verdict is read from the batch; one the child
    never finished (its context broken by the job before, or it hung) runs again alone, and only
    that one."""
    jobs = _jobs(3, tmp_path)
    datas = [{**_ok(), "sizes": {"N": 100}, "checks": [{"name": "C", "ok": True}]}, {},
             {"status": "failed", "phase": "done", "job_seconds": 0.2, "sizes": {"N": 102},
              "checks": [{"ok": False}]}]
    monkeypatch.setattr(launch, "run_batch", lambda js, timeout,
                        keep_context=False: (_done(), [child(d) for d in datas]))
    alone = []

    def run_alone(job, *, timeout):
        alone.append(job.target.sizes)
        return launch._run_result(job, child(_ok(), sizes=dict(job.target.sizes)))

    monkeypatch.setattr(launch, "run_kernel", run_alone)
    results = launch.run_kernels(jobs, timeout=30)
    assert [r.ok for r in results] == [True, True, False] and alone == [jobs[1].target.sizes]
    assert [r.sizes for r in results] == [{"N": 100}, dict(jobs[1].target.sizes), {"N": 102}]
