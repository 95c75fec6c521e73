"""kprof.load on a real GPU: every kernel called from PyTorch and from CuPy on the spec's own random
inputs, compared with the spec's reference by the spec's verdict; streams, refusals,
torch.compile."""

from __future__ import annotations

import numpy as np
import pytest

import kprof
from kprof.child import hostdata, verify
from kprof.errors import UsageError
from kprof.spec import CUBLAS_SGEMM, catalog, pyref, reference

pytestmark = [pytest.mark.gpu]

KERNELS = [e.name for e in catalog.entries() if e.group == "kernel"
           and not any(st.entry == CUBLAS_SGEMM for st in catalog.load(e.name).steps)]


def _inputs_and_expected(name):
    """The spec's inputs at its sanitize sizes (its fills, seed 0) and the float64 reference."""
    spec = catalog.load(name)
    resolved = spec.resolve(spec.preset("sanitize"))
    rng = np.random.default_rng(0)
    inputs = {b.arg.name: hostdata.make_input(b, rng) for b in resolved.buffers
              if b.arg.role in ("in", "inout")}
    env = {**spec.numeric_defines(), **resolved.sizes, **{a.name: v for a, v in resolved.scalars}}
    for b in resolved.buffers:
        if b.arg.name in inputs:
            values = hostdata.decode(b.arg.dtype, inputs[b.arg.name])
            env[b.arg.name] = values.astype(np.int64 if values.dtype.kind in "iu" else np.float64)
    expected = {k: reference.evaluate(e, env) for k, e in spec.reference if not pyref.is_stored(e)}
    # a matmul's abs(A) @ abs(B)
    scales = {k: (e, reference.evaluate(e, env)) for k, e in spec.tolerance.scale}
    return spec, resolved, inputs, expected, scales


def _check(spec, resolved, outputs, expected, scales):
    """The spec's verdict, its tolerance.scale included: kprof run's, on what the framework got
    back."""
    for b in resolved.buffers:
        if b.arg.name in expected and b.arg.name in outputs:
            got = hostdata.decode(b.arg.dtype, outputs[b.arg.name])
            text, scale = scales.get(b.arg.name, (None, None))
            rule = verify.Criterion(rtol=resolved.rtol, atol=resolved.atol, metric=resolved.metric,
                                    dtype=b.arg.dtype, scale_text=text)
            check = verify.compare(b.arg.name, got, expected[b.arg.name], rule, scale=scale)
            assert check.ok, (spec.name, check.message)


def _framework(name, spec):
    """(to_gpu, to_host, synchronize) for one framework, or a skip when it is not installed. kprof
    holds bfloat16 as its 16-bit patterns (uint16): PyTorch views them as bfloat16; CuPy has no
    bfloat16."""
    if name == "torch":
        torch = pytest.importorskip("torch")

        def to_gpu(a, dtype):
            t = torch.from_numpy(a.view(np.int16) if dtype == "bfloat16" else a).cuda()
            return t.view(torch.bfloat16) if dtype == "bfloat16" else t

        def to_host(t, dtype):
            return t.view(torch.int16).cpu().numpy().view(np.uint16) if dtype == "bfloat16" else t.cpu().numpy()

        return to_gpu, to_host, torch.cuda.synchronize
    cupy = pytest.importorskip("cupy")
    if any(b.dtype == "bfloat16" for b in spec.buffers):
        pytest.skip("CuPy has no bfloat16")
    return (lambda a, _: cupy.asarray(a)), (lambda t, _: cupy.asnumpy(t)), \
        (lambda: cupy.cuda.get_current_stream().synchronize())


