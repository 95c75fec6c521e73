"""Does initcheck see every write of a half-precision cuBLAS GEMM? (examples/test_user_suite.py's
``test_linear_half`` fails under initcheck: PyTorch's elementwise kernel reading the GEMM's output.)

    python3 examples/gemm_initcheck.py --out empty     # the GEMM writes into torch.empty, .float() reads it
    python3 examples/gemm_initcheck.py --out zeros     # the same GEMM into a zeroed buffer
    python3 examples/gemm_initcheck.py --names         # the kernels each step launches (torch.profiler)

Under ``compute-sanitizer --tool initcheck``: if ``--out empty`` reports uninitialized reads in the
``.float()`` and ``--out zeros`` does not, the GEMM wrote every element (the results match) but the tool
did not see those writes, so the records are the tool's blind spot, not the program's bug."""
import argparse

import torch

p = argparse.ArgumentParser()
p.add_argument("--out", choices=["empty", "zeros", "linear"], default="empty")
p.add_argument("--dtype", choices=["float16", "bfloat16", "float32"], default="float16")
p.add_argument("--size", type=int, default=512)
p.add_argument("--names", action="store_true", help="list the kernels launched (torch.profiler)")
a = p.parse_args()
dt = getattr(torch, a.dtype)
torch.manual_seed(0)
x = torch.randn(a.size, 1024, device="cuda", dtype=dt)
w = torch.randn(1024, 1024, device="cuda", dtype=dt) / 32
b = torch.randn(1024, device="cuda", dtype=dt)
torch.cuda.synchronize()


def step():
    if a.out == "linear":
        return torch.nn.functional.linear(x, w, b)
    out = (torch.empty if a.out == "empty" else torch.zeros)(a.size, 1024, device="cuda", dtype=dt)
    torch.addmm(b, x, w.t(), out=out)
    return out


if a.names:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        y = step().float()
        torch.cuda.synchronize()
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            print("kernel:", e.name)
else:
    y = step().float()
want = x.double() @ w.double().t() + b.double()
err = (y.double() - want).abs().max().item()
print(f"{a.dtype} {a.out}: max abs error {err:.3g}")
raise SystemExit(0 if err < 0.5 else 1)
