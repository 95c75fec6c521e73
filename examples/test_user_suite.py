"""A suite like a kernel project's own: 20 tests of Triton, PyTorch (cuBLAS's GEMMs, a cuDNN convolution)
and CuPy kernels, three with a seeded bug; most of its GPU time is library kernels the user did not write.

    pytest examples/test_user_suite.py                                   # 20 passed: the bugs are invisible
    pytest examples/test_user_suite.py --kprof-sanitize                  # the three fail, each with its finding
    pytest examples/test_user_suite.py --kprof-sanitize --kprof-all-kernels   # the same, racecheck and
                                                                         # synccheck on cuBLAS and cuDNN too

The seeded bugs:
- ``test_triton_scale_unmasked``: a Triton store without its mask writes past the end (memcheck);
- ``test_mean_of_empty``: a mean over ``torch.empty`` reads memory nothing wrote (initcheck);
- ``test_cupy_block_sum_racy``: a CuPy RawKernel without its barrier races in shared memory (racecheck).
"""

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
cp = pytest.importorskip("cupy")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr, MASK_STORE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if MASK_STORE:
        tl.store(y_ptr + offs, x * 2.0, mask=mask)
    else:
        tl.store(y_ptr + offs, x * 2.0)  # BUG: no mask


@triton.jit
def _rms_norm(x_ptr, w_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0)
    rms = tl.sqrt(tl.sum(x * x, axis=0) / cols + eps)
    tl.store(y_ptr + row * cols + offs, x / rms * tl.load(w_ptr + offs, mask=mask), mask=mask)


def _scale_run(masked: bool) -> None:
    n = 1000
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    _scale[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256, MASK_STORE=masked)
    torch.testing.assert_close(y, 2 * x)


def test_triton_scale_masked():
    _scale_run(masked=True)


def test_triton_scale_unmasked():
    _scale_run(masked=False)


@pytest.mark.parametrize("cols", [256, 1000, 4096])
def test_triton_rms_norm(cols):
    x, w = torch.randn(64, cols, device="cuda"), torch.randn(cols, device="cuda")
    y = torch.empty_like(x)
    _rms_norm[(64,)](x, w, y, cols, 1e-6, BLOCK=triton.next_power_of_2(cols))
    torch.testing.assert_close(y, torch.nn.functional.rms_norm(x, (cols,), w, eps=1e-6), rtol=1e-4, atol=1e-4)


def test_mm_2048():
    torch.backends.cuda.matmul.allow_tf32 = False
    a, b = torch.randn(2048, 2048, device="cuda"), torch.randn(2048, 2048, device="cuda")
    c = a @ b
    torch.testing.assert_close(c[:64].double(), (a[:64].double() @ b.double()), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_linear_half(dtype):
    x = torch.randn(512, 1024, device="cuda", dtype=dtype)
    lin = torch.nn.Linear(1024, 1024, device="cuda", dtype=dtype)
    torch.testing.assert_close(lin(x).float(), x.float() @ lin.weight.float().t() + lin.bias.float(), rtol=2e-2, atol=2e-1)


def test_batched_matmul():
    a, b = torch.randn(16, 128, 64, device="cuda"), torch.randn(16, 64, 96, device="cuda")
    torch.testing.assert_close(torch.bmm(a, b).cpu(), torch.bmm(a.cpu(), b.cpu()), rtol=1e-3, atol=1e-3)


def test_conv2d_cudnn():
    x = torch.randn(8, 16, 32, 32, device="cuda")
    conv = torch.nn.Conv2d(16, 32, 3, padding=1, device="cuda")
    got = conv(x)
    want = torch.nn.functional.conv2d(x.cpu(), conv.weight.cpu(), conv.bias.cpu(), padding=1)
    torch.testing.assert_close(got.cpu(), want, rtol=1e-3, atol=1e-3)


def test_mean_of_empty():
    acc = torch.empty(4096, device="cuda")  # BUG: never written (torch.zeros was meant)
    acc[:1024] = 2.0
    assert float(acc[:1024].mean()) == 2.0
    assert acc.mean().numel() == 1  # reads the 3,072 elements nothing wrote


def test_softmax_cross_entropy():
    logits = torch.randn(256, 1000, device="cuda")
    target = torch.randint(0, 1000, (256,), device="cuda")
    loss = torch.nn.functional.cross_entropy(logits, target)
    torch.testing.assert_close(loss.cpu(), torch.nn.functional.cross_entropy(logits.cpu(), target.cpu()), rtol=1e-4, atol=1e-4)


def test_layer_norm_backward():
    x = torch.randn(64, 512, device="cuda", requires_grad=True)
    torch.nn.functional.layer_norm(x, (512,)).square().sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()


def test_sort_and_topk():
    a = torch.randn(10_000, device="cuda")
    assert torch.equal(torch.sort(a).values[-5:].flip(0), torch.topk(a, 5).values)


def test_cumsum():
    a = torch.arange(1000, device="cuda", dtype=torch.int64)
    assert int(a.cumsum(0)[-1]) == 999 * 1000 // 2


_CUPY_SUM = r"""
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int step = blockDim.x / 2; step > 0; step /= 2) {
        if (threadIdx.x < step) s[threadIdx.x] += s[threadIdx.x + step];
#if BARRIER
        __syncthreads();
#endif
    }
    if (threadIdx.x == 0) atomicAdd(out, s[0]);
}
"""


def _cupy_block_sum(barrier: bool) -> float:
    kernel = cp.RawKernel(_CUPY_SUM, "block_sum", options=(f"-DBARRIER={int(barrier)}", "-lineinfo"))
    x = cp.ones(4096, dtype=cp.float32)
    out = cp.zeros(1, dtype=cp.float32)
    kernel((16,), (256,), (x, out, cp.int32(x.size)))
    return float(out[0])


def test_cupy_block_sum():
    assert _cupy_block_sum(barrier=True) == 4096.0


def test_cupy_block_sum_racy():
    assert _cupy_block_sum(barrier=False) > 0  # BUG: no barrier between the steps (racecheck)


def test_cupy_elementwise():
    add = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = 2 * x + y", "axpy")
    x, y = cp.arange(10_000, dtype=cp.float32), cp.ones(10_000, dtype=cp.float32)
    assert float(add(x, y)[-1]) == 2 * 9999 + 1


def test_cupy_reduction():
    x = cp.arange(1, 1001, dtype=cp.float64)
    assert float(x.sum()) == 500_500.0


def test_cupy_matmul():
    a, b = cp.random.rand(256, 256, dtype=cp.float32), cp.random.rand(256, 256, dtype=cp.float32)
    assert cp.allclose(a @ b, cp.asarray(cp.asnumpy(a) @ cp.asnumpy(b)), rtol=1e-4, atol=1e-4)
