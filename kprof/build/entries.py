"""A kernel as the user writes it in ``entry:`` (``tiled_matmul``, ``layernorm_forward_kernel1``,
``block_sum<float, 256>``, ``ns::gemm<128, 128, BK>``) and the symbol the cubin holds for it.

An ``extern "C"`` kernel's symbol is its name. A C++ kernel's is mangled
(``_Z9block_sumIfLi256EEvPKT_PS0_i``), and a template's exists only where something instantiates it.
So the build compiles a wrapper that includes the user's file unchanged (its lines keep their
numbers and its file name, for ``-lineinfo``) and takes each template entry's address in a device
function (:func:`wrapper_text`): the compiler then emits exactly that instantiation, nvcc and NVRTC
alike. After the build, :func:`resolve` finds each entry's symbol among the kernels ptxas compiled,
by the demangled name with the spec's defines put in (``BK`` is a define, so ``--param BK=64`` sets
a template argument). Pure, but for the demangler (:mod:`kprof.demangle`); what a written name may
be is the spec's to say (:func:`kprof.spec.fields.entry_problem`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from kprof.demangle import base_name, demangle, short


def is_template(entry: str) -> bool:
    return "<" in entry


def wrapper_text(source: str, entries: Iterable[str]) -> str:
    """The source that builds ``source`` (an absolute path) with each template entry instantiated:
    the file included whole, then a device function taking each one's address. Pure."""
    lines = [f'#include "{source}"']
    for k, entry in enumerate(dict.fromkeys(e for e in entries if is_template(e))):
        lines.append(f"__device__ void* __kprof_entry_{k}() {{ return (void*)&{entry}; }}")
    return "\n".join(lines) + "\n"


def _tight(text: str) -> str:
    """Spacing and the compiler's spellings made one: ``block_sum< float,256 >`` and
    ``block_sum<float, 256>``, ``1u`` and ``1``, ``(int)1`` and ``1``, ``float const*`` and ``const
    float*`` stay apart (they differ)."""
    text = re.sub(r"\(\s*(?:unsigned\s+)?(?:int|long|short|char|bool|unsigned)\s*\)\s*", "", text)
    text = re.sub(r"\b(\d+)(?:[uU][lL]{0,2}|[lL]{1,2}[uU]?)\b", r"\1", text)
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s*([<>,:*&()])\s*", r"\1", text).lstrip(":")


def _with_defines(entry: str, defines: Mapping[str, str]) -> str:
    if not defines:
        return entry
    return re.sub(r"\b[A-Za-z_]\w*\b", lambda m: str(defines.get(m.group(0), m.group(0))), entry)


def written(symbol: str) -> str:
    """A symbol as a user writes the kernel: ``_Z9block_sumIfLi256EEvPKT_PS0_i`` ->
    ``block_sum<float, 256>``; an ``extern "C"`` name as it is. Pure."""
    return short(demangle(symbol), 10_000)


def resolve(entry: str, symbols: Iterable[str],
            defines: Mapping[str, str] | None = None) -> str | None:
    """The symbol of ``entry`` among the kernels ptxas compiled (``symbols``), or None where none is
    it or several are (a plain name whose template has several instantiations: the user names one).
    Pure."""
    names = list(symbols)
    if entry in names:
        return entry
    want = _tight(_with_defines(entry, defines or {}))
    exact = [s for s in names if _tight(written(s)) == want]
    if len(exact) == 1:
        return exact[0]
    if exact:
        return None
    # `kernel1`: a C++ kernel, in a namespace or not, or a template's
    if not is_template(entry) and "::" not in entry:
        bare = [s for s in names if base_name(demangle(s)) == want]  # one instantiation
        return bare[0] if len(bare) == 1 else None
    return None


def listing(symbols: Iterable[str], limit: int = 8) -> str:
    """The kernels a cubin holds, as a user writes them, for a message. Pure."""
    names = sorted({written(s) for s in symbols})
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more if names else "none"
