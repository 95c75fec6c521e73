"""The CUPTI timer's arithmetic over kernel records (no GPU, no CUPTI needed)."""

from kprof.child.cupti_timer import KernelRecord, busy_seconds_per_launch, span_seconds, timed_records


def rec(name, start, end):
    return KernelRecord(name, start, end)


def test_helpers_are_never_timed():
    records = [rec("kprof_flush", 0, 50_000), rec("kprof_spin", 50_000, 90_000),
               rec("tiled_matmul", 91_000, 191_000)]
    assert [r.name for r in timed_records(records)] == ["tiled_matmul"]
    assert span_seconds(records) == 100_000 / 1e9


def test_span_covers_every_kernel_of_a_baseline():
    # cuBLAS may run a GEMM as two kernels (e.g. split-K and its reduction): the sample is both.
    records = [rec("kprof_spin", 0, 10), rec("sgemm_main", 100, 900),
               rec("splitk_reduce", 950, 1000)]
    assert span_seconds(records) == 900 / 1e9


def test_busy_time_per_launch_in_a_graph():
    records = [rec("vector_add", 1000 + i * 3000, 1000 + i * 3000 + 2000) for i in range(8)]
    assert busy_seconds_per_launch(records, 8) == 2000 / 1e9
    assert busy_seconds_per_launch(records, 4) == 4000 / 1e9  # two kernels per launch


def test_no_record_means_no_number():
    assert span_seconds([rec("kprof_spin", 0, 10)]) is None
    assert busy_seconds_per_launch([], 4) is None
    assert busy_seconds_per_launch([rec("k", 0, 1)], 0) is None


def test_a_record_of_a_kernel_still_running_has_no_time():
    # a forced flush hands over a kernel that has not finished with zero timestamps
    assert span_seconds([rec("k", 0, 0)]) is None
    assert busy_seconds_per_launch([rec("k", 0, 0), rec("k", 5000, 7000)], 1) == 2000 / 1e9
