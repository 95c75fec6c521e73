"""A small kernel test suite, as a project keeps one: ten tests, one of them with a real bug that the
plain test run does not see (a Triton store without its mask writes past the end of the output).

    pytest examples/test_gpu_ops.py                              # 10 passed: the bug is invisible
    pytest examples/test_gpu_ops.py --kprof-sanitize=memcheck    # test_scale_unmasked fails, with the line
"""

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

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


def _run_scale(masked: bool) -> None:
    n = 1000
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    _scale[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256, MASK_STORE=masked)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, 2 * x)


def test_scale_masked():
    _run_scale(masked=True)


def test_scale_unmasked():
    _run_scale(masked=False)


def test_add():
    a, b = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    torch.testing.assert_close((a + b).cpu(), a.cpu() + b.cpu())


def test_sum():
    a = torch.randn(1 << 16, device="cuda", dtype=torch.float64)
    torch.testing.assert_close(a.sum().cpu(), a.cpu().sum())


def test_softmax():
    a = torch.randn(64, 1000, device="cuda")
    torch.testing.assert_close(torch.softmax(a, -1).cpu(), torch.softmax(a.cpu(), -1))


def test_rms_norm():
    a, w = torch.randn(32, 512, device="cuda"), torch.randn(512, device="cuda")
    got = torch.nn.functional.rms_norm(a, (512,), w, eps=1e-6)
    want = a.cpu() * torch.rsqrt(a.cpu().pow(2).mean(-1, keepdim=True) + 1e-6) * w.cpu()
    torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5)


def test_matmul():
    torch.backends.cuda.matmul.allow_tf32 = False
    a, b = torch.randn(256, 128, device="cuda"), torch.randn(128, 64, device="cuda")
    torch.testing.assert_close((a @ b).cpu(), a.cpu() @ b.cpu(), rtol=1e-4, atol=1e-4)


def test_cumsum():
    a = torch.arange(1000, device="cuda", dtype=torch.int64)
    assert int(a.cumsum(0)[-1]) == 999 * 1000 // 2


def test_relu():
    a = torch.randn(10_000, device="cuda")
    assert bool((torch.relu(a) >= 0).all())


def test_transpose_copy():
    a = torch.randn(300, 200, device="cuda")
    torch.testing.assert_close(a.t().contiguous().cpu(), a.cpu().t())
