"""A kernel whose source is a string in the user's Python file is reported at that file's line
(kprof.tools.sanitizers.embedded), on compute-sanitizer output recorded on an H200: CuPy's
RawKernel, whose temporary file is gone by the time the report is read, and an NVRTC program named
by a bare file name."""

from __future__ import annotations

import os
from pathlib import Path

from kprof.results import render_sanitize
from kprof.tools.sanitizers import embedded, sanitizer_xml
from kprof.tools.sanitizers.toolrun import ToolResult

ROOT = Path(__file__).resolve().parents[3]
PROGRAMS = Path(__file__).parents[2] / "data" / "programs"
RECORDED_ROOT = "/work/main/"  # where the programs ran when their output was recorded


def _recorded(name: str, root: Path = ROOT) -> str:
    """A recorded report with the recording machine's checkout replaced by ``root``."""
    return (PROGRAMS / name).read_text().replace(RECORDED_ROOT, f"{root}/")


def _bug_line(path: Path) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if "// BUG" in line)


def test_a_cupy_rawkernel_finding_is_at_the_users_line_not_cupys_deleted_file():
    text = _recorded("cupy_shift.memcheck.xml")
    (f,), _ = sanitizer_xml.parse_xml(text, "memcheck",
                                      tool_text=(PROGRAMS / "cupy_shift.memcheck.txt").read_text())
    program = ROOT / "examples" / "cupy_shift.py"
    assert (f.file, f.line) == (str(program), _bug_line(program)) == (str(program), 18)
    assert f.extra.reported_at.endswith(".cubin.cu:5") and f.extra.reported_at.startswith("/tmp/")
    assert f.to_dict()["extra"]["source"].startswith("the kernel's source is the string at "
                                                     "cupy_shift.py:14")
    report = render_sanitize.sanitize_report([ToolResult("memcheck", "findings", [f], 1.0)])
    assert "out-of-bounds-read at cupy_shift.py:18 in forward_diff" in report
    assert "the tool named /tmp/" in report and "launched at " in report


def _inlined(tmp_path: Path) -> Path:
    """examples/cuda_python_sum.py with block_sum.cu's source as a string literal in the file (as
    many NVRTC programs hold it), so its recorded racecheck report's lines are lines of that
    string."""
    source = (ROOT / "examples" / "block_sum.cu").read_text()
    program = tmp_path / "cuda_python_sum.py"
    text = (ROOT / "examples" / "cuda_python_sum.py").read_text()
    program.write_text(text.replace('SOURCE = Path(__file__).with_name("block_sum.cu")',
                                    f'KERNEL = r"""{source}"""'))
    return program


def test_an_nvrtc_program_named_by_a_bare_file_name_is_reported_in_its_python_file(tmp_path):
    program = _inlined(tmp_path)
    text = _recorded("cuda_python_sum.racecheck.xml", tmp_path / "run")
    # the program's Python frames are the copy's; its kernel file is NVRTC's name under the working
    # folder
    text = text.replace(f"{tmp_path}/run/examples/cuda_python_sum.py", str(program))
    text = text.replace(f"{tmp_path}/run/examples/block_sum.cu", f"{tmp_path}/cwd/block_sum.cu")
    (f,), _ = sanitizer_xml.parse_xml(text, "racecheck")
    start = next(i for i, line in enumerate(program.read_text().splitlines(), 1)
                 if line.startswith("KERNEL = "))
    # line 10 of the source, in the literal
    assert (f.file, f.line) == (str(program), start + 10 - 1)
    assert f.other is not None and (f.other.file, f.other.line) == (str(program), start + 10 - 1)
    assert ("s[threadIdx.x] += s[threadIdx.x + stride];" in program.read_text().splitlines()[f.line - 1])
    assert f.extra.reported_at == f"{tmp_path}/cwd/block_sum.cu:10"


def test_a_file_that_exists_is_never_moved(tmp_path):
    (f,), _ = sanitizer_xml.parse_xml(_recorded("cuda_python_sum.racecheck.xml"), "racecheck")
    assert (f.file == str(ROOT / "examples" / "block_sum.cu") and f.line == 10
            and f.extra.source is None)


KERNEL = 'extern "C" __global__ void scale(float* x, int n) {\n    x[0] = n;\n}\n'


