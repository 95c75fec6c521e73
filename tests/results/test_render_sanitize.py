"""kprof sanitize's text: a tool a line, what it checked and which compute-sanitizer, and an honest
last line when nothing was found but not everything was checked."""

from kprof.results import render_sanitize
from kprof.tools.sanitizers.toolrun import ToolResult


def test_nothing_found_says_whether_everything_was_checked():
    clean = ToolResult("memcheck", "clean", [], 1.25, version="2026.4.0")
    assert render_sanitize.sanitize_report([clean]).splitlines()[-1] == "no findings"
    unchecked = ToolResult("values", "not-checked", [], 0.5, "saw no launch")
    text = render_sanitize.sanitize_report([clean, unchecked], ["PYTORCH_NO_CUDA_MEMORY_CACHING=1"])
    assert "values     NOT CHECKED" in text and "checked by compute-sanitizer 2026.4.0" in text
    assert "set for the program: PYTORCH_NO_CUDA_MEMORY_CACHING=1" in text
    assert text.splitlines()[-1] == "no findings, but not everything was checked"
    failed = ToolResult("racecheck", "timeout", [], 300.0, "hung", log="last line of the target")
    text = render_sanitize.sanitize_report([clean, failed])
    assert "| last line of the target" in text and text.endswith("no findings, but not every tool "
                                                                 "finished")


def test_the_checkers_table_says_how_each_runs():
    rows = [{"name": "memcheck", "summary": "out-of-bounds accesses",
             "needs": {"sanitizer": True, "alone": False, "not_for_tests": False,
                       "in_all_programs": True}},
            {"name": "values", "summary": "races by comparing runs",
             "needs": {"sanitizer": False, "alone": True, "not_for_tests": True,
                       "in_all_programs": False}}]
    text = render_sanitize.checkers_table(rows)
    assert ("kprof's own (no sanitizer), the GPU to itself, not for pytest tests, programs only "
            "when named" in text)
