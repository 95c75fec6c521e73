"""Broken and hostile inputs: each ends in its one-line error and exit code, never an internal
error, and nothing is silently wrong (a scalar that does not fit, a grid CUDA refuses, a damaged
cache)."""

from __future__ import annotations

import signal
import sqlite3
import stat

import pytest

from kprof import spec as spec_mod
from kprof.build import build, toolchain
from kprof.commands import cli
from kprof.errors import ReferenceExprError, UsageError
from kprof.results import history
from kprof.spec import catalog, reference
from kprof.tools.sanitizers import sanitizer_xml

BASE = """\
sizes: {N: 64}
args:
  - {name: x, buffer: float32, shape: [N], role: out}
  - {name: n, scalar: SCALAR, value: VALUE}
launch: {grid: [GRID], block: [BLOCK]}
reference: {x: 1}
"""


def _spec(tmp_path, scalar="int32", value="N", grid="1", block="64"):
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k(float* x, int n) {}\n')
    text = BASE.replace("SCALAR", scalar).replace("VALUE", value).replace("GRID", grid).replace("BLOCK", block)
    (tmp_path / "k.yaml").write_text(text)
    return spec_mod.load(tmp_path / "k.yaml")


@pytest.mark.parametrize("scalar, value, message", [
    ("int32", "2**31", r"does not fit int32 \(-2147483648 to 2147483647\)"),
    ("int32", "-2**31 - 1", "does not fit int32"),
    ("uint32", "-1", r"does not fit uint32 \(0 to 4294967295\)"),
    ("int8", "128", "does not fit int8"),
    ("float16", "70000", "does not fit float16"),
])
def test_a_scalar_that_does_not_fit_its_type_is_refused(tmp_path, scalar, value, message):
    with pytest.raises(UsageError, match=message):
        _spec(tmp_path, scalar, value).resolve()


@pytest.mark.parametrize("grid, block, message", [
    ("2**32", "64", "grid\\[0\\] = 4294967296 at N=64; CUDA allows at most 2,147,483,647"),
    ("1", "2048", "block\\[0\\] = 2048; CUDA allows at most 1024"),
    ("1", "32, 64", "block has 2048 threads"),
])
def test_a_launch_cuda_would_refuse_is_refused_at_resolve(tmp_path, grid, block, message):
    with pytest.raises(UsageError, match=message):
        _spec(tmp_path, grid=grid, block=block).resolve()


def test_scalars_at_the_edge_of_their_type_pass(tmp_path):
    assert _spec(tmp_path, "int32", "2**31 - 1").resolve().scalars[0][1] == 2**31 - 1


