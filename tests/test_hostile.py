"""The hostile battery: one line per input a careless or hostile user (or a cloned repository's
spec, or an environment variable) can give kprof, with the exit code and the words of its one-line
answer. None may run a command nobody named, hang, follow a symlink when writing, or end in an
internal error (exit 70). No external program is started by any of them: ``subprocess.Popen`` fails
the test."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kprof.commands import cli

KERNEL = 'extern "C" __global__ void k(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] = 1; }\n'
SPEC = ("sizes: {N: 64}\nargs:\n  - {name: x, buffer: float32, shape: [N], role: out}\n"
        "  - {name: n, scalar: int32, value: N}\nlaunch: {grid: [1], block: [64]}\nreference: {x: "
        "1}\n")
XML = Path(__file__).resolve().parent / "data" / "sanitizer" / "rec_oob.memcheck.xml"
BT = "`touch PWNED`"


def _kernel(folder: Path, name: str = "k", extra: str = "", source: str | None = None,
            spec: str = SPEC) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / (source or f"{name}.cu")).write_text(KERNEL)
    (folder / f"{name}.yaml").write_text((f"source: '{source}'\n" if source else "") + spec + extra)
    return folder / f"{name}.yaml"


def _world(w: Path) -> None:
    """Every file the battery names, made once per test in ``w``."""
    (w / ("inc" + "/z" + BT)).mkdir(parents=True)
    _kernel(w / "inc", extra=f"nvcc_flags: ['-I./z{BT}']\n")
    (w / ("inc2" + "/z" + BT)).mkdir(parents=True)
    _kernel(w / "inc2", extra=f"nvcc_flags: ['--include-path=z{BT}']\n")
    _kernel(w / ("dir" + BT))
    _kernel(w / "src", source=f"a{BT}.cu")
    _kernel(w / ("kp" + BT), name="kpk")
    _kernel(w / "plain")
    _kernel(w / "def", extra="defines: {X: '$(touch PWNED)'}\n")
    _kernel(w / "flagdollar", extra="nvcc_flags: ['-DX=$(touch PWNED)']\n")
    _kernel(w / "ref", spec=SPEC.replace("reference: {x: 1}", "reference: {x: '2**2**2**2**2**2'}"))
    _kernel(w / "unary",
            spec=SPEC.replace("reference: {x: 1}", "reference: {x: '" + "-" * 999 + "1'}"))
    for name in ("fifo.yaml", "fifo.xml", "fifo.json"):
        os.mkfifo(w / name)
    (w / "kpf").mkdir()
    os.mkfifo(w / "kpf" / "f.yaml")
    (w / "zero.yaml").symlink_to("/dev/zero")
    (w / "deep.yaml").write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    (w / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (w / "big.xml").write_text(XML.read_text())
    (w / "big.txt").write_text("Address 0x1 is out of bounds" + " \n" * 60_000 + "and is")
    text = XML.read_text()
    (w / "digit.xml").write_text(text.replace("<line>4</line>", "<line>\u00b2</line>"))
    (w / "arabic.xml").write_text(text.replace("<line>4</line>", "<line>\u0663</line>"))
    (w / "long.xml").write_text(text.replace("<line>4</line>", "<line>" + "9" * 5000 + "</line>"))
    (w / "nd").mkdir()
    (w / "nd" / "x.cu").symlink_to(w / "outside.cu")
    (w / "sarifdir").mkdir()
    # values PyYAML builds with a plain Python error (ValueError, KeyError, AttributeError): issue
    # 55's exit 70s
    (w / "fifoinc").mkdir()
    (w / "fifoinc" / "k.cu").write_text('#include "h.h"\n' + KERNEL)
    (w / "fifoinc" / "k.yaml").write_text(SPEC)
    os.mkfifo(w / "fifoinc" / "h.h")
    _kernel(w / "fill",
            spec=SPEC.replace("role: out}",
                              "role: in, fill: 'uniform(" + "+".join(["1"] * 100_000) + ", 2)'}")
            .replace("reference: {x: 1}", "reference: {x: x}"))
    (w / "shape.json").write_text('{"allocations": [{"name": "x", "dtype": "float32", "base": 0, '
                                  '"nbytes": 4, "shape": 5}]}')
    # round 4: numbers past float64, links that loop, names past 255 bytes (each was exit 70)
    _kernel(w / "bigexp",
            spec=SPEC.replace("reference: {x: 1}", "reference: {x: '2 ** " + "9" * 400 + "'}"))
    (w / "loop").mkdir()
    (w / "loop" / "a").symlink_to(w / "loop" / "b")
    (w / "loop" / "b").symlink_to(w / "loop" / "a")
    _kernel(w / "twinloop", extra="twin: ../loop/a/x.cu\n")
    _kernel(w / "twinlong", extra="twin: " + "t" * 300 + ".cu\n")
    _kernel(w / "incloop", extra="nvcc_flags: [-I../loop/a]\n")
    _kernel(w / "refloop",
            spec=SPEC.replace("reference: {x: 1}", "reference: {x: '../loop/a/r.py:f'}"))
    _kernel(w / "reflong",
            spec=SPEC.replace("reference: {x: 1}", "reference: {x: '" + "r" * 300 + ".py:f'}"))
    for name, value in (("date", "2001-02-30"), ("tagint", "!!int abc"),
                        ("tagbool", "!!bool maybe"),
                        ("tagtime", "!!timestamp nope"), ("digits", "9" * 5000)):
        _kernel(w / name, extra=f"description: {value}\n")


OOB = str(XML)
# id, argv, environment, exit code, words of the one line
CASES = [
    # a command nobody named: every path and flag nvcc (and the shell it starts) would see
    ("flag -I with a backtick", ["build", "{w}/inc/k.yaml"], {}, 2,
     "nvcc_flags[0]: '-I./z`touch PWNED`' holds '`'"),
    ("--include-path with a backtick", ["build", "{w}/inc2/k.yaml"], {}, 2,
     "nvcc_flags[0]: '--include-path=z`touch"),
    ("-D with $(...)", ["build", "{w}/flagdollar/k.yaml"], {}, 2,
     "holds '$', which a shell would act on"),
    ("the spec's folder", ["build", "{w}/dir`touch PWNED`/k.yaml"], {}, 2, "source: the path"),
    ("the source file's name", ["build", "{w}/src/k.yaml"], {}, 2, "a`touch PWNED`.cu' holds '`'"),
    ("a spec found on KPROF_PATH", ["build", "kpk"], {"KPROF_PATH": "{w}/kp`touch PWNED`"}, 2,
     "source: the path"),
    ("KPROF_CACHE_DIR", ["build", "{w}/plain/k.yaml"], {"KPROF_CACHE_DIR": "{w}/c`touch PWNED`"}, 2,
     "the build cache: "),
    ("a define", ["build", "{w}/def/k.yaml"], {}, 2,
     "defines.X: '$(touch PWNED)' must be a number or an identifier"),
    ("--param", ["build", "vector_add", "--param", "BLOCK=$(touch PWNED)"], {}, 2,
     "a parameter value is a number or an identifier"),
    # hangs: FIFOs and devices are refused before anything blocks on them; parsers are linear
    ("a FIFO as the spec", ["run", "{w}/fifo.yaml"], {}, 2,
     "fifo.yaml: a FIFO, not a regular file"),
    ("a FIFO as --from-xml", ["sanitize", "--from-xml", "{w}/fifo.xml"], {}, 2,
     "a FIFO, not a regular file"),
    ("a FIFO as --allocations", ["sanitize", "--from-xml", OOB, "--allocations", "{w}/fifo.json"],
     {}, 2, "--allocations {w}/fifo.json: a FIFO"),
    ("a FIFO on KPROF_PATH", ["list"], {"KPROF_PATH": "{w}/kpf"}, 0, ""),
    ("120 KB of text beside a report", ["sanitize", "--from-xml", "{w}/big.xml"], {}, 1, ""),
    # internal errors no more
    ("/dev/zero as the spec", ["run", "/dev/zero"], {}, 2,
     "a character device, not a regular file"),
    ("a spec linked to /dev/zero", ["run", "{w}/zero.yaml"], {}, 2,
     "a character device, not a regular file"),
    ("/dev/zero as --from-xml", ["sanitize", "--from-xml", "/dev/zero"], {}, 2,
     "a character device"),
    ("/dev/zero as --allocations", ["sanitize", "--from-xml", OOB, "--allocations", "/dev/zero"],
     {}, 2, "a character device"),
    ("YAML nested 5,000 deep", ["run", "{w}/deep.yaml"], {}, 2, "nested deeper than 32 levels"),
    ("JSON nested 100,000 deep", ["sanitize", "--from-xml", OOB, "--allocations", "{w}/deep.json"],
     {}, 2, "nested deeper than 64 levels"),
    ("a size nested 5,000 deep",
     ["run", "vector_add", "--size", "N=" + "(" * 5000 + "1" + ")" * 5000], {}, 2, "--size N="),
    ("~nosuchuser as the spec", ["run", "~nosuchuser/k.yaml"], {}, 2, "no user 'nosuchuser'"),
    ("~nosuchuser as KPROF_CACHE_DIR", ["build", "vector_add"],
     {"KPROF_CACHE_DIR": "~nosuchuser/c"}, 2,
     "KPROF_CACHE_DIR: ~nosuchuser/c: no user 'nosuchuser'"),
    ("~nosuchuser on KPROF_PATH", ["list"], {"KPROF_PATH": "~nosuchuser/x"}, 2,
     "KPROF_PATH: ~nosuchuser/x"),
    ("~nosuchuser as KPROF_HISTORY", ["history"], {"KPROF_HISTORY": "~nosuchuser/h"}, 2,
     "KPROF_HISTORY"),
    ("~nosuchuser as --dir", ["new", "abc", "--dir", "~nosuchuser/d"], {}, 2,
     "--dir: ~nosuchuser/d: no user"),
    ("~nosuchuser as --sarif", ["sanitize", "--from-xml", OOB, "--sarif", "~nosuchuser/s.sarif"],
     {}, 2, "--sarif: ~nosuchuser/s.sarif: no user"),
    ("--sarif into a missing folder",
     ["sanitize", "--from-xml", OOB, "--sarif", "{w}/none/s.sarif"], {}, 2,
     "does not exist; create it first"),
    ("--sarif naming a folder", ["sanitize", "--from-xml", OOB, "--sarif", "{w}/sarifdir"], {}, 2,
     "is a folder"),
    ("--plot into a missing folder", ["bench", "vector_add", "--plot", "{w}/none/p.png"], {}, 2,
     "create it first"),
    ("a superscript digit in a report", ["sanitize", "--from-xml", "{w}/digit.xml"], {}, 1, ""),
    ("an Arabic-Indic digit in a report", ["sanitize", "--from-xml", "{w}/arabic.xml"], {}, 1, ""),
    ("a 5,000-digit line in a report", ["sanitize", "--from-xml", "{w}/long.xml"], {}, 1, ""),
    ("--timeout 1e300", ["run", "vector_add", "--timeout", "1e300"], {}, 2,
     "give at most 604800 seconds"),
    ("--max-time 1e300", ["bench", "vector_add", "--max-time", "1e300"], {}, 2,
     "give at most 604800 seconds"),
    # writes never follow a symlink
    ("kprof new over a dangling symlink", ["new", "x", "--dir", "{w}/nd"], {}, 2,
     "(a symlink: kprof never writes through one)"),
    # errors reported where the input is read
    ("a reference exponent tower", ["build", "{w}/ref/k.yaml"], {}, 2,
     "reference.x: an exponent above 64"),
    ("a 400-digit reference exponent", ["build", "{w}/bigexp/k.yaml"], {}, 2,
     "reference.x: an exponent above 64"),
    ("kprof list beside a 400-digit exponent", ["list"], {"KPROF_PATH": "{w}/bigexp"}, 0, ""),
    ("a twin through a symlink loop", ["build", "{w}/twinloop/k.yaml"], {}, 2,
     "twin: '../loop/a/x.cu' must name"),
    ("a twin named past 255 bytes", ["build", "{w}/twinlong/k.yaml"], {}, 2, "twin: 'ttttt"),
    ("an include folder through a loop", ["build", "{w}/incloop/k.yaml"], {}, 2,
     "the include folder cannot be followed"),
    ("a Python reference through a loop", ["build", "{w}/refloop/k.yaml"], {}, 2,
     "a symlink loop or a name too long"),
    ("a Python reference past 255 bytes", ["build", "{w}/reflong/k.yaml"], {}, 2,
     "reference.x: rrrr"),
    ("a reference of 999 minus signs", ["build", "{w}/unary/k.yaml"], {}, 2,
     "reference.x: nested deeper than 100 levels"),
    ("a size of 399 minus signs", ["run", "vector_add", "--size", "N=" + "-" * 399 + "1"], {}, 2,
     "give a whole number (or arithmetic like 2**20)"),
    # YAML values PyYAML builds with Python's own errors: one line, exit 2 (were exit 70)
    ("a date that is not one", ["build", "{w}/date/k.yaml"], {}, 2,
     "not valid YAML: a value that cannot be built (ValueError"),
    ("!!int abc", ["build", "{w}/tagint/k.yaml"], {}, 2,
     "not valid YAML: a value that cannot be built (ValueError"),
    ("!!bool maybe", ["build", "{w}/tagbool/k.yaml"], {}, 2,
     "not valid YAML: a value that cannot be built (KeyError"),
    ("!!timestamp nope", ["build", "{w}/tagtime/k.yaml"], {}, 2,
     "a value that cannot be built (AttributeError"),
    ("a 5,000-digit number", ["build", "{w}/digits/k.yaml"], {}, 2,
     "a value that cannot be built (ValueError"),
    # lost data: the report read is never the file written
    ("--sarif naming the --from-xml report",
     ["sanitize", "--from-xml", "{w}/big.xml", "--sarif", "{w}/big.xml"], {}, 2,
     "--sarif {w}/big.xml: --from-xml {w}/big.xml is that file"),
    ("--sarif naming it another way",
     ["sanitize", "--from-xml", "{w}/big.xml", "--sarif", "{w}/sarifdir/../big.xml"], {}, 2,
     "--from-xml {w}/big.xml is that file"),
    ("--sarif naming the --allocations file",
     ["sanitize", "--from-xml", OOB, "--allocations", "{w}/shape.json", "--sarif",
      "{w}/shape.json"], {}, 2, "--allocations {w}/shape.json is that file"),
    ("--sarif naming the spec's kernel",
     ["profile", "{w}/plain/k.yaml", "--sarif", "{w}/plain/k.cu"], {}, 2,
     "the spec's kernel {w}/plain/k.cu is that file"),
    ("--plot naming the spec", ["bench", "{w}/plain/k.yaml", "--plot", "{w}/plain/k.yaml"], {}, 2,
     "the spec {w}/plain/k.yaml is that file"),
    ("--arch sm_90 with a newline", ["occupancy", "vector_add", "--arch", "sm_90\n"], {}, 2,
     "--arch"),
    # issue 55, round 3: every piece of work bounded by its input, not by a timeout
    ("a size of a tower of powers of a fraction",
     ["run", "vector_add", "--size", "N=((((1/3)**64)**64)**64)**64"], {}, 2,
     "bits is too large (or too fine) for size arithmetic"),
    ("a 300 x 300 x 300 size sweep",
     ["bench", "naive_matmul", "--size", "M=" + ",".join(map(str, range(1, 301))),
      "N=" + ",".join(map(str, range(1, 301))), "K=" + ",".join(map(str, range(1, 301)))],
     {}, 2, "the sweep has 27,000,000 points (300 x 300 x 300)"),
    ("a header that is a FIFO", ["build", "{w}/fifoinc/k.yaml"], {}, 2,
     "k.cu includes h.h: a FIFO, not a regular file"),
    ("a fill rule of 100,000 terms", ["build", "{w}/fill/k.yaml"], {}, 2,
     "a fill rule of 200,011 characters"),
    ("an allocation whose shape is a number",
     ["sanitize", "--from-xml", OOB, "--allocations", "{w}/shape.json"], {}, 2,
     "a shape that is a list of sizes"),
    ("a history limit beyond SQLite's", ["history", "--limit", "9" * 20], {}, 2,
     "give at most 2,147,483,647"),
    ("a history limit of a superscript", ["history", "--limit", "\u00b2"], {}, 2,
     "is not a whole number"),
    ("a size of bytes that are not UTF-8", ["run", "vector_add", "--size", "N=\udcff"], {}, 2,
     "the expression holds bytes that are not UTF-8 text"),
]


@pytest.fixture
def world(tmp_path, monkeypatch):
    w = tmp_path / "w"
    w.mkdir()
    _world(w)
    monkeypatch.chdir(w)
    monkeypatch.setenv("KPROF_CACHE_DIR", str(w / "cache"))
    monkeypatch.setenv("KPROF_HISTORY", str(w / "history.sqlite"))
    monkeypatch.delenv("KPROF_PATH", raising=False)

    def no_process(*args, **kwargs):
        raise AssertionError(f"a hostile input started a process: {args[0] if args else kwargs}")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    return w


@pytest.mark.parametrize("argv, env, code, words", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_hostile_input_is_one_line(world, monkeypatch, capsys, argv, env, code, words):
    for key, value in env.items():
        monkeypatch.setenv(key, value.format(w=world))
    argv = [a.format(w=world) for a in argv]
    if argv[0] in ("build", "run", "sanitize", "bench") and "--from-xml" not in argv:
        argv += ["--arch", "sm_90"]
    start = time.monotonic()
    got = cli.main(argv)
    err = capsys.readouterr().err
    assert time.monotonic() - start < 10, "no hostile input may take long"
    assert not (world / "PWNED").exists(), "a command ran"
    assert not (world / "outside.cu").exists(), "a write followed a symlink"
    assert got == code, (argv, err)
    lines = [ln for ln in err.splitlines() if ln.startswith("kprof: error")]
    if code == 2:
        assert len(lines) == 1 and err.count("\n") == 1 and words.format(w=world) in lines[0], err
    assert "Traceback" not in err and "internal error" not in err


def test_the_saved_text_beside_a_report_is_read_in_linear_time():
    """A 120 KB text report once cost 35 s in one regular expression."""
    from kprof.tools.sanitizers.sanitizer_xml import nearest_allocations

    start = time.monotonic()
    assert (nearest_allocations("Address 0x1 is out of bounds" + " \n\t=" * 60_000 + "and is 4 bytes") == {})
    assert time.monotonic() - start < 1
    text = ("=========     Address 0x7f0000000010 is out of bounds\n"
            "=========     and is 4 bytes after the nearest allocation at "
            "0x7f0000000000 of size 12 bytes\n")
    assert nearest_allocations(text) == {
        0x7F0000000010: "4 bytes past the end of a 12-byte allocation at 0x7f0000000000 (the "
                        "nearest one)"}


def _dev_full() -> str | None:
    """Why /dev/full cannot stand for a full disk here (None: it can). Opened as root on a machine
    without it, "w" would create a regular file there that takes every write."""
    import stat

    try:
        mode = os.stat("/dev/full").st_mode
    except OSError:
        return "no /dev/full on this machine"
    return None if stat.S_ISCHR(mode) else "/dev/full is not a character device here"


def test_the_full_disk_test_skips_without_a_dev_full_device(monkeypatch):
    """A machine whose /dev/full is missing or a regular file (a container image) skips the
    full-disk test with the reason, and the test never creates the file (it opens it r+)."""
    import stat
    from types import SimpleNamespace

    monkeypatch.setattr(os, "stat", lambda path: SimpleNamespace(st_mode=stat.S_IFREG | 0o644))
    assert _dev_full() == "/dev/full is not a character device here"
    monkeypatch.setattr(os, "stat", lambda path: (_ for _ in ()).throw(FileNotFoundError(path)))
    assert _dev_full() == "no /dev/full on this machine"


@pytest.mark.parametrize("argv", [["list"], ["--help"], ["--version"], ["cases", "--list"],
                                  ["occupancy", "tiled_matmul", "--arch", "sm_90"]])
@pytest.mark.skipif(_dev_full() is not None, reason=str(_dev_full()))
def test_output_to_a_full_disk_is_one_line_and_exit_7(argv, tmp_path):
    """``kprof list > /dev/full``: the write fails at the flush, after main's work is done."""
    with open("/dev/full", "r+") as full:  # r+: never creates the file
        done = subprocess.run([sys.executable, "-m", "kprof", *argv], stdout=full,
                              stderr=subprocess.PIPE, text=True,
                              timeout=120, env=dict(os.environ, KPROF_CACHE_DIR=str(tmp_path)))
    assert done.returncode == 7, done.stderr
    assert done.stderr.strip() == "kprof: error: cannot write the output: No space left on device"


