"""Seeded first-NaN bugs of training code, one a case, each as a user would write it, for ``kprof sanitize --tool nan``.

    python examples/nan_cases.py --case log_zero      # log of a probability that is exactly 0
    python examples/nan_cases.py --case norm          # x / ||x|| where the squares underflow: the norm is 0
    python examples/nan_cases.py --case bf16_exp      # exp of a logit in bfloat16 overflows to Inf
    python examples/nan_cases.py --case triton_other  # a Triton kernel's masked load without other=
    python examples/nan_cases.py --case clean         # the same steps written safely: nothing to find

Each prints the loss; the seeded ones end with a non-finite loss (the program still exits 0, as a training script
that logs NaN does). Needs PyTorch on a GPU (and Triton for triton_other).
"""

from __future__ import annotations

import argparse

import torch


def log_zero(dev: str) -> torch.Tensor:
    logits = torch.randn(64, 10, device=dev)
    probs = torch.softmax(logits, dim=-1)
    probs = torch.where(probs < 0.05, torch.zeros_like(probs), probs)  # small probabilities clipped to 0
    target = torch.randint(0, 10, (64,), device=dev)
    return -torch.log(probs).gather(1, target[:, None]).mean()  # BUG: log(0) = -inf


def norm(dev: str) -> torch.Tensor:
    x = torch.full((32, 256), 1e-30, device=dev)  # tiny activations after a long decay
    return (x / x.norm(dim=-1, keepdim=True)).sum()  # BUG: the squares underflow, the norm is 0


def bf16_exp(dev: str) -> torch.Tensor:
    logits = (torch.randn(16, 512, device=dev) * 40).to(torch.bfloat16)
    weights = torch.exp(logits)  # BUG: exp(>88.7) overflows (no max subtracted)
    return (weights / weights.sum(dim=-1, keepdim=True)).float().sum()


def triton_other(dev: str) -> torch.Tensor:
    import triton
    import triton.language as tl

    @triton.jit
    def row_mean_ratio(x_ptr, d_ptr, out_ptr, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + row * n + offs, mask=m, other=0.0)
        d = tl.load(d_ptr + row * n + offs, mask=m)  # BUG: no other=1.0, the masked lanes divide by what is there
        tl.store(out_ptr + row, tl.sum(x / d, axis=0) / n)

    rows, n = 64, 1000
    x = torch.randn(rows, n, device=dev)
    d = torch.rand(rows, n, device=dev) + 1.0
    out = torch.empty(rows, device=dev)
    row_mean_ratio[(rows,)](x, d, out, n, BLOCK=1024)
    return out.sum()


def clean(dev: str) -> torch.Tensor:
    logits = torch.randn(64, 10, device=dev)
    target = torch.randint(0, 10, (64,), device=dev)
    loss = torch.nn.functional.cross_entropy(logits, target)  # log-softmax: no log of 0
    x = torch.full((32, 256), 1e-30, device=dev)
    loss = loss + torch.nn.functional.normalize(x, dim=-1).sum()  # the norm clamped by eps
    z = (torch.randn(16, 512, device=dev) * 40).to(torch.bfloat16)
    return loss + torch.softmax(z.float(), dim=-1).sum()  # the max subtracted, in float32


CASES = {"log_zero": log_zero, "norm": norm, "bf16_exp": bf16_exp, "triton_other": triton_other, "clean": clean}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=sorted(CASES), required=True)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    torch.manual_seed(0)
    loss = CASES[args.case](args.device)
    print(f"{args.case}: loss {float(loss)}")


if __name__ == "__main__":
    main()
