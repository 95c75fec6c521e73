"""Benchmark integrity (kprof.child.integrity): the flags from the kernel records of timed calls,
the events' and the host clock's readings, on records shaped as CUPTI's (kprof's spin kernel before
each call, on the timed stream; stream ids as CUPTI numbers them)."""

from __future__ import annotations

from kprof.child import integrity
from kprof.child.cupti_timer import KernelRecord

TIMED = 13  # the stream kprof times on, as CUPTI numbers it


def _call(*kernels: tuple[str, int], start: int = 0) -> list[KernelRecord]:
    """kprof's flush and spin kernels, then the call's kernels (name, stream), 10 us each."""
    out = [KernelRecord("kprof_flush", start, start + 5_000, TIMED),
           KernelRecord("kprof_spin", start + 5_000, start + 9_000, TIMED)]
    t = start + 9_000
    for name, stream in kernels:
        out.append(KernelRecord(name, t, t + 10_000, stream))
        t += 10_000
    return out


def test_honest_calls_raise_no_flag():
    calls = [_call(("void at::native::vectorized_elementwise_kernel<4>", TIMED)) for _ in range(20)]
    assert integrity.kernel_flags(calls) == []
    assert integrity.window_flags([10e-6] * 20, [11e-6] * 20) == []
    assert integrity.timer_flags([10e-6] * 20, host_seconds=0.05) == []


def test_a_replayed_result_launches_no_kernel_on_most_calls():
    calls = [_call(("add", TIMED))] + [_call() for _ in range(9)]
    (flag,) = integrity.kernel_flags(calls)
    assert flag.startswith("no-kernel: 9 of 10 timed calls launched no kernel while the others "
                           "launched 1")


def test_work_done_once_for_several_calls_varies_the_kernel_count():
    calls = [_call(*[("add", TIMED)] * (8 if i % 8 == 0 else 1)) for i in range(16)]
    (flag,) = integrity.kernel_flags(calls)
    assert flag.startswith("varying-kernels: the timed calls launched 1 to 8 kernels each")


def test_a_side_stream_launch_is_flagged_and_runs_outside_the_window():
    calls = [_call(("add", 7)) for _ in range(5)]  # the callable's own stream, not kprof's
    (flag,) = integrity.kernel_flags(calls)
    assert flag.startswith("other-stream: 5 of 5 timed calls launched kernels on a stream other "
                           "than the one kprof times")
    # the events on kprof's stream read the launch only; CUPTI saw the kernel take 30 us
    (window,) = integrity.window_flags([30e-6] * 5, [2e-6] * 5)
    assert window.startswith("outside-window: in 5 of 5 timed calls")


def test_a_timer_that_reads_more_than_the_loop_took_is_flagged():
    (flag,) = integrity.timer_flags([1e-3] * 100, host_seconds=0.02)
    assert flag.startswith("timer: the timed calls add up to 0.1 s in a loop of 0.02 s")
    # 10 launches a replayed graph: 0.01 s
    assert integrity.timer_flags([1e-5] * 100, host_seconds=0.02, batch=10) == []
    # 0.1 s of graphs in 0.02 s
    assert integrity.timer_flags([1e-4] * 100, host_seconds=0.02, batch=10)


def test_the_verdict_flags_and_the_inputs():
    assert integrity.input_flags(["b"])[0].startswith("changed-input: the timed calls changed b")
    stale, ignores = integrity.reverify_flags(["c: 1,000 elements are NaN"],
                                              ["c: 12 of 1,000 elements exceed"])
    assert stale.startswith("stale-output:") and "c: 1,000 elements are NaN" in stale
    assert (ignores.startswith("ignores-input:")
            and integrity.kinds([stale, ignores]) == ["stale-output", "ignores-input"])
    assert integrity.reverify_flags([], []) == [] and integrity.input_flags([]) == []


def test_a_kernel_still_running_when_the_records_are_taken_is_outside_the_window_and_in_no_span():
    """The deferred cheat on an H200: a side stream sleeps, then works; CUPTI's forced flush hands
    over the still-running kernel's record with zero timestamps. It made one call 1.8e9 s long, and
    the timer flag read 8.4e11 s."""
    from kprof.child import cupti_timer

    calls = [_call(("spin_then_double", 7), start=1_000_000 * (i + 1)) for i in range(4)]
    calls[1][-1] = KernelRecord("spin_then_double", 0, 0, 7)
    flags = integrity.kernel_flags(calls)
    assert any(f.startswith("outside-window: in 1 of 4 timed calls a kernel was still running")
               for f in flags)
    assert cupti_timer.span_seconds(calls[1]) is None  # the events' reading stands for that call
    assert cupti_timer.span_seconds(calls[0]) == 10e-6


