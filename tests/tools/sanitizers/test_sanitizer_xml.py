"""compute-sanitizer's XML decoded into findings without a GPU, over real XML recorded on the H200
(tests/data/sanitizer, recorded by scripts/record_tool_output.py): each kind of record, the joins,
the notes."""

import json
from pathlib import Path

import pytest

from kprof.errors import UsageError
from kprof.tools.sanitizers import compute_sanitizer, sanitizer_xml

DATA = "sanitizer"


PROXY_HAZARD = """<ComputeSanitizerOutput><record><kind>Hazard</kind><what>
<text>Potential WAW hazard detected (missing fence.proxy.async.shared)</text>
<common><type>WAW</type><address>0x400</address><blockIdx><x>31</x><y>0</y><z>0</z></blockIdx></common>
<thread0><access>Write</access><threadIdx><x>0</x><y>0</y><z>0</z></threadIdx>
<where><func>probe</func><path>/p/proxy_fence.cu</path><line>43</line></where></thread0>
<thread1><access>Write</access><threadIdx><x>0</x><y>0</y><z>0</z></threadIdx>
<where><func>probe</func><path>/p/proxy_fence.cu</path><line>49</line></where></thread1>
</what></record></ComputeSanitizerOutput>"""


def _reversed_records(xml):
    import re

    records = re.findall(r"  <record>.*?</record>\n", xml, re.S)
    return xml[:xml.index("  <record>")] + "".join(reversed(records)) + "</ComputeSanitizerOutput>\n"


def load(data_dir, name, tool):
    xml = (data_dir / DATA / f"{name}.xml").read_text()
    result = data_dir / DATA / f"{name}.result.json"
    from kprof.launch.childresult import allocations_of

    allocations = allocations_of(json.loads(result.read_text())["allocations"]) if result.exists() else ()
    return sanitizer_xml.parse_xml(xml, tool, allocations)


def test_memcheck_oob_write_names_line_thread_block_and_buffer(data_dir):
    found, notes = load(data_dir, "rec_oob.memcheck", "memcheck")
    assert len(found) == 1
    f = found[0]
    assert (f.kind, f.kernel, f.line, f.thread, f.block, f.buffer) == (
        "out-of-bounds-write", "rec_oob", 4, (36, 0, 0), (1, 0, 0), "out")
    assert f.file.endswith("rec_oob.cu") and f.size == 4
    assert (f.detail == "immediately past the end of out: element 100 (out is 100 float32, 400 "
                        "bytes)")
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
    assert (f.kind == "race-raw" and f.block == (0, 0, 0) and f.thread == (1, 0, 0)
            and f.other.thread == (0, 0, 0))
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
    found, _ = sanitizer_xml.parse_xml(xml, "racecheck")
    assert len(found) == 1
    f = found[0]
    assert f.kind == "race-war" and f.count == 77 and f.block == (2, 1, 0) and f.thread == (3, 0, 0)
    assert f.lines() == {9, 12} and f.location() == "k.cu:12 / k.cu:9"


def test_initcheck_names_the_buffer(data_dir):
    found, _ = load(data_dir, "rec_uninit.initcheck", "initcheck")
    assert ([(f.kind, f.line, f.buffer, f.count) for f in found] == [("uninitialized-read", 4, "scratch", 100)])
    assert found[0].detail.startswith("at byte 0 of scratch")


def test_synccheck_divergent_barrier(data_dir):
    found, _ = load(data_dir, "rec_sync.synccheck", "synccheck")
    assert [(f.kind, f.line, f.count) for f in found] == [("barrier-divergence", 7, 32)]


def test_synccheck_2026_4_an_mbarrier_initialised_twice_is_a_sync_error_not_a_divergent_barrier(data_dir):
    """compute-sanitizer 2026.4 on an H200 (sanitizer_cases/mbarrier_double_init.cu, three of its 32
    records): "Barrier error" whose type says "Already initialized. Invalidate before
    reinitializing"."""
    found, _ = load(data_dir, "mbarrier_double_init.synccheck_2026_4", "synccheck")
    assert ({(f.kind, Path(f.file).name, f.line) for f in found} == {("sync-error", "mbarrier_double_init.cu", 14)})
    assert sum(f.count for f in found) == 3 and "mbarrier.inval" in found[0].detail
    assert "Already initialized" in found[0].message


def test_a_hardware_exception_says_which_one_the_record_names(data_dir):
    """A TMA box written past the block's shared memory (sanitizer_cases/tma_box_overflow.cu) on an
    H200: the hardware's "Out-of-range shared or local address" (an Imprecise record whose name is
    in <exception>), at the copy's line, under 2026.4 (three of its 4,099 records) as under
    2025.3.1."""
    found, _ = load(data_dir, "tma_box_overflow.memcheck_2026_4", "memcheck")
    assert ({(f.kind, Path(f.file).name, f.line) for f in found} == {("hardware-exception", "tma_box_overflow.cu", 24)})
    assert found[0].message == "the GPU raised an exception: Out-of-range shared or local address"


