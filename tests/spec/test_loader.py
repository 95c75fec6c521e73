import copy
import re
from pathlib import Path

import pytest
import yaml

from kprof import spec as spec_mod
from kprof.errors import SpecError, UsageError
from kprof.spec import catalog, sweep

BASE = {
    "description": "test",
    "sizes": {"M": {"default": 64, "sanitize": 7}, "N": 32},
    "args": [
        {"name": "A", "buffer": "float32", "shape": ["M", "N"], "role": "in"},
        {"name": "C", "buffer": "float32", "shape": ["M", "N"], "role": "out"},
        {"name": "M", "scalar": "int32", "value": "M"},
        {"name": "eps", "scalar": "float32", "value": 1e-6},
    ],
    "launch": {"grid": ["ceil(N / 16)", "ceil(M / 16)"], "block": [16, 16]},
    "reference": {"C": "A * 2"},
    "tolerance": 1e-6,
    "work": {"flops": "M * N", "bytes": "8 * M * N"},
    "checks": [{"M": 3, "N": 5}],
}


def write(tmp_path, data, name="k"):
    (tmp_path / f"{name}.cu").write_text('extern "C" __global__ void k() {}\n')
    path = tmp_path / f"{name}.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("entry", catalog.entries(), ids=lambda e: e.name)
def test_every_shipped_spec_loads_and_resolves(entry):
    spec = spec_mod.load(entry.path)
    assert spec.source.is_file()
    for preset in spec_mod.PRESETS:
        r = spec.resolve(preset=preset)
        assert all(d >= 1 for d in r.grid + r.block)
        assert r.threads_per_block <= 1024
    for check in spec.checks:
        spec.resolve(dict(check.sizes))
    assert spec.reference, "every shipped kernel is verified against a reference"


def test_ladder_names_are_exact():
    names = {e.name for e in catalog.entries() if e.group == "kernel"}
    assert ({"vector_add", "reduce_sum", "naive_matmul", "tiled_matmul", "regblock_matmul", "rmsnorm", "softmax"} <= names)


def test_valid_spec_resolves(tmp_path):
    spec = spec_mod.load(write(tmp_path, BASE))
    assert spec.name == "k" and spec.entry == "k"
    r = spec.resolve({"M": 33})
    assert r.sizes == {"M": 33, "N": 32}
    assert r.grid == (2, 3, 1) and r.block == (16, 16, 1)
    assert [b.shape for b in r.buffers] == [(33, 32), (33, 32)]
    assert r.flops == 33 * 32 and r.bytes == 8 * 33 * 32
    assert dict((a.name, v) for a, v in r.scalars) == {"M": 33, "eps": pytest.approx(1e-6)}
    assert spec.resolve(preset="sanitize").sizes == {"M": 7, "N": 32}
    assert r.buffers[0].describe() == "A is 33 x 32 float32, 4,224 bytes"


def test_a_check_fills_its_inputs_its_own_way_and_the_rest_of_the_spec_keeps_its_fill(tmp_path):
    from kprof.commands import pipeline

    data = copy.deepcopy(BASE)
    data["checks"] = [{"M": 3, "N": 5}, {"M": 4, "fill": {"A": "peaked(14.5, 0.001)"}}]
    spec = spec_mod.load(write(tmp_path, data))
    plain, peaked = spec.checks
    assert plain.label == "M3-N5" and plain.fills == ()
    assert peaked.label == "M4 A=peaked(14.5, 0.001)" and peaked.sizes == (("M", 4),)
    resolved = pipeline.resolve(spec, dict(peaked.sizes), fills=peaked.fills)
    assert str(resolved.buffers[0].arg.fill) == "peaked(14.5, 0.001)" and resolved.sizes["M"] == 4
    assert str(pipeline.resolve(spec, dict(plain.sizes)).buffers[0].arg.fill) == "uniform"
    assert str(spec.args[0].fill) == "uniform"  # the spec itself is unchanged


def mutate(path, value):
    data = copy.deepcopy(BASE)
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


DELETE = object()