@pytest.mark.parametrize("value", ["1e9999", "-1e9999", "2**200"])
def test_sizes_beyond_any_machine_are_one_line(capsys, value):
    assert cli.main(["run", "tiled_matmul", "--size", f"M={value}"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_reference_exponent_tower_is_refused():
    with pytest.raises(ReferenceExprError, match="exponent above 64"):
        reference.evaluate("2**2**2**2**2**2", {})
    assert reference.evaluate("x**2", {"x": 3.0}) == 9.0


def test_a_damaged_xml_field_loses_the_field_not_the_report(data_dir):
    text = (data_dir / "sanitizer" / "rec_oob.memcheck.xml").read_text()
    broken = text.replace("<line>", "<line>not-a-number", 1)
    findings, _ = sanitizer_xml.parse_xml(broken, "memcheck")
    assert findings and findings[0].line is None


@pytest.mark.nvcc
def test_a_damaged_cached_cubin_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("KPROF_CACHE_DIR", str(tmp_path / "cache"))
    spec = catalog.load("vector_add")
    first = build.build(spec, "sm_90")
    good = first.cubin.read_bytes()
    for damage in (b"", good[:100], b"x" * len(good)):
        first.cubin.write_bytes(damage)
        again = build.build(spec, "sm_90")
        assert not again.cached and again.cubin.read_bytes() == good
    assert build.build(spec, "sm_90").cached


@pytest.fixture(scope="module")
def vector_add_cache(tmp_path_factory):
    """A build cache holding vector_add for sm_90, built once for the module's tests that damage a
    copy of it."""
    folder = tmp_path_factory.mktemp("vector-add-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KPROF_CACHE_DIR", str(folder))
        build.build(catalog.load("vector_add"), "sm_90")
    return folder


@pytest.mark.nvcc
@pytest.mark.parametrize("usage", [{"registers": True}, {"registers": -119}, {"registers": "32"}, {"registers": 300},
                                   {"shared_static": 1.5}, {"colour": 1}, [1, 2], None, {"registers": 0},
                                   {"registers": 17}])
def test_a_cache_entry_of_the_wrong_types_is_rebuilt(tmp_path, monkeypatch, usage, vector_add_cache):
    """A damaged entry's register count was printed as the result ("True registers per thread")."""
    import json
    import shutil

    # a whole entry, as a first build leaves it
    shutil.copytree(vector_add_cache, tmp_path / "cache")
    monkeypatch.setenv("KPROF_CACHE_DIR", str(tmp_path / "cache"))
    spec = catalog.load("vector_add")
    first = build.build(spec, "sm_90")
    assert first.cached
    meta = first.cubin.with_suffix(".json")
    info = json.loads(meta.read_text())
    info["usage"]["vector_add"] = usage if not isinstance(usage, dict) else {**info["usage"]["vector_add"], **usage}
    meta.write_text(json.dumps(info))
    again = build.build(spec, "sm_90")
    assert not again.cached and again.usage == first.usage


@pytest.mark.nvcc
def test_a_cached_cubin_linked_to_a_huge_file_is_not_read_whole(tmp_path, monkeypatch):
    monkeypatch.setenv("KPROF_CACHE_DIR", str(tmp_path / "cache"))
    spec = catalog.load("vector_add")
    first = build.build(spec, "sm_90")
    huge = tmp_path / "huge"
    with open(huge, "wb") as f:
        f.truncate(build.MAX_CUBIN_BYTES + 1)  # sparse: no disk, and never read
    first.cubin.unlink()
    first.cubin.symlink_to(huge)
    again = build.build(spec, "sm_90")
    assert not again.cached and not again.cubin.is_symlink()


def test_a_cache_folder_that_is_a_file_is_one_line(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("KPROF_CACHE_DIR", str(blocker))
    monkeypatch.setattr(toolchain, "nvcc_version", lambda nvcc: "nvcc 13.0")
    monkeypatch.setattr(build.proc, "find_tool", lambda name: "nvcc")
    assert cli.main(["build", "vector_add", "--arch", "sm_90"]) == 2
    err = capsys.readouterr().err
    assert "build cache" in err and "KPROF_CACHE_DIR" in err and err.count("\n") == 1


def test_a_name_longer_than_the_file_system_allows(capsys):
    assert cli.main(["run", "x" * 300]) == 2
    assert "unknown kernel" in capsys.readouterr().err


@pytest.mark.parametrize("ref, message", [("last~abc", "write last, or last~N"), ("last~-1", "write last, or last~N"),
                                          ("last~5", "there are only 1 bench runs")])
def test_compare_refs_are_checked(tmp_path, monkeypatch, capsys, ref, message):
    monkeypatch.setenv("KPROF_HISTORY", str(tmp_path / "h.sqlite"))
    conn = history.connect()
    history.record(conn, "r1", "bench", "k", {"sizes": {}}, {"summary": None}, machine={}, commit=None)
    assert cli.main(["compare", ref]) == 2
    assert message in capsys.readouterr().err


def test_compare_and_history_read_without_writing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KPROF_HISTORY", str(tmp_path / "none.sqlite"))
    assert cli.main(["compare", "last~1"]) == 2
    assert ("no bench runs yet" in capsys.readouterr().err and not (tmp_path / "none.sqlite").exists())
    empty = tmp_path / "empty.sqlite"
    empty.write_text("")
    monkeypatch.setenv("KPROF_HISTORY", str(empty))
    assert cli.main(["history"]) == 2 and empty.read_text() == "", "an empty file is not turned into a database"
    assert "cannot read the history store" in capsys.readouterr().err


def test_a_history_row_with_broken_json_is_skipped(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KPROF_HISTORY", str(tmp_path / "h.sqlite"))
    conn = history.connect()
    history.record(conn, "r1", "bench", "k", {"sizes": {"N": 1}}, {"summary": None}, machine={}, commit=None)
    with sqlite3.connect(tmp_path / "h.sqlite") as raw:
        raw.execute("INSERT INTO results (run, created, kind, kernel, point, data, machine, version) "
                    "VALUES ('r1', 0, 'bench', 'k', '{broken', '{}', '{}', '0')")
    assert cli.main(["history", "--json"]) == 0
    capsys.readouterr()


def test_sanitize_and_cases_without_a_gpu_exit_5(monkeypatch, tmp_path, capsys):
    import kprof.child.device

    exe = tmp_path / "cs"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    monkeypatch.setenv("KPROF_COMPUTE_SANITIZER", str(exe))
    monkeypatch.setattr(kprof.child.device, "probe", lambda: "no CUDA driver: cuInit -> libcuda not found")
    monkeypatch.setattr(build, "build", lambda *a, **k: pytest.fail("nothing is built before the GPU check"))
    for argv in (["cases", "--arch", "sm_90"], ["sanitize", "vector_add", "--arch", "sm_90", "--tool", "values"]):
        code = cli.main(argv)
        err = capsys.readouterr().err
        assert code == 5 and "no CUDA driver" in err and err.count("\n") == 1, (argv, err)


def test_sarif_uris_are_absolute_or_based_and_encoded():
    from kprof.findings import Finding, to_sarif
    from kprof.tools.sanitizers.toolrun import ToolResult

    fs = [Finding("memcheck", "out-of-bounds-write", "k", "/work/my proj/k.cu", 0, thread=None, block=None, count=1, message="m"),
          Finding("memcheck", "api-error", None, None, None, thread=None, block=None, count=1, message="api"),
          Finding("memcheck", "out-of-bounds-read", "k", "/elsewhere/a#b.cu", 7, thread=None, block=None, count=1, message="m")]
    sarif = to_sarif([ToolResult("memcheck", "findings", fs, 1.0)], "0.1.0", root="/work/my proj")
    run = sarif["runs"][0]
    assert ("informationUri" not in run["tool"]["driver"] and all("helpUri" not in r for r in run["tool"]["driver"]["rules"]))
    first, second, third = run["results"]
    assert (first["locations"][0]["physicalLocation"] == {"artifactLocation": {"uri": "k.cu", "uriBaseId": "SRCROOT"}})
    assert second["locations"] == []
    assert (third["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "file:///elsewhere/a%23b.cu")
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == "file:///work/my%20proj/"


def test_bad_allocations_file_is_one_line(tmp_path, data_dir, capsys):
    bad = tmp_path / "r.json"
    bad.write_text('{"allocations": [{"name": "C"}]}')
    xml = data_dir / "sanitizer" / "rec_oob.memcheck.xml"
    assert cli.main(["sanitize", "--from-xml", str(xml), "--allocations", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "allocations[0]" in err and err.count("\n") == 1


@pytest.mark.parametrize("source", ["loop.cu", "bad\\u0000.cu"])
def test_odd_source_paths_are_one_line(tmp_path, source):
    (tmp_path / "loop.cu").symlink_to(tmp_path / "loop.cu")
    (tmp_path / "k.yaml").write_text(f'source: "{source}"\nargs: [{{name: a, buffer: float32, shape: [1], role: out}}]\n'
                                     "launch: {grid: [1], block: [1]}\nreference: {a: 1}\n")
    with pytest.raises(spec_mod.SpecError if hasattr(spec_mod, "SpecError") else Exception, match="source"):
        spec_mod.load(tmp_path / "k.yaml")


@pytest.mark.nvcc
def test_build_accepts_a_twin_by_name(capsys):
    assert cli.main(["build", "tiled_matmul_no_bounds_fixed", "--arch", "sm_90"]) == 0
    assert "tiled_matmul_no_bounds_fixed" in capsys.readouterr().out


def test_doctor_names_a_missing_cccl_header(tmp_path, monkeypatch):
    """The [cuda] extra once came without CCCL: nvcc ran, and every kernel including <nv/target>
    failed."""
    from helpers import failing_nvcc

    from kprof.tools.machine import doctor

    failing_nvcc(tmp_path, "probe.cu:1:10: fatal error: nv/target: No such file or directory", monkeypatch)
    check = doctor._compile()
    assert (not check.ok and "nv/target is missing" in check.detail and "nvidia-cuda-cccl" in check.fix)


@pytest.mark.nvcc
def test_doctor_compiles_a_cccl_kernel():

    assert toolchain.probe_compile() is None


@pytest.mark.parametrize("argv, message", [
    (["run", "vector_add", "--timeout", "nan"], "--timeout nan: give a positive number"),
    (["run", "vector_add", "--timeout", "inf"], "--timeout inf: give a positive number"),
    (["bench", "vector_add", "--rel-stdev", "nan"], "--rel-stdev nan: give a positive number"),
    (["history", "--limit", "0"], "--limit 0: give 1 or more"),
    (["history", "--limit", "-1"], "--limit -1: give 1 or more"),
    (["run", "vector_add", "--size", "N=5", "N=7"], "N is given twice"),
    (["run", "vector_add", "--size", "N=abc"], "--size N=abc: give a whole number"),
])
def test_bad_options_are_one_line(capsys, argv, message):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_dtype_given_as_a_list_is_one_line(tmp_path, capsys):
    text = (catalog.find("vector_add")).read_text().replace("buffer: float32", "buffer: [float32]", 1)
    (tmp_path / "vector_add.cu").write_text("")
    (tmp_path / "vector_add.yaml").write_text(text)
    assert cli.main(["run", str(tmp_path / "vector_add.yaml")]) == 2
    assert "is not a supported dtype" in capsys.readouterr().err


def test_a_corrupted_history_file_is_one_line(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "h.sqlite"
    bad.write_bytes(bytes(range(256)) * 16)
    monkeypatch.setenv("KPROF_HISTORY", str(bad))
    for argv in (["history"], ["compare", "last"]):
        assert cli.main(argv) == 2
        assert "cannot read the history store" in capsys.readouterr().err


def test_a_hostile_spec_on_kprof_path_does_not_hang_list(tmp_path, monkeypatch, capsys):
    lol = 'x: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    (tmp_path / "lol.yaml").write_text(lol)
    monkeypatch.setenv("KPROF_PATH", str(tmp_path))
    assert cli.main(["list"]) == 0
    assert "INVALID SPEC" in capsys.readouterr().out


@pytest.mark.nvcc
@pytest.mark.parametrize("sig, code, says", [(signal.SIGINT, 130, "kprof: interrupted"),
                                             (signal.SIGTERM, 143, "kprof: terminated (SIGTERM)")])
def test_an_interrupt_mid_build_leaves_no_child_and_no_temporary_file(tmp_path, sig, code, says):
    """kprof build --all is stopped a second in, while nvcc children run: the exit code of the
    signal and its one line, no process of its group left, no temporary file in the build cache or
    TMPDIR, and what was built kept."""
    import os
    import subprocess
    import sys
    import time

    cache, tmp = tmp_path / "cache", tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, KPROF_CACHE_DIR=str(cache), TMPDIR=str(tmp))
    proc = subprocess.Popen([sys.executable, "-m", "kprof", "build", "--all"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (cache.is_dir() and any(cache.iterdir())):
        time.sleep(0.05)  # until the builds have begun: the signal lands in the middle of them
    time.sleep(0.3)
    proc.send_signal(sig)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == code and err.strip().splitlines()[-1] == says, err[-2000:]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)  # the group still has a member
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("a child of kprof outlived it")
    assert not [p.name for p in cache.iterdir() if p.name.startswith(".")], "a temporary file left in the cache"
    assert not list(tmp.iterdir()), "a temporary file left in TMPDIR"
    # each kept entry whole
    assert all(p.with_suffix(".json").is_file() for p in cache.glob("*.cubin"))


RECORD_FOREVER = """
import sys
from pathlib import Path
from kprof.results import history
conn = history.connect(Path(sys.argv[1]))
i = 0
while True:
    history.record(conn, "run-killed", "bench", "k", {"sizes": {"N": i}}, {"summary": None}, machine={}, commit=None)
    i += 1
"""


def test_a_history_store_whose_writer_is_killed_mid_write_stays_readable(tmp_path):
    """SIGKILL (no handler runs) while a process records point after point: every row kept is whole,
    and the store takes the next run's points."""
    import os
    import sqlite3
    import subprocess
    import sys
    import time

    from kprof.results import history

    db = tmp_path / "h.sqlite"
    writer = subprocess.Popen([sys.executable, "-c", RECORD_FOREVER, str(db)])

    # rows another connection sees (the schema alone once reached the 64 KiB, with none)
    def committed() -> int:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
                return int(conn.execute("SELECT count(*) FROM results").fetchone()[0])
        except sqlite3.Error:
            return 0

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (sum(p.stat().st_size for p in tmp_path.glob("h.sqlite*")) < 65536
                                           or not committed()):
        time.sleep(0.05)
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(10)
    conn = history.connect(db)
    rows = history.rows(conn, limit=100000)
    assert rows and all(r.point["sizes"]["N"] >= 0 for r in rows)
    history.record(conn, "run-after", "bench", "k", {"sizes": {"N": -1}}, {}, machine={}, commit=None)
    assert history.runs(conn)[0] == "run-after"


@pytest.mark.nvcc
def test_a_build_killed_mid_write_leaves_a_cache_the_next_run_trusts_only_where_whole(tmp_path):
    """SIGKILL in the middle of builds: what it left (temporary files, an entry cut short) is never
    taken for a build; the next run builds what is missing and reads what is whole."""
    import os
    import subprocess
    import sys
    import time

    cache = tmp_path / "cache"
    env = dict(os.environ, KPROF_CACHE_DIR=str(cache))
    names = ["vector_add", "tiled_matmul", "reduce_sum", "softmax", "rmsnorm"]
    proc = subprocess.Popen([sys.executable, "-m", "kprof", "build", *names, "--arch", "sm_90"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (cache.is_dir() and any(cache.iterdir())):
        time.sleep(0.05)
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)
    # an entry cut short, as a crash in the middle of its write would leave it
    for meta in cache.glob("*.json"):
        meta.write_text(meta.read_text()[: len(meta.read_text()) // 2])
        break
    done = subprocess.run([sys.executable, "-m", "kprof", "build", *names, "--arch", "sm_90", "--json"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    from kprof.build import build
    from kprof.spec import catalog

    with pytest.MonkeyPatch.context() as m:
        m.setenv("KPROF_CACHE_DIR", str(cache))
        # every entry whole now
        assert all(build.build(catalog.load(n), "sm_90").cached for n in names)


@pytest.mark.nvcc
def test_what_a_killed_build_left_in_the_cache_is_swept_once_it_is_old(tmp_path, monkeypatch):
    """A SIGKILL leaves its temporary files (no handler runs): one an hour old is removed by the
    next build, a fresh one (another kprof at work) is left alone."""
    import os
    import time

    from kprof.build import build
    from kprof.spec import catalog

    cache = tmp_path / "cache"
    cache.mkdir()
    old, fresh, keep = cache / ".vector_add-abc.cubin", cache / ".vector_add-def.cubin", cache / ".keep-xyz"
    old.write_bytes(b"half")
    fresh.write_bytes(b"half")
    keep.mkdir()
    (keep / "vector_add.ptx").write_text("x")
    hour_ago = time.time() - 2 * build.STALE_S
    for path in (old, keep):
        os.utime(path, (hour_ago, hour_ago))
    monkeypatch.setenv("KPROF_CACHE_DIR", str(cache))
    build.sweep_stale.cache_clear()
    build.build(catalog.load("vector_add"), "sm_90")
    assert not old.exists() and not keep.exists() and fresh.exists()


def _environments(tmp_path):
    """The machine's state a user may run kprof in: names and the variables each sets (None:
    unset)."""
    import os

    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    os.mkfifo(tmp_path / "fifo")
    spaces, accents = tmp_path / "tmp with spaces", tmp_path / "tmp-ünï-日本"
    spaces.mkdir()
    accents.mkdir()
    return {
        "no HOME": {"HOME": None, "XDG_CACHE_HOME": None, "XDG_DATA_HOME": None, "KPROF_HISTORY": None},
        "HOME missing": {"HOME": str(tmp_path / "nohome"), "XDG_DATA_HOME": None, "KPROF_HISTORY": None},
        "HOME a file": {"HOME": str(a_file), "XDG_CACHE_HOME": None, "XDG_DATA_HOME": None, "KPROF_HISTORY": None},
        "cache a file": {"KPROF_CACHE_DIR": str(a_file)},
        "cache below a missing folder": {"KPROF_CACHE_DIR": str(tmp_path / "a" / "b" / "cache")},
        "TMPDIR missing": {"TMPDIR": str(tmp_path / "notmp")},
        "TMPDIR a file": {"TMPDIR": str(a_file)},
        "TMPDIR with spaces": {"TMPDIR": str(spaces)},
        "TMPDIR not ASCII": {"TMPDIR": str(accents)},
        "LANG=C": {"LANG": "C", "LC_ALL": "C"},
        "PATH empty": {"PATH": ""},
        "PATH unset": {"PATH": None},
        "history a folder": {"KPROF_HISTORY": str(tmp_path)},
        "history a FIFO": {"KPROF_HISTORY": str(tmp_path / "fifo")},
        "history below a file": {"KPROF_HISTORY": str(a_file / "h.sqlite")},
        "COLUMNS negative": {"COLUMNS": "-5"},
        "COLUMNS of 50 digits": {"COLUMNS": "9" * 50},
    }


ENVIRONMENTS = ["no HOME", "HOME missing", "HOME a file", "cache a file", "cache below a missing folder", "TMPDIR missing",
                "TMPDIR a file", "TMPDIR with spaces", "TMPDIR not ASCII", "LANG=C", "PATH empty", "PATH unset",
                "history a folder", "history a FIFO", "history below a file", "COLUMNS negative", "COLUMNS of 50 digits"]


# where the answer is known: a history store that is no file is no empty history; a cache that is a
# file builds nothing
EXPECTED = {("history a folder", "history"): 2, ("history a FIFO", "history"): 2, ("cache a file", "occupancy"): 2,
            ("history below a file", "history"): 0, ("LANG=C", "list"): 0, ("TMPDIR not ASCII", "list"): 0}


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_every_environment_is_a_result_or_one_line(tmp_path, monkeypatch, capsys, data_dir, environment):
    """Each command that needs no GPU, in each environment: a documented exit code, and where it is
    not 0 or 1, one line saying what to set; never a traceback or exit 70. (Checked by hand in round
    4 before this test.)"""
    from kprof import errors

    xml = data_dir / "sanitizer" / "rec_oob.memcheck.xml"
    commands = [["list"], ["history"], ["cases", "--list"], ["sanitize", "--from-xml", str(xml), "--sarif",
                                                             str(tmp_path / "out.sarif")], ["occupancy", "vector_add"]]
    documented = {code for code, _, _ in errors.EXIT_CODES} - {errors.EXIT_INTERNAL}
    answers = []
    # the environment for kprof's commands alone: restored before pytest reports the test (a COLUMNS
    # of 50 digits once crashed pytest's own verbose progress line, and with it an xdist worker)
    with monkeypatch.context() as env:
        for name, value in _environments(tmp_path)[environment].items():
            if value is None:
                env.delenv(name, raising=False)
            else:
                env.setenv(name, value)
        for argv in commands:
            answers.append((argv, cli.main(argv), *capsys.readouterr()))
    for argv, code, out, err in answers:
        lines = [line for line in err.splitlines() if line.strip() and not line.startswith("note:")]
        assert code in documented, (environment, argv, code, err)
        assert code == EXPECTED.get((environment, argv[0]), code), (environment, argv, err)
        assert code in (0, 1) or (len(lines) == 1 and lines[0].startswith("kprof: error: ")), (environment, argv, err)
        assert "Traceback" not in out + err
    # what the environment named stays as it was
    assert ((tmp_path / "a-file").read_text() == "x" and stat.S_ISFIFO((tmp_path / "fifo").stat().st_mode))


def test_a_tmpdir_too_long_for_nvccs_names_is_one_line_at_build_and_in_doctor(tmp_path, monkeypatch, capsys):
    """Issue 79: a 5,000-character TMPDIR was an internal error (exit 70) at kprof build, and kprof
    doctor blamed missing CUDA headers for it."""
    from kprof.tools.machine import doctor

    monkeypatch.setenv("TMPDIR", "/tmp/" + "a" * 5000)
    monkeypatch.setenv("KPROF_CACHE_DIR", str(tmp_path / "cache"))
    problem = toolchain.tmpdir_problem()
    assert problem is not None and problem.startswith("TMPDIR") and "\n" not in problem
    with pytest.raises(UsageError, match="TMPDIR"):
        build._check_tmpdir()
    headers = next(c for c in doctor.run_checks() if c.name == "CUDA headers")
    assert not headers.ok and headers.detail.startswith("not checked: TMPDIR"), headers


def test_doctor_says_the_build_cache_cannot_be_written_where_kprof_build_would_fail(tmp_path, monkeypatch):
    """Issue 79: kprof doctor said build: ready where kprof build then failed (a read-only HOME):
    the cache is tried as a build would use it."""
    from kprof.tools.machine import doctor

    (tmp_path / "file").write_text("a file where the cache's folder would go")
    monkeypatch.setenv("KPROF_CACHE_DIR", str(tmp_path / "file" / "kprof"))
    cache = next(c for c in doctor.run_checks() if c.name == "build cache")
    assert not cache.ok and "KPROF_CACHE_DIR" in cache.fix
    ready = {r.command: r for r in doctor.readiness(doctor.run_checks())}
    assert not ready["build"].ready


@pytest.mark.nvcc
def test_twenty_thousand_defines_are_one_line_not_a_silent_exit_127(tmp_path, monkeypatch):
    """Issue 79: 20,000 defines made nvcc exit 127 with no message (its step's shell command is one
    argument, at most 128 KiB), reported as a compile error."""
    from kprof.errors import BuildError
    from kprof.spec import catalog

    monkeypatch.setenv("KPROF_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("KPROF_COMPILER", "nvcc")
    from dataclasses import replace

    base = catalog.load("vector_add")
    spec = replace(base, defines=base.defines + tuple((f"D{i}", str(i)) for i in range(20_000)))
    with pytest.raises(UsageError, match="at most 128 KiB in one command") as info:
        build.build(spec, "sm_90")
    assert not isinstance(info.value, BuildError) and "\n" not in str(info.value)
