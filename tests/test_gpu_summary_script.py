"""scripts/gpu_summary.py: the summary of a gpu-check run, from its logs folder."""

import importlib.util
from pathlib import Path

_PATH = Path(__file__).resolve().parent.parent / "scripts" / "gpu_summary.py"
_spec = importlib.util.spec_from_file_location("gpu_summary_script", _PATH)
gpu_summary = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_summary)


def test_the_commit_is_read_after_every_gpu_line(tmp_path, capsys):
    """On a host with two GPUs nvidia-smi writes two lines: the commit is not the third line of env.txt."""
    (tmp_path / "env.txt").write_text("2026-11-30T16:23:34Z\nNVIDIA H200, 580.159.04, 143771 MiB, 1980 MHz\n"
                                      "NVIDIA H200, 580.159.04, 143771 MiB, 1980 MHz\n8572066\nPython 3.12.3\n")
    (tmp_path / "steps.txt").write_text("doctor rc=0 1.730s: python3 -m kprof doctor\n")
    gpu_summary.main(tmp_path)
    out = capsys.readouterr().out
    assert "- commit: 8572066; Python 3.12.3" in out
    assert "- GPU, driver, memory, max SM clock: NVIDIA H200, 580.159.04, 143771 MiB, 1980 MHz; NVIDIA H200" in out