INVALID = [
    (("launch", "grid"), ["ceil(Q / 16)"], "launch.grid[0]: unknown size 'Q'"),
    (("launch", "grid"), ["__import__('os')"], "launch.grid[0]: cannot call __import__"),
    (("launch", "block"), DELETE, "launch.block: is required"),
    (("launch", "block"), [1, 2, 3, 4], "launch.block: must be a list of 1 to 3"),
    (("launch", "warp"), 32, "launch.warp: unknown field"),
    (("args",), [], "args: must be a non-empty list"),
    (("args", 0, "buffer"), "float128", "args[0].buffer: 'float128' is not a supported dtype"),
    (("args", 0, "role"), "input", "args[0].role: 'input' must be one of"),
    (("args", 0, "shape"), ["M", "N.real"], "args[0].shape[1]: 'Attribute' is not allowed"),
    (("args", 0, "fill"), "gaussian", "args[0].fill: unknown fill rule 'gaussian'"),
    (("args", 0, "fill"), "uniform(lo, 1)", "args[0].fill: fill parameters must be numbers"),
    (("args", 0, "fill"), "randint(0, 5)",
     "args[0].fill: randint(low, high) needs an integer buffer"),
    (("args", 0, "fill"), "peaked(14.5, 0)",
     "args[0].fill: peaked(height, share) needs a share of the elements in (0, 1]"),
    (("args", 0, "fill"), "peaked(14.5)", "args[0].fill: peaked takes 2..3 parameters, got 1"),
    (("args", 0, "fill"), "peaked(14.5, 0.1, -1)",
     "args[0].fill: peaked(height, share, spread) needs a spread"),
    (("args", 1, "fill"), "zeros", "args[1].fill: an out buffer is poisoned"),
    (("args", 1, "name"), "A", "args[1].name: duplicate argument name 'A'"),
    (("args", 1, "name"), "in", "args[1].name: 'in' is a Python keyword"),
    (("args", 2, "value"), DELETE, "args[2].value: a scalar needs a value"),
    (("args", 2, "buffer"), "float32", "args[2]: 'M' needs exactly one of"),
    (("args", 3, "colour"), "red", "args[3].colour: unknown field"),
    (("sizes", "M", "default"), 0, "sizes.M.default: 0 must be a positive whole number"),
    (("sizes", "M", "default"), -3, "sizes.M.default: -3 must be a positive whole number"),
    (("sizes", "M", "default"), "big", "sizes.M.default: 'big' must be a positive whole number"),
    (("sizes", "ceil"), 4, "sizes.ceil: 'ceil' is a function name"),
    (("sizes", "N"), {"defualt": 3}, "sizes.N: must be a number or {default: N, sanitize: n}"),
    (("reference", "C"), "A @ Z", "reference.C: unknown name 'Z'"),
    (("reference", "C"), "A.sum()", "reference.C: 'Attribute' is not allowed"),
    (("reference",), {"A": "A"}, "reference.A: 'A' is not an out or inout buffer"),
    (("reference",), {}, "reference: output 'C' has no reference;"),
    (("tolerance",), 5, "tolerance: 5 must be a relative error between 0 and 1"),
    (("tolerance",), "tight", "tolerance: unknown size 'tight' (known: M, N)"),
    (("tolerance",), {"rtol": 1e-5, "atol": -1},
     "tolerance.atol: -1 must be an absolute error of 0 or more"),
    (("tolerance",), {"rtol": 1e-5, "slack": 2},
     "tolerance.slack: a tolerance is a number (rtol) or a mapping"),
    (("tolerance",), {"metric": "normwise", "rtol": 1e-5, "atol": 1e-7},
     "tolerance.atol: the normwise metric has no atol"),
    (("tolerance",), {"metric": "maxnorm", "rtol": 1e-5},
     "tolerance.metric: 'maxnorm' must be elementwise"),
    (("tolerance",), {"atol": "1e-7 * sqrt(Q)"}, "tolerance.atol: unknown size 'Q'"),
    (("work",), {"flops": "M * N", "time": 3}, "work: must be a mapping"),
    (("work", "bytes"), "4 * Q", "work.bytes: unknown size 'Q'"),
    (("checks",), [{"M": 0}], "checks[0].M: 0 must be a positive whole number"),
    (("checks",), [{"Z": 3}], "checks[0].Z: unknown size"),
    (("checks",), [{"M": 3, "fill": {"C": "normal(0, 3)"}}],
     "checks[0].fill.C: not an input buffer (inputs: A)"),
    (("checks",), [{"M": 3, "fill": {"A": "gaussian"}}],
     "checks[0].fill.A: unknown fill rule 'gaussian'"),
    (("checks",), [{"M": 3, "fill": "normal"}],
     "checks[0].fill: must map input buffers to fill rules"),
    (("entry",), "not-an-ident",
     "entry: 'not-an-ident' is not a kernel's name as the source writes it"),
    (("entry",), "k<float", "entry: 'k<float' is not a kernel's name"),
    (("entry",), "k<a>>", "entry: 'k<a>>' has template arguments whose < and > do not pair up"),
    (("entry",), "k" * 100_000,
     "entry: a name of 100,000 characters; a kernel's name has at most 1,024"),
    (("work", "bytes"), "4 * 9 ** 9 ** 9",
     "work.bytes: exponent must be a whole number from 0 to 64"),
    (("source",), "missing.cu", "source: missing.cu does not exist"),
    (("defines",), {"TILE": "3 + 4"}, "defines.TILE: '3 + 4' must be a number or an identifier"),
    (("nvcc_flags",), "-O3", "nvcc_flags: must be a list of nvcc options"),
    (("nvcc_flags",), ["O3"], "nvcc_flags[0]: 'O3' is not allowed"),
    # A spec is data: nothing that runs a program, writes a file or reads one outside its folder.
    (("nvcc_flags",), ["-ccbin=/tmp/evil.sh"],
     "nvcc_flags[0]: '-ccbin=/tmp/evil.sh' is not allowed"),
    (("nvcc_flags",), ["-O3", "-MF"], "nvcc_flags[1]: '-MF' is not allowed"),
    (("nvcc_flags",), ["--keep-dir=/tmp"],
     "is not allowed (a spec may change code generation only)"),
    (("nvcc_flags",), ["--pre-include=/etc/passwd"],
     "nvcc_flags[0]: '--pre-include=/etc/passwd' is not allowed"),
    (("nvcc_flags",), ["-I/usr/include"], "an include directory must be inside the spec's folder"),
    (("nvcc_flags",), ["-I../.."], "an include directory must be inside the spec's folder"),
    (("nvcc_flags",), ["-DX=$(rm -rf ~)"], "holds '$', which a shell would act on"),
    (("colour",), "red", "colour: unknown field"),
]


