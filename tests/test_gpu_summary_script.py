"""scripts/gpu_summary.py: the summary of a gpu-check run, from its logs folder."""

import importlib.util
from pathlib import Path

_PATH = Path(__file__).resolve().parent.parent / "scripts" / "gpu_summary.py"
_spec = importlib.util.spec_from_file_location("gpu_summary_script", _PATH)
gpu_summary = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_summary)


def test_the_commit_is_read_after_every_gpu_line(tmp_path, capsys):
    """On a host with two GPUs nvidia-smi writes two lines: the commit is not the third line of
    env.txt."""
    (tmp_path / "env.txt").write_text("2026-11-30T16:23:34Z\nNVIDIA H200, 580.159.04, 143771 MiB, "
                                      "1980 MHz\nNVIDIA H200, 580.159.04, 143771 MiB, 1980 "
                                      "MHz\n8572066\nPython 3.12.3\n")
    (tmp_path / "steps.txt").write_text("doctor rc=0 1.730s: python3 -m kprof doctor\n")
    gpu_summary.main(tmp_path)
    out = capsys.readouterr().out
    assert "- commit: 8572066; Python 3.12.3" in out
    assert ("- GPU, driver, memory, max SM clock: NVIDIA H200, 580.159.04, 143771 MiB, 1980 MHz; "
            "NVIDIA H200" in out)


def test_the_suites_cpu_and_gpu_busy_shares_are_read_from_the_samplers(tmp_path):
    """vmstat's busy share (100 - idle - wait, the first line since boot left out) and nvidia-smi's
    utilization: which of the two bounds the suite."""
    (tmp_path / "suite-cpu.txt").write_text(
        "procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----\n"
        " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st\n"
        " 1  0      0 100000 1000 1000    0    0     0     0    0    0  5  1 94  0  0\n"
        " 9  0      0 100000 1000 1000    0    0     0     0    0    0 80 15  5  0  0\n"
        " 9  0      0 100000 1000 1000    0    0     0     0    0    0 50 10 38  2  0\n")
    (tmp_path / "suite-gpu.txt").write_text("2026/12/02 00:30:01.000, 87 %, 1000 MiB\n2026/12/02 "
                                            "00:30:02.000, 95 %, 1000 MiB\n")
    assert gpu_summary.utilization(tmp_path) == ("CPUs 78% busy on average, above 90% in 50% of 2 "
                                                 "s; GPU 91% busy on "
                                                 "average, above 90% in 50% of 2 s")
    assert gpu_summary.utilization(tmp_path / "none") == ""
