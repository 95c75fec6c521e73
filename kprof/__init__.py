"""kprof: build, launch, verify, sanitize, profile and benchmark CUDA kernels.

Importing kprof loads no CUDA, nvtx or NumPy module: those are imported where a command needs
them, so ``import kprof`` and ``kprof --help`` work on any machine.
"""

__version__ = "0.1.0"
