"""The tries (kprof/diagnosis/tries.py): --try parsed, the values kprof picks, the changes that need
no define."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kprof.diagnosis import tries
from kprof.diagnosis.model import Cause, Gain
from kprof.errors import UsageError
from kprof.spec import catalog


def test_tries_parse_and_auto_values():
    assert (tries.parse(["BLOCK=128,256", "TILE=32", "BLOCK=256,512"]) == {"BLOCK": ["128", "256", "512"], "TILE": ["32"]})
    for bad in ("B=", "=3", "B=1;rm", "B=1\n", "B"):
        with pytest.raises(UsageError, match="--try"):
            tries.parse([bad])
    spec = catalog.load("tail_wave")
    assert tries.launch_defines(spec) == {"PER": 8}
    tail = Cause("tail-wave", "t", (), "c", Gain(2.0, "b"))
    assert tries.auto_values(tail, spec, 264) == {"PER": [1, 2, 4, 16]}
    small = Cause("small-grid", "t", (), "c", Gain(2.0, "b"))
    assert (tries.auto_values(small, catalog.load("too_few_blocks"), 1056) == {"BLOCKS": [1056, 2112, 4224, 8448]})
    assert tries.auto_values(Cause("atomics", "t", (), "c", Gain(2.0, "b")), spec, 264) == {}
    good = [tries.Try({"PER": "1"}, "ok", 5e-4, 1.8),
            tries.Try({"PER": "2"}, "failed-verification", None, None)]
    confirmed = tries.confirm(tail, good)
    assert (confirmed.gain.measured == 1.8 and confirmed.gain.tried == "PER=1"
            and confirmed.gain.estimate == 2.0)


def test_tries_that_need_no_define():
    """What a user could change without editing the source: the block where the launch writes it as
    the number its grid divides by, -maxrregcount for registers, the launch's dynamic shared memory;
    each a spec of its own."""
    from kprof.spec import KernelSpec

    def cause(rule):
        return Cause(rule, "t", (), "c", Gain(2.0, "b"))

    # block [256], grid ceil(N / 256), shared_mem SMEM
    gather = catalog.load("gather_reserved_smem")
    found = tries.variants(cause("occupancy-shared"), gather)
    labels = [p for p, _ in found]
    assert labels[:3] == [{"shared_mem": "0"}, {"shared_mem": "1/4"}, {"shared_mem": "1/2"}]
    assert found[0][1].launch.shared_mem == "0" and found[2][1].launch.shared_mem == "(SMEM) / 2"
    assert {"block": "64"} in labels and all(isinstance(v, KernelSpec) for _, v in found)
    blk = dict((p["block"], v) for p, v in tries.variants(cause("tail-wave"), gather)
               if "block" in p)
    assert blk["512"].launch.grid[0] == "ceil(N / 512)" and blk["512"].launch.block[0] == "512"
    assert blk["64"].name == "gather_reserved_smem__block64"
    regs = tries.variants(cause("occupancy-registers"), catalog.load("occupancy_registers"),
                          registers=168)
    assert [p for p, _ in regs][:3] == [{"maxrregcount": "128"}, {"maxrregcount": "96"},
                                        {"maxrregcount": "64"}]
    assert regs[0][1].nvcc_flags[-1] == "-maxrregcount=128"
    assert tries.variants(cause("atomics"), gather) == []
    # several steps: none
    assert tries.variants(cause("tail-wave"), catalog.load("launch_overhead")) == []
    report = SimpleNamespace(points=[
        SimpleNamespace(kernel="g", status="ok", summary=SimpleNamespace(median=2e-3)),
        SimpleNamespace(kernel="g__smem0", status="ok", summary=SimpleNamespace(median=1e-3)),
        SimpleNamespace(kernel="g__block64", status="failed-verification", summary=None,
                        message="y differs")])
    got = tries.measured_variants(report, "g",
                                  [({"shared_mem": "0"}, "g__smem0"),
                                   ({"block": "64"}, "g__block64")])
    assert [(t.label(), t.status, t.gain) for t in got] == [("shared_mem=0", "ok", 2.0),
                                                            ("block=64", "failed-verification",
                                                             None)]


def test_cli_rejects_a_bad_try_before_the_gpu(capsys):
    from kprof.commands import cli

    assert cli.main(["profile", "tail_wave", "--try", "PER=1;x"]) == 2
    assert "--try" in capsys.readouterr().err
