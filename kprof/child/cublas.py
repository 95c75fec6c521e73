"""cuBLAS SGEMM as a baseline, through ctypes on the libcublas that cuda-pathfinder finds.

Plain FP32: the handle's math mode is ``CUBLAS_DEFAULT_MATH`` (no TF32 tensor cores) and the
runner sets ``NVIDIA_TF32_OVERRIDE=0`` as well, so the comparison with hand-written FP32 FMA
kernels is fair. Row-major ``C = A @ B`` is computed as column-major ``C^T = B^T A^T``.
"""

from __future__ import annotations

import ctypes
from typing import Any

from kprof.errors import ToolNotFoundError

CUBLAS_DEFAULT_MATH = 0
CUBLAS_OP_N = 0
MATH_MODE = "CUBLAS_DEFAULT_MATH (FP32, no TF32)"


class Cublas:
    def __init__(self) -> None:
        try:
            from cuda.pathfinder import load_nvidia_dynamic_lib

            loaded = load_nvidia_dynamic_lib("cublas")
            self.lib = ctypes.CDLL(loaded.abs_path)
        except Exception as exc:  # noqa: BLE001 - any failure to load libcublas is reported as cuBLAS missing
            raise ToolNotFoundError("cuBLAS", "pip install nvidia-cublas (or install the CUDA "
                                              f"toolkit): {exc}") from None
        self.handle = ctypes.c_void_p()
        self._check("cublasCreate_v2", self.lib.cublasCreate_v2(ctypes.byref(self.handle)))
        self._check("cublasSetMathMode",
                    self.lib.cublasSetMathMode(self.handle, CUBLAS_DEFAULT_MATH))
        self.lib.cublasSgemm_v2.argtypes = [
            ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
            ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
            ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_void_p, ctypes.c_int,
        ]  # fmt: skip
        self._one, self._zero = ctypes.c_float(1.0), ctypes.c_float(0.0)

    def _check(self, call: str, status: int) -> None:
        if status != 0:
            from kprof.errors import CudaError

            raise CudaError(call, f"cublasStatus {status}")

    def set_stream(self, stream: Any) -> None:
        self._check("cublasSetStream_v2",
                    self.lib.cublasSetStream_v2(self.handle, ctypes.c_void_p(int(stream))))

    def sgemm_row_major(self, a: int, b: int, c: int, m: int, n: int, k: int) -> None:
        """C[m, n] = A[m, k] @ B[k, n], all row-major float32 device pointers."""
        self._check("cublasSgemm_v2", self.lib.cublasSgemm_v2(
            self.handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, ctypes.byref(self._one),
            ctypes.c_void_p(b), n,
            ctypes.c_void_p(a), k, ctypes.byref(self._zero), ctypes.c_void_p(c), n))

    def close(self) -> None:
        if self.handle:
            self.lib.cublasDestroy_v2(self.handle)
            self.handle = ctypes.c_void_p()
