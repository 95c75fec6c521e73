"""The compute-sanitizer wrapper without a GPU: argv, and the parser over real XML recorded on
the H200 (tests/data/sanitizer, recorded by scripts/record_tool_output.py)."""

import json
from pathlib import Path

import pytest
from helpers import child

from kprof import findings as findings_mod
from kprof.errors import UsageError
from kprof.findings import Extra
from kprof.proc import Completed
from kprof.tools import compute_sanitizer as sanitize

DATA = "sanitizer"


def load(data_dir, name, tool):
    xml = (data_dir / DATA / f"{name}.xml").read_text()
    result = data_dir / DATA / f"{name}.result.json"
    from kprof.launch.childresult import allocations_of

    allocations = allocations_of(json.loads(result.read_text())["allocations"]) if result.exists() else ()
    return sanitize.parse_xml(xml, tool, allocations)


def test_argv_per_tool():
    mem = sanitize.build_argv("/cs", "memcheck", "/t/m.xml")
    assert mem[:3] == ["/cs", "--tool", "memcheck"]
    for flag in (["--xml"], ["--save", "/t/m.xml"], ["--error-exitcode", "99"], ["--show-backtrace", "device"],
                 ["--check-exit-code", "no"], ["--leak-check", "full"], ["--padding", "256"]):
        assert " ".join(flag) in " ".join(mem)
    race = sanitize.build_argv("/cs", "racecheck", "/t/r.xml")
    assert "--racecheck-report all" in " ".join(race) and "--padding" not in race
    assert "--show-backtrace no" in " ".join(race)  # device frames broke the joining of its records
    assert "--show-backtrace device" in " ".join(sanitize.build_argv("/cs", "synccheck", "/t/s.xml"))
    assert "--padding 0" in " ".join(sanitize.build_argv("/cs", "memcheck", "x", padding=0))
    with pytest.raises(UsageError):
        sanitize.build_argv("/cs", "values", "x")


def test_memcheck_oob_write_names_line_thread_block_and_buffer(data_dir):
    found, notes = load(data_dir, "rec_oob.memcheck", "memcheck")
    assert len(found) == 1
    f = found[0]
    assert (f.kind, f.kernel, f.line, f.thread, f.block, f.buffer) == (
        "out-of-bounds-write", "rec_oob", 4, (36, 0, 0), (1, 0, 0), "out")
    assert f.file.endswith("rec_oob.cu") and f.size == 4
    assert f.detail == "immediately past the end of out: element 100 (out is 100 float32, 400 bytes)"
    # the runner died at the fault, so its own buffers leaked: not the kernel's leak
    assert any("kprof's own buffer" in n for n in notes)
    assert any("stopped the kernel at its first error" in n for n in notes)


def test_memcheck_with_padding_same_finding(data_dir):
    found, _ = load(data_dir, "rec_oob.memcheck_padding", "memcheck")
    assert [(f.kind, f.line, f.buffer) for f in found] == [("out-of-bounds-write", 4, "out")]


def test_identical_records_merge_with_count(data_dir):
    found, _ = load(data_dir, "fault.memcheck", "memcheck")
    assert len(found) == 1 and found[0].count == 32 and found[0].thread == (0, 0, 0)


def test_device_heap_leak(data_dir):
    found, _ = load(data_dir, "rec_leak.memcheck", "memcheck")
    assert [(f.kind, f.size) for f in found] == [("leak", 256)]
    assert "device heap" in found[0].detail


def test_racecheck_analysis_gives_both_lines(data_dir):
    found, _ = load(data_dir, "rec_race.racecheck_default", "racecheck")
    assert len(found) == 1
    f = found[0]
    assert f.kind == "race-raw" and (f.line, f.other.line) == (5, 6) and f.count == 1024
    assert f.other.access == "read" and f.lines() == {5, 6}


