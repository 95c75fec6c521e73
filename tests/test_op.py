"""kprof.load without a GPU: argument binding, size inference, checks, output allocation and the
launches an Op makes, with a fake framework and arrays that expose __cuda_array_interface__."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from kprof import op
from kprof.child import framework
from kprof.commands import api
from kprof.errors import UsageError
from kprof.spec import catalog

DATA = Path(__file__).parent / "data" / "kernels"
_ptrs = itertools.count(0x7F0000000000, 0x100000)


class FakeTensor:
    """A framework tensor: shape, dtype name, a device pointer, a device, contiguity."""

    def __init__(self, shape, dtype="float32", device=0, contiguous=True):
        self.shape, self.dtype, self.device, self.contiguous = tuple(shape), dtype, device, contiguous
        self.ptr = next(_ptrs)


class FakeFramework(framework.Framework):
    name = "fake"

    def __init__(self):
        self.allocated = []

    def matches(self, obj):
        return isinstance(obj, FakeTensor)

    def info(self, obj):
        return framework.ArrayInfo(obj.ptr, obj.shape, obj.dtype, obj.contiguous, obj.device,
                                   self.name)

    def alloc(self, shape, dtype, like, zero=False):
        t = FakeTensor(shape, dtype, like.device)
        t.zeroed = zero
        self.allocated.append(t)
        return t

    def stream(self, like):
        return 7


class Interface:
    """Only __cuda_array_interface__, as Numba's device arrays have it."""

    def __init__(self, shape, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr,
                                         "data": (next(_ptrs), False),
                                         "strides": strides, "version": 3}


@pytest.fixture
def fake(monkeypatch):
    fake_framework = FakeFramework()
    monkeypatch.setattr(framework, "ADAPTERS", [fake_framework, *framework.ADAPTERS])
    return fake_framework


def make(name, **kw):
    launches, loaded = [], []

    def functions(image, entry, device):
        loaded.append((entry, device))
        return f"func:{entry}"

    def launch(func, grid, block, smem, args, stream):
        launches.append((func, tuple(grid), tuple(block), smem, list(args), stream))

    spec = catalog.load(name)
    cubin = Path(__file__)  # any readable file: the fake loader never parses it
    return op.Op(spec, cubin, functions=functions, launch=launch, **kw), launches, loaded


def test_sizes_come_from_shapes_outputs_are_allocated_and_the_launch_is_the_specs(fake):
    rms, launches, loaded = make("rmsnorm_onepass")
    x, w = FakeTensor((6, 300)), FakeTensor((300,))
    y = rms(x, w)
    assert (isinstance(y, FakeTensor) and y.shape == (6, 300) and y.dtype == "float32"
            and fake.allocated == [y])
    ((func, grid, block, smem, args, stream),) = launches
    # the block sized to the 300-element row (FIT 1): 64 threads of 8 elements
    assert (func, grid, block, smem, stream) == ("func:rmsnorm_onepass", (6, 1, 1), (64, 1, 1), 0,
                                                 7)
    assert args[:3] == [("ptr", x.ptr), ("ptr", w.ptr), ("ptr", y.ptr)]
    assert args[3:5] == [("int32", 6), ("int32", 300)] and args[5][0] == "float32"
    rms(FakeTensor((6, 300)), FakeTensor((300,)))
    assert len(rms._plans) == 1 and loaded == [("rmsnorm_onepass", 0)], "plan and function cached per shape"
    rms(w=FakeTensor((9,)), x=FakeTensor((2, 9)))
    assert len(rms._plans) == 2 and launches[-1][1] == (2, 1, 1)


@pytest.mark.parametrize("x, w, message", [
    (FakeTensor((6, 300), "float16"), FakeTensor((300,)),
     "rmsnorm_onepass: x is float16; the spec wants float32"),
    (FakeTensor((6, 300)), FakeTensor((128,)),
     "w.shape[0] = 128 but x.shape[1] = 300, and both are C"),
    (FakeTensor((6, 300, 1)), FakeTensor((300,)),
     "x has 3 dimension(s) [6, 300, 1]; the spec gives 2: [R, C]"),
    (FakeTensor((6, 300), contiguous=False), FakeTensor((300,)), "x is not contiguous"),
    (FakeTensor((6, 300), device=-1), FakeTensor((300,), device=-1), "argument x is not on a GPU"),
    (FakeTensor((6, 300), device=0), FakeTensor((300,), device=1), "on different GPUs ([0, 1])"),
    ([1.0, 2.0], FakeTensor((300,)), "argument x: a list is not a GPU array"),
])
def test_a_wrong_argument_is_one_line_naming_it(fake, x, w, message):
    rms, launches, _ = make("rmsnorm_onepass")
    with pytest.raises(UsageError) as info:
        rms(x, w)
    assert message in str(info.value) and "\n" not in str(info.value) and not launches