@pytest.mark.parametrize("path, value, message", INVALID,
                         ids=[m.split(":")[0] + "-" + str(i)
                              for i, (_, _, m) in enumerate(INVALID)])
def test_invalid_spec_names_file_and_field(tmp_path, path, value, message):
    spec_path = write(tmp_path, mutate(path, value))
    with pytest.raises(SpecError) as info:
        spec_mod.load(spec_path)
    text = str(info.value)
    assert text.startswith(str(spec_path.name)) or str(spec_path) in text
    assert message in text, text
    assert "\n" not in text


@pytest.mark.parametrize(
    "text, message",
    [
        ("name: [unclosed\n", "not valid YAML: line"),
        ("- just\n- a list\n", "a spec must be a mapping"),
        ("", "a spec must be a mapping"),
        ("!!python/object/apply:os.system ['true']\n", "not valid YAML"),
    ],
)
def test_malformed_files(tmp_path, text, message):
    with pytest.raises(SpecError, match=message):
        spec_mod.load(write(tmp_path, text))


def test_missing_file(tmp_path):
    with pytest.raises(SpecError, match="no such file"):
        spec_mod.load(tmp_path / "nope.yaml")


def test_defines_usable_in_size_arithmetic(tmp_path):
    data = mutate(("defines",), {"TILE": 8})
    data["launch"]["grid"] = ["ceil(N / TILE)"]
    assert spec_mod.load(write(tmp_path, data)).resolve().grid == (4, 1, 1)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"Q": 3}, "unknown size 'Q' (known: M, N)"),
        ({"M": 0}, "size M=0 must be a positive whole number"),
        ({"M": -1}, "size M=-1 must be a positive"),
    ],
)
def test_bad_overrides(tmp_path, overrides, message):
    spec = spec_mod.load(write(tmp_path, BASE))
    with pytest.raises(UsageError, match=re.escape(message)):
        spec.resolve(overrides)


def test_derived_dimension_below_one_is_refused(tmp_path):
    data = mutate(("args", 0, "shape"), ["M - 100", "N"])
    spec = spec_mod.load(write(tmp_path, data))
    with pytest.raises(UsageError, match=r"args\[0\].shape\[0\] = M - 100 = -36"):
        spec.resolve()


