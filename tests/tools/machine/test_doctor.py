"""kprof doctor's line for compute-sanitizer: its version, and what an older one means for kprof's
checks."""

from __future__ import annotations

import pytest

from kprof.tools.machine import doctor


@pytest.mark.parametrize(("version", "advised"),
                         [("2025.3.1.0", True), ("2026.4.0.0", False), ("2027.1.0.0", False)])
def test_an_older_compute_sanitizer_is_said_with_the_newer_ones_package(tmp_path, monkeypatch, version, advised):
    exe = tmp_path / "compute-sanitizer"
    exe.write_text(f"#!/bin/sh\necho 'NVIDIA (R) Compute Sanitizer'\necho 'Version {version} "
                   "(build 1) (public-release)'\n")
    exe.chmod(0o755)
    monkeypatch.setenv("KPROF_COMPUTE_SANITIZER", str(exe))
    check = doctor._tool("compute-sanitizer", "--version")
    assert check.ok and check.detail.startswith(f"Version {version}")
    assert ("nvidia-cuda-sanitizer-api>=13.5.25" in check.detail) is advised