def test_a_recorded_missing_proxy_fence_is_a_race_at_the_write_and_the_copy_and_says_what_to_add(data_dir):
    """compute-sanitizer 2026.4's racecheck on an H200 (sanitizer_cases/missing_proxy_fence.cu; four
    of its 10,000 records): its XML says only "Potential WAW hazard detected"; the hazard's two
    sides are one thread, the zeroing write (line 19) and the bulk copy (line 25), which only the
    async proxy makes a hazard."""
    found, _ = load(data_dir, "missing_proxy_fence.racecheck_2026_4", "racecheck")
    assert {(f.kind, tuple(sorted(f.lines()))) for f in found} == {("race-waw", (19, 25))}
    # the records of other threads too
    assert all("fence.proxy.async.shared::cta" in f.detail for f in found)
    reordered, _ = sanitizer_xml.parse_xml(_reversed_records((data_dir / DATA / "missing_proxy_fence.racecheck_2026_4.xml")
                                                        .read_text()), "racecheck")
    # whichever record comes first
    assert [f.detail for f in reordered] == [f.detail for f in found]


def test_a_missing_proxy_fence_hazard_says_what_to_add():
    """2026.4's racecheck on threads' writes to shared memory then a bulk copy into it with no fence
    (the text it printed on an H200 for scripts/probes/proxy_fence.cu variant 3, as a hazard record
    in kprof's XML shape)."""
    found, _ = sanitizer_xml.parse_xml(PROXY_HAZARD, "racecheck")
    (f,) = found
    assert (f.kind, f.lines()) == ("race-waw", {43, 49})
    assert ("fence.proxy.async.shared::cta" in f.detail
            and "a barrier orders threads, not proxies" in f.detail)


@pytest.mark.parametrize("tool", compute_sanitizer.TOOLS)
def test_clean_recordings(data_dir, tool):
    found, notes = sanitizer_xml.parse_xml((data_dir / DATA / f"tiled_matmul.{tool}.xml").read_text(), tool)
    assert found == [] and notes == []


def test_not_sanitizer_xml():
    with pytest.raises(UsageError, match="not compute-sanitizer XML"):
        sanitizer_xml.parse_xml("<html/>", "memcheck")
    with pytest.raises(UsageError, match="not compute-sanitizer XML"):
        sanitizer_xml.parse_xml("garbage <", "memcheck")


def test_the_tools_own_internal_error_is_said_as_the_tools_not_as_an_access_of_the_programs():
    """On an H200 (compute-sanitizer 2025.3.1), racecheck with library kernels excluded wrote this
    record in a test that creates a half-precision nn.Linear: the tool's failure, not an invalid
    access of the test's."""
    xml = ("<?xml version='1.0'?><ComputeSanitizerOutput><record><kind>Error</kind><what><text>Internal Sanitizer "
           "Error: The Sanitizer failed to handle a hardware "
           "exception.</text></what></record></ComputeSanitizerOutput>")
    (f,), notes = sanitizer_xml.parse_xml(xml, "racecheck")
    assert (f.kind == "sanitizer-error" and "the tool's error, not the program's" in f.detail
            and notes == [])
    from kprof.findings import KINDS

    assert "sanitizer-error" in KINDS


def test_the_recorded_internal_error_of_racecheck_with_an_nvjet_gemm_excluded(data_dir):
    """The record itself, as 2025.3.1 saved it on an H200 (787eb2f, gpu-check.sh racelib): racecheck
    with kprof's library filters over the user suite's half nn.Linear tests (kind Sanitizer, level
    Error)."""
    (f,), notes = sanitizer_xml.parse_xml((data_dir / "programs" / "linear_half.racecheck-filtered.xml").read_text(),
                                     "racecheck")
    assert f.kind == "sanitizer-error" and notes == []


def test_the_tools_own_warning_is_a_note_not_a_finding(data_dir):
    """initcheck over a half GEMM's output read by .float() on an H200 (787eb2f): an uninitialized
    read (a record of the recording) and the tool's warning that its error buffer overflowed (kind
    Sanitizer, level Warning), which is no access of the program's."""
    found, notes = sanitizer_xml.parse_xml((data_dir / "programs" / "linear_half.initcheck.xml").read_text(), "initcheck")
    assert [f.kind for f in found] == ["uninitialized-read"]
    assert notes == ["initcheck's error buffer overflowed in a launch: records past it were "
                     "dropped (those kept show the same kind of access)"]
    other = ("<?xml version='1.0'?><ComputeSanitizerOutput><record><kind>Sanitizer</kind><level>Warning</level><what>"
             "<text>Warning: something new</text><error>something "
             "new</error></what></record></ComputeSanitizerOutput>")
    assert sanitizer_xml.parse_xml(other, "memcheck") == ([], ["memcheck warned: something new"])