def test_an_accumulator_the_spec_zeroes_is_allocated_zeroed_when_not_given(fake):
    total, launches, _ = make("reduce_sum")
    x = FakeTensor((4096,))
    out = total(x)
    assert (out.shape == (1,) and getattr(out, "zeroed", False)
            and launches[0][4][:2] == [("ptr", x.ptr), ("ptr", out.ptr)])
    mine = FakeTensor((1,))
    assert total(x, mine) is mine, "given, it is used (and accumulated into) as it is"


def test_binding_errors(fake):
    rms, _, _ = make("rmsnorm_onepass")
    with pytest.raises(UsageError, match="missing input w"):
        rms(FakeTensor((6, 300)))
    with pytest.raises(UsageError, match="takes 2 input"):
        rms(FakeTensor((6, 300)), FakeTensor((300,)), FakeTensor((1,)))
    with pytest.raises(UsageError, match="no argument named 'z'"):
        rms(FakeTensor((6, 300)), FakeTensor((300,)), z=1)
    with pytest.raises(UsageError, match="x given twice"):
        rms(FakeTensor((6, 300)), FakeTensor((300,)), x=FakeTensor((6, 300)))


def test_out_is_written_into_and_checked(fake):
    rms, launches, _ = make("rmsnorm_onepass")
    x, w, y = FakeTensor((4, 64)), FakeTensor((64,)), FakeTensor((4, 64))
    assert rms(x, w, out=y) is y and launches[0][4][2] == ("ptr", y.ptr) and not fake.allocated
    with pytest.raises(UsageError,
                       match="out y has shape \\[4, 65\\]; at these sizes the spec wants \\[4, "
                             "64\\]"):
        rms(x, w, out=FakeTensor((4, 65)))


def test_bare_interface_arrays_need_out_and_are_read_from_the_interface():
    rms, launches, _ = make("rmsnorm_onepass")
    x, w, y = Interface((3, 32)), Interface((32,)), Interface((3, 32))
    assert rms(x, w, out=y, stream=5) is y
    assert launches[0][5] == 5 and launches[0][4][0] == ("ptr",
                                                         x.__cuda_array_interface__["data"][0])
    with pytest.raises(UsageError, match="pass out="):
        rms(x, w)
    with pytest.raises(UsageError, match="x is not contiguous"):
        rms(Interface((3, 32), strides=(4, 12)), w, out=y)
    with pytest.raises(UsageError, match="x is float64"):
        rms(Interface((3, 32), "<f8"), w, out=y)


def test_a_multi_kernel_spec_launches_every_step_with_framework_scratch(fake, monkeypatch):
    monkeypatch.setenv("KPROF_PATH", str(DATA))
    two, launches, _ = make("two_steps")
    y = two(FakeTensor((1000,)))
    t = next(a for a in fake.allocated if a is not y)
    assert [(f, g) for f, g, *_ in launches] == [("func:twice", (8, 1, 1)),
                                                 ("func:plus_one", (4, 1, 1))]
    assert launches[0][4][1] == ("ptr", t.ptr) and launches[1][4][0] == ("ptr", t.ptr), "the scratch joins the steps"


def test_a_framework_stream_object_and_fixed_sizes(fake):
    class Stream:
        cuda_stream = 0xABC

    rms, launches, _ = make("rmsnorm_onepass")
    rms(FakeTensor((2, 8)), FakeTensor((8,)), stream=Stream())
    assert launches[0][5] == 0xABC


def test_a_cublas_step_is_refused_at_load(fake):
    spec = catalog.load("linear_bias_relu_unfused")
    with pytest.raises(UsageError, match="cuBLAS step"):
        op.Op(spec, Path(__file__), functions=lambda *a: None, launch=lambda *a: None)


