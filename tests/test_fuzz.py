"""Generated broken and hostile inputs through the spec loader, the command line and the XML parser:
never an internal error (exit 70), never a traceback, always quickly. Hypothesis picks the
inputs."""

from __future__ import annotations

import os
import stat
import time
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kprof import spec as spec_mod  # noqa: E402
from kprof.build import build, toolchain  # noqa: E402
from kprof.commands import cli  # noqa: E402
from kprof.errors import KprofError  # noqa: E402
from kprof.tools.sanitizers import sanitizer_xml  # noqa: E402

FAST = settings(max_examples=120, deadline=timedelta(seconds=5),
                suppress_health_check=[HealthCheck.function_scoped_fixture])
BASE = yaml.safe_load((Path(__file__).resolve().parent.parent / "kernels" / "tiled_matmul.yaml").read_text())
FIELDS = [("sizes", "M"), ("sizes", "M", "default"), ("args", 0, "shape"), ("args", 0, "buffer"),
          ("args", 3, "value"),
          ("launch", "grid"), ("launch", "block"), ("launch", "shared_mem"), ("reference", "C"),
          ("tolerance",),
          ("work", "flops"), ("defines", "TILE"), ("nvcc_flags",), ("name",), ("source",),
          ("checks",), ("args", 0, "fill")]

values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
        ["M", "1e9999", "2**2**2**2**2**2", "__import__('os')", "x" * 500, "ceil(M / 0)", "float32",
         "-ccbin=/bin/sh",
         "uniform(-inf, inf)", "M; rm -rf /", "N / 0", "", "\x00", "../../etc/passwd", "9 ** 999",
         "-I./`touch x`",
         "--include-path=$(id)", "-DX=`id`", "a`b`.cu", "((((((((((((((((((((1))))))))))))))))))))",
         "~nosuchuser/x",
         "/dev/zero", "2 ** 2 ** 2 ** 2 ** 2", "-" * 999 + "1", "sqrt(" * 120 + "M" + ")" * 120,
         "M" + "**1" * 300, "[" * 50 + "M" + "]" * 50]) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)


def _mutate(path: tuple, value: object) -> dict:
    import copy

    data = copy.deepcopy(BASE)
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


class _Reached(KprofError):
    exit_code = 77  # the command got as far as building: the inputs were accepted


@pytest.fixture
def no_process(monkeypatch):
    """Any external program started is a failure: loaders and parsers run none."""
    import subprocess

    def refuse(*args, **kwargs):
        raise AssertionError(f"a process was started: {args[0] if args else kwargs}")

    monkeypatch.setattr(subprocess, "Popen", refuse)


@pytest.fixture
def no_builds(monkeypatch):
    def stop(*a, **k):
        raise _Reached("reached the build")

    monkeypatch.setattr(build, "build", stop)


@FAST
@given(field=st.sampled_from(FIELDS), value=values)
def test_generated_specs_load_or_fail_in_one_line(no_process, tmp_path_factory, field, value):
    folder = tmp_path_factory.mktemp("spec")
    (folder / "tiled_matmul.cu").write_text("")
    path = folder / "k.yaml"
    try:
        path.write_text(yaml.safe_dump(_mutate(field, value)))
    except (ValueError, yaml.YAMLError):
        return
    start = time.monotonic()
    try:
        spec_mod.load(path).resolve()
    except KprofError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 2000
    assert time.monotonic() - start < 2


SIZE_VALUES = st.sampled_from(["1", "0", "-5", "abc", "1e9999", "2**40", "nan", "M", "1,2", "=",
                               "3.5", "2**2**2**2**2"])
OPTIONS = st.sampled_from(["--size", "--timeout", "--param", "--arch", "--seed", "--tool", "--jobs",
                           "--limit",
                           "--rel-stdev", "--memcheck-padding", "--dynamic-smem", "--block",
                           "--launch-count"])


