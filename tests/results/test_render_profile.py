"""kprof cases --perf's table: a case a row, and the tally it ends with."""

from types import SimpleNamespace

from kprof.results import render_profile


def test_the_perf_table_marks_wrong_answers_and_sums_up():
    r = SimpleNamespace(case="tail_wave", expected="tail-wave", first="occupancy",
                        cause_right=False, line="k.cu:9",
                        line_right=True, estimate=1.9, estimate_right=False, measured=1.6,
                        tried=None, try_gain=None,
                        ncu_rule=None, ncu_speedup=None, ncu_right=False, error=None)
    tally = {"cause_right": 0, "cases": 1, "line_right": 1, "estimates_within": 0, "estimates": 1,
             "confirmed_by_try": 0, "ncu_right": 0, "ncu_judged": 0}
    text = render_profile.perf_cases_table([r], tally)
    row = text.splitlines()[2]
    assert "tail_wave" in row and " NO " in row and "1.90x OFF" in row and "1.60x" in row
    assert text.splitlines()[-1].startswith("first cause right on 0 of 1, and at the right line on "
                                            "1")


def test_why_counters_are_missing_is_said_once_for_every_kernel_profiled_without_them():
    from kprof.measure import profiling
    from kprof.results.render_profile import profile_report

    why = ("ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM): run as root, "
           "or load the driver with NVreg_RestrictProfilingToAdminUsers=0")
    profiles = [profiling.fallback(name, {"N": 1}, 1e-3, 32, 256, 0, dynamic_smem=0, arch="sm_90",
                                   spec_flops=10,
                                   spec_bytes=20, reason=why) for name in ("tail_wave", "scalar_loads", "copy")]
    text = profile_report(profiles)
    # and the rates note
    assert text.count("ERR_NVGPUCTRPERM") == 1 and text.count("note: as for tail_wave above") == 4
