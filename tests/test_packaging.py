"""What users install is what is tested: the built wheel holds every package folder and data file of
the source tree (setup.py finds them; nothing is listed by hand), and every command answers from an
installed kprof. `.ci/run` builds the wheel and the sdist once (``python -m build``), installs the
wheel into a fresh environment and runs the README's tests against it with the source tree out of
reach; it names the wheel here (``KPROF_WHEEL``) and the source tree it came from
(``KPROF_SOURCE_TREE``)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import kprof

ROOT = Path(__file__).resolve().parent.parent
DATA_FOLDERS = {"kernels": "kernels", "sanitizer_cases": "sanitizer_cases",
                "perf_cases": "perf_cases", "bench_cases": "bench_cases"}


def _source_tree() -> Path | None:
    tree = Path(os.environ.get("KPROF_SOURCE_TREE", ROOT))
    return tree if (tree / "kprof" / "__init__.py").is_file() and (tree / "setup.py").is_file() else None


def shipped_files(tree: Path) -> set[str]:
    """What the wheel must hold: every file under kprof/ but compiled ones, and every file of the
    data folders as kprof/<folder>/<file>."""
    out = {str(p.relative_to(tree)) for p in (tree / "kprof").rglob("*")
           if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")}
    for folder, name in DATA_FOLDERS.items():
        out |= {f"kprof/{name}/{p.name}" for p in (tree / folder).iterdir() if p.is_file()}
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    given = os.environ.get("KPROF_WHEEL")
    if given:
        return Path(given)
    tree = _source_tree()
    if tree is None:
        pytest.skip("no source tree here to build a wheel from (the tests run against an installed "
                    "kprof)")
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                           "--no-build-isolation", "-w", str(out),
                           str(tree)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.fail(f"the wheel did not build: {proc.stderr[-2000:]}")
    (built,) = out.glob("kprof-*.whl")
    return built


def test_the_wheel_holds_every_package_folder_and_data_file(wheel):
    tree = _source_tree()
    if tree is None:
        pytest.skip("no source tree to compare the wheel with (set KPROF_SOURCE_TREE)")
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(shipped_files(tree) - names)
    assert not missing, f"{len(missing)} files of the source tree are not in {wheel.name}: {missing[:20]}"
    folders = {str(p.relative_to(tree)) for p in (tree / "kprof").rglob("*") if p.is_dir()
               and p.name != "__pycache__"}
    assert {f.rsplit("/", 1)[0] for f in names if f.startswith("kprof/")} >= folders


def test_a_folder_left_out_of_the_wheel_is_caught(tmp_path):
    """The check above is not vacuous: a tree with a package the wheel lacks is reported."""
    (tmp_path / "kprof" / "newstage").mkdir(parents=True)
    (tmp_path / "kprof" / "__init__.py").write_text("")
    (tmp_path / "kprof" / "newstage" / "__init__.py").write_text("")
    for folder in DATA_FOLDERS:
        (tmp_path / folder).mkdir()
    assert "kprof/newstage/__init__.py" in shipped_files(tmp_path) - {"kprof/__init__.py"}


def test_the_tests_import_the_kprof_they_mean_to():
    """Under CI's wheel run, kprof comes from the installed wheel, never from a source tree beside
    the tests."""
    where = Path(kprof.__file__).resolve().parent
    if os.environ.get("KPROF_WHEEL"):
        assert "site-packages" in where.parts, where
    assert ((where / "kernels" / "tiled_matmul.cu").is_file()
            or (where.parent / "kernels" / "tiled_matmul.cu").is_file())
