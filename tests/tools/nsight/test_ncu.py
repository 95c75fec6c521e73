"""kprof.tools.nsight.ncu's saved reports (``--save-report``): ncu exports to kprof's own fresh file
beside the report, which is then put at the report's name as any output is
(kprof.outputs.place_file): never through a link, never over a device. The rest of the module is
tested with the profile (tests/measure/test_profiling.py)."""

from __future__ import annotations

import pytest

from kprof.errors import UsageError
from kprof.tools.nsight import ncu


def test_ncu_writes_its_own_file_and_the_link_at_the_reports_name_is_replaced(tmp_path):
    target = tmp_path / "passwd"
    target.write_text("root:x:0:0\n")
    report = tmp_path / "train.ncu-rep"
    report.symlink_to(target)
    with ncu.saved_report(report) as made:
        assert (made is not None and made.parent == tmp_path and made != report
                and made.name.endswith(".ncu-rep"))
        # what ncu --export --force-overwrite does to the path it is given
        made.write_bytes(b"NVIDIA report")
    assert (not report.is_symlink() and report.read_bytes() == b"NVIDIA report"
            and target.read_text() == "root:x:0:0\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["passwd", "train.ncu-rep"]


def test_a_run_that_wrote_no_report_leaves_what_was_there(tmp_path):
    report = tmp_path / "k.ncu-rep"
    report.write_text("an earlier report")
    with pytest.raises(RuntimeError), ncu.saved_report(report) as made:
        assert made is not None
        raise RuntimeError("ncu failed before it wrote anything")
    assert (report.read_text() == "an earlier report"
            and [p.name for p in tmp_path.iterdir()] == ["k.ncu-rep"])


def test_a_folder_at_the_reports_name_is_one_line_before_ncu_runs(tmp_path):
    (tmp_path / "k.ncu-rep").mkdir()
    with pytest.raises(UsageError, match="is a folder"), ncu.saved_report(tmp_path / "k.ncu-rep"):
        pytest.fail("ncu would have run")
    with ncu.saved_report(None) as made:
        assert made is None


def test_an_ncu_failure_keeps_what_it_wrote_and_an_interrupt_keeps_the_earlier_report(tmp_path):
    from kprof.errors import NcuError

    report = tmp_path / "k.ncu-rep"
    report.write_text("the earlier report")
    with pytest.raises(KeyboardInterrupt), ncu.saved_report(report) as made:
        made.write_bytes(b"half a report")
        raise KeyboardInterrupt
    assert (report.read_text() == "the earlier report"
            and [p.name for p in tmp_path.iterdir()] == ["k.ncu-rep"])
    with pytest.raises(NcuError), ncu.saved_report(report) as made:
        made.write_bytes(b"what ncu got before the kernel failed")
        raise NcuError("k: the kernel failed under ncu", reason="target")
    assert report.read_bytes() == b"what ncu got before the kernel failed"
    assert [p.name for p in tmp_path.iterdir()] == ["k.ncu-rep"]