@FAST
@given(command=st.sampled_from(["run", "sanitize", "occupancy", "profile", "bench", "cases",
                                "history", "compare", "build"]),
       name=st.sampled_from(["tiled_matmul", "vector_add", "nope", "x" * 300, "a/b.yaml",
                             "tiled_matmul_no_bounds_fixed", "last~abc", "--"]),
       extra=st.lists(st.tuples(OPTIONS,
                                st.sampled_from(["M", "N", "BLOCK", "TILE", "sm_90", "smx", "inf",
                                                 "-1"]),
                                SIZE_VALUES), max_size=3))
def test_generated_command_lines_never_end_in_an_internal_error(no_process, no_builds, capsys,
                                                                tmp_path_factory, monkeypatch,
                                                               command, name, extra):
    import kprof.child.device

    # finding libcuda runs ldconfig
    monkeypatch.setattr(kprof.child.device, "probe", lambda: "no CUDA driver: a stand-in")
    monkeypatch.setenv("KPROF_HISTORY", str(tmp_path_factory.mktemp("h") / "h.sqlite"))
    argv = [command, name]
    for option, key, value in extra:
        argv += [option, f"{key}={value}" if option in ("--size", "--param") else value]
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code != 70, (argv, err)
    assert "Traceback" not in out + err
    if code not in (0, 77):
        assert err.strip().count("\n") <= 1 or code == 1, (argv, err)


XML = sorted((Path(__file__).resolve().parent / "data").glob("*/*.xml"))


@FAST
@given(source=st.sampled_from(XML), cut=st.integers(min_value=0, max_value=20000),
       junk=st.sampled_from(["", "<line>abc</line>", "<address>0xZZ</address>", "<x>", "&lt;",
                             "9" * 400, "\x00"]))
def test_damaged_xml_is_a_report_or_one_line(no_process, source, cut, junk):
    text = source.read_text()
    broken = text[:cut] + junk + text[cut:]
    try:
        findings, _ = sanitizer_xml.parse_xml(broken, "memcheck")
    except KprofError as exc:
        assert "\n" not in str(exc)
        return
    assert all(f.line is None or (isinstance(f.line, int) and 0 <= f.line < 1 << 64)
               for f in findings)


def test_a_number_no_field_can_hold_is_dropped_not_kept():
    """Found by the fuzz test above: a 400-digit line number came back as the finding's line."""
    text = (Path(__file__).resolve().parent / "data" / "sanitizer" / "rec_oob.memcheck.xml").read_text()
    broken = text.replace("<line>4</line>", "<line>" + "9" * 400 + "</line>", 1)
    findings, _ = sanitizer_xml.parse_xml(broken, "memcheck")
    assert findings and all(f.line is None or f.line < 1 << 64 for f in findings)
    assert sanitizer_xml._int("-3") is None and sanitizer_xml._int("0x10") == 16


SHELLISH = st.text(alphabet=st.sampled_from(list("ab/._-~`$;|&<>()\\'\" \n\t*?[]{}!#0") + ["\x00", "\u00b2", "\u0663"]),
                   max_size=24)


