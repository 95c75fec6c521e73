"""PyTorch's own elementwise and reduction ops on kprof peak's stream specs
(``kprof/builtin/kprof_*.yaml``): timed in the same peak run as kprof's stream kernels, so that a
ceiling is at or above what the ops kprof compares kernels against reach (a torch ``y = 2 x`` at 64
MiB beat a copy ceiling measured by kprof's own kernel at 1 GiB alone). Each writes the spec's
output in place (it takes it by name), so nothing but the op runs in its timed call.

| mix | op | the spec's reference |
|---|---|---|
| read | ``torch.sum(x)`` (its 0-d result from the caching allocator; ``flag`` untouched) | flag = 0
|
| write | ``y.fill_(1)`` | y = 1 |
| copy | ``torch.mul(x, 1, out=y)``, the kernel of ``y = 2 x`` (a ``copy_`` is the memcpy kprof peak
times) | y = x |
| add | ``torch.add(a, b, out=out)`` | out = 2 |
"""

from __future__ import annotations

from typing import Any

import torch


def read(x: object, flag: object) -> None:
    torch.sum(x)


def write(y: Any) -> None:
    y.fill_(1.0)


def copy(x: Any, y: object) -> None:
    torch.mul(x, 1.0, out=y)


def add(a: object, b: object, out: object) -> None:
    torch.add(a, b, out=out)
