"""kprof history's and kprof compare's text, and the cheat corpus's list."""

from kprof.results import render_bench
from kprof.results.history import RunChange


def test_an_empty_history_names_its_store():
    assert (render_bench.history_table([], "/data/h.sqlite") == "no bench results yet in "
                                                                "/data/h.sqlite")


def test_compare_shows_microseconds_the_signed_change_and_the_verdict():
    rows = [RunChange("vector_add", {"sizes": {"N": 1024}}, 10e-6, 8e-6, -0.2, "faster")]
    text = render_bench.compare_table("run-a", "run-b", rows)
    assert text.startswith("before: run-a\nafter:  run-b\n")
    line = text.splitlines()[-1]
    assert ("vector_add" in line and "N=1024" in line and "10.0" in line and "8.0" in line
            and "-20.0%" in line)
    assert line.rstrip().endswith("faster")


def test_a_long_exploit_is_cut_in_the_cheat_list():
    text = render_bench.bench_cases_list([{"name": "skip_work", "exploit": "x" * 200,
                                           "catch": ["work", "output"]}])
    assert "x" * 67 + "..." in text and "x" * 68 not in text and "work, output" in text
