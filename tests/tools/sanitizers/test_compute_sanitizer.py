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
from kprof.tools.sanitizers import compute_sanitizer as sanitize
from kprof.tools.sanitizers import sanitizer_xml

DATA = "sanitizer"


def load(data_dir, name, tool):
    xml = (data_dir / DATA / f"{name}.xml").read_text()
    result = data_dir / DATA / f"{name}.result.json"
    from kprof.launch.childresult import allocations_of

    allocations = allocations_of(json.loads(result.read_text())["allocations"]) if result.exists() else ()
    return sanitizer_xml.parse_xml(xml, tool, allocations)


def test_argv_per_tool():
    mem = sanitize.build_argv("/cs", "memcheck", "/t/m.xml")
    assert mem[:3] == ["/cs", "--tool", "memcheck"]
    for flag in (["--xml"], ["--save", "/t/m.xml"], ["--error-exitcode", "99"],
                 ["--show-backtrace", "device"],
                 ["--check-exit-code", "no"], ["--leak-check", "full"], ["--padding", "256"]):
        assert " ".join(flag) in " ".join(mem)
    race = sanitize.build_argv("/cs", "racecheck", "/t/r.xml")
    assert "--racecheck-report all" in " ".join(race) and "--padding" not in race
    assert "--show-backtrace no" in " ".join(race)  # device frames broke the joining of its records
    assert ("--show-backtrace device" in " ".join(sanitize.build_argv("/cs", "synccheck", "/t/s.xml")))
    assert "--padding 0" in " ".join(sanitize.build_argv("/cs", "memcheck", "x", padding=0))
    with pytest.raises(UsageError):
        sanitize.build_argv("/cs", "values", "x")




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
    assert (sanitize.classify("memcheck", completed(0), ran, [], [], 10, have_xml=True).status == "clean")
    # A target that never started leaves an empty XML: never call that clean.
    never = child(phase="start", status="error", error={"message": "ModuleNotFoundError: kprof"})
    r = sanitize.classify("memcheck", completed(1), never, [], [], 10, have_xml=True)
    assert r.status == "tool-error" and "did not run" in r.message
    r = sanitize.classify("racecheck", completed(timed_out=True), child(phase="launch"), [], [], 10,
                          have_xml=False)
    assert r.status == "timeout" and "smaller --size" in r.message
    r = sanitize.classify("memcheck", completed(-11), child(phase="launch"), [], [], 10,
                          have_xml=False)
    assert r.status == "tool-error" and "SIGSEGV" in r.message
    crashed = child(phase="launch", status="error", error={"message": "CUDA_ERROR_ILLEGAL_ADDRESS"})
    assert (sanitize.classify("initcheck", completed(0), crashed, [], [], 10, have_xml=True).status == "target-error")
    assert (sanitize.classify("memcheck", completed(99), ran, [], [], 10, have_xml=True).status == "tool-error")