def test_load_applies_defines_and_builds_through_the_cache(monkeypatch):
    from kprof.build import build

    seen = {}

    class Built:
        cubin = Path(__file__)

    def fake_build(spec, arch=None, **kw):
        seen["defines"], seen["arch"] = dict(spec.defines), arch
        return Built()

    monkeypatch.setattr(build, "build", fake_build)
    rms = api.load("rmsnorm_onepass", arch="sm_90", BLOCK=256)
    assert seen == {"defines": {"BLOCK": "256", "PER": "8", "VEC": "1", "FIT": "1", "WROWS": "0"},
                    "arch": "sm_90"}
    assert repr(rms) == "<kprof op rmsnorm_onepass(x, w) -> y>"
    with pytest.raises(UsageError, match="unknown parameter 'TILE'"):
        api.load("rmsnorm_onepass", TILE=4)


def test_a_tensor_map_argument_is_refused_at_load(fake):
    from kprof import spec as spec_mod

    spec = spec_mod.load(Path(__file__).parent / "data" / "kernels" / "tma_tile.yaml")
    with pytest.raises(UsageError,
                       match=r"tma_tile: a tensor map argument \(tx\) cannot run through "
                             r"kprof.load yet"):
        op.Op(spec, Path(__file__), functions=lambda *a: None, launch=lambda *a: None)


def test_a_tensor_map_is_packed_by_value_at_a_64_byte_aligned_address():
    """cuLaunchKernel reads the parameter's 128 bytes through its slot, as CUtensorMap (alignas 64)
    lies."""
    import ctypes

    from kprof.child.device import ArgPack

    blob = bytes(range(128))
    pack = ArgPack([("buf", "x"), ("tensormap", blob), ("int32", 3)])
    slots = (ctypes.c_void_p * 3).from_address(pack.address)
    assert slots[1] % 64 == 0 and ctypes.string_at(slots[1], 128) == blob
    assert list(pack)[1] == ("tensormap", blob) and ctypes.c_int32.from_address(slots[2]).value == 3


def test_the_arguments_are_packed_once_and_each_call_writes_only_the_pointers():
    import ctypes

    from kprof.child.device import ArgPack

    pack = ArgPack([("buf", "x"), ("int32", 7), ("float32", 0.5), ("buf", "y"),
                    ("float16", 0x3C00)])
    pack.fill({"x": 0x7F0000001000, "y": 0x7F0000002000})
    assert list(pack) == [("ptr", 0x7F0000001000), ("int32", 7), ("float32", 0.5),
                          ("ptr", 0x7F0000002000), ("float16", 0x3C00)]
    slots = (ctypes.c_void_p * 5).from_address(pack.address)  # what cuLaunchKernel reads: void*[5]
    assert ctypes.c_uint64.from_address(slots[0]).value == 0x7F0000001000
    assert (ctypes.c_int32.from_address(slots[1]).value == 7
            and ctypes.c_float.from_address(slots[2]).value == 0.5)
    pack.fill({"x": 1, "y": 2})
    assert ctypes.c_uint64.from_address(slots[3]).value == 2 and next(iter(pack)) == ("ptr", 1)


def test_a_plan_is_checked_once_and_reused_while_the_arrays_keep_their_shape(fake):
    rms, launches, _ = make("rmsnorm_onepass")
    x, w, y = FakeTensor((4, 64)), FakeTensor((64,)), FakeTensor((4, 64))
    for _ in range(3):
        rms(x, w, out=y)
    x2, y2 = FakeTensor((4, 64)), FakeTensor((4, 64))
    rms(x2, w, out=y2)
    assert (len(rms._plans) == 1
            and [a[4][0] for a in launches] == [("ptr", x.ptr)] * 3 + [("ptr", x2.ptr)])
    assert launches[-1][4][2] == ("ptr", y2.ptr)
    with pytest.raises(UsageError, match="out y is float16; the spec wants float32"):
        rms(x, w, out=FakeTensor((4, 64), "float16"))


def test_a_one_off_launch_packs_fixed_pointers_the_same_way():
    from kprof.child.device import ArgPack

    assert (list(ArgPack([("ptr", 0x7F0000003000), ("int64", 9)])) == [("ptr", 0x7F0000003000), ("int64", 9)])


def _replay(call, launches):
    """The launches of a call with new arrays, each pointer written as which array it is."""
    del launches[:]
    arrays, result = call()
    results = result if isinstance(result, tuple) else (result,)
    named = {a.ptr: f"array{i}" for i, a in enumerate(arrays)} | {r.ptr: f"result{i}" for i, r in enumerate(results)}
    return [(f, g, b, s, [(k, named.get(v, "scratch") if k == "ptr" else v) for k, v in args], st)
            for f, g, b, s, args, st in launches]


