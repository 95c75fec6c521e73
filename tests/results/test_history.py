"""Which commit a result names: KPROF_COMMIT first, then git, with whether the tree had changes."""

import shutil
import subprocess

import pytest

from kprof.results import history

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _repo(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (tmp_path / "k.cu").write_text("// one\n")
    git("add", "k.cu")
    git("commit", "-qm", "one")
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    return head


@needs_git
def test_kprof_commit_wins_over_git(tmp_path, monkeypatch):
    _repo(tmp_path)
    monkeypatch.setenv("KPROF_COMMIT", "abc1234")
    monkeypatch.delenv("KPROF_DIRTY", raising=False)
    assert history.provenance(tmp_path) == {"commit": "abc1234", "source": "KPROF_COMMIT", "dirty": None}
    monkeypatch.setenv("KPROF_DIRTY", "1")
    assert history.provenance(tmp_path)["dirty"] is True and history.git_commit() == "abc1234-dirty"


@needs_git
def test_git_gives_the_commit_and_whether_tracked_files_changed(tmp_path, monkeypatch):
    monkeypatch.delenv("KPROF_COMMIT", raising=False)
    head = _repo(tmp_path)
    assert history.provenance(tmp_path) == {"commit": head, "source": "git", "dirty": False}
    (tmp_path / "new.txt").write_text("untracked files do not count\n")
    assert history.provenance(tmp_path)["dirty"] is False
    (tmp_path / "k.cu").write_text("// two\n")
    assert history.provenance(tmp_path) == {"commit": head, "source": "git", "dirty": True}


def test_no_git_and_no_kprof_commit_is_unknown(tmp_path, monkeypatch):
    monkeypatch.delenv("KPROF_COMMIT", raising=False)
    assert history.provenance(tmp_path / "not-a-repo") == {"commit": None, "source": None, "dirty": None}