def test_json_and_sarif(data_dir):
    found, notes = load(data_dir, "rec_race.racecheck_default", "racecheck")
    result = sanitize.ToolResult("racecheck", "findings", found, 1.5, "", notes=notes)
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
    assert (res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "tests/data/kernels/rec_race.cu")
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 5
    assert res["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == 6
    assert run["invocations"] == [{"executionSuccessful": True, "toolExecutionNotifications": []}]


def test_sarif_says_which_tools_checked_nothing_or_failed():
    """No results in SARIF must not read as clean when a tool saw no CUDA call or did not finish."""
    unseen = sanitize.ToolResult("memcheck", "not-checked", [], 1.0,
                                 "memcheck saw no CUDA call of the program")
    hung = sanitize.ToolResult("racecheck", "timeout", [], 60.0, "did not finish within 60 s")
    clean = sanitize.ToolResult("initcheck", "clean", [], 1.0)
    (invocation,) = findings_mod.to_sarif([unseen, hung, clean], "0.1.0")["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    notes = invocation["toolExecutionNotifications"]
    assert [(n["level"], n["descriptor"]["id"], n["properties"]["tool"]) for n in notes] == [
        ("warning", "not-checked", "memcheck"), ("error", "timeout", "racecheck")]
    assert (notes[0]["message"]["text"] == "memcheck: not-checked: memcheck saw no CUDA call of "
                                           "the program")


def test_cli_from_xml(capsys, data_dir, tmp_path):
    from kprof.commands import cli

    sarif = tmp_path / "out.sarif"
    code = cli.main(["sanitize", "--from-xml", str(data_dir / DATA / "rec_oob.memcheck.xml"),
                     "--tool", "memcheck",
                     "--allocations", str(data_dir / DATA / "rec_oob.memcheck.result.json"),
                     "--sarif", str(sarif)])
    out, err = capsys.readouterr()
    assert (code == 1 and "out-of-bounds-write" in out and "rec_oob.cu:4" in out
            and "(36,0,0)" in out)
    assert "immediately past the end of out" in out
    assert json.loads(sarif.read_text())["runs"][0]["results"][0]["ruleId"] == "out-of-bounds-write"
    code = cli.main(["sanitize", "--from-xml", str(data_dir / DATA / "tiled_matmul.memcheck.xml"),
                     "--tool", "memcheck", "--json"])
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
    """NVIDIA's illegal_syncwarp, as examples/syncwarp_mask.cu: synccheck stops inside __syncwarp,
    in the CUDA header (sm_30_intrinsics.hpp:110). Recorded on an H200 with compute-sanitizer
    2025.3.1 (2026.4 writes the
    same): with device frames, the finding is at the user's __syncwarp on line 16 of their file, in
    their kernel, the header named as where the call was inlined from; without them, it stays in the
    header."""
    xml = (data_dir / "sanitizer" / "syncwarp_mask.synccheck_device.xml").read_text()
    (f,), _ = sanitizer_xml.parse_xml(xml, "synccheck")
    assert (f.kernel, Path(f.file).name, f.line, f.count) == ("half_mask", "syncwarp_mask.cu", 16,
                                                              3)
    assert (f.kind == "invalid-warp-sync"
            and f.extra.inlined == "__syncwarp at sm_30_intrinsics.hpp:110")
    assert f.extra.reported_at.endswith("/include/sm_30_intrinsics.hpp:110")
    assert "inlined into this line" in f.detail
    bare = (data_dir / "sanitizer" / "syncwarp_mask.synccheck_no.xml").read_text()
    (g,), _ = sanitizer_xml.parse_xml(bare, "synccheck")
    assert ((g.kernel, Path(g.file).name, g.line) == ("__syncwarp", "sm_30_intrinsics.hpp", 110)
            and g.extra == Extra())


@pytest.mark.parametrize("path, header", [
    ("/usr/local/cuda/targets/x86_64-linux/include/sm_30_intrinsics.hpp", True),
    ("/usr/local/cuda-12.4/include/crt/sm_70_rt.hpp", True),
    ("/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/include/cuda_fp16.hpp", True),
    ("/home/me/cuda_kernels/include/tile.cuh", False),
    ("/work/main/examples/syncwarp_mask.cu", False),
    (None, False),
])
def test_which_paths_are_the_toolkits_headers(path, header):
    from kprof.tools.programs.hostframes import is_cuda_header

    assert is_cuda_header(path) is header


@pytest.mark.parametrize(("printed", "version"), [
    ("NVIDIA (R) Compute Sanitizer\nCopyright (c) 2020-2025 NVIDIA Corporation\nVersion 2025.3.1.0 "
     "(build 36400806) (public-release)", "2025.3.1"),
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
    """A report of 200,000 distinct records cost 45 s (parsed twice, each record placed): it is
    parsed once, up to MAX_RECORDS records (the rest of the text not parsed), and a note says how
    many the report holds."""
    import re

    from kprof.tools.sanitizers import compute_sanitizer as cs

    text = (Path(__file__).resolve().parents[2] / "data" / "sanitizer" / "rec_oob.memcheck.xml").read_text()
    rec = re.search(r"<record>.*?</record>", text, re.S).group(0)
    many = [rec.replace("<line>4</line>", f"<line>{4 + i}</line>") for i in range(50)]
    (tmp_path / "r.xml").write_text("<ComputeSanitizerOutput>\n" + "\n".join(many) + "\n</ComputeSanitizerOutput>\n")
    monkeypatch.setattr(cs, "MAX_RECORDS", 10)
    monkeypatch.setattr(sanitizer_xml, "MAX_RECORDS", 10)
    result = cs.from_xml(tmp_path / "r.xml", None)
    assert result.tool == "memcheck" and {f.line for f in result.findings} == set(range(4, 14))
    assert any("holds 50 records; kprof read the first 10" in n for n in result.notes), result.notes
    findings, notes = sanitizer_xml.parse_xml((tmp_path / "r.xml").read_text(), "memcheck")
    assert len({f.line for f in findings}) == 10 and any("holds 50 records" in n for n in notes)
    # uncapped where a caller asks for every record
    assert len(sanitizer_xml.records((tmp_path / "r.xml").read_text())) == 50
