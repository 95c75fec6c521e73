"""Host data: the numbers a kernel is given and how they are stored. Pure NumPy, no GPU.

Dtypes (NumPy has no bfloat16: such buffers are stored as their raw 16-bit patterns), inputs random
with a fixed seed (same spec, same sizes, same seed: same bytes; a large one made in chunks on
threads, the same values to the bit), the poison every output gets before a launch (NaN for floats,
a sentinel for integers, so an element the kernel never wrote cannot pass), scalars packed as a
launch passes them, and stored values widened to the float64 (int64) a reference computes in. The
verdict on what a kernel wrote is :mod:`kprof.child.verify`.
"""

from __future__ import annotations

from typing import Any

from kprof.parallel import scan_threads
from kprof.spec import DTYPES, ResolvedBuffer

CHUNK = 1 << 22  # elements of an input made, cast or widened at once (32 MiB of float64)

# Integer poison: a recognisable pattern, cut to the width of the type.
INT_POISON = 0x5EADBEEFDEADBEEF
ALT_INT_POISON = 0x2BADF00D2BADF00D
ALT_FLOAT_POISON = 31337.0


# NumPy has no bfloat16: such buffers are stored as their raw 16-bit patterns (uint16) and
# converted with to_bf16() / decode() below, rounding to nearest even as the hardware does.
STORAGE = {"bfloat16": "uint16"}


def numpy_dtype(name: str) -> Any:
    """The NumPy dtype a buffer of spec dtype ``name`` is held in on the host."""
    import numpy as np

    return np.dtype(STORAGE.get(name, name))


def to_bf16(values: object) -> Any:
    """float values -> bfloat16 bit patterns (uint16), round to nearest even; NaN stays NaN."""
    import numpy as np

    f = np.array(values, dtype=np.float32)  # a contiguous copy that keeps a scalar 0-d
    u = f.view(np.uint32)
    # In 32 bits: the largest finite or infinite pattern (0xFF800000) plus 0x8000 stays below 2**32;
    # a NaN, whose sum could wrap, is replaced below.
    rounded = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)
    return np.where(np.isnan(f), np.uint16(0x7FC0), rounded)


def pack_scalar(dtype_name: str, value: int | float) -> int | float:
    """A scalar as a launch passes it: half-precision types as their raw 16 bits, the rest as they
    are."""
    if dtype_name == "float16":
        import numpy as np

        return int(np.float16(value).view(np.uint16))
    if dtype_name == "bfloat16":
        return int(to_bf16(value))
    return value


