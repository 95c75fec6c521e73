"""CLI errors: one line, the right exit code, never a traceback."""

import json
import re
import subprocess
import sys

import pytest

from kprof import errors
from kprof.commands import cli


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_help_lists_exit_codes(capsys):
    assert cli.main(["--help"]) == 0  # main returns the code (the flush of the help is part of it)
    out = capsys.readouterr().out
    assert "exit codes" in out and "no CUDA driver or no GPU" in out


def test_no_command_prints_help(capsys):
    code, out, _ = run_cli(capsys)
    assert code == errors.EXIT_USAGE and "COMMAND" in out


def test_list(capsys):
    code, out, _ = run_cli(capsys, "list")
    assert code == 0 and "tiled_matmul" in out and "kernel" in out
    code, out, _ = run_cli(capsys, "list", "--json")
    names = {row["name"] for row in json.loads(out)}
    assert {"vector_add", "softmax"} <= names


@pytest.mark.nvcc
def test_build_all_prints_resource_table(capsys):
    code, out, _ = run_cli(capsys, "build", "--all")
    assert code == 0
    assert "REGS" in out and "regblock_matmul" in out and "SPILL" in out
    code, out, _ = run_cli(capsys, "build", "tiled_matmul", "--json")
    row = json.loads(out)[0]
    assert row["cached"] is True and row["usage"]["shared_static"] == 8192


@pytest.mark.nvcc
def test_build_with_params_builds_each_combination(capsys):
    """kprof build --param shows what a parameter does to registers and spills, with no GPU."""
    code, out, _ = run_cli(capsys, "build", "rmsnorm_bf16", "--param", "VPT=2,4", "--json")
    rows = json.loads(out)
    assert code == 0 and [r["defines"]["VPT"] for r in rows] == ["2", "4"]
    assert rows[0]["cubin"] != rows[1]["cubin"] and all(r["usage"]["registers"] > 0 for r in rows)
    code, out, _ = run_cli(capsys, "build", "rmsnorm_onepass", "softmax_online", "--param",
                           "WROWS=0,8")
    assert code == 0 and "rmsnorm_onepass WROWS=8" in out and "softmax_online WROWS=0" in out


@pytest.mark.nvcc
def test_build_with_a_param_that_breaks_the_source_shows_nvcc_and_exit_4(capsys):
    code, _, err = run_cli(capsys, "build", "rmsnorm_bf16", "--param", "BLOCK=128")
    assert (code == errors.EXIT_BUILD
            and "WROWS rows of one warp each must fit in BLOCK threads" in err)
    assert re.match(r"kprof: error: (nvcc|NVRTC) 1\d\.\d failed to compile",
                    err.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["build", "--all", "--param", "BLOCK=64"], errors.EXIT_USAGE,
         "--param builds the kernels you name"),
        (["build", "rmsnorm_bf16", "--param", "TILE=2"], errors.EXIT_USAGE,
         "unknown parameter 'TILE'"),
        (["run", "tiled_matmull"], errors.EXIT_USAGE,
         "unknown kernel 'tiled_matmull': did you mean tiled_matmul"),
        (["run", "tiled_matmul", "--size", "Q=3"], errors.EXIT_USAGE,
         "unknown size 'Q' (known: M, N, K)"),
        (["run", "tiled_matmul", "--size", "M=0"], errors.EXIT_USAGE,
         "--size M=0: sizes must be positive"),
        (["run", "tiled_matmul", "--size", "M=-5"], errors.EXIT_USAGE,
         "--size M=-5: sizes must be positive"),
        (["run", "tiled_matmul", "--size", "M=abc"], errors.EXIT_USAGE,
         "--size M=abc: give a whole number"),
        (["run", "tiled_matmul", "--size", "M"], errors.EXIT_USAGE, "write NAME=VALUE"),
        (["run", "tiled_matmul", "--timeout", "0"], errors.EXIT_USAGE, "--timeout 0"),
        (["run", "tiled_matmul", "--timeout", "1e-300"], errors.EXIT_USAGE,
         "--timeout 1e-300: give 1 second or more"),
        (["run", "no/such/spec.yaml"], errors.EXIT_USAGE, "no/such/spec.yaml: no such file"),
        (["build"], errors.EXIT_USAGE, "name the kernels to build, or give --all"),
        (["build", "tiled_matmul", "--arch", "sm9"], errors.EXIT_USAGE, "--arch 'sm9'"),
        (["frobnicate"], errors.EXIT_USAGE, "invalid choice: 'frobnicate'"),
        (["run"], errors.EXIT_USAGE, "the following arguments are required"),
        (["run", "tiled_matmul", "--seed", "x"], errors.EXIT_USAGE, "invalid int value"),
    ],
)
def test_bad_input_gets_one_line_and_exit_code(capsys, argv, code, message):
    got, out, err = run_cli(capsys, *argv)
    assert got == code
    assert message in err, err
    assert err.count("\n") == 1 and err.startswith("kprof: error: ")