@FAST
@given(name=SHELLISH, source=SHELLISH, flag=SHELLISH)
def test_no_generated_path_or_flag_reaches_nvcc_with_a_shell_character(tmp_path_factory, monkeypatch, name, source,
                                                                      flag):
    """Folder and file names and flags drawn from the characters a shell acts on: the spec loads and
    the build's argv has none of them, or it is one line (a KprofError) and nvcc never runs."""
    from kprof import inputs, proc

    seen: list[list[str]] = []
    monkeypatch.setattr(build.proc, "find_tool", lambda tool: Path("/usr/bin/nvcc"))
    monkeypatch.setattr(toolchain, "nvcc_version", lambda nvcc: "nvcc 13.0")
    monkeypatch.setattr(build.proc, "run", lambda argv, **k: seen.append(argv) or proc.Completed(
        tuple(argv), 1, "", "stand-in nvcc", 0.0))
    monkeypatch.setenv("KPROF_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    root = tmp_path_factory.mktemp("spec")
    try:
        folder = root / (name.replace("/", "_").replace("\x00", "") or "d")
        folder.mkdir()
        (folder / "inc").mkdir()
        src = source.replace("/", "_").replace("\x00", "") or "s"
        (folder / f"{src}.cu").write_text("")
    except (OSError, ValueError):
        return
    data = _mutate(("source",), f"{src}.cu")
    data["nvcc_flags"] = [flag, "-Iinc"]
    data["name"] = "k"
    try:
        (folder / "k.yaml").write_text(yaml.safe_dump(data))
        build.build(spec_mod.load(folder / "k.yaml"), "sm_90")
    except KprofError as exc:
        assert "\n" not in str(exc)
    for argv in seen:
        assert all(inputs.shell_character(a) is None for a in argv), argv


@FAST
@given(path=SHELLISH,
       option=st.sampled_from(["spec", "--from-xml", "--allocations", "--sarif", "--dir",
                               "KPROF_PATH",
                                "KPROF_CACHE_DIR", "KPROF_HISTORY"]))
def test_generated_paths_are_a_result_or_one_line(no_process, no_builds, capsys, tmp_path_factory,
                                                  monkeypatch, path,
                                                 option):
    # Each example's environment is its own: a KPROF_PATH an earlier example set (/, /proc) once
    # leaked into the next ones, which then walked the disk.
    with monkeypatch.context() as m:
        _one_generated_path(m, capsys, tmp_path_factory, path, option)


def _contained(path: str, tmp_path_factory) -> str:
    """An output path the test generated, kept inside the test's temporary folders: the suite runs
    as root, where `--dir /` wrote k.cu into the machine's root, `--sarif /bb*".` a report beside it
    and `../../../x` another."""
    import os

    base = str(tmp_path_factory.getbasetemp().parent)
    try:
        where = os.path.normpath(os.path.join(os.getcwd(), path))
    except ValueError:  # a NUL: nothing is written anywhere
        return path
    if where == base or where.startswith(base + os.sep):
        return path
    return str(tmp_path_factory.mktemp("out")) + "/" + path.replace("..", "").lstrip("/")


def _one_generated_path(m, capsys, tmp_path_factory, path, option):
    m.chdir(tmp_path_factory.mktemp("cwd"))
    if option in OUTPUT_OPTIONS:
        path = _contained(path, tmp_path_factory)
    m.setenv("KPROF_HISTORY", str(tmp_path_factory.mktemp("h") / "h.sqlite"))
    xml = str(XML[0])
    argv = {"spec": ["run", path or "x.yaml", "--arch", "sm_90"],
            "--from-xml": ["sanitize", "--from-xml", path],
            "--allocations": ["sanitize", "--from-xml", xml, "--allocations", path],
            "--sarif": ["sanitize", "--from-xml", xml, "--sarif", path], "--dir": ["new", "k", "--dir", path]}.get(
        option,
        ["build", "vector_add", "--arch", "sm_90"] if option == "KPROF_CACHE_DIR" else ["history"])
    if option.startswith("KPROF_"):
        if "\x00" in path:
            return  # no environment can hold a NUL
        m.setenv(option, path)
    start = time.monotonic()
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code != 70 and "Traceback" not in out + err, (argv, err)
    # never a hang: a bound far above a loaded CI machine's slowest example
    assert time.monotonic() - start < 60, (argv, err)
    if code not in (0, 1, 77):
        assert err.strip().count("\n") == 0, (argv, err)


NUMBERS = st.one_of(st.integers(min_value=-(2**70), max_value=2**70).map(str), st.text(max_size=8),
                    st.sampled_from(["\u00b2", "\u0663", "9" * 5000, "0x" + "f" * 40, "-0", " 7 ",
                                     "1e9", "0x1g"]))


@FAST
@given(field=st.sampled_from(["line", "address", "size", "x", "gridid", "count"]), value=NUMBERS)
def test_generated_report_numbers_are_a_number_or_dropped(field, value):
    from kprof import inputs

    got = inputs.report_uint(value)
    assert got is None or (isinstance(got, int) and 0 <= got < 1 << 64)
    text = XML[0].read_text().replace(f"<{field}>",
                                      f"<{field}>{value.replace('<', '').replace('&', '')}", 1)
    try:
        sanitizer_xml.parse_xml(text, "memcheck")
    except KprofError as exc:
        assert "\n" not in str(exc)


@FAST
@given(depth=st.integers(min_value=0, max_value=20000), opener=st.sampled_from(["[", "{\"a\":"]))
def test_generated_json_nesting_is_parsed_or_one_line(depth, opener):
    from kprof import inputs

    closer = "]" if opener == "[" else "}"
    try:
        inputs.parse_json(opener * depth + "1" + closer * depth, "a result file")
    except KprofError as exc:
        assert "nested deeper than 64" in str(exc) and depth > 64
    else:
        assert depth <= 64


EXPRESSIONS = st.recursive(st.sampled_from(["1", "M", "x", "0.5", "2"]),
                           lambda inner: st.one_of(inner.map(lambda e: f"-{e}"),
                                                   inner.map(lambda e: f"({e})"),
                                                   st.tuples(inner, st.sampled_from(["+", "*", "**", "/", "@"]), inner).map(
                                                       lambda t: f"{t[0]} {t[1]} {t[2]}"),
                                                   inner.map(lambda e: f"sqrt({e})"),
                                                   inner.map(lambda e: f"max({e}, 1)")),
                           max_leaves=40)


@FAST
@given(expr=EXPRESSIONS, prefix=st.sampled_from(["", "-" * 150, "+" * 300]))
def test_generated_expressions_are_a_value_or_one_line(expr, prefix):
    """Size arithmetic and reference expressions, deep and long: a value, or a one-line error."""
    import numpy as np

    from kprof.spec import reference, sizeexpr

    text = prefix + expr
    for check in (lambda: sizeexpr.names(text),
                  lambda: reference.evaluate(text, {"x": np.ones(3), "M": 3.0})):
        try:
            check()
        except (sizeexpr.SizeExprError, reference.ReferenceExprError) as exc:
            assert "\n" not in str(exc)
        except (ValueError, FloatingPointError, ZeroDivisionError, OverflowError, TypeError):
            # NumPy's own answer to a valid expression (a shape mismatch): the runner reports it
            pass


# Issue 55, round 3: a generator for each class of hostile input the third battery found.
YAML_VALUES = st.one_of(
    st.sampled_from(["2001-02-30", "!!int abc", "!!bool maybe", "!!timestamp x", "!!float nope",
                     "9" * 5000,
                     "!!binary ###", "!!python/name:os.system", "&a [*a]", "!!set {a, b}",
                     "0x" + "f" * 5000, "1_000_000", "2001-13-01 25:61:61", "!!omap [a]", "!!str"]),
    st.builds(lambda tag, body: f"{tag} {body}",
              st.sampled_from(["!!int", "!!bool", "!!float", "!!timestamp", "!!null"]),
              st.text(alphabet="0123456789-:abcxyz. ", max_size=20)))


@FAST
@given(value=YAML_VALUES, field=st.sampled_from(["description", "notes", "tolerance", "sizes"]))
def test_generated_yaml_tags_and_values_are_a_spec_or_one_line(tmp_path_factory, value, field):
    """PyYAML builds some values with Python's own errors (ValueError, KeyError, AttributeError):
    each is a spec or one line, exit 2, never exit 70."""
    folder = tmp_path_factory.mktemp("y")
    (folder / "k.cu").write_text('extern "C" __global__ void k(float* x) {}\n')
    text = "sizes: {N: 64}\nargs:\n  - {name: x, buffer: float32, shape: [N], role: out}\nlaunch: {grid: [1], block: [64]}\n"
    (folder / "k.yaml").write_text(text + f"{field}: {value}\n" if field != "sizes" else
                                   text.replace("sizes: {N: 64}", f"sizes: {{N: {value}}}"))
    try:
        spec_mod.load(folder / "k.yaml")
    except KprofError as exc:
        assert exc.exit_code == 2 and "\n" not in str(exc).strip()


PATH_SHAPES = st.one_of(
    st.integers(min_value=200, max_value=5000).map(lambda n: "/tmp/" + "x" * n),
    st.integers(min_value=2, max_value=40).map(lambda n: "/tmp/" + "/".join(["y" * 200] * n)),
    st.binary(min_size=1, max_size=12).map(lambda b: "/tmp/k" + b.decode("utf-8", "surrogateescape") + ".yaml"),
    st.sampled_from(["/tmp/loop-{}/x", "/proc/self/fd/0", "/dev/stdin", "/", "//",
                     "/tmp/./../tmp/..", "{chardev}", "{fifo}", "{fdlink}"]),
)
# What kprof writes to. The machine's own streams and devices are never named as one of these (the
# run is often root's, where a rename over /dev/stdin replaces the machine's link): the test makes
# its own node instead.
OUTPUT_OPTIONS = {"--sarif", "--dir", "KPROF_CACHE_DIR", "KPROF_HISTORY"}
STREAMS = {"/proc/self/fd/0": "{fdlink}", "/dev/stdin": "{chardev}"}


def _special_node(kind, folder, fds):
    """A device node, a FIFO or a link into /proc/self/fd made in ``folder``, as the test's own."""
    if kind == "{chardev}":
        try:
            # the null device's numbers
            os.mknod(folder / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
            return folder / "null"
        except PermissionError:  # not root: a FIFO is the special file a user can make
            kind = "{fifo}"
    if kind == "{fifo}":
        os.mkfifo(folder / "fifo")
        return folder / "fifo"
    (folder / "target").write_bytes(b"another descriptor's file")
    fd = os.open(folder / "target", os.O_RDWR)
    fds.append(fd)
    (folder / "stream").symlink_to(f"/proc/self/fd/{fd}")
    return folder / "stream"


@FAST
@given(path=PATH_SHAPES,
       option=st.sampled_from(["spec", "--from-xml", "--allocations", "--sarif", "--dir",
                               "KPROF_PATH",
                                "KPROF_CACHE_DIR", "KPROF_HISTORY"]))
def test_generated_path_shapes_are_a_result_or_one_line(no_process, no_builds, capsys,
                                                        tmp_path_factory, monkeypatch,
                                                       path, option):
    """Names over 255 bytes, paths over 4,096, non-UTF-8 bytes, symlink loops, devices: one line
    each."""
    if "{}" in path:
        loop = tmp_path_factory.mktemp("loop")
        (loop / "a").symlink_to(loop / "b")
        (loop / "b").symlink_to(loop / "a")
        path = str(loop / "a" / "x")
    if option in OUTPUT_OPTIONS:
        path = STREAMS.get(path, path)
    fds: list[int] = []
    node = _special_node(path, tmp_path_factory.mktemp("node"), fds) if path.startswith("{") else None
    before = os.lstat(node) if node else None
    try:
        with monkeypatch.context() as m:
            _one_generated_path(m, capsys, tmp_path_factory, str(node) if node else path, option)
    finally:
        for fd in fds:
            os.close(fd)
    if node is not None and node.name == "stream":  # a link to another descriptor's regular file (issue 79):
        # never written through; the link itself may be replaced by kprof's file
        assert (node.parent / "target").read_bytes() == b"another descriptor's file", (option, node)
    elif node is not None:  # a special file stays what it was: never renamed over, never made a file
        after = os.lstat(node)
        assert (stat.S_IFMT(after.st_mode), after.st_ino) == (stat.S_IFMT(before.st_mode), before.st_ino), (option, node)


CONTROLS = st.lists(st.sampled_from(["\x1b", "\x9b", "\x85", "\x07", "\x08", "\x7f", "\u202e",
                                     "\u2066", "[2J", "a",
                                     "31m", "]0;title\x07", "\r", "\x00"]), min_size=1, max_size=12).map("".join)


@FAST
@given(text=CONTROLS)
def test_generated_control_characters_never_reach_the_terminal(capsys, tmp_path_factory,
                                                               monkeypatch, text):
    """Whatever a spec's description holds, kprof list writes no raw control character (newline and
    tab are the only ones it writes, and its own progress line's erase)."""
    import json
    import re

    folder = tmp_path_factory.mktemp("c")
    (folder / "k.cu").write_text('extern "C" __global__ void k(float* x) {}\n')
    (folder / "k.yaml").write_text("description: " + json.dumps(text) + "\nsizes: {N: 64}\nargs:\n"
                                   "  - {name: x, buffer: float32, shape: [N], role: out}\n"
                                   "launch: {grid: [1], block: [64]}\nreference: {x: 1}\n")
    with monkeypatch.context() as m:
        m.setenv("KPROF_PATH", str(folder))
        assert cli.main(["list"]) == 0
    out, err = capsys.readouterr()
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", out + err), repr(out + err)


@FAST
@given(base=st.integers(min_value=2, max_value=99),
       powers=st.lists(st.integers(min_value=0, max_value=64), min_size=1,
                        max_size=6),
       axes=st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=4))
def test_generated_towers_and_sweeps_are_bounded_by_their_input(no_process, no_builds, capsys, base,
                                                                powers, axes):
    """A tower of powers of a fraction, a sweep of many points: a value or one line, fast, never a
    hang."""
    from kprof.spec import sweep as sweep_mod

    expr = f"1/{base}"
    for p in powers:
        expr = f"({expr})**{p}"
    start = time.monotonic()
    try:
        sweep_mod.size_value("N", expr)
    except KprofError as exc:
        assert "\n" not in str(exc)
    names = ["M", "N", "K", "X"][: len(axes)]
    words = [f"{n}=" + ",".join(str(v) for v in range(1, a + 1)) for n, a in zip(names, axes)]
    try:
        sweep_mod.points(sweep_mod.parse(words, "size"), sweep_mod.parse([], "param"), tuple(names),
                         {}, "k")
    except KprofError as exc:
        assert "points" in str(exc) and "\n" not in str(exc)
    assert time.monotonic() - start < 10


HISTORY_TEXT = st.one_of(st.text(max_size=30),
                         st.sampled_from(["last", "last~1", "last~99999999999999999999", "last~-1",
                                          "last~\u0663", "k\udcff", "\x00", "' OR 1=1 --"]))
POINTS = st.dictionaries(st.text(max_size=8),
                         st.one_of(st.integers(min_value=-(2**70), max_value=2**70), st.floats(),
                                    st.text(max_size=8), st.none()), max_size=4)


@FAST
@given(kernel=HISTORY_TEXT, ref=HISTORY_TEXT, point=POINTS, data=POINTS,
       junk=st.binary(max_size=40))
def test_generated_history_names_refs_and_records_are_stored_read_or_one_line(tmp_path_factory, monkeypatch, capsys,
                                                                              kernel, ref, point, data, junk):
    """The history store given any kernel name (a surrogate from a file name that is not UTF-8,
    quotes, NUL), any run reference, any point and data, and a damaged row: a result or one line
    (exit 2), never an exception."""
    import sqlite3

    from kprof.results import history

    db = tmp_path_factory.mktemp("hist") / "h.sqlite"
    with monkeypatch.context() as m:
        m.setenv("KPROF_HISTORY", str(db))
        conn = history.connect()
        try:
            history.record(conn, "run-1", "bench", kernel, point, data, machine={"gpu": kernel},
                           commit=None)
            with conn:
                conn.execute("INSERT INTO results (run, created, kind, kernel, point, data, "
                             "machine, version, git_commit) VALUES (?, 0, 'bench', 'k', ?, ?, "
                             "'{}', '0', NULL)", ("run-2", junk, junk))
        except KprofError as exc:
            assert "\n" not in str(exc)
        except sqlite3.Error as exc:  # the test's own raw row (a NUL in text), not kprof's
            assert "\x00" in kernel or b"\x00" in junk, exc
        history.rows(conn, kernel=kernel)
        history.rows(conn)
        for argv in (["history", kernel] if "\x00" not in kernel else ["history"],
                     ["compare", ref, "last"], ["history", "--json"]):
            code = cli.main(argv)
            err = capsys.readouterr().err
            assert code in (0, 1, 2) and "Traceback" not in err and err.strip().count("\n") == 0, (argv, err)


# Issue 79: the output writer and the pytest plugin's options, fuzzed as the inputs are.
LINK_TARGETS = st.sampled_from(["file", "other-file", "proc-root-file", "proc-fd-file", "fifo", "folder",
                                "dangling", "proc-dangling", "hop-to-file", "hop-to-proc-root"])


def _link_case(folder: Path, kind: str, fds: list[int]) -> tuple[Path, list[Path]]:
    """An output name in ``folder`` that is a link of ``kind``, and the regular files it may lead to
    (none of which kprof may change)."""
    victim = folder / "victim"
    victim.write_bytes(b"victim")
    out = folder / "out"
    if kind == "file":
        out.write_bytes(b"old")  # a regular file: replaced, the victim untouched
    elif kind == "other-file":
        out.symlink_to(victim)
    elif kind == "proc-root-file":
        out.symlink_to(f"/proc/self/root{victim}")
    elif kind == "proc-fd-file":
        fd = os.open(victim, os.O_RDONLY)
        fds.append(fd)
        out.symlink_to(f"/proc/self/fd/{fd}")
    elif kind == "fifo":
        os.mkfifo(folder / "fifo")
        out.symlink_to(folder / "fifo")
    elif kind == "folder":
        (folder / "d").mkdir()
        out.symlink_to(folder / "d")
    elif kind == "dangling":
        out.symlink_to(folder / "nowhere")
    elif kind == "proc-dangling":
        out.symlink_to("/proc/self/fd/987654")
    else:
        hop = folder / "hop"
        hop.symlink_to(victim if kind == "hop-to-file" else f"/proc/self/root{victim}")
        out.symlink_to(hop)
    return out, [victim]


@FAST
@given(kind=LINK_TARGETS, data=st.binary(max_size=64))
def test_generated_links_are_never_written_through_to_a_regular_file(tmp_path_factory, kind, data):
    """Whatever a link at an output's name leads to, kprof replaces a regular file or the link, writes
    a FIFO in place, refuses the rest in one line, and never changes a regular file a link reaches."""
    from kprof import outputs
    from kprof.errors import OutputError, UsageError

    folder = tmp_path_factory.mktemp("out")
    fds: list[int] = []
    try:
        out, victims = _link_case(folder, kind, fds)
        if kind == "fifo":  # a reader, so the write in place does not wait
            fds.append(os.open(folder / "fifo", os.O_RDONLY | os.O_NONBLOCK))
        try:
            outputs.replace_file(out, data)
        except (UsageError, OutputError) as exc:
            assert "\n" not in str(exc) and kind in ("folder", "proc-dangling"), (kind, str(exc))
        else:
            assert kind not in ("folder", "proc-dangling"), kind
            if kind != "fifo":
                assert not out.is_symlink() and out.read_bytes() == data, kind
    finally:
        for fd in fds:
            os.close(fd)
    assert all(v.read_bytes() == b"victim" for v in victims), kind


@FAST
@given(jobs=st.text(max_size=40) | st.from_regex(r"[0-9]{8,5000}", fullmatch=True),
       tools=st.text(max_size=80), timeout=st.text(max_size=40))
def test_generated_plugin_options_are_a_value_or_one_usage_error(tmp_path_factory, monkeypatch, jobs,
                                                                tools, timeout):
    """--kprof-jobs, --kprof-sanitize and --kprof-timeout as a user may type them: a value, or one
    pytest usage error with every control character escaped and the value cut short; never another
    exception (pytest's INTERNALERROR)."""
    import re

    from kprof.pytest_plugin import check_jobs, check_options

    monkeypatch.chdir(tmp_path_factory.mktemp("plugin"))
    for call in (lambda: check_jobs(jobs), lambda: check_options(tools, "600", explicit=True),
                 lambda: check_options("memcheck", timeout)):
        try:
            call()
        except pytest.UsageError as exc:
            said = str(exc)
            assert len(said) < 1000 and not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", said), said[:200]