@pytest.mark.parametrize(
    "items, expected",
    [(["M=127"], {"M": 127}), (["M=2**10", "N=3"], {"M": 1024, "N": 3})],
)
def test_parse_size_overrides(items, expected):
    assert sweep.parse(items, "size").single_sizes("run") == expected


@pytest.mark.parametrize("item", ["M", "=3", "M=", "M=abc", "M=1.5", "M=__import__('os')"])
def test_parse_size_overrides_refuses(item):
    with pytest.raises(UsageError, match="--size"):
        sweep.parse([item], "size").single_sizes("run")


def test_catalog_find_by_path_and_unknown(tmp_path):
    path = write(tmp_path, BASE, name="mine")
    assert catalog.find(str(path)) == path
    from kprof.errors import UnknownKernelError

    with pytest.raises(UnknownKernelError, match="did you mean tiled_matmul"):
        catalog.find("tiled_matmull")


def test_kprof_path_adds_user_folders(tmp_path, monkeypatch):
    write(tmp_path, BASE, name="users_kernel")
    monkeypatch.setenv("KPROF_PATH", str(tmp_path))
    entry = {e.name: e for e in catalog.entries()}["users_kernel"]
    assert entry.group == "user"
    assert catalog.load("users_kernel").name == "users_kernel"


STEPS = {
    "sizes": {"N": {"default": 64, "sanitize": 8}},
    "args": [
        {"name": "x", "buffer": "float32", "shape": ["N"], "role": "in"},
        {"name": "t", "buffer": "float32", "shape": ["N"], "role": "scratch"},
        {"name": "y", "buffer": "float32", "shape": ["N"], "role": "out"},
        {"name": "n", "scalar": "int32", "value": "N"},
    ],
    "steps": [
        {"entry": "k", "args": ["x", "t", "n"],
         "launch": {"grid": ["ceil(N / 32)"], "block": [32]}},
        {"entry": "k2", "args": ["t", "y", "n"],
         "launch": {"grid": ["ceil(N / 128)"], "block": [128]}},
    ],
    "reference": {"y": "x"},
}


def test_steps_resolve_in_order(tmp_path):
    spec = spec_mod.load(write(tmp_path, STEPS))
    assert spec.entry == "k" and spec.entries == ("k", "k2")
    r = spec.resolve({"N": 1000})
    assert [(s.entry, s.args, s.grid, s.block) for s in r.steps] == [
        ("k", ("x", "t", "n"), (32, 1, 1), (32, 1, 1)),
        ("k2", ("t", "y", "n"), (8, 1, 1), (128, 1, 1))]
    # the first kernel's, for single-launch tools
    assert (r.grid, r.block) == ((32, 1, 1), (32, 1, 1))


def test_single_kernel_specs_have_one_implicit_step(tmp_path):
    r = spec_mod.load(write(tmp_path, BASE)).resolve()
    assert len(r.steps) == 1 and r.steps[0].entry == "k" and r.steps[0].grid == r.grid


@pytest.mark.parametrize(
    "change, field, message",
    [
        (lambda d: d["steps"][1].update(args=["t", "nope"]), "steps[1].args[1]",
         "unknown argument 'nope'"),
        (lambda d: d["steps"][0].pop("launch"), "steps[0].launch",
         "must be a mapping with grid, block"),
        (lambda d: d["steps"][0].update(entry="not valid"), "steps[0].entry",
         "is not a kernel's name"),
        (lambda d: d["steps"][0].update(colour="red"), "steps[0].colour", "unknown field"),
        (lambda d: d.update(launch={"grid": [1], "block": [1]}), "launch",
         "remove the top-level one"),
        (lambda d: d.update(steps=[]), "steps", "must be a list of launches"),
        (lambda d: d["steps"].insert(0,
                                     {"cublas_sgemm": {"A": "x", "B": "x", "C": "y", "M": "n",
                                                       "N": "n"}}),
         "steps[0].cublas_sgemm", "give exactly A, B, C"),
        (lambda d: d["steps"].insert(0,
                                     {"cublas_sgemm": {"A": "x", "B": "x", "C": "n", "M": "n",
                                                       "N": "n", "K": "n"}}),
         "steps[0].cublas_sgemm.C", "'n' must name a float32 buffer"),
        (lambda d: d.update(steps=[{"cublas_sgemm": {"A": "x", "B": "x", "C": "y", "M": "n",
                                                     "N": "n", "K": "n"}}]),
         "steps", "at least one step must launch a kernel"),
    ],
)
def test_bad_steps_name_the_field(tmp_path, change, field, message):
    data = copy.deepcopy(STEPS)
    change(data)
    with pytest.raises(SpecError) as err:
        spec_mod.load(write(tmp_path, data))
    assert f": {field}:" in str(err.value) and message in str(err.value)