@pytest.mark.parametrize("name, shapes, with_out", [
    ("rmsnorm_onepass", [(6, 300), (300,)], False),
    ("rmsnorm_onepass", [(6, 300), (300,)], True),
    ("reduce_sum", [(4096,)], False),  # a zeroed accumulator allocated
    ("two_steps", [(1000,)], False),  # two steps and a scratch buffer
])
def test_a_repeated_call_launches_exactly_what_the_checked_call_launched(fake, monkeypatch, name, shapes, with_out):
    monkeypatch.setenv("KPROF_PATH", str(DATA))
    fn, launches, _ = make(name)

    def call():
        arrays = [FakeTensor(s) for s in shapes]
        if with_out:
            out = FakeTensor(shapes[0])
            return [*arrays, out], fn(*arrays, out=out)
        return arrays, fn(*arrays)

    checked = _replay(call, launches)
    assert len(fn._fast) == 1, "the checked call is remembered"
    repeated = _replay(call, launches)
    assert repeated == checked and _replay(call, launches) == checked and len(fn._plans) == 1
    assert any(a.startswith("array") for *_, args, _ in checked for _, a in args), "the pointers are the new arrays'"


@pytest.mark.parametrize("x, w, message", [
    (FakeTensor((6, 300), "float16"), FakeTensor((300,)), "x is float16"),
    (FakeTensor((6, 300)), FakeTensor((128,)), "w.shape[0] = 128 but x.shape[1] = 300"),
    (FakeTensor((6, 300), contiguous=False), FakeTensor((300,)), "x is not contiguous"),
    (FakeTensor((6, 300), device=-1), FakeTensor((300,), device=-1), "argument x is not on a GPU"),
    (FakeTensor((6, 300), device=0), FakeTensor((300,), device=1), "on different GPUs ([0, 1])"),
    (FakeTensor((6, 300)), FakeTensor((300,), "int32"), "w is int32"),
])
def test_after_a_call_that_passed_a_wrong_argument_is_still_refused(fake, x, w, message):
    rms, launches, _ = make("rmsnorm_onepass")
    rms(FakeTensor((6, 300)), FakeTensor((300,)))
    rms(FakeTensor((6, 300)), FakeTensor((300,)), out=FakeTensor((6, 300)))
    assert len(rms._fast) == 2
    del launches[:]
    with pytest.raises(UsageError) as info:
        rms(x, w)
    assert message in str(info.value) and not launches
    with pytest.raises(UsageError, match="out y is float16"):
        rms(FakeTensor((6, 300)), FakeTensor((300,)), out=FakeTensor((6, 300), "float16"))


def test_only_a_call_of_positional_arrays_of_one_framework_is_remembered(fake):
    rms, launches, _ = make("rmsnorm_onepass")
    rms(w=FakeTensor((300,)), x=FakeTensor((6, 300)))
    rms(FakeTensor((6, 300)), FakeTensor((300,)), sizes={"R": 6})
    # two frameworks: the first allocates, nothing is remembered
    rms(FakeTensor((6, 300)), Interface((300,)))
    assert not rms._fast and len(launches) == 3
    rms(Interface((6, 300)), Interface((300,)), out=Interface((6, 300)))
    assert len(rms._fast) == 1, "bare interface arrays have a key too (read from the interface)"


def test_an_array_not_16_byte_aligned_is_refused_in_one_line_on_every_path(fake):
    rms, launches, _ = make("rmsnorm_onepass")
    x, w, y = FakeTensor((4, 64)), FakeTensor((64,)), FakeTensor((4, 64))
    rms(x, w, out=y)
    rms(x, w)
    assert len(rms._fast) == 2
    n = len(launches)
    shifted = FakeTensor((4, 64))
    shifted.ptr += 4  # a float32 view one element in
    for call, name in [(lambda: rms(shifted, w), "x"), (lambda: rms(x, w, out=shifted), "out y")]:
        with pytest.raises(UsageError) as info:
            call()
        assert (f"rmsnorm_onepass: {name} starts at an address that is not a multiple of 16 bytes" in str(info.value))
    assert len(launches) == n, "nothing launched"


