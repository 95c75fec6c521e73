"""What kprof makes of compute-sanitizer's reports on users' programs, recorded on an H200 (driver
580.159.04, compute-sanitizer 2025.3.1) by ``scripts/gpu-check.sh programs`` into
tests/data/programs: the kind, the user's line and the launch site for a C++ program built with
``-g``, a bad warp mask, device-heap memory, a kernel CuPy generated, an NVRTC program named by a
bare file name, and a race in global memory no tool reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from kprof.results import render_sanitize
from kprof.tools.sanitizers import sanitizer_xml
from kprof.tools.sanitizers.toolrun import ToolResult

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
PROGRAMS = Path(__file__).parents[2] / "data" / "programs"
RECORDED_ROOT = "/work/main/"  # where the programs ran when their output was recorded


def _parse(name: str, tool: str):
    xml = (PROGRAMS / f"{name}.xml").read_text().replace(RECORDED_ROOT, f"{ROOT}/")
    text = (PROGRAMS / f"{name}.txt").read_text().replace(RECORDED_ROOT, f"{ROOT}/")
    return sanitizer_xml.parse_xml(xml, tool, tool_text=text)


def _marked(path: Path, mark: str) -> int:
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if mark in text)


def test_a_cpp_program_built_with_g_is_launched_at_its_host_line(monkeypatch):
    """The tool read the binary's line information itself: the launch is ``launch()``'s line, past
    the CUDA runtime linked into the program, nvcc's generated stub file and the kernel's own host
    stub."""
    monkeypatch.chdir(ROOT)  # nvcc was given examples/vecadd.cu, relative to the checkout
    (f,), api = _parse("vecadd.memcheck", "memcheck")
    source = EXAMPLES / "vecadd.cu"
    assert (f.kind, f.file, f.line) == ("out-of-bounds-read", str(source), _marked(source, "// BUG")), f
    assert f.launch == f"{source}:{_marked(source, '// LAUNCH')} (launch in vecadd)", f
    assert "1 byte past the end of a 4,000-byte allocation" in f.detail
    assert api and all("stopped the kernel at its first error" in line for line in api)


def test_a_relative_host_path_that_is_not_here_stays_as_the_tool_gave_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (f,), _ = _parse("vecadd.memcheck", "memcheck")
    assert f.launch == "examples/vecadd.cu:18 (launch in vecadd)"


def test_a_bad_warp_mask_is_an_invalid_warp_sync_at_the_users_line():
    (f,), _ = _parse("cupy_syncwarp.synccheck", "synccheck")
    program = EXAMPLES / "cupy_syncwarp.py"
    assert (f.kind, f.file, f.line) == ("invalid-warp-sync", str(program), _marked(program, "// BUG")), f
    assert f.count == 32 and f.launch == f"{program}:{_marked(program, '# LAUNCH')}"
    assert "mask must name every lane" in f.detail


def test_a_divergent_barrier_stays_a_barrier_divergence():
    (f, *_), _ = sanitizer_xml.parse_xml((Path(__file__).parents[2] / "data" / "sanitizer" / "rec_sync.synccheck.xml").read_text(),
                              "synccheck")
    assert f.kind == "barrier-divergence"


def test_device_heap_memory_is_said_to_be_device_heap():
    (f,), _ = _parse("cupy_heap.memcheck", "memcheck")
    program = EXAMPLES / "cupy_heap.py"
    assert (f.kind, f.file, f.line) == ("out-of-bounds-write", str(program), _marked(program, "// BUG")), f
    assert f.detail == sanitizer_xml.HEAP_DETAIL
    report = render_sanitize.sanitize_report([ToolResult("memcheck", "findings", [f], 1.0)])
    assert "in the device heap (memory a kernel took with malloc or new)" in report


def test_the_tools_heap_and_permission_words_become_the_details():
    text = ("=========     Access to 0x205dff924 is out of bounds\n"
            "=========     and is located in a freed device heap allocation\n"
            "=========     Address 0x7f6f67000000 is not writable\n"
            "=========     Address 0x7f6f67000010 is not readable/writable with atomic operations\n")
    got = sanitizer_xml.nearest_allocations(text)
    assert got[0x205DFF924] == sanitizer_xml.FREED_HEAP_DETAIL
    assert got[0x7F6F67000000].startswith("not writable: the program's NVTX memory permissions")
    assert got[0x7F6F67000010].startswith("not readable/writable with atomic operations:")


def test_an_nvtx_permission_is_an_invalid_access_not_an_out_of_bounds_write():
    """Shaped as memcheck writes one (compute-sanitizer's NVTX permissions sample): the XML's record
    reads as any invalid write; the text says the address is not writable."""
    xml = ("<?xml version='1.0'?><ComputeSanitizerOutput><record><kind>Precise</kind><level>Error</level>"
           "<who><threadIdx><x>0</x><y>0</y><z>0</z></threadIdx><blockIdx><x>0</x><y>0</y><z>0</z></blockIdx></who>"
           "<what><text>Invalid __global__ write of size 4 "
           "bytes</text><space>__global__</space><size>4</size><direction>write</direction><address>0x7f6f67000000</address></what>"
           "<where><func>bump</func><path>/src/nvtx_readonly.cu</path><line>12</line><pc>0x90</pc></where>"
           "</record></ComputeSanitizerOutput>")
    text = ("========= Invalid __global__ write of size 4 bytes\n=========     at bump(unsigned "
            "int *)+0x90\n=========     by thread (0,0,0) in block (0,0,0)\n=========     Address "
            "0x7f6f67000000 is not writable\n")
    (f,), _ = sanitizer_xml.parse_xml(xml, "memcheck", tool_text=text)
    assert f.kind == "invalid-access" and f.detail.startswith("not writable: the program's NVTX "
                                                              "memory permissions"), f
    xml_says = xml.replace("<direction>write</direction>",
                           "<direction>write</direction><error>not writable</error>")
    (g,), _ = sanitizer_xml.parse_xml(xml_says, "memcheck")
    assert g.kind == "invalid-access" and g.detail.startswith("not writable"), g


def test_a_recorded_nvtx_permission_is_an_invalid_access_at_the_kernels_line(monkeypatch):
    """examples/nvtx_readonly.cu on the H200: the XML's error says "not writable" (the text adds
    "inside the nearest allocation", which is no out-of-bounds); the launch is main's line."""
    monkeypatch.chdir(ROOT)
    (f,), _ = _parse("nvtx_readonly.memcheck", "memcheck")
    source = EXAMPLES / "nvtx_readonly.cu"
    assert (f.kind, f.file, f.line) == ("invalid-access", str(source), _marked(source, "// BUG")), f
    assert f.detail == sanitizer_xml.permission_detail("not writable"), f.detail
    assert f.launch == f"{source}:{_marked(source, '// LAUNCH')} (main in nvtx_readonly)", f


