"""Two tiers: unit tests run anywhere; ``gpu`` tests skip with the reason that names what is
missing (``no CUDA driver: cuInit -> ...``), and ``--require-gpu`` turns those skips into
failures on the GPU machine, so a GPU run can never pass by skipping."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


def pytest_addoption(parser):
    parser.addoption("--require-gpu", action="store_true", help="fail, not skip, when the GPU or a GPU tool is missing")


_gpu_reason: list[str | None] = []


def gpu_reason() -> str | None:
    if not _gpu_reason:
        from kprof import device

        _gpu_reason.append(device.probe())
    return _gpu_reason[0]


def _nvcc_reason() -> str | None:
    from kprof import proc
    from kprof.errors import ToolNotFoundError

    try:
        proc.find_tool("nvcc")
    except ToolNotFoundError as exc:
        return str(exc)
    return None


def pytest_runtest_setup(item):
    require = item.config.getoption("--require-gpu")
    reasons = []
    if item.get_closest_marker("gpu") and (r := gpu_reason()):
        reasons.append(r)
    if (item.get_closest_marker("nvcc") or item.get_closest_marker("gpu")) and (r := _nvcc_reason()):
        reasons.append(r)
    if reasons:
        if require:
            pytest.fail("--require-gpu: " + "; ".join(reasons), pytrace=False)
        pytest.skip("; ".join(reasons))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """One build cache per test session, never the user's."""
    monkeypatch.setenv("KPROF_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kprof-cache"))


@pytest.fixture
def data_dir() -> Path:
    return DATA


def has(tool: str) -> bool:
    return shutil.which(tool) is not None