def test_a_tensor_map_is_encoded_innermost_first_as_the_driver_takes_it():
    """encode_tensor_map's cuTensorMapEncodeTiled call, against a stand-in driver that records it:
    the shape and box reversed (innermost first), the row strides in bytes, unit element strides,
    the swizzle and data type by name, and the 128 bytes it returns."""
    import ctypes
    from types import SimpleNamespace

    from kprof.child.device import encode_tensor_map
    from kprof.spec import ResolvedTensorMap, TensorMapArg

    calls, blob = [], ctypes.create_string_buffer(bytes(range(128)), 128)

    def enum(prefix):
        return SimpleNamespace(**{f"{prefix}{n}": f"{prefix}{n}"
                                  for n in ("NONE", "32B", "64B", "128B", "L2_128B", "BFLOAT16",
                                            "FLOAT32")})

    drv = SimpleNamespace(
        CUtensorMapDataType=enum("CU_TENSOR_MAP_DATA_TYPE_"),
        CUtensorMapInterleave=enum("CU_TENSOR_MAP_INTERLEAVE_"),
        CUtensorMapSwizzle=enum("CU_TENSOR_MAP_SWIZZLE_"),
        CUtensorMapL2promotion=enum("CU_TENSOR_MAP_L2_PROMOTION_"),
        CUtensorMapFloatOOBfill=SimpleNamespace(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE="oob-none"),
        cuuint64_t=lambda v: ("u64", v), cuuint32_t=lambda v: ("u32", v),
        cuTensorMapEncodeTiled=lambda *a: calls.append(a)
        or (0, SimpleNamespace(getPtr=lambda: ctypes.addressof(blob))))
    tm = ResolvedTensorMap(TensorMapArg("ta", "A", ("BM", "BK"), 128), "bfloat16", (4096, 1000),
                           (128, 64))
    assert encode_tensor_map(drv, 0x7F0000000100, tm) == bytes(range(128))
    (args,) = calls
    assert args == ("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 2, 0x7F0000000100,
                    [("u64", 1000), ("u64", 4096)],
                    [("u64", 2000)], [("u32", 64), ("u32", 128)], [("u32", 1), ("u32", 1)],
                    "CU_TENSOR_MAP_INTERLEAVE_NONE", "CU_TENSOR_MAP_SWIZZLE_128B",
                    "CU_TENSOR_MAP_L2_PROMOTION_L2_128B", "oob-none")


def test_a_one_dimensional_tensor_map_gives_the_driver_one_stride_it_does_not_read():
    """At rank 1 there are no strides, but cuTensorMapEncodeTiled refuses an empty list
    (CUDA_ERROR_INVALID_VALUE on an H200, driver 580.159.04, scripts/probes/tensormap_rank1.py) and
    encodes with one: the buffer's bytes."""
    from kprof.spec import ResolvedTensorMap, TensorMapArg

    one = ResolvedTensorMap(TensorMapArg("tx", "x", ("BOX",), 0), "float32", (8192,), (128,))
    assert one.strides == () and one.driver_strides == (8192 * 4,)
    two = ResolvedTensorMap(TensorMapArg("ta", "A", ("BM", "BK"), 128), "bfloat16", (4096, 1000),
                            (128, 64))
    assert two.driver_strides == two.strides == (2000,)


def test_every_tensor_map_dtype_names_a_driver_data_type():
    """encode_tensor_map names the driver's data type by the dtype in capitals: each dtype a spec's
    tensor map may describe has that name in the installed cuda-bindings (importable without a
    GPU)."""
    driver = pytest.importorskip("cuda.bindings.driver")
    from kprof.spec.schema import TENSORMAP_DTYPES

    missing = [d for d in TENSORMAP_DTYPES
               if not hasattr(driver.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{d.upper()}")]
    assert not missing, missing


def test_under_the_nan_watcher_each_call_hands_it_the_outputs_and_inputs(fake, monkeypatch):
    """kprof sanitize --tool nan: the watcher (kprof.hooks.nan_watch, loaded as _kprof_nan_watch)
    sees each call's outputs and inputs by name, on the checked path and the fast one alike; without
    it, nothing is called."""
    import sys
    import types

    seen = []
    watcher = types.SimpleNamespace(launched=lambda kernel, definition, outputs,
                                    inputs: seen.append(
        (kernel, definition.endswith("rmsnorm_onepass.cu"), [n for n, _ in outputs],
         [n for n, _ in inputs])))
    rms, _, _ = make("rmsnorm_onepass")
    rms(FakeTensor((6, 300)), FakeTensor((300,)))
    assert seen == []
    monkeypatch.setitem(sys.modules, "_kprof_nan_watch", watcher)
    x, w = FakeTensor((6, 300)), FakeTensor((300,))
    y = rms(x, w)  # the fast path: a call of the same kind as the first
    rms(x=x, w=w)  # the checked path
    assert seen == [("rmsnorm_onepass", True, ["y"], ["x", "w"])] * 2 and isinstance(y, FakeTensor)