@pytest.mark.parametrize("argv",
                         [["list"], ["cases", "--list"],
                          ["occupancy", "tiled_matmul", "--arch", "sm_90"],
                          ["run", "vector_add", "--timeout", "0"], ["--help"]])
def test_an_ascii_only_output_encoding_is_never_an_error(argv, tmp_path):
    env = dict(os.environ, PYTHONIOENCODING="ascii", LC_ALL="C", KPROF_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "kprof", *argv], capture_output=True, timeout=120,
                          env=env)
    assert (done.returncode in (0, 2) and b"Traceback" not in done.stderr
            and b"internal error" not in done.stderr)


FAKE_NVCC = """#!{python}
import sys
args = sys.argv[1:]
if "--version" in args:
    print("Cuda compilation tools, release 13.0 (a stand-in)")
    sys.exit(0)
open(args[args.index("-o") + 1], "wb").write(b"cubin")
print("ptxas info    : Compiling entry function 'vector_add' for 'sm_90'")
print("ptxas info    : Used 10 registers, used 0 barriers")
"""


def test_a_folder_where_a_cache_file_goes_is_one_line(tmp_path, monkeypatch, capsys):
    nvcc = tmp_path / "nvcc"
    nvcc.write_text(FAKE_NVCC.format(python=sys.executable))
    nvcc.chmod(0o755)
    monkeypatch.setenv("KPROF_NVCC", str(nvcc))
    monkeypatch.setenv("KPROF_CACHE_DIR", str(tmp_path / "cache"))
    assert cli.main(["build", "vector_add", "--arch", "sm_90"]) == 0
    cubin = next((tmp_path / "cache").glob("vector_add-*.cubin"))
    cubin.unlink()
    cubin.mkdir()
    capsys.readouterr()
    assert cli.main(["build", "vector_add", "--arch", "sm_90"]) == 2
    err = capsys.readouterr().err
    assert f"has a folder at {cubin} where a file goes: remove it" in err and err.count("\n") == 1


