"""scripts/public_corpus.py: the public ladder's expectations (perf_public/llmc.yaml), the specs it
builds from a checkout, its check of the checkout and its judge. No GPU, and none of the public
code: stand-in files here."""

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from kprof.diagnosis.model import Cause, Diagnosis, Gain, Line
from kprof.diagnosis.rules import RULE_IDS
from kprof.spec import loader

_PATH = Path(__file__).resolve().parent.parent / "scripts" / "public_corpus.py"
_spec = importlib.util.spec_from_file_location("public_corpus_script", _PATH)
pc = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = pc  # its dataclasses look their module up
_spec.loader.exec_module(pc)


def test_the_expectations_name_fifteen_steps_each_a_cause_kprof_knows_and_lines_of_its_file():
    data = pc.load()
    assert len(data["steps"]) >= 15 and len(data["commit"]) == 40
    for name, step in data["steps"].items():
        e = step["expect"]
        assert e["cause"] in (*RULE_IDS, "none"), name
        assert e["lines"] and all(isinstance(n, int) and n > 0 for n in e["lines"]), name
        assert step["file"] in data["files"], name
        for cause, lines in (e.get("also") or {}).items():
            assert cause in RULE_IDS and (lines == "launch" or all(isinstance(n, int) for n in lines)), name


def _checkout(tmp_path, data):
    """Stand-ins for the public files: kernels of every entry the specs name, so each spec loads."""
    folder = tmp_path / "llm.c" / data["folder"]
    folder.mkdir(parents=True)
    for name in data["files"]:
        (folder / name).write_text("// a stand-in\n")
    return tmp_path / "llm.c"


def test_specs_are_two_a_step_pointing_at_the_checkout_and_each_loads(tmp_path):
    data = pc.load()
    checkout = _checkout(tmp_path, data)
    written = pc.specs(checkout, tmp_path / "out", data)
    assert len(written) == 2 * len(data["steps"]) and (tmp_path / "out" / "llmc_ref.py").is_file()
    for path in written:
        # the fields, the sizes, the references' parameters all checked at load
        spec = loader.load(path)
        assert spec.source.parent == (checkout / data["folder"]).resolve(), path.name
    # the next version's own buffers left out
    bwd = loader.load(tmp_path / "out" / "layernorm_bwd_1_2.yaml")
    assert "dweight_tmp" not in [a.name for a in bwd.args]
    nxt = loader.load(tmp_path / "out" / "layernorm_bwd_1_2_next.yaml")
    assert nxt.entries == ("layernorm_backward_kernel2<float, float, float, float>",
                           "copy_to_dweight_dbias<float>")


def test_the_check_holds_the_checkout_to_the_files_the_lines_are_for(tmp_path):
    data = pc.load()
    checkout = _checkout(tmp_path, data)
    assert "is not the file of" in pc.check(checkout, data)
    fake = {**data,
            "files": {n: hashlib.sha256(b"// a stand-in\n").hexdigest() for n in data["files"]}}
    assert pc.check(checkout, fake) is None
    (checkout / data["folder"] / "adamw.cu").unlink()
    assert "lacks adamw.cu" in pc.check(checkout, fake)


def _d(rule, file, line, estimate=2.0):
    cause = Cause(rule, "t", (), "c", Gain(estimate, "b"), line=Line(file, line, "w"))
    return Diagnosis("k", "counters", "DRAM", {}, 3.0, seconds=1e-3, causes=[cause])


@pytest.mark.parametrize(("rule", "file", "line", "cause", "line_ok"), [
    ("uncoalesced", "/x/softmax_forward.cu", 115, True, True),
    # the kernel's line, not an access the rewrite moves
    ("uncoalesced", "/x/softmax_forward.cu", 99, True, False),
    ("uncoalesced", "/x/other.cu", 115, True, False),
    # the cause the same rewrite also removes, at the launch
    ("small-grid", "/o/softmax_fwd_1_2.yaml", 12, True, True),
    ("barrier", "/x/softmax_forward.cu", 115, False, False),
])
def test_the_judge(rule, file, line, cause, line_ok):
    expect = pc.load()["steps"]["softmax_fwd_1_2"]["expect"]
    r = pc.judge("softmax_fwd_1_2", expect, _d(rule, file, line), 2.5, file="softmax_forward.cu",
                 spec_name="softmax_fwd_1_2.yaml", launch_line=12)
    assert (r.cause_right, r.line_right) == (cause, line_ok)
    assert r.estimate_right is True  # 2.0 for 2.5 measured: within 1.5x


def test_a_step_kprof_has_no_rule_for_is_never_right_and_nothing_named_is_counted():
    r = pc.judge("adamw_1_2", {"cause": "none", "lines": [71]},
                 _d("limiter-lines", "/x/adamw.cu", 71), None,
                 file="adamw.cu", spec_name="a.yaml", launch_line=1)
    assert not r.cause_right and r.estimate_right is None
    empty = Diagnosis("k", "counters", "DRAM", {}, 1.0, seconds=1e-3, causes=[])
    t = pc.tally([pc.judge("s", {"cause": "atomics", "lines": [1]}, empty, 2.0, file="a.cu",
                           spec_name="s.yaml", launch_line=1), SimpleNamespace(**vars(r))])
    assert t["steps"] == 2 and t["nothing_named"] == 1 and t["cause_right"] == 0