@pytest.mark.parametrize("framework", ["torch", "cupy"])
@pytest.mark.parametrize("name", KERNELS)
def test_every_kernel_from_a_framework_matches_its_reference(name, framework):
    spec, resolved, inputs, expected, scales = _inputs_and_expected(name)
    to_gpu, to_host, synchronize = _framework(framework, spec)
    if not expected:
        pytest.skip(f"{name}: a Python reference")
    if resolved.tensormaps:  # wgmma_matmul: refused in one line
        first = resolved.tensormaps[0].arg.name
        with pytest.raises(UsageError,
                           match=rf"{name}: a tensor map argument \({first}\) cannot run through "
                                 r"kprof.load"):
            kprof.load(name)
        return
    op = kprof.load(name)
    result = op(*[to_gpu(inputs[b.name], b.dtype) for b in op.inputs])
    synchronize()
    results = result if isinstance(result, tuple) else (result,)
    _check(spec, resolved, {b.name: to_host(r, b.dtype) for b, r in zip(op.outputs, results)},
           expected, scales)


def test_a_call_on_a_side_stream_is_ordered_with_the_work_around_it():
    torch = pytest.importorskip("torch")
    rms = kprof.load("rmsnorm_onepass")
    side = torch.cuda.Stream()
    x = torch.randn(4096, 8192, device="cuda")
    w = torch.rand(8192, device="cuda") + 0.5
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        x.mul_(3.0)  # queued on the side stream before the op: the op must see it
        y = rms(x, w)
    torch.cuda.current_stream().wait_stream(side)
    ref = torch.nn.functional.rms_norm(x, (8192,), w, eps=1e-6)
    torch.testing.assert_close(y, ref, rtol=5e-6, atol=1e-6)


def test_a_wrong_dtype_or_shape_is_refused_in_one_line():
    torch = pytest.importorskip("torch")
    rms = kprof.load("rmsnorm_onepass")
    with pytest.raises(UsageError, match="x is float16; the spec wants float32"):
        rms(torch.zeros(4, 64, device="cuda", dtype=torch.float16), torch.zeros(64, device="cuda"))
    with pytest.raises(UsageError, match="both are C"):
        rms(torch.zeros(4, 64, device="cuda"), torch.zeros(65, device="cuda"))
    with pytest.raises(UsageError, match="not on a GPU"):
        rms(torch.zeros(4, 64), torch.zeros(64))


def test_the_torch_custom_op_runs_under_torch_compile():
    torch = pytest.importorskip("torch")
    rms = kprof.load("rmsnorm_onepass").torch_op("kprof_test::rmsnorm_onepass")

    def block(x, w):
        return rms(x * 2.0, w) + 1.0

    compiled = torch.compile(block, fullgraph=True)
    x, w = torch.randn(64, 1024, device="cuda"), torch.rand(1024, device="cuda") + 0.5
    expected = torch.nn.functional.rms_norm(x * 2.0, (1024,), w, eps=1e-6) + 1.0
    torch.testing.assert_close(compiled(x, w), expected, rtol=5e-6, atol=1e-6)


def test_rmsnorm_and_softmax_in_a_torch_module_match_torch_nn_functional():
    """examples/kprof_in_torch.py: kprof's RMSNorm and softmax inside a torch module, each checked
    against torch.nn.functional in float64 within the spec's own tolerance, and the module as a
    whole against its all-PyTorch twin."""
    import importlib.util
    from pathlib import Path

    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    path = Path(__file__).resolve().parent.parent / "examples" / "kprof_in_torch.py"
    loader = importlib.util.spec_from_file_location("kprof_in_torch", path)
    example = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(example)
    example.main()  # the module against its all-PyTorch twin (asserts)
    block = example.Block(4096).cuda()
    x = torch.randn(512, 4096, device="cuda")
    with torch.no_grad():
        normed = example.rms_norm(x, block.weight)
        logits = block.proj(normed)
        probs = example.softmax(logits)
        want_normed = F.rms_norm(x.double(), (4096,), block.weight.double(), eps=1e-6)
        want_probs = F.softmax(logits.double(), dim=-1)
    for name, got, want in (("rmsnorm_onepass", normed, want_normed),
                            ("softmax_online", probs, want_probs)):
        spec = catalog.load(name)
        resolved = spec.resolve(spec.preset("sanitize"))
        check = verify.compare("y", got.cpu().numpy(), want.cpu().numpy(),
                               verify.Criterion(rtol=resolved.rtol, atol=resolved.atol))
        assert check.ok, (name, check.message)
