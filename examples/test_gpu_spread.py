"""Eight small GPU tests that each say which GPU they ran on: under pytest-xdist with
``--kprof-sanitize``, each worker takes its own GPU of the host (CUDA_VISIBLE_DEVICES), so a suite
that is slow under the sanitizers spreads over every GPU.

    pytest examples/test_gpu_spread.py -n 2 --kprof-sanitize=memcheck

With ``KPROF_SPREAD_LOG=FILE`` each test appends one line to FILE: its name, its xdist worker, the
CUDA_VISIBLE_DEVICES it saw and the UUID of the GPU it used.
"""

import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)


@pytest.mark.parametrize("i", range(8))
def test_cumsum_matches_the_host(i, request):
    x = torch.arange(1 << 16, device="cuda", dtype=torch.float64) * (i + 1)
    assert torch.equal(torch.cumsum(x, 0).cpu(), torch.cumsum(x.cpu(), 0))
    log = os.environ.get("KPROF_SPREAD_LOG")
    if log:
        uuid = getattr(torch.cuda.get_device_properties(0), "uuid", "?")
        with open(log, "a") as f:
            f.write(f"{request.node.name} {os.environ.get('PYTEST_XDIST_WORKER', '-')} "
                    f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '')} {uuid}\n")