def test_two_definitions_of_the_kernel_are_no_guess(tmp_path):
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(f'K = r"""{KERNEL}"""\n')
    missing = str(tmp_path / "gone" / "k.cubin.cu")
    assert (embedded.locate(missing, 2, "scale", [str(tmp_path / "a.py"), str(tmp_path / "b.py")]) is None)
    # one on the stack, the other only beside it: only the stack's files are searched
    found = embedded.locate(missing, 2, "scale", [str(tmp_path / "a.py")])
    assert found is not None and (found.path, found.line) == (str(tmp_path / "a.py"), 2)
    # on no stack file: not moved
    assert embedded.locate(missing, 2, "scale", [str(tmp_path / "c.py")]) is None


def test_a_literal_whose_lines_are_not_the_sources_is_named_without_a_line_inside(tmp_path):
    program = tmp_path / "p.py"
    # escaped newlines: one physical line
    program.write_text("import os\nK = (" + repr(KERNEL) + ")\n")
    found = embedded.locate(str(tmp_path / "gone.cu"), 2, "void scale(float*, int)", [str(program)])
    assert found is not None and found.line == 2 and "(line 2 of it)" in found.note


def test_what_cannot_be_read_or_parsed_is_passed_over(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('K = """__global__ void scale(\n' + "(" * 200 + "\n")  # not Python
    big = tmp_path / "big.py"
    big.write_text(f'K = r"""{KERNEL}"""\n' + "#" * embedded.MAX_SOURCE_BYTES)
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    files = [str(bad), str(big), str(fifo), str(tmp_path / "missing.py")]
    assert embedded.locate(str(tmp_path / "gone.cu"), 2, "scale", files) is None
    assert (embedded.locate(None, 2, "scale", files) is None
            and embedded.locate("x.cu", 2, None, files) is None)


def test_a_finding_in_torchs_generated_extension_file_says_so(tmp_path):
    build = tmp_path / "torch_extensions" / "py312_cu130" / "my_ext"
    build.mkdir(parents=True)
    (build / "cuda.cu").write_text("#include <torch/types.h>\n__global__ void k() {}\n")
    (build / "build.ninja").write_text("ninja_required_version = 1.3\n")
    note = embedded.generated_by_torch(str(build / "cuda.cu"))
    assert note is not None and "load_inline" in note and str(build) in note
    # no build.ninja beside it
    assert embedded.generated_by_torch(str(tmp_path / "cuda.cu")) is None
    (build / "kernel.cu").write_text("")
    assert (embedded.generated_by_torch(str(build / "kernel.cu")) is None
            and embedded.generated_by_torch(None) is None)
    text = _recorded("cupy_shift.memcheck.xml").replace(
        "/tmp/tmpw770smz0/d96490bbf61b7b0007299d10beac35c52d47c9d0.cubin.cu",
        str(build / "cuda.cu"))
    # the file exists: the line stays, the note says whose file it is
    (f,), _ = sanitizer_xml.parse_xml(text, "memcheck")
    assert (f.file, f.line) == (str(build / "cuda.cu"), 5) and "load_inline" in f.extra.source


def test_a_kernel_cupy_generated_is_at_the_users_call_and_another_missing_file_is_said(tmp_path):
    """No string of the user's holds the kernel (CuPy generated it from an ElementwiseKernel's
    pieces): the finding goes to the call that launched it; an NVRTC name that is not a file stays,
    said so."""
    program = tmp_path / "examples" / "cupy_shift.py"
    program.parent.mkdir()
    program.write_text((ROOT / "examples" / "cupy_shift.py").read_text().replace("__global__", "__device__"))
    (f,), _ = sanitizer_xml.parse_xml(_recorded("cupy_shift.memcheck.xml", tmp_path), "memcheck")
    assert (f.file, f.line) == (str(program), 30) and f.launch == f"{program}:30"
    assert (f.extra.source.startswith("CuPy generated this kernel's source")
            and f.extra.reported_at.endswith(":5"))
    text = _recorded("cuda_python_sum.racecheck.xml", tmp_path / "elsewhere")
    (g,), _ = sanitizer_xml.parse_xml(text, "racecheck")
    assert g.file == f"{tmp_path}/elsewhere/examples/block_sum.cu" and g.line == 10
    assert "is not a file here: the name the program gave its kernel's source" in g.extra.source
