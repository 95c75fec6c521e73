"""One training step of a small GPT-style transformer, for ``kprof profile -- python``: where does a
real PyTorch program spend its GPU time, what limits each kernel, and what would the whole step gain
if that kernel reached its roof.

    python examples/transformer_step.py                 # eager
    python examples/transformer_step.py --compile       # torch.compile
    kprof profile --range step --launch-count 2000 -- python examples/transformer_step.py

Warm-up steps run first (cuBLAS heuristics, torch.compile's autotuning); the step after them runs
inside ``kprof.range("step")``, so ``--range step`` profiles that one step and nothing else (its backward
too: autograd is kept on this thread for it, as an NVTX range is a thread's own).
"""

import argparse

import torch
import torch.nn.functional as F

import kprof


class Block(torch.nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.RMSNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d, bias=False)
        self.out = torch.nn.Linear(d, d, bias=False)
        self.norm2 = torch.nn.RMSNorm(d)
        self.up = torch.nn.Linear(d, 4 * d, bias=False)
        self.down = torch.nn.Linear(4 * d, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, d // self.heads).transpose(1, 3).unbind(2)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(attn.transpose(1, 2).reshape(b, s, d))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class Model(torch.nn.Module):
    def __init__(self, vocab: int, d: int, heads: int, layers: int) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.blocks = torch.nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.norm = torch.nn.RMSNorm(d)
        self.head = torch.nn.Linear(d, vocab, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = "cuda"
    vocab = 32000
    model = Model(vocab, args.dim, args.dim // 64, args.layers).to(device=device, dtype=torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    step_fn = torch.compile(model) if args.compile else model
    tokens = torch.randint(0, vocab, (args.batch, args.seq + 1), device=device)

    def step() -> float:
        logits = step_fn(tokens[:, :-1])
        loss = F.cross_entropy(logits.float().view(-1, vocab), tokens[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    # An NVTX range belongs to the thread that opened it, and autograd runs a CUDA backward on a thread of its
    # own: with multithreading on, --range step saw the forward's and the optimizer's kernels and none of the
    # backward's (on an H200, 35 launches of the step). Off, the backward runs here, inside the range.
    with kprof.range("step"), torch.autograd.set_multithreading_enabled(False):
        loss = step()
        torch.cuda.synchronize()
    print(f"loss {float(loss):.4f} ({'torch.compile' if args.compile else 'eager'}, {args.layers} layers, d {args.dim})")


if __name__ == "__main__":
    main()
