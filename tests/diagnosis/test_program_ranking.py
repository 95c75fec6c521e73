"""A program's kernels ranked (kprof/diagnosis/program.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kprof.measure import profiling as prof


def test_program_ranking_names_where_the_time_goes():
    from kprof.diagnosis import program

    base = prof.fallback("k", {}, 1e-3, 32, 256, 0, dynamic_smem=0, arch="sm_90", spec_flops=None,
                         spec_bytes=None, reason="fake")
    gemm = [replace(base, kernel=f"sm90_xmma_gemm#{i}", duration_s=4e-3).with_metrics(tensor_pipe=0.5, dram_fraction=0.2)
            for i in range(3)]
    norm = [replace(base, kernel=f"rms_norm_kernel#{i}", duration_s=1e-3).with_metrics(dram_fraction=0.9) for i in range(3, 5)]
    tiny = [replace(base, kernel="fill#5", duration_s=1e-5).with_metrics(dram_fraction=0.01)]
    ranked = program.rank(gemm + norm + tiny)
    assert [r.kernel for r in ranked] == ["sm90_xmma_gemm", "rms_norm_kernel", "fill"]
    g = ranked[0]
    assert g.launches == 3 and g.share == pytest.approx(12 / 14.01, rel=1e-3)
    assert g.limiter.startswith("latency") and g.headroom == pytest.approx(2.0)
    assert g.program_gain == pytest.approx(1 / ((1 - g.share) + g.share / 2), rel=1e-6)
    assert ranked[1].limiter == "DRAM" and ranked[2].headroom == program.MAX_HEADROOM
    from kprof.results import render_profile

    text = render_profile.program_ranking(ranked)
    assert "share: of the profiled launches' GPU time" in text and "sm90_xmma_gemm" in text
