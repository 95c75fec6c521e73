"""Framework baselines for ``kprof bench --baseline``: callables that run a spec's operation the way
a framework user would, timed in the same run as the kernel (``kprof/child/framework.py``)."""

from __future__ import annotations

from pathlib import Path

# kprof peak's framework op of each mix (peak_ops.py, which imports torch: named here without it)
PEAK_OPS = {"read": "torch.sum", "write": "Tensor.fill_", "copy": "torch.mul (y = 1 x)",
            "add": "torch.add"}


def peak_ops_path() -> Path:
    """peak_ops.py, which the child loads by path as it loads any Python baseline."""
    return Path(__file__).with_name("peak_ops.py")