def test_invalid_spec_exit_2_names_file_and_field(capsys, tmp_path):
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "k.yaml").write_text("args: [{name: a, buffer: float32, shape: [N], role: "
                                     "out}]\nlaunch: {grid: [1], block: [32]}\n")
    code, _, err = run_cli(capsys, "run", str(tmp_path / "k.yaml"))
    assert code == errors.EXIT_USAGE
    assert "k.yaml: args[0].shape[0]: unknown size 'N'" in err and err.count("\n") == 1


@pytest.mark.nvcc
def test_compile_error_shows_nvcc_lines_and_exit_4(capsys, data_dir):
    code, _, err = run_cli(capsys, "build", str(data_dir / "kernels" / "broken_syntax.yaml"))
    assert code == errors.EXIT_BUILD
    assert "broken_syntax.cu(2): error" in err
    assert re.match(r"kprof: error: (nvcc|NVRTC) 1\d\.\d failed to compile",
                    err.strip().splitlines()[-1])


def test_missing_nvcc_exit_3(capsys, monkeypatch):
    monkeypatch.setenv("KPROF_NVCC", "/nonexistent/nvcc")
    monkeypatch.setenv("KPROF_COMPILER", "nvcc")  # no NVRTC to fall back on
    code, _, err = run_cli(capsys, "build", "vector_add")
    assert (code == errors.EXIT_TOOL_MISSING
            and "KPROF_NVCC=/nonexistent/nvcc is not an executable" in err)
    assert err.count("\n") == 1 and "kprof[cuda12]" in err


@pytest.mark.nvcc
def test_run_without_gpu_says_so_in_one_line(capsys, monkeypatch):
    # An empty CUDA_VISIBLE_DEVICES hides every GPU from the runner, so this runs on GPU machines
    # too.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    code, _, err = run_cli(capsys, "run", "vector_add", "--sanitize-sizes")
    assert code == errors.EXIT_NO_GPU
    assert err.count("\n") == 1
    assert "no CUDA driver" in err or "no usable GPU" in err
    assert "`kprof build`, `kprof list` and `kprof doctor` still work" in err


def test_doctor_always_reports(capsys):
    """Every check is printed whatever is missing; the exit code says whether the commands asked
    about can run (kprof doctor exited 0 with five MISSING lines)."""
    from kprof.commands import offline

    ready = offline.readiness(offline.doctor())
    code, out, _ = run_cli(capsys, "doctor")
    assert code == next((r.exit_code for r in ready if not r.ready), 0)
    for name in ("nvcc", "compute-sanitizer", "ncu", "CUDA driver API", "GPU counters",
                 "cuda-bindings", "nvtx", "CUPTI timer"):
        assert name in out
    for r in ready:
        assert f"kprof {r.command}" in out
    code, out, _ = run_cli(capsys, "doctor", "--json")
    assert {c["name"] for c in json.loads(out)} >= {"nvcc", "ncu"}


