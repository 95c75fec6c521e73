// Included first in every NVRTC build (kprof.nvrtc): what nvcc's implicit include of cuda_runtime.h
// brings to a kernel that NVRTC's built-ins do not, so a source builds the same with either compiler.
#pragma once
#ifndef INFINITY
#define INFINITY (1.0f / 0.0f)  // NVRTC knows no __builtin_huge_valf; a constant expression, as in <math.h>
#endif
#ifndef NAN
#define NAN (0.0f / 0.0f)
#endif