def test_racecheck_hazards_give_threads_and_block(data_dir):
    found, _ = load(data_dir, "rec_race.racecheck_all_trimmed", "racecheck")
    assert len(found) == 1
    f = found[0]
    assert f.kind == "race-raw" and f.block == (0, 0, 0) and f.thread == (1, 0, 0) and f.other.thread == (0, 0, 0)
    assert f.count == 5


def test_racecheck_join_analysis_with_hazard():
    xml = """<ComputeSanitizerOutput>
<record><kind>Hazard</kind><what><text>Potential WAR hazard detected</text><common><type>WAR</type>
<address>0x10</address><blockIdx><x>2</x><y>1</y><z>0</z></blockIdx></common>
<thread0><access>Read</access><threadIdx><x>3</x><y>0</y><z>0</z></threadIdx><where><func>k</func><path>/k.cu</path><line>12</line></where></thread0>
<thread1><access>Write</access><threadIdx><x>4</x><y>0</y><z>0</z></threadIdx><where><func>k</func><path>/k.cu</path><line>9</line></where></thread1>
</what></record>
<record><kind>Analysis</kind><level>Error</level><what><text>Race condition</text>
<source><direction>Read</direction><where><func>k</func><path>/k.cu</path><line>12</line></where></source>
<destination><direction>Write</direction><where><func>k</func><path>/k.cu</path><line>9</line></where><count>77</count></destination>
</what></record></ComputeSanitizerOutput>"""
    found, _ = sanitize.parse_xml(xml, "racecheck")
    assert len(found) == 1
    f = found[0]
    assert f.kind == "race-war" and f.count == 77 and f.block == (2, 1, 0) and f.thread == (3, 0, 0)
    assert f.lines() == {9, 12} and f.location() == "k.cu:12 / k.cu:9"


def test_initcheck_names_the_buffer(data_dir):
    found, _ = load(data_dir, "rec_uninit.initcheck", "initcheck")
    assert [(f.kind, f.line, f.buffer, f.count) for f in found] == [("uninitialized-read", 4, "scratch", 100)]
    assert found[0].detail.startswith("at byte 0 of scratch")


def test_synccheck_divergent_barrier(data_dir):
    found, _ = load(data_dir, "rec_sync.synccheck", "synccheck")
    assert [(f.kind, f.line, f.count) for f in found] == [("barrier-divergence", 7, 32)]


def test_synccheck_2026_4_an_mbarrier_initialised_twice_is_a_sync_error_not_a_divergent_barrier(data_dir):
    """compute-sanitizer 2026.4 on an H200 (sanitizer_cases/mbarrier_double_init.cu, three of its 32 records):
    "Barrier error" whose type says "Already initialized. Invalidate before reinitializing"."""
    found, _ = load(data_dir, "mbarrier_double_init.synccheck_2026_4", "synccheck")
    assert {(f.kind, Path(f.file).name, f.line) for f in found} == {("sync-error", "mbarrier_double_init.cu", 14)}
    assert sum(f.count for f in found) == 3 and "mbarrier.inval" in found[0].detail
    assert "Already initialized" in found[0].message


def test_a_hardware_exception_says_which_one_the_record_names(data_dir):
    """A TMA box written past the block's shared memory (sanitizer_cases/tma_box_overflow.cu) on an H200: the
    hardware's "Out-of-range shared or local address" (an Imprecise record whose name is in <exception>), at the
    copy's line, under 2026.4 (three of its 4,099 records) as under 2025.3.1."""
    found, _ = load(data_dir, "tma_box_overflow.memcheck_2026_4", "memcheck")
    assert {(f.kind, Path(f.file).name, f.line) for f in found} == {("hardware-exception", "tma_box_overflow.cu", 24)}
    assert found[0].message == "the GPU raised an exception: Out-of-range shared or local address"