def test_doctor_exits_with_what_the_asked_command_lacks(capsys, monkeypatch):
    """No GPU: a GPU command's doctor exits 5; a missing compute-sanitizer with a GPU, 3; build
    alone, 0. No feature is claimed for a GPU that is not there, and the extra named for a missing
    tool is one."""
    from kprof import proc
    from kprof.child import device
    from kprof.errors import ToolNotFoundError

    monkeypatch.setattr(device, "probe", lambda: "no CUDA driver: cuInit -> libcuda not found")
    real = proc.find_tool

    def no_sanitizer(name, *a, **k):
        if name == "compute-sanitizer":
            raise ToolNotFoundError("compute-sanitizer", proc.INSTALL_HINTS["compute-sanitizer"])
        return real(name, *a, **k)

    monkeypatch.setattr(proc, "find_tool", no_sanitizer)
    code, out, _ = run_cli(capsys, "doctor", "--for", "sanitize")
    assert code == 5 and "kprof sanitize: cannot run here (exit 5)" in out
    assert ("features on" not in out and "supports it" not in out
            and "no GPU seen, so none claimed" in out)
    assert "kprof[cuda]" not in out and "kprof[cuda13]" in out
    monkeypatch.setattr(device, "probe", lambda: None)
    code, out, _ = run_cli(capsys, "doctor", "--for", "sanitize", "--json")
    sanitizer = next(c for c in json.loads(out) if c["name"] == "compute-sanitizer")
    assert sanitizer["needed_by"] == ["sanitize"] and not sanitizer["ok"]
    if not {c["name"]: c for c in json.loads(out)}["NVIDIA driver"]["ok"]:
        assert code == 5  # NVML sees no GPU here either
    else:
        assert code == 3
    code, out, _ = run_cli(capsys, "doctor", "--for", "build")
    assert code == (0 if "MISSING  CUDA headers" not in out else 3)


def test_internal_errors_are_one_line(capsys, monkeypatch):
    from kprof.commands import commands

    def boom(opts):
        raise ZeroDivisionError("bug")

    monkeypatch.setattr(commands, "cmd_list", boom)
    monkeypatch.delenv("KPROF_DEBUG", raising=False)
    code, _, err = run_cli(capsys, "list")
    assert code == cli.EXIT_INTERNAL and "internal error: ZeroDivisionError: bug" in err


def test_console_script_runs():
    done = subprocess.run([sys.executable, "-m", "kprof", "run", "nope"], capture_output=True,
                          text=True)
    assert done.returncode == errors.EXIT_USAGE and "unknown kernel 'nope'" in done.stderr
    assert "Traceback" not in done.stderr


def test_profile_param_errors(capsys):
    assert cli.main(["profile", "tiled_matmul", "--param", "NOPE=3"]) == 2
    assert "unknown parameter 'NOPE'" in capsys.readouterr().err
    assert cli.main(["profile", "tiled_matmul", "--param", "TILE=16,32"]) == 2
    assert "kprof profile takes one value per name" in capsys.readouterr().err


