"""The user's line that launched each kernel of a program (kprof.tools.programs.launchsites),
without a GPU: the launch tally's site mode on fake CUPTI callbacks (frames of this file are the
user's; a thread with none says so), its stop once it has what it came for, the parse of its lines,
ncu's kernel names matched to the launch calls' (mangled) names, and the ranking and API that carry
them."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

import kprof
from kprof import demangle
from kprof.diagnosis import program
from kprof.measure import profiling as prof
from kprof.results import render_profile
from kprof.tools.programs import launchsites
from kprof.tools.programs.launchsites import LaunchSite, Sites

HOOKS = Path(kprof.__file__).parent / "hooks"
SOFTMAX = "_ZN2at6native12_GLOBAL__N_119cunn_SoftMaxForwardILi4EfffNS1_25LogSoftMaxForwardEpilogueEEEvPT2_PKT0_i"
SOFTMAX_NCU = ("void at::<unnamed>::cunn_SoftMaxForward<4, float, float, float, "
               "at::<unnamed>::LogSoftMaxForwardEpilogue>(T4 *, const T2 *, int)")


def _tally(tmp_path: Path, sites: str = "all", of: str = "[]",
           monkeypatch: pytest.MonkeyPatch | None = None):
    spec = importlib.util.spec_from_file_location("launch_tally_sites", HOOKS / "launch_tally.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert monkeypatch is not None
    monkeypatch.setenv("KPROF_LAUNCH_TALLY", str(tmp_path / "tally.jsonl"))
    monkeypatch.setenv("KPROF_LAUNCH_SITES", sites)
    monkeypatch.setenv("KPROF_LAUNCH_SITES_OF", of)
    # no CUPTI here: the callbacks are called by hand
    monkeypatch.setattr(module.Tally, "start", lambda self: None)
    module.install()
    t = module._TALLY[0]
    t.sites, t.resource_domain, t.runtime_domain = ("enter", "exit"), "resource", "runtime"
    return module, t


def _launch(t, name: str) -> None:
    t._callback(None, "driver", 0, SimpleNamespace(callback_site="exit", symbol_name=name))


def _events(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "tally.jsonl").read_text().splitlines()]


def test_each_kernel_is_placed_at_the_users_line_once_per_place(tmp_path, monkeypatch):
    _module, t = _tally(tmp_path, monkeypatch=monkeypatch)
    scale = SimpleNamespace(callback_site="exit", symbol_name="scale")
    for _ in range(3):
        t._callback(None, "driver", 0, scale)  # one place, three launches: one site line
    t._callback(None, "driver", 0, scale)  # another line of this file: a second place
    backward = SimpleNamespace(callback_site="exit", symbol_name="backward")
    # no frame of the user's
    worker = threading.Thread(target=t._callback, args=(None, "driver", 0, backward))
    worker.start()
    worker.join()
    t.out.close()
    sites = [e for e in _events(tmp_path) if e["event"] == "site"]
    here = str(Path(__file__).resolve())
    assert [(e["name"], e["path"], e["launches"]) for e in sites] == [("scale", here, 1), ("scale", here, 4),
                                                                       ("backward", None, 5)]
    assert sites[0]["func"] == "test_each_kernel_is_placed_at_the_users_line_once_per_place"
    assert sites[0]["line"] != sites[1]["line"]
    parsed = launchsites.from_tally(_lines({"pid": t.pid, "event": "tally", "ok": True}) +
                                    (tmp_path / "tally.jsonl").read_text())
    assert (parsed.counted
            and [s.where() for s in parsed.by_kernel["backward"]] == [launchsites.NO_FRAME])
    assert parsed.by_kernel["scale"][0].where() == f"{here}:{sites[0]['line']} ({sites[0]['func']})"


def test_the_site_run_stops_once_it_has_launched_enough_and_every_kernel_ncu_profiled(tmp_path, monkeypatch):
    module, t = _tally(tmp_path, sites="2", of='["softmax_forward"]', monkeypatch=monkeypatch)
    stops: list[int] = []
    monkeypatch.setattr(module.os, "_exit", stops.append)
    _launch(t, "fill")
    _launch(t, "fill")  # two launches, but the profiled kernel has not come yet
    assert stops == []
    _launch(t, "triton_softmax_forward_0")  # its bare name is inside this one's
    assert stops == [0]


def test_without_the_site_mode_the_tally_walks_no_frames(tmp_path, monkeypatch):
    _module, t = _tally(tmp_path, sites="", monkeypatch=monkeypatch)
    _launch(t, "scale")
    t.out.close()
    assert [e["event"] for e in _events(tmp_path)] == ["kernel"]


def _lines(*events: dict) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


def test_a_program_with_no_hooked_python_process_has_no_sites_and_says_why():
    assert (not launchsites.from_tally("").counted
            and "no Python process" in launchsites.from_tally("").why)
    refused = _lines({"pid": 1, "event": "tally", "ok": False,
                      "why": "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"})
    assert launchsites.from_tally(refused).why == "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
    cut = _lines({"pid": 1, "event": "tally", "ok": True}) + '{"pid": 1, "event": "site", "na'
    assert launchsites.from_tally(cut) == Sites({}, counted=True)


def test_the_run_hands_the_program_the_site_mode_and_reads_what_it_wrote(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text("import json, os\n"
                    "with open(os.environ['KPROF_LAUNCH_TALLY'], 'a') as f:\n"
                    "    f.write(json.dumps({'pid': os.getpid(), 'event': 'tally', 'ok': True}) + "
                    "'\\n')\n    f.write(json.dumps({'pid': os.getpid(), 'event': 'site', 'name': "
                    "os.environ['KPROF_LAUNCH_SITES'], 'path': "
                    "os.environ['KPROF_LAUNCH_SITES_OF'], 'line': 3, 'func': 'main', 'launches': "
                    "1}) + '\\n')\n")
    found = launchsites.run([sys.executable, str(prog)], timeout=60,
                            env=dict(__import__("os").environ), stop_after=12,
                            kernels=("gemm", "norm", "gemm"))
    assert found.counted and found.complete
    ((name, (site,)),) = found.by_kernel.items()
    assert name == "12" and site.path == '["gemm", "norm"]'


def _sites(**by_kernel: list[tuple[str | None, int | None]]) -> Sites:
    return Sites({k: tuple(LaunchSite(k, p, ln, "forward", i, 1) for i, (p, ln) in enumerate(v))
                  for k, v in by_kernel.items()}, counted=True)


def test_ncus_kernel_names_meet_the_launch_calls_names():
    sites = Sites({SOFTMAX: (LaunchSite(SOFTMAX, "/u/model.py", 40, "forward", 9, 1),),
                   "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_":
                       (LaunchSite("fill", "/u/train.py", 12, "<module>", 1, 1),),
                   "triton_poi_fused_gelu_2": (LaunchSite("triton_poi_fused_gelu_2", "/u/train.py",
                                                          30, "step", 3, 1),)},
                  counted=True)
    found, how = program.match_sites(SOFTMAX_NCU, sites)
    assert how == "name" and [s.where() for s in found] == ["/u/model.py:40 (forward)"]
    found, how = program.match_sites("triton_poi_fused_gelu_2", sites)
    assert how == "name" and found[0].line == 30
    # ncu writes a lambda's instantiation its own way: the function name still finds the kernel,
    # said as a guess
    found, how = program.match_sites("void at::native::vectorized_elementwise_kernel<4, [lambda() "
                                     "(instance 1)]>(int, T2)",
                                     sites)
    assert how == "function name" and found[0].where() == "/u/train.py:12"
    assert program.match_sites("nvjet_sm90_tst_256x128", sites) == ((), "")


def test_the_ranking_carries_each_kernels_lines_first_launched_first():
    base = prof.fallback("k", {}, 1e-3, 32, 256, 0, dynamic_smem=0, arch="sm_90", spec_flops=None,
                         spec_bytes=None, reason="fake")
    profiles = [replace(base, kernel=f"{SOFTMAX_NCU}#{i}", duration_s=1e-3).with_metrics(dram_fraction=0.9) for i in range(2)]
    profiles.append(replace(base, kernel="nvjet_sm90_tst#2", duration_s=1e-4).with_metrics(tensor_pipe=0.9))
    sites = _sites(**{SOFTMAX: [("/u/model.py", 41), (None, None), ("/u/model.py", 40)]})
    ranked = program.rank(profiles, sites)
    assert ranked[0].sites == ("/u/model.py:41 (forward)", "/u/model.py:40 (forward)",
                               launchsites.NO_FRAME)
    assert (ranked[0].sites_by == "name" and ranked[1].sites == ()
            and ranked[0].to_dict()["sites"][0].endswith("(forward)"))
    text = render_profile.program_ranking(ranked, sites=sites)
    assert ("LAUNCHED FROM" in text and "/u/model.py:41 (forward) (+2 more)" in text
            and "second run" in text)
    assert program.profiled_names(profiles) == ("cunn_SoftMaxForward", "nvjet_sm90_tst")
    missing = render_profile.program_ranking(ranked,
                                             sites=Sites(why="the program started no Python process"))
    assert "launched from: not found (the program started no Python process)" in missing


def test_the_api_profiles_then_finds_the_sites_of_what_ncu_profiled(monkeypatch):
    from kprof.commands import profiles

    base = prof.fallback("k", {}, 1e-3, 32, 256, 0, dynamic_smem=0, arch="sm_90", spec_flops=None,
                         spec_bytes=None, reason="fake")
    profiled = [replace(base, kernel="triton_poi_fused_gelu_2#3", duration_s=1e-4)]
    asked: dict = {}
    monkeypatch.setattr(profiles, "profile", lambda cmd, **kw: profiled)

    def fake_run(argv, **kw):
        asked.update(kw, argv=argv)
        return _sites(triton_poi_fused_gelu_2=[("/u/train.py", 30)])

    monkeypatch.setattr(launchsites, "run", fake_run)
    got = profiles.profile_program(["python", "train.py"], launch_skip=3, launch_count=5,
                                   timeout=42)
    assert (asked["stop_after"] == 8 and asked["kernels"] == ("triton_poi_fused_gelu_2",)
            and asked["timeout"] == 42)
    assert asked["argv"][-1] == "train.py"
    assert got.ranking[0].sites == ("/u/train.py:30 (forward)",) and got.profiles == profiled


def test_ncus_names_of_a_real_training_step_meet_the_launch_calls_names(data_dir):
    """The transformer step on an H200: ncu's kernel names (shortened namespaces, `const float *`,
    `[lambda() (instance3)]`, `0` for `(SortOrder)0`, `1` for `true`) against the launch calls'
    mangled names. Each is matched by its whole name where the two can be written alike, else by its
    function name, never not at all; and a whole-name match is to a kernel of the same function."""
    recorded = json.loads((data_dir / "diagnosis" / "h200-transformer-kernel-names.json").read_text())
    for how, at_least in (("eager", 36), ("compile", 33)):
        names = recorded[how]["launched"]
        sites = Sites({n: (LaunchSite(n, "/u/step.py", i, "step", i, 1),) for i, n in enumerate(names)}, counted=True)
        by = []
        for kernel in recorded[how]["ncu"]:
            found, how_matched = program.match_sites(kernel, sites)
            by.append(how_matched)
            assert found, kernel
            if how_matched == "name":
                base = demangle.base_name(demangle.demangle(kernel))
                assert {demangle.base_name(demangle.demangle(names[s.line])) for s in found} == {base}, kernel
        assert by.count("name") >= at_least and "" not in by, (how, by.count("name"), len(by))
