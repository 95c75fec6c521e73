"""Where a kernel's cost sits line by line (kprof.diagnosis.lines): a cause placed where its own
cost was measured, the hottest lines, and where a limiting unit's work concentrates. Pure: pages
built here."""

from __future__ import annotations

from kprof.diagnosis import lines
from kprof.tools.nsight.sourcepage import COUNTER_COLUMNS, LineCounters, SourceLines


def _page(*rows: LineCounters,
          stalls: tuple[str, ...] = ("long_scoreboard", "barrier")) -> SourceLines:
    return SourceLines("k", rows, tuple(COUNTER_COLUMNS) + tuple(f"stall:{r}" for r in stalls))


A = LineCounters(file="/k.cu", line=5, text="s += x[i];", samples=80, executed=1000, threads=32000,
                 global_sectors=4000,
                 global_excess=100, stalls={"long_scoreboard": 70, "selected": 5},
                 sass=("LDG.E", "FADD"))
B = LineCounters(file="/k.cu", line=9, text="__syncthreads();", samples=20, executed=100,
                 threads=3200, stalls={"barrier": 20}, sass=("BAR.SYNC",))
C = LineCounters(file="/k.cu", line=12, text="y[i] = s;", samples=0, executed=50, threads=800,
                 global_sectors=400, global_excess=300, divergent=4, sass=("STG.E",))


def test_a_cause_is_placed_where_its_own_cost_was_measured_with_its_shares():
    page = _page(A, B, C)
    p = lines.place(page, "global_excess")
    assert p is not None and p.at.line == 12 and p.share == 0.75 and p.samples == 0.0
    line = lines.line_of(p, "the store", "excess L2 sectors")
    assert ((line.file, line.line) == ("/k.cu", 12)
            and "75% of the kernel's excess L2 sectors" in line.why)
    assert lines.place(page, "stall:barrier").at.line == 9
    assert lines.place(page, "lost_lanes").at.line == 12  # 32 x 50 - 800 idle lanes, the most
    assert (lines.place(page, "executed", where=lambda x: lines.does(x, lines.GLOBAL_LOAD_OPS)).at.line == 5)


def test_no_count_no_line():
    page = _page(A, B, C)
    assert lines.place(page, "local_sectors") is None  # counted, none anywhere
    assert lines.place(None, "samples") is None
    # not on the page
    assert lines.place(SourceLines("k", (A,), ("executed",)), "global_excess") is None
    assert (lines.unmeasured("no Source page").line == 0
            and lines.unmeasured("x").why.startswith("line not measured"))


def test_the_hottest_lines_with_their_reasons():
    hot = lines.hot(_page(A, B, C))
    # line 12 has no samples
    assert [(h.line, round(h.share, 2)) for h in hot] == [(5, 0.8), (9, 0.2)]
    # "selected" is an issuing warp: not a reason
    assert hot[0].reasons == (("long_scoreboard", 70 / 75),)
    assert hot[0].to_dict()["reasons"] == [["long_scoreboard", 70 / 75]]
    assert lines.hot(None) == []


def test_where_a_limiting_unit_works():
    page = _page(A, B, C)
    placed, what, relief = lines.concentration(page, "DRAM")
    assert placed.at.line == 5 and what == "global memory traffic" and "fuse" in relief
    placed, what, _ = lines.concentration(page, "latency")
    assert placed.at.line == 5 and what == "stall samples"
    shared = LineCounters(file="/k.cu", line=20, samples=40, executed=500, shared_wavefronts=9000,
                          sass=("LDS.128",))
    placed, what, relief = lines.concentration(_page(A, shared), "shared pipe")
    assert placed.at.line == 20 and what == "shared-memory accesses" and "register" in relief
    assert lines.concentration(None, "DRAM") is None


def test_a_tie_goes_to_the_line_where_warps_waited():
    """A local array written 17 times and read 17 times a thread: as many sectors on each line; the
    read is the wait."""
    store = LineCounters(file="/k.cu", line=12, samples=5, local_sectors=1700, sass=("STL",))
    load = LineCounters(file="/k.cu", line=16, samples=60, local_sectors=1700, sass=("LDL",))
    assert lines.place(_page(store, load), "local_sectors").at.line == 16