PROXY_HAZARD = """<ComputeSanitizerOutput><record><kind>Hazard</kind><what>
<text>Potential WAW hazard detected (missing fence.proxy.async.shared)</text>
<common><type>WAW</type><address>0x400</address><blockIdx><x>31</x><y>0</y><z>0</z></blockIdx></common>
<thread0><access>Write</access><threadIdx><x>0</x><y>0</y><z>0</z></threadIdx>
<where><func>probe</func><path>/p/proxy_fence.cu</path><line>43</line></where></thread0>
<thread1><access>Write</access><threadIdx><x>0</x><y>0</y><z>0</z></threadIdx>
<where><func>probe</func><path>/p/proxy_fence.cu</path><line>49</line></where></thread1>
</what></record></ComputeSanitizerOutput>"""


def test_a_recorded_missing_proxy_fence_is_a_race_at_the_write_and_the_copy_and_says_what_to_add(data_dir):
    """compute-sanitizer 2026.4's racecheck on an H200 (sanitizer_cases/missing_proxy_fence.cu; four of its 10,000
    records): its XML says only "Potential WAW hazard detected"; the hazard's two sides are one thread, the zeroing
    write (line 19) and the bulk copy (line 25), which only the async proxy makes a hazard."""
    found, _ = load(data_dir, "missing_proxy_fence.racecheck_2026_4", "racecheck")
    assert {(f.kind, tuple(sorted(f.lines()))) for f in found} == {("race-waw", (19, 25))}
    assert all("fence.proxy.async.shared::cta" in f.detail for f in found)  # the records of other threads too
    reordered, _ = sanitize.parse_xml(_reversed_records((data_dir / DATA / "missing_proxy_fence.racecheck_2026_4.xml")
                                                        .read_text()), "racecheck")
    assert [f.detail for f in reordered] == [f.detail for f in found]  # whichever record comes first


def _reversed_records(xml):
    import re

    records = re.findall(r"  <record>.*?</record>\n", xml, re.S)
    return xml[:xml.index("  <record>")] + "".join(reversed(records)) + "</ComputeSanitizerOutput>\n"


def test_a_missing_proxy_fence_hazard_says_what_to_add():
    """2026.4's racecheck on threads' writes to shared memory then a bulk copy into it with no fence (the text it
    printed on an H200 for scripts/probes/proxy_fence.cu variant 3, as a hazard record in kprof's XML shape)."""
    found, _ = sanitize.parse_xml(PROXY_HAZARD, "racecheck")
    (f,) = found
    assert (f.kind, f.lines()) == ("race-waw", {43, 49})
    assert "fence.proxy.async.shared::cta" in f.detail and "a barrier orders threads, not proxies" in f.detail


@pytest.mark.parametrize("tool", sanitize.TOOLS)
def test_clean_recordings(data_dir, tool):
    found, notes = sanitize.parse_xml((data_dir / DATA / f"tiled_matmul.{tool}.xml").read_text(), tool)
    assert found == [] and notes == []


def test_not_sanitizer_xml():
    with pytest.raises(UsageError, match="not compute-sanitizer XML"):
        sanitize.parse_xml("<html/>", "memcheck")
    with pytest.raises(UsageError, match="not compute-sanitizer XML"):
        sanitize.parse_xml("garbage <", "memcheck")


def test_buffer_mapping_before_start_and_inside():
    allocs = [findings_mod.Allocation("x", 0x1000, 400, "float32", (100,)),
              findings_mod.Allocation("y", 0x1200, 400, "float32", (100,))]
    assert findings_mod.buffer_detail(0x1000 - 4, allocs) == (
        "x", "4 bytes before the start of x (x is 100 float32, 400 bytes)")
    name, text = findings_mod.buffer_detail(0x1208, allocs)
    assert name == "y" and text.startswith("at byte 8 of y (element 2;")
    name, text = findings_mod.buffer_detail(0x1000 + 400 + 12, allocs)
    assert name == "x" and text.startswith("12 bytes past the end of x: element 103")


def completed(rc=0, timed_out=False):
    return Completed(("cs",), None if timed_out else rc, "", "", 1.0, timed_out)


