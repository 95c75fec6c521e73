"""Outputs respect what is there (kprof.outputs.replace_file, kprof.outputs.output_file): a regular
file is replaced atomically, a device, a FIFO or a stream's link is written in place, and nothing
that is not a regular file is ever renamed over. Each test makes its own device nodes and FIFOs in a
temporary folder: none names anything under /dev as an output (as root, a rename over /dev/stdin
replaces the machine's)."""

from __future__ import annotations

import os
import socket
import stat
import threading
import time
from pathlib import Path

import pytest

from kprof import outputs
from kprof.commands import cli
from kprof.errors import UsageError

DATA = Path(__file__).resolve().parent / "data"
XML = DATA / "sanitizer" / "rec_oob.memcheck.xml"


def _node(folder: Path, kind: int, name: str = "node") -> Path:
    """A device node of the null device's numbers (char) or of a loop device's (block), made
    here."""
    path = folder / name
    try:
        os.mknod(path, kind | 0o666,
                 os.makedev(1, 3) if kind == stat.S_IFCHR else os.makedev(7, 200))
    except PermissionError:
        pytest.skip("mknod needs root (CI and the GPU machines run as root)")
    return path


def _same(path: Path, before: os.stat_result) -> bool:
    after = os.lstat(path)
    return (stat.S_IFMT(after.st_mode), after.st_ino, after.st_rdev) == (stat.S_IFMT(before.st_mode), before.st_ino,
                                                                          before.st_rdev)


def test_a_regular_file_is_replaced_whole_by_a_rename(tmp_path):
    path = tmp_path / "r.sarif"
    path.write_text("old")
    inode = path.stat().st_ino
    outputs.replace_file(path, "new")
    assert path.read_text() == "new" and path.stat().st_ino != inode
    assert [p.name for p in tmp_path.iterdir()] == ["r.sarif"]  # no temporary file left


