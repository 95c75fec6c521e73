"""kprof's RMSNorm and softmax kernels inside a small PyTorch module, checked against
torch.nn.functional (forward only: kprof ops have no backward).

    python examples/kprof_in_torch.py

kprof.load builds each spec's cubin for this GPU (or takes it from kprof's build cache) and returns
an operation on tensors: shapes give the sizes, outputs come from torch.empty, the kernel runs on
torch's current stream with no copy and no synchronisation.
"""

import torch
import torch.nn.functional as F

import kprof

rms_norm = kprof.load("rmsnorm_onepass")  # y = x / sqrt(mean(x^2) + 1e-6) * w, row by row
softmax = kprof.load("softmax_online")  # y = softmax(x, axis=-1)


class Block(torch.nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.rand(hidden) + 0.5)
        self.proj = torch.nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor, use_kprof: bool = True) -> torch.Tensor:
        if use_kprof:
            return softmax(self.proj(rms_norm(x, self.weight)))
        return torch.softmax(self.proj(F.rms_norm(x, (x.shape[-1],), self.weight, eps=1e-6)), dim=-1)


@torch.no_grad()
def main() -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    block = Block(4096).cuda()
    x = torch.randn(512, 4096, device="cuda")
    ours, theirs = block(x), block(x, use_kprof=False)
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-7)
    print(f"kprof rmsnorm_onepass + softmax_online in a torch module: matches torch.nn.functional "
          f"(max abs difference {(ours - theirs).abs().max().item():.2e})")


if __name__ == "__main__":
    main()
