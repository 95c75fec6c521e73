"""References in Python: checked at spec load without running them, called in the runner child
(a fake device here), and the user's exceptions reported as theirs, with their own traceback."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import child, job_for

from kprof import proc
from kprof import spec as spec_mod
from kprof.errors import SpecError, UserCodeError
from kprof.launch import launch
from kprof.spec import pyref

SPEC = """\
sizes: {N: 64}
args:
  - {name: x, buffer: float32, shape: [N]}
  - {name: idx, buffer: int32, shape: [N], fill: "randint(0, 8)"}
  - {name: y, buffer: float32, shape: [N], role: out}
  - {name: n, scalar: int64, value: N}
launch: {grid: [1], block: [64]}
reference: REF
"""

REFS = '''
import numpy as np

def doubled(x):
    return 2 * x

def both(x, idx, N, **rest):
    assert x.dtype == np.float64 and idx.dtype == np.int64 and N == 64 and rest["n"] == 64
    return {"y": 2 * x}

def broken(x):
    return x / undefined_name

def wants(x, z):
    return x
'''


def _spec(tmp_path, ref, refs=REFS):
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "k.cubin").write_bytes(b"")  # read by the runner, ignored by the fake device
    (tmp_path / "refs.py").write_text(refs)
    (tmp_path / "k.yaml").write_text(SPEC.replace("REF", ref))
    return spec_mod.load(tmp_path / "k.yaml")


def test_a_python_reference_is_stored_resolved(tmp_path):
    spec = _spec(tmp_path, "{y: refs.py:doubled}")
    assert spec.reference == (("y", f"python:{tmp_path / 'refs.py'}:doubled"),)
    assert _spec(tmp_path, "refs.py:both").reference[0][0] == "*"


@pytest.mark.parametrize("ref, message", [
    ("{y: nope.py:doubled}", "reference.y: nope.py does not exist next to the spec"),
    ("{y: refs.py:missing}", "reference.y: refs.py defines no top-level function missing"),
    ("{y: refs.py:wants}", "wants() asks for 'z', which is not an input, size or scalar"),
    ("{y: no_such_pkg.refs:fn}", "module no_such_pkg.refs is not on the Python path"),
])
def test_a_bad_python_reference_is_refused_at_load_without_running_it(tmp_path, ref, message):
    refs = REFS + "\nraise SystemExit('the reference file was run at spec load')\n"
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _spec(tmp_path, ref, refs)


@pytest.fixture
def fake_device(monkeypatch):
    from fakedevice import FakeDevice

    import kprof.child.device
    import kprof.child.workspace

    def doubled(dev, args):
        x, idx, y, n = args
        dev.view(y, np.float32)[:n] = 2 * dev.view(x, np.float32)[:n]

    monkeypatch.setattr(kprof.child.device, "Device", FakeDevice)
    monkeypatch.setattr(kprof.child.workspace, "nvtx_module", lambda: None)
    monkeypatch.setitem(FakeDevice.emulations, "k", doubled)


@pytest.mark.parametrize("ref", ["{y: refs.py:doubled}", "refs.py:both"])
def test_the_child_verifies_against_a_python_reference(tmp_path, fake_device, ref):
    from fakedevice import run_job

    data = run_job(tmp_path, job_for(_spec(tmp_path, ref), tmp_path / "k.cubin"))
    assert data["status"] == "ok", data.get("error") or data.get("checks")


def test_the_users_exception_is_theirs_with_their_traceback(tmp_path, fake_device, monkeypatch,
                                                            capsys):
    from fakedevice import run_job

    data = run_job(tmp_path, job_for(_spec(tmp_path, "{y: refs.py:broken}"), tmp_path / "k.cubin"))
    err = data["error"]
    assert (err["type"] == "UserCodeError"
            and "your reference refs.py:broken raised NameError" in err["message"])
    assert ("refs.py" in err["log"] and "undefined_name" in err["log"]
            and "kprof/workspace.py" not in err["log"])
    with pytest.raises(UserCodeError) as info:
        launch.raise_for_child("k", proc.Completed(("x",), 3, "", "", 0.1), child(data), 10)
    assert info.value.exit_code == 2 and "undefined_name" in info.value.log


def test_a_spec_wide_reference_must_return_every_output(tmp_path, fake_device):
    from fakedevice import run_job

    refs = REFS + "\ndef partial(x):\n    return {'z': x}\n"
    data = run_job(tmp_path,
                   job_for(_spec(tmp_path, "refs.py:partial", refs), tmp_path / "k.cubin"))
    assert (data["error"]["type"] == "UserCodeError"
            and "must return a dict with the outputs y" in data["error"]["message"])


def test_looks_like_tells_references_from_expressions():
    assert (pyref.looks_like("refs.py:fn") and pyref.looks_like("pkg.mod:fn")
            and pyref.looks_like("sub/dir/r.py:f"))
    for expr in ("x[:, 0]", "a @ b", "sum(x, axis=1)", "x[1:3]", "2 * x"):
        assert not pyref.looks_like(expr), expr
