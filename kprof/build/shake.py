"""The warp-delay build: a kernel's source with a pause of a pseudo-random length per warp at the
start of every kernel and after every ``__syncthreads();``, for the values detector.

A pause never changes what a correct kernel computes, only when its warps get there. A kernel that
is missing a barrier (shared counts zeroed by one warp while another already adds to them, a tile
overwritten while a slow warp still reads it) computes the same as the original on hardware where
the warps of a block keep close step, which they nearly always do: every sanitizer passes it, and
racecheck does not see a plain store against a shared-memory atomic. Delayed warps take that order
apart, so the detector's runs of this build differ from its runs of the original
(:mod:`kprof.tools.sanitizers.values`).

The transform keeps every line where it was: the helper comes first, then ``#line 1`` gives the
original file's name and numbering back, and each pause goes on the line of what it follows.
"""

from __future__ import annotations

import hashlib
import re

from kprof.build import cusource

SUFFIX = "__shaken"  # the build's spec name: NAME__shaken
# the longest pause: a few global-memory latencies, short beside a sanitize-size run
MAX_PAUSE_NS = 8192

HELPER = """#if !defined(KPROF_SHAKE_HELPER)
#define KPROF_SHAKE_HELPER
static __device__ __forceinline__ void kprof_shake() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    unsigned w = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) >> 5;
    unsigned h = (w + 1u) * 2654435761u ^ (blockIdx.x * 40503u + blockIdx.y * 9973u + blockIdx.z) ^ (unsigned)(t >> 12);
    h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
    __nanosleep(h % MAX_PAUSE_NSu);
#endif
}
#endif
""".replace("MAX_PAUSE_NS", str(MAX_PAUSE_NS))

_SYNC = re.compile(r"\b__syncthreads\s*\(\s*\)\s*;")
_GLOBAL = re.compile(r"\b__global__\b")
CALL = " kprof_shake();"


def _body_opening(code: str, start: int) -> int | None:
    """The ``{`` that opens the body of the kernel declared at ``start`` (``__global__``), or None
    for a declaration without a body."""
    paren = code.find("(", start)
    close = cusource.closing(code, paren) if paren >= 0 else None
    if close is None:
        return None
    rest = re.match(r"[^;{}]*", code[close + 1:])  # attributes, __launch_bounds__ written after
    end = close + 1 + (rest.end() if rest else 0)
    return end if end < len(code) and code[end] == "{" else None


def insertion_points(text: str) -> list[int]:
    """Where a pause goes: after the ``{`` of every kernel's body and after every
    ``__syncthreads();``."""
    code = cusource.blank_comments(text)
    points = [m.end() for m in _SYNC.finditer(code)]
    for m in _GLOBAL.finditer(code):
        if (opening := _body_opening(code, m.end())) is not None:
            points.append(opening + 1)
    return sorted(set(points))


def shaken(text: str, file_name: str) -> str | None:
    """The warp-delay source of ``text`` (read from ``file_name``), or None when it has no kernel
    body."""
    points = insertion_points(text)
    if not any(text[p - 1] == "{" for p in points):
        return None
    parts, last = [], 0
    for p in points:
        parts += [text[last:p], CALL]
        last = p
    parts.append(text[last:])
    name = file_name.replace("\\", "\\\\").replace('"', '\\"')
    return HELPER + f'#line 1 "{name}"\n' + "".join(parts)


def key() -> str:
    """What tells this transform's builds from another version's in the cache."""
    return hashlib.sha256((HELPER + CALL).encode()).hexdigest()[:8]
