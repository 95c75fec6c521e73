"""The hostile inputs that need a GPU to tell: on a machine where the kernel could run, a bad spec
still stops every command in one line before anything starts; the pytest plugin refuses a bad option
once; compute-sanitizer, ncu and cuobjdump, given arguments that hold shell characters, run no
command; a program that fails under a tool leaves its last lines in the JSON report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kprof import proc
from kprof.commands import cli
from kprof.errors import ToolNotFoundError

pytestmark = pytest.mark.gpu
PY = sys.executable
KERNEL = 'extern "C" __global__ void k(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] = 1; }\n'
TOWER = ("sizes: {N: 64}\nargs:\n  - {name: x, buffer: float32, shape: [N], role: out}\n"
         "  - {name: n, scalar: int32, value: N}\nlaunch: {grid: [1], block: [64]}\nreference: {x: "
         "'2**2**2**2**2**2'}\n")


@pytest.mark.parametrize("command",
                         [["run"], ["sanitize", "--tool", "memcheck"],
                          ["sanitize", "--tool", "values"],
                          ["bench", "--max-time", "1"], ["profile"], ["build"]])
def test_a_reference_exponent_tower_stops_every_command_at_load(tmp_path, capsys, command):
    """The reference once passed kprof build and failed in the child with a traceback and exit 6."""
    (tmp_path / "k.cu").write_text(KERNEL)
    (tmp_path / "k.yaml").write_text(TOWER)
    code = cli.main([*command, str(tmp_path / "k.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "reference.x: an exponent above 64" in err, err


@pytest.mark.parametrize("args, words", [
    (["--kprof-sanitize=bogus"], "unknown tool 'bogus'"),
    (["--kprof-sanitize=memcheck", "--kprof-timeout=nan"],
     "--kprof-timeout=nan: give a number of seconds from 1"),
    (["--kprof-sanitize", "tests/"], "write --kprof-sanitize=all tests/"),
])
def test_the_plugin_refuses_a_bad_option_once_on_the_gpu(tmp_path, args, words):
    (tmp_path / "tests").mkdir()
    (tmp_path / "test_a.py").write_text("def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    from importlib.metadata import entry_points

    installed = any(ep.value == "kprof.pytest_plugin" for ep in entry_points(group="pytest11"))
    plugin = [] if installed else ["-p", "kprof.pytest_plugin"]
    done = subprocess.run([PY, "-m", "pytest", *plugin, "-p", "no:cacheprovider", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 4, done.stdout + done.stderr
    assert done.stderr.count(words) == 1 and "passed" not in done.stdout, done.stdout + done.stderr


def _tool(name: str) -> str:
    try:
        return str(proc.find_tool(name))
    except ToolNotFoundError as exc:
        pytest.skip(str(exc))


def _folder_with_a_backtick(tmp_path: Path) -> Path:
    folder = tmp_path / "d`touch PWNED`$(touch PWNED2)"
    folder.mkdir()
    return folder


def _ran(tmp_path: Path) -> list[str]:
    return [p.name for p in tmp_path.rglob("PWNED*")]


def test_compute_sanitizer_runs_no_command_from_its_arguments(tmp_path):
    exe = _tool("compute-sanitizer")
    folder = _folder_with_a_backtick(tmp_path)
    done = subprocess.run([exe, "--tool", "memcheck", "--xml", "--save", str(folder / "r.xml"),
                           "--print-limit", "10",
                           PY, "-c", "import sys; print(sys.argv[1])", "`touch PWNED3`"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert not _ran(tmp_path), (done.stdout, done.stderr)
    assert "`touch PWNED3`" in done.stdout, "the argument reached the program as written"


# one ncu at a time on the GPU: a second beside it once failed one (exit code 9)
@pytest.mark.xdist_group("ncu")
def test_ncu_runs_no_command_from_its_arguments(tmp_path):
    exe = _tool("ncu")
    folder = _folder_with_a_backtick(tmp_path)
    done = subprocess.run([exe, "--clock-control", "none", "--kernel-name", "regex:`touch PWNED4`",
                           "-o",
                           str(folder / "r"), PY, "-c", "pass"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert not _ran(tmp_path), (done.stdout, done.stderr)


def test_cuobjdump_runs_no_command_from_its_arguments(tmp_path):
    from kprof.build import build
    from kprof.spec import catalog

    exe = _tool("cuobjdump")
    folder = _folder_with_a_backtick(tmp_path)
    cubin = build.build(catalog.load("vector_add")).cubin
    (folder / "k.cubin").write_bytes(cubin.read_bytes())
    done = subprocess.run([exe, "-sass", str(folder / "k.cubin")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert not _ran(tmp_path) and done.returncode == 0, (done.stdout, done.stderr)


def test_a_program_that_fails_under_a_tool_keeps_its_last_lines_in_json(capsys):
    code = cli.main(["sanitize", "--tool", "memcheck", "--json", "--", PY, "-c",
                     "print('loading weights.pt'); raise SystemExit('no such model file: "
                     "weights.pt')"])
    data = json.loads(capsys.readouterr().out)
    tool = data["tools"][0]
    assert code == 6 and tool["status"] == "target-error", data
    assert "no such model file: weights.pt" in tool["log"], tool
