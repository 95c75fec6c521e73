"""Which one-dimensional tensor maps does the driver encode? cuTensorMapEncodeTiled over 8,192
floats with a box of 128, its global strides given as an empty list (what kprof passes for rank 1:
rank - 1 strides), as one stride, and with no L2 promotion. Prints one line a try. Run by
scripts/gpu-check.sh newchecks."""

from __future__ import annotations

from cuda.bindings import driver as drv


def main() -> None:
    drv.cuInit(0)
    dev = drv.cuDeviceGet(0)[1]
    drv.cuCtxSetCurrent(drv.cuDevicePrimaryCtxRetain(dev)[1])
    ptr = drv.cuMemAlloc(8192 * 4)[1]
    promote = drv.CUtensorMapL2promotion
    tries = {
        "strides [] (kprof), L2 128B": ([], promote.CU_TENSOR_MAP_L2_PROMOTION_L2_128B),
        "strides [32768], L2 128B": ([drv.cuuint64_t(32768)],
                                     promote.CU_TENSOR_MAP_L2_PROMOTION_L2_128B),
        "strides [], no L2 promotion": ([], promote.CU_TENSOR_MAP_L2_PROMOTION_NONE),
        "strides [32768], no L2 promotion": ([drv.cuuint64_t(32768)],
                                             promote.CU_TENSOR_MAP_L2_PROMOTION_NONE),
    }
    for name, (strides, l2) in tries.items():
        out = drv.cuTensorMapEncodeTiled(
            drv.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 1, ptr, [drv.cuuint64_t(8192)],
            strides,
            [drv.cuuint32_t(128)], [drv.cuuint32_t(1)],
            drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE, l2,
            drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
        print(f"{name}: {out[0]}", flush=True)


if __name__ == "__main__":
    main()
