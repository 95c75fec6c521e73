"""Nsight Compute's Source page read into each source line's measured counters
(kprof.tools.nsight.sourcepage), and ncu.source_pages's run over a saved report, with a stand-in ncu
printing a page."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kprof.tools.nsight import ncu, sourcepage

HEADER = ('"Line No","Source","Address","Source","Warp Stall Sampling (All Samples)",'
          '"Warp Stall Sampling (Not-issued Samples)","Instructions Executed","Thread Instructions '
          'Executed","Divergent Branches","L2 Theoretical Sectors Global Excessive","L2 '
          'Theoretical Sectors Global","L1 Wavefronts Shared '
          'Excessive","stall_long_sb","stall_barrier","stall_long_sb (Not Issued)"')

# two kernels; the first prints its file from line 1 and a header after it; numbers with thousands
# separators
PAGE = f'''==PROF== Connected to process 1
"Kernel Name","copy_uncoalesced"
{HEADER}
"1","#include ""h.cuh""","-","","0","0","0","0","0","0","0","0","0","0","0"
"2","extern ""C"" __global__ void copy(float* out, const float* in_, int n) {{","-","","0","0","0","0","0","0","0","0","0","0","0"
"3","  int row = threadIdx.x;","-","","12","3","1,024","32,768","0","0","0","0","0","0","0"
"","","0x7f0010","S2R R0, SR_TID.X","12","3","1024","32768","0","0","0","0","0","0","0"
"4","  out[row * n] = in_[row * n];","-","","1,988","1,900","2,048","65,536","0","114,688","131,072","0","1,700","0","1,650"
"","","0x7f0020","LDG.E R5, desc[UR4][R2.64]","1000","990","1024","32768","0","57344","65536","0","1700","0","1650"
"","","0x7f0030","@!P0 STG.E desc[UR4][R6.64], R5","988","910","1024","32768","0","57344","65536","0","0","0","0"
"5","}}","-","","0","0","0","0","0","0","0","0","0","0","0"
"1","#define H 1","-","","0","0","0","0","0","0","0","0","0","0","0"
"2","__device__ int h() {{ return H; }}","-","","4","0","8","256","0","0","0","0","0","0","0"
"Kernel Name","second"
{HEADER}
"File Path","/src/second.cu"
"7","  __syncthreads();","-","","50","50","64","2048","0","0","0","0","0","50","0"
"9","  if (threadIdx.x & 1) {{","-","","5","2","64","1024","32","0","0","0","0","0","0"
'''


def test_a_page_of_two_kernels_reads_into_each_lines_counters():
    first, second = sourcepage.parse(PAGE)
    assert first.kernel == "copy_uncoalesced" and second.kernel == "second"
    by = {x.line: x for x in first.lines}
    # lines 1 and 5: nothing ran
    assert sorted(by) == [2, 3, 4] and all(x.file.startswith("#") for x in first.lines)
    hot = by[4]
    assert (hot.samples, hot.not_issued, hot.executed, hot.threads) == (1988, 1900, 2048, 65536)
    assert (hot.global_excess, hot.global_sectors) == (114688, 131072)
    # "(Not Issued)" left out
    assert hot.stalls == {"long_scoreboard": 1700} and hot.sass == ("LDG.E", "STG.E")
    # the header, printed after the .cu from 1
    assert by[2].file == "#1" and by[2].line == 2 and by[2].samples == 4
    assert {"samples", "executed", "global_excess", "stall:barrier"} <= set(first.columns)
    sync, branch = second.lines
    assert (sync.file == "/src/second.cu" and sync.stalls == {"barrier": 50}
            and branch.divergent == 32)
    assert branch.count("lost_lanes") == 32 * 64 - 1024 and sync.count("stall:barrier") == 50


def test_unnamed_files_are_matched_to_the_sources_by_their_text():
    (first, _) = sourcepage.parse(PAGE)
    named = sourcepage.name_files(first, {
        "/k/copy.cu": ('#include "h.cuh"',
                       'extern "C" __global__ void copy(float* out, const float* in_, int n) {',
                       "  int row = threadIdx.x;", "  out[row * n] = in_[row * n];", "}"),
        "/k/h.cuh": ("#define H 1", "__device__ int h() { return H; }"),
        "/k/other.cu": ("int x;",)})
    assert [(x.file, x.line) for x in named.lines] == [("/k/copy.cu", 3), ("/k/copy.cu", 4),
                                                       ("/k/h.cuh", 2)]
    # no match: kept unnamed
    assert sourcepage.name_files(first, {"/k/other.cu": ("int x;",)}).lines[0].file == "#0"


def test_a_page_survives_its_json():
    (first, _) = sourcepage.parse(PAGE)
    again = sourcepage.SourceLines.from_dict(first.to_dict())
    assert again == first


def test_text_that_is_no_page_gives_no_kernels():
    assert sourcepage.parse("") == [] and sourcepage.parse("==ERROR== no such file\n") == []


def _stand_in(tmp_path, body: str, code: int = 0):
    exe = tmp_path / "ncu"
    exe.write_text(f"#!/bin/sh\ncat <<'EOF'\n{body}EOF\nexit {code}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


def test_source_pages_runs_ncu_over_the_report_and_reads_its_page(tmp_path):
    report = tmp_path / "k.ncu-rep"
    report.write_bytes(b"report")
    exe = _stand_in(tmp_path, PAGE)
    pages = ncu.source_pages(exe, report)
    assert pages is not None and [p.kernel for p in pages] == ["copy_uncoalesced", "second"]
    assert sourcepage.argv(exe, report)[-4:] == ["--page", "source", "--print-source", "cuda,sass"]


def test_no_report_or_a_failing_ncu_is_no_page(tmp_path):
    assert ncu.source_pages(_stand_in(tmp_path, PAGE), tmp_path / "missing.ncu-rep") is None
    report = tmp_path / "k.ncu-rep"
    report.write_bytes(b"report")
    assert ncu.source_pages(_stand_in(tmp_path, "==ERROR== bad report\n", code=1), report) is None
    assert os.path.exists(report)


def test_kprofs_profile_asks_for_the_source_counters_with_a_report():
    argv = ncu.build_argv("ncu", "k", report="/tmp/k.ncu-rep")
    assert argv[argv.index("--section") + 1] == "SourceCounters" and "--import-source" in argv
    # the raw page printed: nothing to read lines from
    assert "--section" not in ncu.build_argv("ncu", "k")


def test_a_page_kprof_cannot_read_costs_the_lines_not_the_profile(tmp_path, monkeypatch):
    report = tmp_path / "k.ncu-rep"
    report.write_bytes(b"report")

    def broken(text):
        raise IndexError("a layout kprof does not know")

    monkeypatch.setattr(sourcepage, "parse", broken)
    assert ncu.source_pages(_stand_in(tmp_path, PAGE), report) is None


def test_line_rows_left_blank_take_their_instructions_counters():
    # a cuda,sass page whose CUDA line rows print no counters: each line gets the sum of the
    # instructions under it
    page = f'''"Kernel Name","blank_lines"
{HEADER}
"3","  int row = threadIdx.x;","-","","","","","","","","","","","",""
"","","0x10","S2R R0, SR_TID.X","12","3","1024","32768","0","0","0","0","0","0","0"
"4","  out[row * n] = in_[row * n];","-","","","","","","","","","","","",""
"","","0x20","LDG.E R5, desc[UR4][R2.64]","1000","990","1024","32768","0","57344","65536","0","1700","0","1650"
"","","0x30","STG.E desc[UR4][R6.64], R5","988","910","1024","32768","0","57344","65536","0","0","0","0"
'''
    (only,) = sourcepage.parse(page)
    by = {x.line: x for x in only.lines}
    assert (by[3].samples, by[3].executed) == (12, 1024)
    assert ((by[4].samples, by[4].global_excess, by[4].stalls) == (1988, 114688, {"long_scoreboard": 1700}))
    assert by[4].sass == ("LDG.E", "STG.E")


# Pages Nsight Compute 2025.3.1 printed on an H100 (tests/data/ncu/pages/,
# docs/results/2026-12-07-h100-22cfeae-sourcepages/)
def _recorded(data_dir, case):
    import gzip

    return gzip.decompress((data_dir / "ncu" / "pages" / f"{case}.source-cuda-sass.csv.gz").read_bytes()).decode()


def test_every_recorded_page_reads_as_one_kernel_a_launch(data_dir):
    pages = {p.name.split(".")[0]: sourcepage.parse(_recorded(data_dir, p.name.split(".")[0]))
             for p in (data_dir / "ncu" / "pages").glob("*.csv.gz")}
    assert len(pages) == 21
    # one launch of start, then 31 of add_one, each its own section
    launches = pages.pop("launch_overhead")
    assert [p.kernel for p in launches] == ["start"] + ["add_one"] * 31
    for case, got in pages.items():
        assert len(got) == 1 and got[0].lines and got[0].total("samples") > 0, case
        assert ({"samples", "executed", "threads", "global_excess", "local_sectors", "shared_excess"} <= set(got[0].columns))


def test_a_launch_over_two_files_is_one_kernel_with_the_headers_line(data_dir):
    # global_atomics: the atomic's instructions are counted on device_atomic_functions.hpp:107, a
    # section of its own
    (page,) = sourcepage.parse(_recorded(data_dir, "global_atomics"))
    files = {Path(x.file).name for x in page.lines}
    assert files == {"device_atomic_functions.hpp", "global_atomics.cu"}
    atomic = next(x for x in page.lines if x.line == 107)
    assert "REDG.E.ADD.STRONG.GPU" in atomic.sass and atomic.samples == 442077
    # no column printed: measured zero
    assert page.has("local_sectors") and page.total("local_sectors") == 0


def test_a_barriers_waits_are_counted_on_its_line_not_the_next_instructions(data_dir):
    # ncu samples a warp waiting at BAR.SYNC on the instruction after it (the loop's increment, line
    # 7)
    (page,) = sourcepage.parse(_recorded(data_dir, "barrier_in_loop"))
    by = {x.line: x for x in page.lines}
    assert "BAR.SYNC.DEFER_BLOCKING" in by[9].sass
    assert by[9].stalls["barrier"] >= 79254 and by[7].stalls.get("barrier", 0) == 0
    assert page.total("samples") == 139827  # moved, not made


def test_a_headers_inlined_line_is_counted_at_the_users_call():
    page = sourcepage.SourceLines("k", (
        sourcepage.LineCounters(file="/usr/local/cuda/targets/x86_64-linux/include/device_atomic_functions.hpp",
                                line=107, samples=400, executed=3, stalls={"long_scoreboard": 300},
                                sass=("REDG.E.ADD",)),
        sourcepage.LineCounters(file="/src/k.cu", line=6, samples=100, executed=5, sass=("LDG.E",)),
        sourcepage.LineCounters(file="/src/k.cu", line=5, samples=10, executed=2)), ("samples", "executed"))
    sites = {("/usr/local/cuda-13.0/bin/../targets/x86_64-linux/include/device_atomic_functions.hpp", 107):
             frozenset({("/src/k.cu", 6)})}
    folded = sourcepage.fold_inlined(page, sites, keep=lambda f: f.endswith("k.cu"))
    by = {(Path(x.file).name, x.line): x for x in folded.lines}
    assert set(by) == {("k.cu", 6), ("k.cu", 5)}
    six = by[("k.cu", 6)]
    assert ((six.samples, six.executed, six.stalls, six.sass) == (500, 8, {"long_scoreboard": 300}, ("LDG.E", "REDG.E.ADD")))
    assert six.inlined == ("device_atomic_functions.hpp:107",)
    # cannot be split: stays
    two_sites = {k: frozenset({("/src/k.cu", 6), ("/src/k.cu", 9)}) for k in sites}
    assert sourcepage.fold_inlined(page, two_sites, keep=lambda f: f.endswith("k.cu")) == page