def test_a_kernel_cupy_generated_is_at_the_call_that_launched_it():
    (f,), _ = _parse("cupy_elementwise.memcheck", "memcheck")
    program = EXAMPLES / "cupy_elementwise.py"
    assert (f.kind, f.file, f.line) == ("out-of-bounds-read", str(program), _marked(program, "# LAUNCH")), f
    assert (f.extra.source.startswith("CuPy generated this kernel's source")
            and f.extra.reported_at.endswith(".cubin.cu:14"))


def test_an_nvrtc_program_named_by_a_bare_file_name_is_at_the_string_in_its_python_file():
    """Run from a folder with no block_sum.cu: the tool names <that folder>/block_sum.cu; kprof
    finds the kernel's string in nvrtc_inline.py, the file on the launch's stack."""
    (f,), _ = _parse("nvrtc_inline.racecheck", "racecheck")
    program = EXAMPLES / "nvrtc_inline.py"
    assert f.kind == "race-raw" and f.file == str(program) and _marked(program, "// BUG") in f.lines(), f
    assert (f.extra.reported_at.endswith("/block_sum.cu:5")
            and "a file that no longer exists" in f.extra.source)
    # nvrtc_inline.py runs cuda_python_sum's main()
    assert f.launch == f"{EXAMPLES / 'cuda_python_sum.py'}:60"


@pytest.mark.parametrize("tool", ["racecheck"])
def test_a_race_in_global_memory_is_not_seen_by_the_tools(tool):
    """counter[0]++ by 51,200 threads (examples/cupy_counter.py): racecheck sees shared memory
    only."""
    found, _ = _parse(f"cupy_counter.{tool}", tool)
    assert (found == []
            and "counter 23 of 51200" in (PROGRAMS / f"cupy_counter.{tool}.txt").read_text())