def _timed(*kernels: tuple[str, int]) -> list[KernelRecord]:
    """kprof's spin kernel, then the call's kernels (name, ns), back to back on the timed stream."""
    out, t = [KernelRecord("kprof_spin", 0, 4_000, TIMED)], 4_000
    for name, ns in kernels:
        out.append(KernelRecord(name, t, t + ns, TIMED))
        t += ns
    return out


# Names as CUPTI gives them (mangled): cuDNN's attention kernel, and PyTorch's copy kernel of a
# bfloat16 result widened with .float() (direct_copy_kernel_cuda), and of a fill (FillFunctor).
CUDNN = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_128x128x128_4x1x1_kernel0_0"
WIDEN = ("_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBaseE"
         "ENKUlvE1_clEvENKUlvE8_clEvEUlN3c108BFloat16EE_St5arrayIPcLm2EEEEviT0_T1_")
FILL = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"


def test_a_result_widened_inside_the_timed_call_is_extra_work_with_its_share():
    """SDPA's bfloat16 result widened to float32 in the baseline's call: cuDNN's kernel 407 us, the
    widening 49 us (an H200, 2026-12-03): flagged, named, with its share of the call's kernel
    time."""
    calls = [_timed((CUDNN, 407_100), (WIDEN, 49_500)) for _ in range(10)]
    (flag,) = integrity.extra_work_flags(calls, "baseline's timed call")
    assert flag.startswith("extra-work: the baseline's timed call also ran "
                           "at::native::direct_copy_kernel_cuda (a copy or dtype conversion: "
                           ".float(), .to(), .contiguous(), copy_), 11% of its kernel time, in 10 "
                           "of 10 timed calls")
    assert integrity.kinds([flag]) == ["extra-work"]


def test_the_operation_alone_a_copy_alone_and_a_tiny_fill_raise_no_extra_work():
    assert integrity.extra_work_flags([_timed((CUDNN, 407_100)) for _ in range(10)]) == []
    # an operation that is itself a copy (PyTorch's copy_ beside kprof's copy kernel) is the job,
    # not extra
    assert integrity.extra_work_flags([_timed((WIDEN, 200_000)) for _ in range(10)]) == []
    # a one-element fill of 2 us beside 1 ms of work: under the noise of the timestamps
    assert (integrity.extra_work_flags([_timed(("my_kernel", 1_000_000), (FILL, 2_000)) for _ in range(10)]) == [])
    (flag,) = integrity.extra_work_flags([_timed(("my_kernel", 100_000), (FILL, 20_000))
                                          for _ in range(10)])
    assert ("at::native::FillFunctor (a fill: torch.zeros, fill_, zero_), 17% of its kernel time" in flag)


def test_a_result_of_another_dtype_is_another_job():
    (flag,) = integrity.dtype_flags(["y as float64 where the spec's is float32"],
                                    "baseline's timed call")
    assert flag.startswith("other-dtype: the baseline's timed call returned y as float64 where the "
                           "spec's is float32: kprof converted it outside the timed window")
    assert integrity.dtype_flags([]) == []


def test_recorded_h200_calls_flag_exactly_the_baselines_that_did_more_than_the_kernel():
    """Every baseline's timed call as CUPTI recorded it on an H200 (tests/data/integrity):
    extra-work is raised from the kernels alone exactly where the run raised it (cuDNN's SDPA
    widened, the cheats that fill, convert or widen) and for none of the shipped baselines (cuDNN,
    FA2, cuBLAS, cuBLASLt, PyTorch's elementwise, reduction and row kernels, Triton's from
    torch.compile)."""
    import json
    from pathlib import Path

    data = json.loads((Path(__file__).parent.parent / "data" / "integrity" / "h200-baseline-calls.json").read_text())["calls"]
    assert len(data) >= 40
    for label, call in data.items():
        calls = [_timed(*[(name, int(seconds * 1e9)) for name, seconds in call["kernels"]])
                 for _ in range(10)]
        got = integrity.kinds(integrity.extra_work_flags(calls))
        assert got == (["extra-work"] if "extra-work" in call["flags"] else []), label
    flagged = {label for label, call in data.items() if call["flags"]}
    assert {"wgmma_attention / ops.py:sdpa_cudnn_widened", "double / widened"} <= flagged
    assert not any("torch_ops" in label
                   or label.split(" / ")[1] in ("torch", "torch.compile", "cudnn", "flash",
                                                 "efficient", "cublaslt", "cublas_sgemm")
                   for label in flagged)
