"""A kernel project's test suite: 24 tests of PyTorch, Triton and cuda-python kernels, four of them
with a real bug the plain run does not see.

    pytest examples/test_kernel_suite.py                          # 24 passed: the bugs are invisible
    pytest examples/test_kernel_suite.py --kprof-sanitize         # the four fail, each with its finding

The seeded bugs:
- ``test_scale_unmasked``: a Triton store without its mask writes past the end (memcheck);
- ``test_shift_unmasked_load``: a Triton load without its mask reads past the end (memcheck);
- ``test_sum_of_empty``: a sum over ``torch.empty`` reads memory nothing wrote (initcheck);
- ``test_block_sum_racy``: a cuda-python kernel without its barrier races in shared memory (racecheck).
Each memcheck bug stops the CUDA context of its process: the tests after it run again in a new one.
"""

import ctypes
import sys
from pathlib import Path

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


@triton.jit
def _shift(x_ptr, y_ptr, n, BLOCK: tl.constexpr, MASK_LOAD: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if MASK_LOAD:
        x = tl.load(x_ptr + offs + 1, mask=offs + 1 < n, other=0.0)
    else:
        x = tl.load(x_ptr + offs + 1, mask=mask)  # BUG: the last element reads x[n]
    tl.store(y_ptr + offs, x, mask=mask)


@triton.jit
def _add(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


@triton.jit
def _row_softmax(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


def _scale_run(masked: bool) -> None:
    n = 1000
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    _scale[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256, MASK_STORE=masked)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, 2 * x)


def test_scale_masked():
    _scale_run(masked=True)


def test_scale_unmasked():
    _scale_run(masked=False)


def _shift_run(masked: bool) -> None:
    n = 1024
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    _shift[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256, MASK_LOAD=masked)
    torch.cuda.synchronize()
    torch.testing.assert_close(y[:-1], x[1:])


def test_shift_masked():
    _shift_run(masked=True)


def test_shift_unmasked_load():
    _shift_run(masked=False)


@pytest.mark.parametrize("n", [1, 255, 256, 4097, 100_000])
def test_triton_add(n):
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    c = torch.empty_like(a)
    _add[(triton.cdiv(n, 512),)](a, b, c, n, BLOCK=512)
    torch.testing.assert_close(c, a + b)


@pytest.mark.parametrize("cols", [7, 128, 1000])
def test_triton_softmax(cols):
    x = torch.randn(64, cols, device="cuda")
    y = torch.empty_like(x)
    _row_softmax[(64,)](x, y, cols, BLOCK=triton.next_power_of_2(cols))
    torch.testing.assert_close(y, torch.softmax(x, -1))


def test_sum_of_empty():
    acc = torch.empty(4096, device="cuda")  # BUG: never written (torch.zeros was meant)
    acc[:1000] = 1.0
    assert float(acc[:1000].sum()) == 1000.0
    total = acc.sum()  # reads the 3,096 elements nothing wrote
    assert total.numel() == 1


def test_add():
    a, b = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    torch.testing.assert_close((a + b).cpu(), a.cpu() + b.cpu())


def test_sum():
    a = torch.randn(1 << 16, device="cuda", dtype=torch.float64)
    torch.testing.assert_close(a.sum().cpu(), a.cpu().sum())


def test_softmax():
    a = torch.randn(64, 1000, device="cuda")
    torch.testing.assert_close(torch.softmax(a, -1).cpu(), torch.softmax(a.cpu(), -1))


def test_layer_norm():
    a = torch.randn(32, 512, device="cuda")
    got = torch.nn.functional.layer_norm(a, (512,))
    torch.testing.assert_close(got.cpu(), torch.nn.functional.layer_norm(a.cpu(), (512,)), rtol=1e-4, atol=1e-5)


def test_matmul():
    torch.backends.cuda.matmul.allow_tf32 = False
    a, b = torch.randn(256, 128, device="cuda"), torch.randn(128, 64, device="cuda")
    torch.testing.assert_close((a @ b).cpu(), a.cpu() @ b.cpu(), rtol=1e-4, atol=1e-4)


def test_rms_norm():
    a, w = torch.randn(32, 512, device="cuda"), torch.randn(512, device="cuda")
    got = torch.nn.functional.rms_norm(a, (512,), w, eps=1e-6)
    want = a.cpu() * torch.rsqrt(a.cpu().pow(2).mean(-1, keepdim=True) + 1e-6) * w.cpu()
    torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5)


def test_relu():
    a = torch.randn(10_000, device="cuda")
    assert bool((torch.relu(a) >= 0).all())


def test_cumsum():
    a = torch.arange(1000, device="cuda", dtype=torch.int64)
    assert int(a.cumsum(0)[-1]) == 999 * 1000 // 2


def test_transpose_copy():
    a = torch.randn(300, 200, device="cuda")
    torch.testing.assert_close(a.t().contiguous().cpu(), a.cpu().t())


def _block_sum(fixed: bool) -> float:
    """examples/block_sum.cu through cuda-python (NVRTC, the driver API) on torch's tensors."""
    sys.path.insert(0, str(Path(__file__).parent))
    import cuda_python_sum as cps
    from cuda.bindings import driver, nvrtc

    major, minor = torch.cuda.get_device_capability()
    prog = cps.check(nvrtc.nvrtcCreateProgram(cps.SOURCE.read_bytes(), str(cps.SOURCE).encode(), 0, [], []))
    opts = [f"--gpu-architecture=compute_{major}{minor}".encode(), b"-lineinfo", f"-DBARRIER={int(fixed)}".encode()]
    assert int(nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]) == 0
    ptx = b" " * cps.check(nvrtc.nvrtcGetPTXSize(prog))
    cps.check(nvrtc.nvrtcGetPTX(prog, ptx))
    x = torch.ones(4096, device="cuda")  # torch's first tensor makes its context current on this thread
    out = torch.zeros(1, device="cuda")
    module = cps.check(driver.cuModuleLoadData(ptx))
    kernel = cps.check(driver.cuModuleGetFunction(module, b"block_sum"))
    args = [ctypes.c_uint64(x.data_ptr()), ctypes.c_uint64(out.data_ptr()), ctypes.c_int(x.numel())]
    ptrs = (ctypes.c_void_p * 3)(*[ctypes.addressof(a) for a in args])
    stream = torch.cuda.current_stream().cuda_stream
    cps.check(driver.cuLaunchKernel(kernel, 16, 1, 1, 256, 1, 1, 0, stream, ctypes.addressof(ptrs), 0))
    torch.cuda.synchronize()
    return float(out)


def test_block_sum():
    assert _block_sum(fixed=True) == 4096.0


def test_block_sum_racy():
    assert _block_sum(fixed=False) > 0  # BUG: no barrier between the steps (racecheck)