def test_kprof_new_like_copies_the_python_reference(tmp_path):
    from kprof import spec
    from kprof.commands import scaffold

    cu, yaml_path = scaffold.new("pm", tmp_path / "d", "prefix_max")
    assert (tmp_path / "d" / "prefix_max_ref.py").is_file()
    loaded = spec.load(yaml_path)
    assert (loaded.reference[0][1].startswith("python:" + str((tmp_path / "d" / "prefix_max_ref.py").resolve())))


def test_kprof_new_is_all_or_nothing(tmp_path, capsys):
    (tmp_path / "pm.yaml").symlink_to(tmp_path / "elsewhere.yaml")
    assert cli.main(["new", "pm", "--dir", str(tmp_path)]) == 2
    assert not (tmp_path / "pm.cu").exists() and not (tmp_path / "elsewhere.yaml").exists()
    assert "a symlink" in capsys.readouterr().err


def test_list_fits_the_terminal(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "100")
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    # a description wraps under itself, whole
    assert max(len(line) for line in out.splitlines()) <= 100


def test_build_says_where_it_is(tmp_path, monkeypatch, capsys):
    from kprof.build import build

    monkeypatch.setenv("KPROF_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(build, "build", lambda spec, arch, force=False: build.BuildResult(
        spec.name, tmp_path / "x.cubin", arch, {}, True, log="", argv=()))
    assert cli.main(["build", "vector_add", "tiled_matmul", "--arch", "sm_90"]) == 0
    err = capsys.readouterr().err
    assert "[1/2] vector_add: cached in" in err and "[2/2] tiled_matmul: cached in" in err