def test_a_cublas_step_resolves_without_launch_dimensions(tmp_path):
    data = copy.deepcopy(STEPS)
    data["steps"].insert(0,
                         {"cublas_sgemm": {"A": "x", "B": "x", "C": "t", "M": "n", "N": "n",
                                           "K": "n"}})
    r = spec_mod.load(write(tmp_path, data)).resolve()
    assert r.steps[0].entry == "cublas_sgemm" and r.steps[0].args == ("x", "x", "t", "n", "n", "n")
    assert r.grid == (2, 1, 1)  # the first kernel of the source


def test_code_generation_flags_are_allowed(tmp_path):
    flags = ["-O3", "-maxrregcount=128", "--use_fast_math", "-lineinfo", "-DTILE=32", "-UX", "-I.",
             "-Iinclude", "-Xptxas=-v", "--ftz=true", "-std=c++17"]
    (tmp_path / "include").mkdir()
    folder = tmp_path.resolve()  # include folders are kept absolute: nvcc may run from any folder
    expected = tuple(f"-I{folder}" if f == "-I." else f"-I{folder / 'include'}" if f == "-Iinclude"
                     else f for f in flags)
    assert spec_mod.load(write(tmp_path, mutate(("nvcc_flags",), flags))).nvcc_flags == expected


def test_aliases_and_huge_specs_are_refused_fast(tmp_path):
    """The "billion laughs" shape: nine levels of nine aliases, under 1 KB."""
    import time

    lol = 'x: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "k.yaml").write_text(lol)
    start = time.monotonic()
    with pytest.raises(SpecError, match="line 2: YAML aliases"):
        spec_mod.load(tmp_path / "k.yaml")
    assert time.monotonic() - start < 2
    (tmp_path / "big.yaml").write_text("description: " + "x" * 300_000 + "\n")
    with pytest.raises(SpecError, match="300,014 bytes; kprof reads at most 262,144"):
        spec_mod.load(tmp_path / "big.yaml")


def test_error_messages_quote_a_cut_value(tmp_path):
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "k.yaml").write_text("name: " + "n-" * 5000 + "\n")
    with pytest.raises(SpecError) as info:
        spec_mod.load(tmp_path / "k.yaml")
    assert len(str(info.value)) < 300 and "..." in str(info.value)


TMA = """entry: k
sizes: {R: 37, C: 100}
args:
  - {name: x, buffer: float32, shape: [R, C], role: in}
  - {name: tx, tensormap: x, box: [8, 32], swizzle: 128}
  - {name: y, buffer: float32, shape: [R, C], role: out}
launch: {grid: [1], block: [32]}
reference: {y: x}
"""


@pytest.mark.parametrize("old, new, message", [
    ("tensormap: x,", "tensormap: z,",
     "args[1].tensormap: 'z' is not a buffer argument (buffers: x, y)"),
    ("box: [8, 32]", "box: [8]", "args[1].box: has 1 dimensions; x has 2 (its shape)"),
    ("box: [8, 32]", "box: 8", "args[1].box: must be a list of 1 to 5 size expressions"),
    ("swizzle: 128", "swizzle: 100", "args[1].swizzle: 100 must be one of 0, 32, 64, 128"),
    ("swizzle: 128}", "swizzle: 128, fill: zeros}",
     "args[1].fill: unknown field (tensor map fields"),
    ("{name: tx, tensormap: x,", "{name: tx, tensormap: x, buffer: float32,",
     "'tx' needs exactly one of"),
    ("box: [8, 32]", "box: [8, Q]", "args[1].box[1]: unknown size 'Q'"),
])
def test_a_bad_tensor_map_is_refused_at_load_naming_its_field(tmp_path, old, new, message):
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k() {}\n')
    (tmp_path / "k.yaml").write_text(TMA.replace(old, new))
    with pytest.raises(SpecError, match=re.escape(message)):
        spec_mod.load(tmp_path / "k.yaml")