@pytest.mark.nvcc
def test_kprof_run_is_the_api_function_the_command_prints(monkeypatch, capsys, as_if_a_gpu):
    """kprof.run() from Python builds the spec and runs it in a child (here a stand-in for the
    child): the report the CLI prints, with --json its to_json()."""
    from helpers import child

    import kprof
    from kprof.launch import launch

    seen = []

    def fake_run_kernel(job, **kw):
        seen.append(job)
        return launch._run_result(job,
                                  child(status="ok", sizes=dict(job.target.sizes), time_ms=0.01))

    monkeypatch.setattr(launch, "run_kernel", fake_run_kernel)
    report = kprof.run("vector_add", sizes={"N": 1000}, seed=3)
    assert report.ok and report.result.sizes == {"N": 1000} and seen[0].target.seed == 3
    data = report.to_json()
    assert data["usage"]["registers"] > 0 and data["bytes"] == 3 * 4 * 1000 and "raw" not in data
    assert cli.main(["run", "vector_add", "--size", "N=1000", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sizes"] == {"N": 1000}
    with pytest.raises(kprof.commands.api.UsageError, match="preset 'fast'"):
        kprof.run("vector_add", preset="fast")


def test_run_without_a_gpu_says_so_before_building_anything(monkeypatch, tmp_path, capsys):
    """docs/limits.md: exit 5 is said before anything is built (kprof run built the cubin first)."""
    from kprof.build import build
    from kprof.child import device

    monkeypatch.setattr(device, "probe", lambda: "no CUDA driver: cuInit -> libcuda not found")
    monkeypatch.setattr(build, "build", lambda *a,
                        **k: pytest.fail("kprof run built a kernel before the GPU check"))
    assert cli.main(["run", "tiled_matmul"]) == 5
    # a bad input is still said first
    assert cli.main(["run", "tiled_matmul", "--size", "Q=3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("kprof: error: no CUDA driver") and len(err) == 2


def test_peak_without_a_gpu_says_so_before_building_anything(monkeypatch, tmp_path, capsys):
    """kprof peak on an empty cache and no GPU: exit 5 in one line, and no peak kernel built first
    (it took 5 s of builds to say so on a cold cache)."""
    from kprof.build import build
    from kprof.child import device

    monkeypatch.setenv("KPROF_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(device, "probe", lambda: "no CUDA driver: cuInit -> libcuda not found")
    monkeypatch.setattr(build, "build", lambda *a,
                        **k: pytest.fail("kprof peak built a kernel before the GPU check"))
    assert cli.main(["peak"]) == 5
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kprof: error: no CUDA driver")


def _on_a_terminal(argv: list[str], columns: int) -> str:
    """kprof ARGV with its output on a pseudo-terminal of ``columns`` columns (as a user's shell
    gives it), what it printed there."""
    import fcntl
    import os
    import pty
    import struct
    import termios

    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    # the terminal's own width, as a shell has it
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.Popen([sys.executable, "-m", "kprof", *argv], stdout=child, stderr=child,
                            env=env)
    os.close(child)
    out = b""
    while True:  # read while it runs: a terminal holds a few kilobytes, and kprof list prints more
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the other end is closed and everything was read
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    # doctor: exit 5 with no GPU, 3 with a tool missing
    assert done.wait(timeout=120) in (0, 3, 5), out[-2000:]
    return out.decode(errors="replace").replace("\r\n", "\n")


FIRST_COMMANDS = [["--help"], ["cases", "--list"], ["doctor"], ["occupancy", "tiled_matmul"],
                  ["sanitize", "--list-tools"], ["list"]]


@pytest.mark.parametrize("argv", FIRST_COMMANDS, ids=" ".join)
def test_every_line_fits_the_terminal(argv):
    """What a new user types first, on a terminal of 80 columns: no line wider (kprof cases --list
    printed 532 columns, kprof doctor 166, kprof sanitize --list-tools 134 on a terminal of 100)."""
    text = _on_a_terminal(argv, 80)
    wide = [line for line in text.splitlines() if len(line) > 80]
    assert text.strip() and not wide, wide


@pytest.mark.parametrize("argv", FIRST_COMMANDS[1:], ids=" ".join)
def test_text_to_a_file_or_a_pipe_wraps_at_100_columns(capsys, monkeypatch, argv):
    """Piped (kprof doctor > doctor.txt, kprof cases --list | less): 100 columns, unless COLUMNS or
    --width says
    otherwise; --width 0 is one line a row, for grep."""
    monkeypatch.delenv("COLUMNS")
    cli.main(argv)
    piped = capsys.readouterr().out.splitlines()
    assert piped and max(len(line) for line in piped) <= 100, max(piped, key=len)
    cli.main([*argv, "--width", "0"])
    whole = capsys.readouterr().out.splitlines()
    assert len(whole) <= len(piped)
    monkeypatch.setenv("COLUMNS", "72")
    cli.main(argv)
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) <= 72


def test_width_goes_before_or_after_the_command(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS")
    assert cli.main(["--width", "0", "cases", "--list"]) == 0
    before = capsys.readouterr().out
    assert cli.main(["cases", "--list", "--width", "0"]) == 0
    assert capsys.readouterr().out == before and any(len(line) > 100
                                                     for line in before.splitlines())
    assert cli.main(["list", "--width", "-3"]) == errors.EXIT_USAGE


@pytest.mark.nvcc
@pytest.mark.parametrize("name, error",
                         [("BLOCK", "expected an identifier"), ("ceil", '"ceil" has "C" linkage'),
                          ("size_t", '"size_t" has already been declared'), ("rsqrt", "linkage")])
def test_kprof_new_builds_the_kernel_before_it_writes_it(tmp_path, capsys, name, error):
    """Names on no list that still do not build (the spec's define BLOCK, CUDA's math functions, its
    types): the scaffold is built first, and its compiler's first error is the one line; nothing is
    written."""
    assert cli.main(["new", name, "--dir", str(tmp_path)]) == errors.EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"kprof new {name}: a kernel of that name does not build" in err[0] and error in err[0], err
    assert not list(tmp_path.iterdir()) and "kprof-new-" not in err[0]


def test_kprof_new_blames_the_compiler_not_the_name_when_no_kernel_builds(tmp_path, capsys, monkeypatch):
    """An empty PATH leaves nvcc without its host compiler: every kernel fails, and the name was not
    the trouble."""
    from helpers import failing_nvcc

    from kprof.build import toolchain

    failing_nvcc(tmp_path / "bin", "nvcc fatal   : Failed to preprocess host compiler properties.",
                 monkeypatch)
    monkeypatch.setenv("KPROF_CACHE_DIR", str(tmp_path / "cache"))
    toolchain._probe.cache_clear()
    assert cli.main(["new", "mine", "--dir", str(tmp_path / "k")]) == errors.EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "found no host C++ compiler (g++) on PATH" in err[0] and "that name" not in err[0], err
    assert "kprof doctor --for build" in err[0] and not list((tmp_path / "k").glob("*"))
    toolchain._probe.cache_clear()


def test_new_like_a_cases_fixed_twin_is_refused(tmp_path, capsys):
    """--like CASE_fixed copied the buggy case's spec (the twin has none of its own)."""
    assert (cli.main(["new", "mine", "--like", "tiled_matmul_no_bounds_fixed", "--dir", str(tmp_path)]) == errors.EXIT_USAGE)
    assert "its fixed twin" in capsys.readouterr().err and not list(tmp_path.iterdir())


@pytest.mark.parametrize("name, why", [("int", "a C++ keyword"), ("class", "a C++ keyword"),
                                       ("min", "a name CUDA already declares"),
                                       ("main", "a name CUDA already declares"),
                                       ("blockIdx", "a name CUDA already declares"),
                                       ("float4", "a name CUDA already declares"),
                                       ("yes", "a word YAML reads as a boolean or null"),
                                       ("null", "a word YAML reads"),
                                       ("__k", "reserved to the compiler")])
def test_kprof_new_refuses_a_name_whose_kernel_would_not_build(tmp_path, capsys, name, why):
    """Each of these wrote a kernel that did not build (nvcc 13.0 refuses every CUDA name listed;
    `yes` and `null` are not names in YAML): one line, exit 2, nothing written."""
    assert cli.main(["new", name, "--dir", str(tmp_path)]) == errors.EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"kprof new {name}: {why}" in err[0] and not list(tmp_path.iterdir())


@pytest.mark.parametrize("shell, code, says", [
    # a full stderr turned exit 2 into 1 (./full: the test's own full device)
    ("kprof run nosuch 2>./full", 2, ""),
    ("kprof run nosuch 2>&-", 2, ""),
    ("kprof list >&-", 7, "standard output is closed"),  # was an internal error
    ("kprof run nosuch >&- 2>&-", 7, ""),
    ("kprof list 0<&- >/dev/null", 0, ""),
])
def test_closed_or_full_standard_streams_keep_the_documented_exit_code(tmp_path, shell, code, says):
    import os
    import shlex
    import stat

    if "./full" in shell:
        try:
            # the full device's numbers
            os.mknod(tmp_path / "full", stat.S_IFCHR | 0o666, os.makedev(1, 7))
        except PermissionError:
            pytest.skip("mknod needs root (CI and the GPU machines run as root)")
    kprof = f"{shlex.quote(sys.executable)} -m kprof"
    done = subprocess.run(["sh", "-c", shell.replace("kprof", kprof, 1)], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr and says in done.stderr and done.stderr.count("\n") <= 1


@pytest.mark.parametrize("verb", ["sanitize", "profile"])
@pytest.mark.parametrize("program",
                         ["ab\ncd", "ab\x1b[2Jcd", "a" * 5000, "x/ab\ncd", "-" + "r" * 3000,
                          "a\0b"])
def test_a_program_name_of_any_shape_is_one_short_line_and_no_header(capsys, verb, program):
    """The header echoed the command raw before it was checked: a newline split it, 5,000 characters
    were one line."""
    assert cli.main([verb, "--", program, "arg"]) == errors.EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == "" and "profiling" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and len(lines[0]) < 300 and "\x1b" not in lines[0] and "\0" not in lines[0], lines