def test_a_character_device_is_written_in_place_never_renamed_over(tmp_path):
    node = _node(tmp_path, stat.S_IFCHR)
    before = os.lstat(node)
    outputs.replace_file(node, "{}" * 100_000)
    assert _same(node, before) and stat.S_ISCHR(os.lstat(node).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["node"]


def test_a_block_device_is_refused_in_one_line(tmp_path):
    node = _node(tmp_path, stat.S_IFBLK)
    before = os.lstat(node)
    with pytest.raises(UsageError, match="a block device") as err:
        outputs.replace_file(node, "x")
    assert "\n" not in str(err.value) and _same(node, before)
    with pytest.raises(UsageError, match="--sarif: .*a block device"):
        outputs.output_file(str(node), "--sarif")


def test_a_fifo_no_program_reads_is_one_line_not_a_hang(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    before = os.lstat(fifo)
    start = time.monotonic()
    with pytest.raises(UsageError, match="a FIFO no program reads"):
        outputs.replace_file(fifo, "x")
    assert time.monotonic() - start < 5 and _same(fifo, before)


def test_a_fifo_with_a_reader_gets_the_whole_report(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    opened = threading.Event()

    def read() -> None:  # a reader waiting before the writer comes, as `cat fifo` would
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        opened.set()
        chunks: list[bytes] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                time.sleep(0.001)
                continue
            if chunk:
                chunks.append(chunk)
            elif chunks:  # the writer closed its end
                break
            else:
                time.sleep(0.001)
        os.close(fd)
        got.append(b"".join(chunks))

    reader = threading.Thread(target=read)
    reader.start()
    assert opened.wait(5)
    payload = b"x" * 300_000  # several times a pipe's buffer: the writer waits for its reader
    outputs.replace_file(fifo, payload)
    reader.join(10)
    assert got == [payload] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_the_processs_own_stdout_is_written_through_to_the_file_a_shell_redirected_it_to(tmp_path):
    """``--sarif /dev/stdout > report.sarif``: the one link written through to a regular file is this
    process's own standard output (or error); the file gets the whole output, the link stays."""
    import subprocess
    import sys

    out = tmp_path / "redirected.txt"
    out.write_text("a longer old content")
    # the test's own links to the child's stdout (a test never names /dev itself as an output)
    (tmp_path / "stdout").symlink_to("/proc/self/fd/1")
    (tmp_path / "via").symlink_to(tmp_path / "stdout")
    code = ("import sys\nfrom pathlib import Path\nfrom kprof import outputs\n"
            "outputs.replace_file(Path(sys.argv[1]), 'new')\n"
            "outputs.replace_file(Path(sys.argv[2]), 'newer')\n")
    with out.open("r+b") as fh:
        done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "stdout"), str(tmp_path / "via")],
                              stdout=fh, stderr=subprocess.PIPE, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert out.read_text() == "newer"
    assert (tmp_path / "stdout").is_symlink() and (tmp_path / "via").is_symlink()


@pytest.mark.parametrize("target", ["proc-root", "other-fd", "dev-shm-like"])
def test_a_link_through_proc_or_dev_to_a_regular_file_is_replaced_never_written_through(tmp_path, target):
    """Issue 79: a link whose target starts with /proc/ or /dev/ was taken for a stream and written
    through, so ``--sarif x`` with ``x -> /proc/self/root/<a file>`` truncated that file (as root, any
    file). Followed link by link, a link that ends at a regular file is replaced itself, whatever its
    path; the file it named is untouched."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    fd = os.open(victim, os.O_RDONLY)
    try:
        via = {"proc-root": f"/proc/self/root{victim}", "other-fd": f"/proc/self/fd/{fd}",
               "dev-shm-like": str(victim)}[target]
        link = tmp_path / "x.sarif"
        link.symlink_to(via)
        if target == "dev-shm-like":  # a link through a second link into the same file
            hop = tmp_path / "hop"
            hop.symlink_to(f"/proc/self/root{victim}")
            link.unlink()
            link.symlink_to(hop)
        assert outputs.output_kind(link) == "replace"
        outputs.replace_file(link, "ours")
    finally:
        os.close(fd)
    assert victim.read_text() == "keep me"
    assert not link.is_symlink() and link.read_text() == "ours"


def test_a_link_swapped_after_the_look_is_never_written_through(tmp_path, monkeypatch):
    """The look at a link and the write are two steps: a link that led to a FIFO when looked at and
    to a regular file when opened is refused, the file untouched."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "out"
    link.symlink_to(victim)
    monkeypatch.setattr(outputs, "output_kind", lambda path: "in place")
    with pytest.raises(UsageError, match="not kprof's output stream"):
        outputs.replace_file(link, "x")
    assert victim.read_text() == "keep me"


def test_a_streams_link_that_leads_nowhere_is_refused(tmp_path):
    link = tmp_path / "stdin"
    link.symlink_to("/proc/self/fd/987654")
    with pytest.raises(UsageError, match="leads nowhere"):
        outputs.replace_file(link, "x")
    assert link.is_symlink()


def test_a_link_in_the_users_folder_is_replaced_not_written_through(tmp_path):
    """The documented rule for a user's own link: kprof replaces the link, the file it named
    stays."""
    target = tmp_path / "theirs.txt"
    target.write_text("theirs")
    link = tmp_path / "r.sarif"
    link.symlink_to(target)
    outputs.replace_file(link, "ours")
    assert not link.is_symlink() and link.read_text() == "ours" and target.read_text() == "theirs"


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(UsageError, match="a socket"):
            outputs.replace_file(path, "x")
        assert stat.S_ISSOCK(os.lstat(path).st_mode)


@pytest.mark.parametrize("kind", ["chardev", "fifo", "block"])
def test_every_output_option_leaves_a_special_file_as_it_was(tmp_path, capsys, monkeypatch, kind):
    """kprof sanitize --sarif (the report written after the run) and the options checked before the
    run: the node is the same node afterwards, whatever the exit."""
    monkeypatch.chdir(tmp_path)
    if kind == "fifo":
        node = tmp_path / "fifo"
        os.mkfifo(node)
    else:
        node = _node(tmp_path, stat.S_IFCHR if kind == "chardev" else stat.S_IFBLK)
    before = os.lstat(node)
    for argv in (["sanitize", "--from-xml", str(XML), "--sarif", str(node)],
                 ["profile", "vector_add", "--sarif", str(node)],
                 ["profile", "vector_add", "--plot", str(node)],
                 ["bench", "vector_add", "--plot", str(node)]):
        code = cli.main(argv)
        err = capsys.readouterr().err
        assert code != 70 and "Traceback" not in err, (argv, err)
        assert _same(node, before), argv
    assert sorted(p.name for p in tmp_path.iterdir()) == [node.name]


def test_a_finished_file_is_placed_as_a_written_one_would_be(tmp_path):
    """outputs.place_file (ncu's exported report put at --save-report's name): over a regular file by
    a rename; a link there replaced, its target untouched; into a character device in place; a
    folder is one line; the made file is gone each time."""
    def made(text: str) -> Path:
        path = tmp_path / f".made-{text}"
        path.write_text(text)
        return path

    regular = tmp_path / "r.ncu-rep"
    regular.write_text("old")
    outputs.place_file(made("a"), regular)
    assert regular.read_text() == "a"
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    link = tmp_path / "l.ncu-rep"
    link.symlink_to(target)
    outputs.place_file(made("b"), link)
    assert not link.is_symlink() and link.read_text() == "b" and target.read_text() == "keep"
    node = _node(tmp_path, stat.S_IFCHR, "dev.ncu-rep")
    before = os.lstat(node)
    outputs.place_file(made("c"), node)
    assert _same(node, before)
    (tmp_path / "dir.ncu-rep").mkdir()
    with pytest.raises(UsageError, match="is a folder"):
        outputs.place_file(made("d"), tmp_path / "dir.ncu-rep")
    assert not list(tmp_path.glob(".made-*"))


@pytest.mark.parametrize("name", ["out/", "notes.txt/"])
def test_a_name_ending_in_a_slash_names_a_folder_and_is_refused(tmp_path, monkeypatch, name):
    """Issue 79: the slash was dropped, so ``--sarif out/`` wrote a file ``out`` and ``notes.txt/``
    replaced the file notes.txt; a name ending in '/' names a folder, and an output is a file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("theirs")
    with pytest.raises(UsageError, match="ends with '/'"):
        outputs.output_file(name, "--sarif")
    assert cli.main(["sanitize", "--from-xml", str(XML), "--sarif", name]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert (tmp_path / "notes.txt").read_text() == "theirs"


def test_a_replaced_file_keeps_its_mode_and_a_new_one_follows_the_umask(tmp_path):
    """Issue 79: every file kprof replaced came out 0600 (its temporary file's mode), whatever the
    old file's mode and the umask."""
    old = tmp_path / "shared.sarif"
    old.write_text("old")
    old.chmod(0o644)
    outputs.replace_file(old, "new")
    assert stat.S_IMODE(old.stat().st_mode) == 0o644 and old.read_text() == "new"
    mask = os.umask(0o027)
    try:
        fresh = tmp_path / "fresh.json"
        outputs.replace_file(fresh, "{}")
        made = tmp_path / ".made"
        made.write_text("r")
        placed = tmp_path / "placed.ncu-rep"
        outputs.place_file(made, placed)
    finally:
        os.umask(mask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o640 and stat.S_IMODE(placed.stat().st_mode) == 0o640


def test_a_report_folder_is_checked_before_the_run_and_made_only_when_a_report_is_written(tmp_path, monkeypatch):
    """Issue 79: ``--save-report a/b/c`` made its folders, then the run was refused (no GPU): checked
    now, made when the first report goes there."""
    from kprof.commands import api

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(api, "require_gpu", lambda tool: (_ for _ in ()).throw(UsageError("no GPU here")))
    assert cli.main(["profile", "vector_add", "--save-report", "a/b/c"]) == 2
    assert not (tmp_path / "a").exists()
    (tmp_path / "f").write_text("x")
    with pytest.raises(UsageError, match="is a file, not a folder"):
        outputs.output_dir("f/reports", "--save-report", create=False)
    assert outputs.output_dir("a/b/c", "--save-report", create=False) == Path("a/b/c")
    assert not (tmp_path / "a").exists()


def test_the_text_report_read_beside_from_xml_is_an_input_no_output_may_replace(tmp_path, capsys):
    """Issue 79: ``--from-xml r.xml`` reads r.txt beside it; ``--sarif r.txt`` replaced it."""
    xml = tmp_path / "r.xml"
    xml.write_bytes(XML.read_bytes())
    side = tmp_path / "r.txt"
    side.write_text("the tool's own text report")
    assert cli.main(["sanitize", "--from-xml", str(xml), "--sarif", str(side)]) == 2
    assert "the text report read with --from-xml" in capsys.readouterr().err
    assert side.read_text() == "the tool's own text report"


def test_from_xml_with_a_program_is_refused_not_silently_ignored(capsys):
    """Issue 79: ``sanitize --from-xml R -- python prog.py`` read R and never ran the program."""
    assert cli.main(["sanitize", "--from-xml", str(XML), "--", "python", "prog.py"]) == 2
    assert "not both" in capsys.readouterr().err
