"""Kernel specs, the first stage of the pipeline, in two modules: the schema
(:mod:`kprof.spec.schema`: the frozen dataclasses a spec is, and ``KernelSpec.resolve()``, which
gives a :class:`Resolved` that the build, launch, sanitize, profile and bench stages take as it is)
and the loader (:mod:`kprof.spec.loader`: a YAML file, every field validated, every error naming the
file and the field; :mod:`kprof.spec.fields` reads those of what to build and launch). Every stage
imports their names from here (``from kprof.spec import KernelSpec``,
``kprof.spec.loader(path)``). ``docs/spec.md`` documents the format.
"""

from kprof.errors import SpecError
from kprof.spec.expected import SPEC_WIDE, input_names
from kprof.spec.fields import ALLOWED_FLAGS
from kprof.spec.loader import (
    MAX_DEPTH,
    MAX_SPEC_BYTES,
    as_python_operation,
    from_dict,
    load,
)
from kprof.spec.schema import (
    ARCH_NAME,
    BASELINES,
    BLOCK_LIMITS,
    CUBLAS_SGEMM,
    DTYPES,
    FILLS,
    GRID_LIMITS,
    IDENT,
    MAX_THREADS_PER_BLOCK,
    PRESETS,
    ROLES,
    BufferArg,
    Check,
    Fill,
    KernelSpec,
    Launch,
    Requirement,
    Resolved,
    ResolvedBuffer,
    ResolvedStep,
    ResolvedTensorMap,
    ScalarArg,
    SizeDef,
    Step,
    TensorMapArg,
    Tolerance,
    Work,
    arch_number,
    define_env,
)

__all__ = [
    "ALLOWED_FLAGS",
    "ARCH_NAME",
    "BASELINES",
    "BLOCK_LIMITS",
    "CUBLAS_SGEMM",
    "DTYPES",
    "FILLS",
    "GRID_LIMITS",
    "IDENT",
    "MAX_DEPTH",
    "MAX_SPEC_BYTES",
    "MAX_THREADS_PER_BLOCK",
    "PRESETS",
    "ROLES",
    "SPEC_WIDE",
    "BufferArg",
    "Check",
    "Fill",
    "KernelSpec",
    "Launch",
    "Requirement",
    "Resolved",
    "ResolvedBuffer",
    "ResolvedStep",
    "ResolvedTensorMap",
    "ScalarArg",
    "SizeDef",
    "SpecError",
    "Step",
    "TensorMapArg",
    "Tolerance",
    "Work",
    "arch_number",
    "as_python_operation",
    "define_env",
    "from_dict",
    "input_names",
    "load",
]
