"""The result history: which commit a result names (KPROF_COMMIT first, then git, with whether the
tree had changes), and the rows read back typed."""

import os
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
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    return head


@needs_git
def test_kprof_commit_wins_over_git(tmp_path, monkeypatch):
    _repo(tmp_path)
    monkeypatch.setenv("KPROF_COMMIT", "abc1234")
    monkeypatch.delenv("KPROF_DIRTY", raising=False)
    assert history.provenance(tmp_path) == {"commit": "abc1234", "source": "KPROF_COMMIT",
                                            "dirty": None}
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
    assert history.provenance(tmp_path / "not-a-repo") == {"commit": None, "source": None,
                                                           "dirty": None}


def test_rows_come_back_typed_and_two_runs_compare_by_their_summaries(tmp_path, monkeypatch):
    monkeypatch.setenv("KPROF_HISTORY", str(tmp_path / "h.sqlite"))
    conn = history.connect()
    timed = {"n": 30, "median": 2e-6, "q1": 1.9e-6, "q3": 2.1e-6, "min": 1.8e-6, "max": 2.4e-6,
             "mean": 2e-6, "stdev": 1e-7}
    point = {"sizes": {"N": 1024}, "params": {"BLOCK": 256}, "mode": "cold"}
    history.record(conn, "r1", "bench", "k", point, {"summary": timed},
                   machine={"gpu": "NVIDIA H200"}, commit="abc1234")
    history.record(conn, "r2", "bench", "k", point,
                   {"summary": dict(timed, median=1e-6, q1=0.95e-6, q3=1.05e-6)},
                   machine={}, commit=None)
    history.record(conn, "r2", "bench", "k", {"sizes": {"N": 1}},
                   {"summary": None, "status": "failed"}, machine={}, commit=None)
    history.record(conn, "r2", "bench", "k", {"sizes": {"N": 2}},
                   {"summary": dict(timed, median=0)}, machine={}, commit=None)
    rows = history.rows(conn)
    assert [r.values for r in rows] == [{"N": 1}, {"N": 1024, "BLOCK": 256}, {"N": 1024, "BLOCK": 256}], \
        "the row with a time of 0 is skipped, not shown"
    untimed, newer, older = rows
    assert untimed.summary is None and untimed.status == "failed" and untimed.gpu is None
    assert older.summary is not None and older.summary.median == 2e-6 and older.gpu == "NVIDIA H200"
    assert older.commit == "abc1234" and older.to_dict()["point"] == point
    [change] = history.compare(conn, "r1", "r2")
    assert ((change.verdict, change.values, change.before_s, change.after_s) == ("faster", {"N": 1024, "BLOCK": 256}, 2e-6, 1e-6))
    assert change.to_dict()["change"] == change.change < 0


def test_a_kernel_name_that_is_not_utf8_is_stored_and_found(tmp_path, monkeypatch):
    """A spec file whose name is not UTF-8 (Python keeps its bytes as surrogates) reached SQLite as
    it was: exit 70. Stored with its bytes written out, the same each time, so kprof history finds
    it."""
    from kprof.results import history

    monkeypatch.setenv("KPROF_HISTORY", str(tmp_path / "h.sqlite"))
    conn = history.connect()
    history.record(conn, "r1", "bench", "k\udcff", {"N": 1}, {}, machine={}, commit=None)
    (row,) = history.rows(conn, kernel="k\udcff")
    assert row.kernel == "k\\udcff" and history.stored_text("k\udcff") == row.kernel


def test_a_history_store_that_is_no_regular_file_is_one_line_not_an_empty_history(tmp_path, monkeypatch, capsys):
    """KPROF_HISTORY naming a folder, a FIFO or a character device read as "no bench results
    yet"."""
    import os
    import stat

    from kprof import errors
    from kprof.commands import cli

    os.mkfifo(tmp_path / "fifo")
    try:
        os.mknod(tmp_path / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        places = [(tmp_path, "a folder"), (tmp_path / "fifo", "a FIFO"),
                  (tmp_path / "null", "a character device")]
    except PermissionError:  # not root: the folder and the FIFO
        places = [(tmp_path, "a folder"), (tmp_path / "fifo", "a FIFO")]
    for place, kind in places:
        monkeypatch.setenv("KPROF_HISTORY", str(place))
        for argv in (["history"], ["compare", "a", "b"]):
            assert cli.main(argv) == errors.EXIT_USAGE
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and f"{kind}, not a regular file (set KPROF_HISTORY to a file)" in err[0], err
    assert stat.S_ISFIFO((tmp_path / "fifo").stat().st_mode)


def test_a_store_in_a_folder_kprof_may_not_write_is_still_read(tmp_path):
    """Issue 79: the store in WAL mode could not be read from a folder kprof may not write (a
    read-only mount, a 0555 folder, a read-only HOME): SQLite wants its -shm file beside it. Read
    as another user where the test runs as root (root may write anywhere)."""
    import sys
    import tempfile
    from pathlib import Path

    import kprof

    folder = Path(tempfile.mkdtemp(prefix="kprof-ro-"))
    try:
        db = folder / "history.sqlite"
        history.connect(db).close()
        folder.chmod(0o555)
        db.chmod(0o644)
        code = ("import sys\nfrom pathlib import Path\nfrom kprof.results import history\n"
                "conn = history.connect_read(Path(sys.argv[1]))\nprint('read', conn is not None)\n")
        env = dict(os.environ, PYTHONPATH=str(Path(kprof.__file__).resolve().parent.parent))
        pythons = [sys.executable]
        if os.geteuid() == 0:
            runuser = shutil.which("runuser")
            if runuser is None:
                pytest.skip("root, and no runuser to read as another user")
            pythons = [[runuser, "-u", "nobody", "--", p] for p in (sys.executable, "/usr/bin/python3")]
        for python in pythons:
            argv = [*python, "-c", code, str(db)] if isinstance(python, list) else [python, "-c", code, str(db)]
            done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, cwd=folder)
            if "Permission denied" not in done.stderr and "No module named" not in done.stderr:
                break
        else:
            pytest.skip(f"no Python here that another user may run with kprof: {done.stderr.strip()[-120:]}")
        assert done.returncode == 0 and done.stdout.strip() == "read True", done.stderr
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_store_sqlite_cannot_open_read_only_is_read_as_it_stands(tmp_path, monkeypatch):
    """The same, where no other user can run kprof (CI's wheel in a folder of root's): SQLite's answer
    in a folder it may not write, "attempt to write a readonly database" for ``mode=ro``, stood in;
    the store is read as it stands on disk."""
    import sqlite3

    db = tmp_path / "history.sqlite"
    history.connect(db).close()
    real = sqlite3.connect
    tried = []

    def connect(database, *args, **kwargs):
        tried.append(str(database).rsplit("?", 1)[-1])
        if str(database).endswith("?mode=ro"):
            raise sqlite3.OperationalError("attempt to write a readonly database")
        return real(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    assert history.connect_read(db) is not None and tried == ["mode=ro", "immutable=1"]