@pytest.mark.parametrize("old, new, sizes, message", [
    ("box: [8, 32]", "box: [8, 300]", {}, "tensor map tx: box[1] = 300; TMA takes at most 256"),
    ("box: [8, 32]", "box: [8, 3]", {},
     "its box's rows are 12 bytes (3 x float32); TMA needs a multiple of 16"),
    ("swizzle: 128", "swizzle: 64", {},
     "its box's rows are 128 bytes, more than its 64-byte swizzle; make box[1] at most 16"),
    ("", "", {"C": 99},
     "one step of x's dimension 0 is 396 bytes at R=37, C=99; TMA needs a multiple of 16"),
])
def test_a_tensor_map_the_driver_would_refuse_is_refused_at_resolve_with_the_rule(tmp_path, old, new, sizes, message):
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k() {}\n')
    (tmp_path / "k.yaml").write_text(TMA.replace(old, new) if old else TMA)
    spec = spec_mod.load(tmp_path / "k.yaml")
    with pytest.raises(UsageError, match=re.escape(message)):
        spec.resolve(sizes)


def test_a_tensor_map_resolves_and_travels_to_the_child(tmp_path):
    from kprof.launch import job as job_mod
    from kprof.launch.job import RunMode

    (tmp_path / "k.cu").write_text('extern "C" __global__ void k() {}\n')
    (tmp_path / "k.yaml").write_text(TMA)
    resolved = spec_mod.load(tmp_path / "k.yaml").resolve({"R": 5, "C": 64})
    (tm,) = resolved.tensormaps
    assert ((tm.dtype, tm.shape, tm.box, tm.strides, tm.arg.swizzle) == ("float32", (5, 64), (8, 32), (256,), 128))
    job = job_mod.Job(job_mod.target_of(resolved, tmp_path / "k.cubin"), RunMode())
    assert job_mod.from_json(job.to_json()).target.tensormaps == (tm,)


def test_a_spec_read_again_unchanged_is_not_parsed_again_and_a_change_is(tmp_path, monkeypatch):
    """kprof.spec.loader keeps what it loaded by path and text, with a digest of the files the spec
    names: the same text is not parsed twice; a changed spec, or a changed kernel source it names,
    is."""
    import yaml

    from kprof.spec import loader

    src = catalog.find("vector_add")
    (tmp_path / "vector_add.cu").write_text((src.parent / "vector_add.cu").read_text())
    (tmp_path / "vector_add.yaml").write_text(src.read_text())
    first = loader.load(tmp_path / "vector_add.yaml")
    parsed = []
    real = yaml.safe_load
    monkeypatch.setattr(yaml, "safe_load", lambda text: parsed.append(1) or real(text))
    assert loader.load(tmp_path / "vector_add.yaml") is first and not parsed
    (tmp_path / "vector_add.cu").write_text("// changed\n" + (src.parent / "vector_add.cu").read_text())
    assert loader.load(tmp_path / "vector_add.yaml") is not first and parsed == [1]
    (tmp_path / "vector_add.yaml").write_text(src.read_text() + "\n# a comment\n")
    loader.load(tmp_path / "vector_add.yaml")
    assert parsed == [1, 1]


@pytest.mark.parametrize("tolerance", ["1" + "0" * 400, "{rtol: 1e-6, atol: 1" + "0" * 400 + "}"],
                         ids=["rtol", "atol"])
def test_a_tolerance_too_large_for_a_float_is_refused_at_load_and_kprof_list_lists_the_rest(tmp_path, monkeypatch,
                                                                                         tolerance):
    """Issue 79: an integer of 401 digits passed the range check (Python compares it exactly) and
    overflowed when made a float at each size (exit 70); ``kprof list`` died on the one spec."""
    from kprof.commands import cli
    from kprof.errors import SpecError

    source = (catalog.load("vector_add").source).read_text()
    (tmp_path / "huge_tol.cu").write_text(source)
    text = (Path(catalog.load("vector_add").source).with_suffix(".yaml")).read_text()
    text = re.sub(r"^tolerance:.*$", f"tolerance: {tolerance}", text, flags=re.M)
    (tmp_path / "huge_tol.yaml").write_text(text.replace("entry: vector_add", "entry: vector_add"))
    with pytest.raises(SpecError, match="tolerance"):
        catalog.load(str(tmp_path / "huge_tol.yaml"))
    monkeypatch.setenv("KPROF_PATH", str(tmp_path))
    listed = {r.name: r.description for r in catalog.listing(None)}
    assert listed["huge_tol"].startswith("INVALID SPEC") and "vector_add" in listed
    assert cli.main(["list"]) == 0
