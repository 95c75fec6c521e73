"""The fields of what to build and launch, read one at a time: each error names its field (within a
step's prefix too), and a good field comes back as the schema's class."""

from pathlib import Path

import pytest

from kprof.errors import SpecError
from kprof.spec import fields, sizeexpr
from kprof.spec.schema import BufferArg, ScalarArg


def fail(fld, problem):
    return SpecError("k.yaml", fld, problem)


def check_expr(expr, fld):
    try:
        sizeexpr.names(expr)
    except Exception as exc:
        raise fail(fld, str(exc)) from None
    return str(expr)


def test_arguments_come_back_as_buffers_and_scalars():
    args = fields.load_args([{"name": "x", "buffer": "float32", "shape": ["N"], "role": "in"},
                             {"name": "n", "scalar": "int32", "value": "N"}], fail, check_expr)
    assert isinstance(args[0], BufferArg) and isinstance(args[1], ScalarArg) and args[1].name == "n"


@pytest.mark.parametrize("raw, message", [
    ([], "args: must be a non-empty list"),
    ([{"name": "x", "buffer": "float33", "shape": ["N"], "role": "in"}], "args[0].buffer"),
    ([{"name": "x", "buffer": "float32", "shape": ["N"], "role": "sideways"}], "args[0].role"),
])
def test_a_bad_argument_names_its_field(raw, message):
    with pytest.raises(SpecError, match=message.replace("[", r"\[").replace("]", r"\]")):
        fields.load_args(raw, fail, check_expr)


def test_a_steps_field_is_named_with_its_prefix():
    inner = fields.within("steps[1]", fail)
    with pytest.raises(SpecError, match=r"steps\[1\]\.launch: must be a mapping"):
        fields.load_launch(3, inner, check_expr)


def test_a_launch_takes_grid_block_and_shared_memory_only():
    launch = fields.load_launch({"grid": ["ceil(N / 256)"], "block": [256]}, fail, check_expr)
    assert launch.grid[0] == "ceil(N / 256)" and launch.block[0] == "256" and len(launch.grid) == 3
    with pytest.raises(SpecError, match="launch"):
        fields.load_launch({"grid": [1], "block": [1], "cluster": [2]}, fail, check_expr)


def test_a_fill_rule_is_short_and_known():
    assert (str(fields.fill_of("uniform(-1, 1)", "checks[0].fill.x", "float32", fail)) == "uniform(-1, 1)")
    with pytest.raises(SpecError, match="checks\\[0\\].fill.x"):
        fields.fill_of("uniform(" + "1, " * 300 + "1)", "checks[0].fill.x", "float32", fail)


def test_nvcc_flags_stay_code_generation_inside_the_folder(tmp_path: Path):
    assert (fields.load_nvcc_flags(["-O3", "-maxrregcount=64"], tmp_path, fail) == ("-O3", "-maxrregcount=64"))
    with pytest.raises(SpecError, match="is not allowed"):
        fields.load_nvcc_flags(["-ccbin=/bin/sh"], tmp_path, fail)
    assert fields.show("x" * 500).endswith("...") and len(fields.show("x" * 500)) < 80
