"""The cheat corpus of kprof bench (cases.yaml): one honest operation, y = 2 x, and cheating twins of
it, each playing one exploit that benchmark leaderboards have seen. Every cheat passes the verdict of
its first call (the one kprof verifies before timing); kprof's integrity checks must flag each."""

import torch

_state = {}


def double(x):
    """Honest: the work, on the stream it is called on, every call."""
    return x * 2


def replay(x):
    """A result cached on the input's address: right as long as the values at that address do not change."""
    key = x.data_ptr()
    if key not in _state:
        _state[key] = x * 2
    return _state[key]


def _side():
    if "stream" not in _state:
        _state["stream"] = torch.cuda.Stream()
    return _state["stream"]


def _off_the_timed_stream(x, name, spin_cycles=0):
    """y = 2 x on a stream of its own, after ``spin_cycles`` of a GPU spin, not waited for; the first
    call (the one kprof verifies) waits, so the cheat passes its verdict."""
    s = _side()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        if spin_cycles:
            torch.cuda._sleep(spin_cycles)
        y = x * 2
    _state[name] = _state.get(name, 0) + 1
    if _state[name] == 1:
        torch.cuda.current_stream().wait_stream(s)
    return y


def side_stream(x):
    """The work on a stream of its own, not waited for."""
    return _off_the_timed_stream(x, "side_calls")


def deferred(x):
    """The work held back on a side stream behind a spin of about 50 us, so it runs after the timed
    window closes."""
    return _off_the_timed_stream(x, "deferred_calls", spin_cycles=100_000)


def shrink_input(x):
    """Right, and then the input zeroed: every later call doubles zeros."""
    y = x * 2
    x.zero_()
    return y


def stale_empty(x):
    """The first call computes; every later one returns new, unwritten memory, which the caching
    allocator hands out from the block the first result was copied out of."""
    _state["empty_calls"] = _state.get("empty_calls", 0) + 1
    if _state["empty_calls"] == 1:
        return x * 2
    return torch.empty_like(x)


def graph_batch(x):
    """Eight calls' work captured once in a CUDA graph, replayed on every eighth call; the others
    return the graph's output as it is."""
    if "graph" not in _state:
        out = torch.empty_like(x)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(8):
                out.copy_(x * 2)
        _state["graph"], _state["out"], _state["graph_calls"] = graph, out, 0
    if _state["graph_calls"] % 8 == 0:
        _state["graph"].replay()
    _state["graph_calls"] += 1
    return _state["out"]


def patched_timer(x):
    """Honest work, and the driver's event timer (the one kprof's CUDA events read) patched to say 1 us."""
    from cuda.bindings import driver

    if "patched" not in _state:
        real = driver.cuEventElapsedTime
        def fast(start, end):
            err, _ = real(start, end)
            return err, 0.001
        driver.cuEventElapsedTime = fast
        _state["patched"] = True
    return x * 2


def widened(x):
    """The right values, with work beyond the operation in the timed call: the input widened to float64
    and the result narrowed back to float32 (two conversion kernels around the multiply), as a baseline
    whose bfloat16 result is widened to the spec's float32 does."""
    return (x.double() * 2).float()


def float64_result(x):
    """Another job than the operation: the result in float64 where the spec's y is float32 (twice the
    bytes written); kprof converts it to float32 outside the timed window to verify it (exactly: these
    values are float32's), so only the dtype tells the jobs apart."""
    return (x * 2).double()


def sdpa_cudnn_widened(Q, K, V, CAUSAL):
    """Not a cheat of double.yaml: the attention specs' cuDNN baseline as it was before they wrote a
    bfloat16 O, its bfloat16 result widened with .float() inside the timed call, which made the kernels
    beside it look 12% faster. Kept to show extra-work (and other-dtype) on that case:
    ``kprof bench wgmma_attention --baseline cudnn,bench_cases/ops.py:sdpa_cudnn_widened``."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        return F.scaled_dot_product_attention(Q[None], K[None], V[None], is_causal=bool(CAUSAL))[0].float()