def test_classify_outcomes():
    ran = child(phase="launched", status="ok")
    assert sanitize.classify("memcheck", completed(0), ran, [], [], 10, True).status == "clean"
    # A target that never started leaves an empty XML: never call that clean.
    never = child(phase="start", status="error", error={"message": "ModuleNotFoundError: kprof"})
    r = sanitize.classify("memcheck", completed(1), never, [], [], 10, True)
    assert r.status == "tool-error" and "did not run" in r.message
    r = sanitize.classify("racecheck", completed(timed_out=True), child(phase="launch"), [], [], 10, False)
    assert r.status == "timeout" and "smaller --size" in r.message
    r = sanitize.classify("memcheck", completed(-11), child(phase="launch"), [], [], 10, False)
    assert r.status == "tool-error" and "SIGSEGV" in r.message
    crashed = child(phase="launch", status="error", error={"message": "CUDA_ERROR_ILLEGAL_ADDRESS"})
    assert sanitize.classify("initcheck", completed(0), crashed, [], [], 10, True).status == "target-error"
    assert sanitize.classify("memcheck", completed(99), ran, [], [], 10, True).status == "tool-error"


def test_json_and_sarif(data_dir):
    found, notes = load(data_dir, "rec_race.racecheck_default", "racecheck")
    result = sanitize.ToolResult("racecheck", "findings", found, 1.5, "", notes)
    clean = sanitize.ToolResult("memcheck", "clean", [], 1.0)
    data = findings_mod.to_json([clean, result], "rec_race")
    assert data["version"] == 1 and data["clean"] is False and len(data["findings"]) == 1
    assert data["findings"][0]["kind"] == "race-raw" and data["findings"][0]["other"]["line"] == 6
    assert [t["status"] for t in data["tools"]] == ["clean", "findings"]
    json.dumps(data)
    sarif = findings_mod.to_sarif([clean, result], "0.1.0", root="/work/main")
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    assert run["tool"]["driver"]["rules"][0]["id"] == "race-raw"
    res = run["results"][0]
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "tests/data/kernels/rec_race.cu"
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 5
    assert res["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == 6
    assert run["invocations"] == [{"executionSuccessful": True, "toolExecutionNotifications": []}]


def test_sarif_says_which_tools_checked_nothing_or_failed():
    """No results in SARIF must not read as clean when a tool saw no CUDA call or did not finish."""
    unseen = sanitize.ToolResult("memcheck", "not-checked", [], 1.0, "memcheck saw no CUDA call of the program")
    hung = sanitize.ToolResult("racecheck", "timeout", [], 60.0, "did not finish within 60 s")
    clean = sanitize.ToolResult("initcheck", "clean", [], 1.0)
    (invocation,) = findings_mod.to_sarif([unseen, hung, clean], "0.1.0")["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    notes = invocation["toolExecutionNotifications"]
    assert [(n["level"], n["descriptor"]["id"], n["properties"]["tool"]) for n in notes] == [
        ("warning", "not-checked", "memcheck"), ("error", "timeout", "racecheck")]
    assert notes[0]["message"]["text"] == "memcheck: not-checked: memcheck saw no CUDA call of the program"


def test_cli_from_xml(capsys, data_dir, tmp_path):
    from kprof.commands import cli

    sarif = tmp_path / "out.sarif"
    code = cli.main(["sanitize", "--from-xml", str(data_dir / DATA / "rec_oob.memcheck.xml"), "--tool", "memcheck",
                     "--allocations", str(data_dir / DATA / "rec_oob.memcheck.result.json"), "--sarif", str(sarif)])
    out, err = capsys.readouterr()
    assert code == 1 and "out-of-bounds-write" in out and "rec_oob.cu:4" in out and "(36,0,0)" in out
    assert "immediately past the end of out" in out
    assert json.loads(sarif.read_text())["runs"][0]["results"][0]["ruleId"] == "out-of-bounds-write"
    code = cli.main(["sanitize", "--from-xml", str(data_dir / DATA / "tiled_matmul.memcheck.xml"), "--tool", "memcheck", "--json"])
    out, _ = capsys.readouterr()
    assert code == 0 and json.loads(out)["findings"] == []


@pytest.mark.parametrize(
    "argv, message",
    [
        (["sanitize", "--from-xml", "x.xml"], "--from-xml x.xml: no such file"),
        (["sanitize", "--from-xml", "nope.xml", "--tool", "memcheck"], "--from-xml nope.xml"),
        (["sanitize"], "name a kernel or spec to sanitize"),
        (["sanitize", "tiled_matmul", "--tool", "helgrind"], "unknown tool 'helgrind'"),
        (["sanitize", "tiled_matmul", "--timeout", "-1"], "--timeout -1"),
        (["sanitize", "tiled_matmul", "--memcheck-padding", "-1"], "--memcheck-padding -1"),
        (["cases", "no_such_case"], "unknown kernel 'no_such_case'"),
    ],
)
def test_sanitize_cli_errors(capsys, argv, message):
    from kprof.commands import cli

    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


def test_a_finding_inside_a_cuda_header_goes_to_the_users_call(data_dir):
    """NVIDIA's illegal_syncwarp, as examples/syncwarp_mask.cu: synccheck stops inside __syncwarp, in the CUDA
    header (sm_30_intrinsics.hpp:110). Recorded on an H200 with compute-sanitizer 2025.3.1 (2026.4 writes the
    same): with device frames, the finding is at the user's __syncwarp on line 16 of their file, in their
    kernel, the header named as where the call was inlined from; without them, it stays in the header."""
    xml = (data_dir / "sanitizer" / "syncwarp_mask.synccheck_device.xml").read_text()
    (f,), _ = sanitize.parse_xml(xml, "synccheck")
    assert (f.kernel, Path(f.file).name, f.line, f.count) == ("half_mask", "syncwarp_mask.cu", 16, 3)
    assert f.kind == "invalid-warp-sync" and f.extra.inlined == "__syncwarp at sm_30_intrinsics.hpp:110"
    assert f.extra.reported_at.endswith("/include/sm_30_intrinsics.hpp:110")
    assert "inlined into this line" in f.detail
    bare = (data_dir / "sanitizer" / "syncwarp_mask.synccheck_no.xml").read_text()
    (g,), _ = sanitize.parse_xml(bare, "synccheck")
    assert (g.kernel, Path(g.file).name, g.line) == ("__syncwarp", "sm_30_intrinsics.hpp", 110) and g.extra == Extra()


@pytest.mark.parametrize("path, header", [
    ("/usr/local/cuda/targets/x86_64-linux/include/sm_30_intrinsics.hpp", True),
    ("/usr/local/cuda-12.4/include/crt/sm_70_rt.hpp", True),
    ("/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/include/cuda_fp16.hpp", True),
    ("/home/me/cuda_kernels/include/tile.cuh", False),
    ("/work/main/examples/syncwarp_mask.cu", False),
    (None, False),
])
def test_which_paths_are_the_toolkits_headers(path, header):
    from kprof.tools.hostframes import is_cuda_header

    assert is_cuda_header(path) is header


def test_the_tools_own_internal_error_is_said_as_the_tools_not_as_an_access_of_the_programs():
    """On an H200 (compute-sanitizer 2025.3.1), racecheck with library kernels excluded wrote this record in a
    test that creates a half-precision nn.Linear: the tool's failure, not an invalid access of the test's."""
    xml = ("<?xml version='1.0'?><ComputeSanitizerOutput><record><kind>Error</kind><what><text>Internal Sanitizer "
           "Error: The Sanitizer failed to handle a hardware exception.</text></what></record></ComputeSanitizerOutput>")
    (f,), notes = sanitize.parse_xml(xml, "racecheck")
    assert f.kind == "sanitizer-error" and "the tool's error, not the program's" in f.detail and notes == []
    from kprof.findings import KINDS

    assert "sanitizer-error" in KINDS


def test_the_recorded_internal_error_of_racecheck_with_an_nvjet_gemm_excluded(data_dir):
    """The record itself, as 2025.3.1 saved it on an H200 (787eb2f, gpu-check.sh racelib): racecheck with kprof's
    library filters over the user suite's half nn.Linear tests (kind Sanitizer, level Error)."""
    (f,), notes = sanitize.parse_xml((data_dir / "programs" / "linear_half.racecheck-filtered.xml").read_text(),
                                     "racecheck")
    assert f.kind == "sanitizer-error" and notes == []


def test_the_tools_own_warning_is_a_note_not_a_finding(data_dir):
    """initcheck over a half GEMM's output read by .float() on an H200 (787eb2f): an uninitialized read (a record
    of the recording) and the tool's warning that its error buffer overflowed (kind Sanitizer, level Warning),
    which is no access of the program's."""
    found, notes = sanitize.parse_xml((data_dir / "programs" / "linear_half.initcheck.xml").read_text(), "initcheck")
    assert [f.kind for f in found] == ["uninitialized-read"]
    assert notes == ["initcheck's error buffer overflowed in a launch: records past it were dropped (those kept show "
                     "the same kind of access)"]
    other = ("<?xml version='1.0'?><ComputeSanitizerOutput><record><kind>Sanitizer</kind><level>Warning</level><what>"
             "<text>Warning: something new</text><error>something new</error></what></record></ComputeSanitizerOutput>")
    assert sanitize.parse_xml(other, "memcheck") == ([], ["memcheck warned: something new"])


@pytest.mark.parametrize(("printed", "version"), [
    ("NVIDIA (R) Compute Sanitizer\nCopyright (c) 2020-2025 NVIDIA Corporation\nVersion 2025.3.1.0 (build 36400806) "
     "(public-release)", "2025.3.1"),
    ("Version 2026.4.0.0 (build 1) (public-release)", "2026.4.0"),
    ("no version here", ""),
])
def test_the_tools_version_is_read_from_what_it_prints(tmp_path, printed, version):
    exe = tmp_path / "compute-sanitizer"
    exe.write_text(f"#!/bin/sh\nprintf '{printed}\\n'\n")
    exe.chmod(0o755)
    assert sanitize.version(exe) == version
    assert sanitize.version(tmp_path / "absent") == ""


def test_a_report_of_more_records_than_the_cap_is_read_to_the_cap_with_a_note(tmp_path, monkeypatch):
    """A report of 200,000 distinct records cost 45 s (parsed twice, each record placed): it is parsed once, up to
    MAX_RECORDS records (the rest of the text not parsed), and a note says how many the report holds."""
    import re

    from kprof.tools import compute_sanitizer as cs

    text = (Path(__file__).resolve().parent.parent / "data" / "sanitizer" / "rec_oob.memcheck.xml").read_text()
    rec = re.search(r"<record>.*?</record>", text, re.S).group(0)
    many = [rec.replace("<line>4</line>", f"<line>{4 + i}</line>") for i in range(50)]
    (tmp_path / "r.xml").write_text("<ComputeSanitizerOutput>\n" + "\n".join(many) + "\n</ComputeSanitizerOutput>\n")
    monkeypatch.setattr(cs, "MAX_RECORDS", 10)
    result = cs.from_xml(tmp_path / "r.xml", None)
    assert result.tool == "memcheck" and {f.line for f in result.findings} == set(range(4, 14))
    assert any("holds 50 records; kprof read the first 10" in n for n in result.notes), result.notes
    findings, notes = cs.parse_xml((tmp_path / "r.xml").read_text(), "memcheck")
    assert len({f.line for f in findings}) == 10 and any("holds 50 records" in n for n in notes)
    assert len(cs.records((tmp_path / "r.xml").read_text())) == 50  # uncapped where a caller asks for every record