def decode(dtype_name: str, array: object) -> Any:
    """Host storage -> numbers: bfloat16 bit patterns become float32; everything else is as
    stored."""
    import numpy as np

    if dtype_name == "bfloat16":
        return (np.asarray(array, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
    return array


def digest(stored: object) -> str:
    """A BLAKE2b digest of an array's bytes as stored (as the kernel wrote them): two outputs with
    the same digest are the same to the last bit."""
    import hashlib

    import numpy as np

    raw = np.ascontiguousarray(stored)
    return hashlib.blake2b(raw.view(np.uint8).reshape(-1).data, digest_size=16).hexdigest()


def widened(dtype_name: str, stored: object) -> object:
    """Host storage -> the reference's numbers: :func:`decode`, then float64 (int64 for integers),
    a chunk at a time on several threads for a large array (one pass, no float32 copy of a
    bfloat16 input on the way)."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    stored = np.asarray(stored)
    wide = np.int64 if stored.dtype.kind in "iu" and dtype_name != "bfloat16" else np.float64
    if stored.size < 2 * CHUNK or not stored.flags.c_contiguous:
        return decode(dtype_name, stored).astype(wide)
    flat, out = stored.reshape(-1), np.empty(stored.size, dtype=wide)

    def fill(start: int) -> None:
        out[start:start + CHUNK] = decode(dtype_name, flat[start:start + CHUNK])

    starts = range(0, stored.size, CHUNK)
    with ThreadPoolExecutor(scan_threads(len(starts))) as pool:
        list(pool.map(fill, starts))
    return out.reshape(stored.shape)


def make_input(buf: ResolvedBuffer, rng: Any) -> Any:
    """An input array filled by the spec's rule, from ``rng`` (a seeded
    ``numpy.random.Generator``)."""
    import numpy as np

    dtype = numpy_dtype(buf.arg.dtype)
    kind, params = buf.arg.fill.kind, buf.arg.fill.params
    n = buf.count
    if kind == "uniform":
        lo, hi = params if params else (-1.0, 1.0)
        if n >= 2 * CHUNK and isinstance(rng.bit_generator, np.random.PCG64):
            return _uniform_in_chunks(buf, rng, float(lo), float(hi))
        data = rng.uniform(lo, hi, n)
    elif kind == "normal":
        mean, std = params if params else (0.0, 1.0)
        data = rng.normal(mean, std, n)
    # normal(0, spread) with a share of the elements at a height well above the rest
    elif kind == "peaked":
        height, share, spread = (*params, 1.0)[:3]
        data = rng.normal(0.0, spread, n)
        data[rng.random(n) < share] = height
    elif kind == "randint":
        data = rng.integers(int(params[0]), int(params[1]), n)
    # made in the target dtype: a 2 GiB uint8 input must not become 16 GiB of float64
    elif kind == "zeros":
        return np.zeros(buf.shape, dtype=dtype)  # all-zero bits are 0.0 in bfloat16 too
    elif kind in ("ones", "const"):
        return np.full(buf.shape, fill_value(buf), dtype=dtype)
    elif kind == "arange":
        data = np.arange(n)
    else:  # the spec loader admits only the kinds above
        raise ValueError(f"unknown fill {kind}")
    if data.size >= 2 * CHUNK:  # cast a chunk at a time on several threads: the same values
        return _cast_in_chunks(data, buf).reshape(buf.shape)
    if buf.arg.dtype == "bfloat16":
        return np.ascontiguousarray(to_bf16(data).reshape(buf.shape))
    return np.ascontiguousarray(data.astype(dtype, copy=False).reshape(buf.shape))


def _cast_in_chunks(data: Any, buf: ResolvedBuffer) -> Any:
    """``data`` (float64 or int64, flat) stored as the buffer's dtype, chunks cast on several
    threads."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    bf16 = buf.arg.dtype == "bfloat16"
    out = np.empty(data.size, dtype=np.uint16 if bf16 else numpy_dtype(buf.arg.dtype))

    def cast(start: int) -> None:
        part = data[start:start + CHUNK]
        out[start:start + part.size] = to_bf16(part) if bf16 else part

    starts = range(0, data.size, CHUNK)
    with ThreadPoolExecutor(scan_threads(len(starts))) as pool:
        list(pool.map(cast, starts))
    return out


def _uniform_in_chunks(buf: ResolvedBuffer, rng: Any, lo: float, hi: float) -> object:
    """``rng.uniform(lo, hi, n)`` cast to the buffer's dtype, the same values to the bit, made a
    chunk at a time on several threads and never as one float64 array (a 268M-element input: 2 GiB
    of float64 and seconds on one core). Each of NumPy's uniform doubles takes one 64-bit draw of
    PCG64, so the chunk from element ``s`` is a copy of the generator advanced by ``s``; ``rng`` is
    left advanced by ``n``, as one call would leave it (tests/child/test_verify.py)."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    bits = rng.bit_generator
    state, n = bits.state, buf.count
    bf16 = buf.arg.dtype == "bfloat16"
    out = np.empty(n, dtype=np.uint16 if bf16 else numpy_dtype(buf.arg.dtype))

    def fill(start: int) -> None:
        part = np.random.PCG64()
        part.state = state
        part.advance(start)
        values = np.random.Generator(part).uniform(lo, hi, min(CHUNK, n - start))
        out[start:start + values.size] = to_bf16(values) if bf16 else values

    starts = range(0, n, CHUNK)
    with ThreadPoolExecutor(scan_threads(len(starts))) as pool:
        list(pool.map(fill, starts))
    bits.advance(n)
    return out.reshape(buf.shape)


def poison_value(buf: ResolvedBuffer, alternate: bool = False) -> Any:
    """One element of :func:`poison`, as stored (a NumPy scalar of the buffer's host dtype)."""
    import numpy as np

    dtype = numpy_dtype(buf.arg.dtype)
    if DTYPES[buf.arg.dtype][1] == "f":
        # A moderate value, not 1e30: 1e30 + x == 1e30 in float32, which would hide a kernel
        # that adds into an output it never zeroed behind the "never written" verdict.
        fill = ALT_FLOAT_POISON if alternate else np.nan
        return np.asarray(to_bf16(fill) if buf.arg.dtype == "bfloat16" else fill, dtype=dtype)[()]
    bits = 8 * dtype.itemsize
    pattern = (ALT_INT_POISON if alternate else INT_POISON) & ((1 << bits) - 1)
    return np.asarray(pattern, dtype=np.dtype(f"u{dtype.itemsize}")).view(dtype)[()]


def poison(buf: ResolvedBuffer, alternate: bool = False) -> Any:
    """An array of poison the shape of ``buf``: NaN or a sentinel for integers.

    ``alternate`` gives a second, different pattern (a large finite float, another sentinel):
    the values detector compares runs under both to see which results follow the poison.
    """
    import numpy as np

    value = poison_value(buf, alternate)
    return np.full(buf.shape, value, dtype=value.dtype)


def word_of(value: Any) -> int | None:
    """The 32-bit word whose repetition fills memory with ``value`` (a NumPy scalar of 1, 2 or 4
    bytes), as ``cuMemsetD32`` writes it; None for 8-byte values."""
    import numpy as np

    raw = np.asarray(value).tobytes()
    if len(raw) not in (1, 2, 4):
        return None
    return int(np.frombuffer(raw * (4 // len(raw)), dtype="<u4")[0])


def fill_value(buf: ResolvedBuffer) -> Any:
    """The one value every element of an input takes (fill zeros, ones or const), as stored; None
    for a fill that varies (uniform, normal, randint, arange)."""
    import numpy as np

    kind, params = buf.arg.fill.kind, buf.arg.fill.params
    if kind not in ("zeros", "ones", "const"):
        return None
    number = 0.0 if kind == "zeros" else 1.0 if kind == "ones" else params[0]
    dtype = numpy_dtype(buf.arg.dtype)
    if buf.arg.dtype == "bfloat16":
        return np.asarray(to_bf16(number), dtype=dtype)[()]
    if kind == "zeros":
        return np.zeros((), dtype=dtype)[()]
    return np.asarray(number).astype(dtype)[()]