def test_a_bench_stopped_by_a_full_disk_keeps_what_history_holds(tmp_path, monkeypatch, capsys):
    """The second point cannot be recorded: the first stays in the store, the run says so in one
    line."""
    import sqlite3

    import kprof.commands.api
    from kprof.commands import pipeline
    from kprof.measure import bench
    from kprof.results import history

    monkeypatch.setenv("KPROF_HISTORY", str(tmp_path / "h.sqlite"))
    monkeypatch.setattr(kprof.commands.api, "require_gpu", lambda tool: None)
    monkeypatch.setattr(pipeline, "timing_mode", lambda *a, **k: type("M", (), {"mode": "cold"})())
    monkeypatch.setattr(pipeline, "peak", lambda **k: {})
    monkeypatch.setattr(pipeline, "bench_plan", lambda point, mode, arch: point)
    monkeypatch.setattr(bench, "run_point", lambda plan, peak, timeout: _FakePoint(plan.sizes))
    real_record = history.record
    calls = []

    def record(conn, *args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise history.OutputError("cannot record vector_add in the history store: database or "
                                      "disk is full")
        return real_record(conn, *args, **kwargs)

    monkeypatch.setattr(history, "record", record)
    code = cli.main(["bench", "vector_add", "--size", "N=1024,2048,4096", "--baseline", "none",
                     "--arch", "sm_90", "--json"])
    err = capsys.readouterr().err
    assert (code == 7
            and "database or disk is full; 1 of 3 points are kept in the history store" in err)
    with sqlite3.connect(tmp_path / "h.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 1


class _FakePoint:
    """What bench.run_point returns, as far as the command and the store read it."""

    def __init__(self, sizes):
        self.kernel, self.sizes, self.params, self.status = "vector_add", dict(sizes), {}, "ok"

    def to_dict(self):
        return {"kernel": self.kernel, "sizes": self.sizes, "status": self.status, "summary": None}


# A history row of another shape is skipped (docs/limits.md); the good row beside it is still shown.
BAD_ROWS = [
    ("a list where the data goes", {"data": "[]"}),
    ("a point that is a string", {"point": '"N=5"'}),
    ("sizes that are a list", {"point": '{"sizes": [1, 2]}'}),
    ("a summary without numbers", {"data": '{"summary": {"median": "fast"}}'}),
    ("a summary missing fields", {"data": '{"summary": {"median": 1.0}}'}),
    ("a machine that is a number", {"machine": "7"}),
    ("JSON nested 10,000 deep", {"data": "[" * 10_000 + "]" * 10_000}),
    ("a created time that is text", {"created": "yesterday"}),
    ("a kernel that is a number", {"kernel": 7}),
    ("broken JSON", {"point": "{broken"}),
    ("a median of 0 (compare divides by it)",
     {"point": '{"sizes": {"N": 1}}', "data": '{"summary": {"n": 3, "median": 0, '
     '"q1": 0, "q3": 0, "min": 0, "max": 0, "mean": 0, "stdev": 0}}'}),
    ("a median that is not a number",
     {"point": '{"sizes": {"N": 1}}', "data": '{"summary": {"n": 3, "median": NaN, '
     '"q1": 0, "q3": 0, "min": 0, "max": 0, "mean": 0, "stdev": 0}}'}),
    ("a median below 0",
     {"point": '{"sizes": {"N": 1}}', "data": '{"summary": {"n": 3, "median": -1e-3, '
     '"q1": 0, "q3": 0, "min": 0, "max": 0, "mean": 0, "stdev": 0}}'}),
]


@pytest.mark.parametrize("columns", [c[1] for c in BAD_ROWS], ids=[c[0] for c in BAD_ROWS])
def test_a_history_row_of_another_shape_is_skipped(tmp_path, monkeypatch, capsys, columns):
    import sqlite3

    from kprof.results import history

    monkeypatch.setenv("KPROF_HISTORY", str(tmp_path / "h.sqlite"))
    summary = {"n": 3, "median": 1e-3, "q1": 1e-3, "q3": 1e-3, "min": 1e-3, "max": 1e-3,
               "mean": 1e-3, "stdev": 0.0}
    for run in ("r1", "r2"):
        history.record(history.connect(), run, "bench", "k", {"sizes": {"N": 1}},
                       {"summary": summary}, machine={}, commit=None)
    row = {"run": "r2", "created": 0, "kind": "bench", "kernel": "k",
           "point": '{"sizes": {"N": 2}}',
           "data": '{"summary": null}', "machine": "{}", "version": "0"} | columns
    with sqlite3.connect(tmp_path / "h.sqlite") as raw:
        raw.execute(f"INSERT INTO results ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                    tuple(row.values()))
    for argv in (["history"], ["history", "--json"], ["compare", "r1", "r2"],
                 ["compare", "r1", "r2", "--json"]):
        assert cli.main(argv) == 0, (argv, capsys.readouterr().err)
        out = capsys.readouterr().out
        assert "k" in out


def test_a_history_store_that_is_a_fifo_is_one_line(tmp_path):
    from kprof.errors import UsageError
    from kprof.results import history

    os.mkfifo(tmp_path / "h.sqlite")
    with pytest.raises(UsageError, match="a FIFO, not a regular file"):
        history.connect(tmp_path / "h.sqlite")


def test_a_search_folder_that_is_the_whole_disk_is_one_line(monkeypatch, tmp_path, capsys):
    """KPROF_PATH=/ (or /proc, whose folders vanish while they are walked: seen once as an internal
    error under fuzzing) is one line, never an exception or a walk of the whole disk."""
    from kprof.commands import cli
    from kprof.spec import catalog

    monkeypatch.setattr(catalog, "MAX_FOLDERS", 50)
    for i in range(60):
        (tmp_path / "many" / f"d{i}").mkdir(parents=True)
    monkeypatch.setenv("KPROF_PATH", str(tmp_path / "many"))
    assert cli.main(["list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds more than 50 folders" in err
    monkeypatch.setenv("KPROF_PATH", "/proc")
    monkeypatch.setattr(catalog, "MAX_FOLDERS", 10_000_000)
    code = cli.main(["run", "no_such_kernel", "--arch", "sm_90"])
    assert code == 2 and "unknown kernel 'no_such_kernel'" in capsys.readouterr().err


def test_a_racecheck_report_of_many_races_is_read_in_linear_time():
    """An 8.5 MB racecheck report once took 68 s: each race's analysis record was matched against
    every hazard record (records squared). 20,000 of each now join through one index."""
    from dataclasses import replace

    from kprof.findings import Extra
    from kprof.tools.sanitizers import sanitizer_xml

    data = Path(__file__).resolve().parent / "data" / "sanitizer"
    hazard = sanitizer_xml.parse_xml((data / "rec_race.racecheck_all_trimmed.xml").read_text(), "racecheck")[0][0]
    hazards = [replace(hazard, line=k + 1, other=replace(hazard.other, line=k + 2))
               for k in range(20_000)]
    analyses = [replace(h, thread=None, block=None, extra=Extra()) for h in reversed(hazards)]
    start = time.monotonic()
    joined = sanitizer_xml._join_races(hazards, analyses)
    assert time.monotonic() - start < 5
    assert len(joined) == 20_000 and all(j.thread == hazard.thread for j in joined)


def test_control_characters_from_a_spec_never_reach_the_terminal(tmp_path, monkeypatch, capsys):
    """A spec's description with ESC, a C1 CSI and a bidirectional override: escaped in kprof list
    (they once cleared or recoloured the screen); kprof's own progress line still rewrites
    itself."""
    from kprof.inputs import terminal_safe as _escaped

    _kernel(tmp_path / "d", name="e",
            extra='description: "bad \\x9b31m esc \\x1b[2J \\u202e rtl \\x07 bell"\n')
    monkeypatch.setenv("KPROF_PATH", str(tmp_path / "d"))
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x9b" not in out and "\u202e" not in out and "\x07" not in out
    assert "bad \\x9b31m esc \\x1b[2J \\u202e rtl \\x07 bell" in out
    assert _escaped("\r\x1b[K[1/2] k ...") == "\r\x1b[K[1/2] k ..."
    assert _escaped("a\tb\nc") == "a\tb\nc"


def test_a_non_utf8_file_name_is_one_line(tmp_path, capsys):
    folder = os.fsencode(tmp_path / "d")
    os.makedirs(folder)
    with open(folder + b"/k\xff.yaml", "w") as f:
        f.write(SPEC)
    assert cli.main(["build", os.fsdecode(folder + b"/k\xff.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "k\\udcff" in err


@pytest.mark.parametrize("env", ["KPROF_CACHE_DIR", "KPROF_HISTORY"])
def test_a_name_longer_than_255_bytes_is_one_line(tmp_path, monkeypatch, capsys, env):
    monkeypatch.setenv(env, str(tmp_path / ("x" * 300) / "h"))
    assert cli.main(["history"] if env == "KPROF_HISTORY" else ["build", "vector_add"]) == 2
    assert "a name of 300 bytes in it; the file system takes at most 255" in capsys.readouterr().err
    assert cli.main(["new", "abc", "--dir", str(tmp_path / ("y" * 300))]) == 2
    assert "a name of 300 bytes" in capsys.readouterr().err


def test_a_spec_in_a_folder_whose_name_is_not_utf8_gets_a_cache_key(tmp_path):
    """Bytes that are not UTF-8 in a path reached an encoder (the spec's memo, the build's cache
    key): exit 70."""
    from types import SimpleNamespace

    from kprof import spec as spec_mod
    from kprof.build import build, cusource

    folder = os.fsdecode(os.fsencode(tmp_path) + b"/s\xff")
    path = _kernel(Path(folder))
    spec = spec_mod.load(path)
    sources = cusource.local_sources(spec.source)
    key = build._cache_key(spec, SimpleNamespace(key="nvcc 13.0", kind="nvcc"), "sm_90", (),
                           sources)
    assert len(key) == 20


def test_a_json_lines_log_gives_its_objects_and_skips_torn_and_other_lines():
    from kprof.inputs import json_objects

    text = '{"a": 1}\n[1, 2]\n"text"\n{"b": \n\n{"c": {"d": 2}}\n{"e": 3'
    assert list(json_objects(text)) == [{"a": 1}, {"c": {"d": 2}}]


@pytest.mark.nvcc
@pytest.mark.skipif(_dev_full() is not None, reason=str(_dev_full()))
def test_a_full_stderr_changes_no_exit_code_and_loses_no_table(tmp_path):
    """Issue 79: ``kprof build vector_add 2>/dev/full``: the progress line failed, the run became
    exit 7 and its table was lost. A stderr that cannot take a line drops it; stdout keeps the table."""
    with open("/dev/full", "r+") as full:  # r+: never creates the file
        done = subprocess.run([sys.executable, "-m", "kprof", "build", "vector_add", "vector_add_vec4",
                               "--arch", "sm_90"],
                              stdout=subprocess.PIPE, stderr=full, text=True, timeout=300,
                              env=dict(os.environ, KPROF_CACHE_DIR=str(tmp_path)))
    assert done.returncode == 0 and "vector_add" in done.stdout, done.stdout
