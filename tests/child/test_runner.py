"""The runner's orchestration on a machine without a GPU.

A fake device stands in for kprof.child.device.Device: buffers are NumPy byte arrays and a "launch"
runs a NumPy emulation of the kernel (vector_add, reduce_sum) or does nothing (a kernel that
writes nothing). This covers the runner's paths (verify, poison, timing, the values detector, the
bench loop in every mode) in CI; the real device layer is covered by the GPU tests.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from fakedevice import (  # noqa: F401 - what the tests below use
    RULE,
    FakeDevice,
    _copy_async,
    _double,
    _fingerprint,
    _plus_one,
    _reduce_sum,
    _scale_bf16,
    _stream,
    _twice,
    _vector_add,
    fake_cubin,
    job_for,
    run_job,
    timing,
)

from kprof import spec as spec_mod
from kprof.build import build
from kprof.child import hostdata, runner
from kprof.launch import job as job_mod
from kprof.launch.job import RunMode, ValuesMode
from kprof.spec import catalog


@pytest.mark.parametrize("name, sizes", [("vector_add", {"N": 1000}), ("reduce_sum", {"N": 4097})])
def test_run_verifies_and_times(fake, name, sizes):
    data = run_job(fake, job_for(name, sizes, RunMode(time=True)))
    assert data["status"] == "ok", data.get("error")
    assert data["checks"][0]["ok"] and data["time_ms"] == 0.25
    assert ([a["name"] for a in data["allocations"]] == [b.arg.name for b in catalog.load(name).resolve(sizes).buffers])


def test_a_kernel_that_writes_nothing_fails_on_poison(fake, monkeypatch):
    monkeypatch.setitem(FakeDevice.emulations, "vector_add", None)
    data = run_job(fake, job_for("vector_add", {"N": 100}))
    assert data["status"] == "failed" and data["checks"][0]["nonfinite"] == 100


def _vector_add_one_too_far(dev, args):
    """``i <= n``: c[n] written, a[n] and b[n] read (the guard's NaN), the n real elements right."""
    a, b, c, n = args
    dev.view(c, np.float32)[: n + 1] = dev.view(a, np.float32)[: n + 1] + dev.view(b, np.float32)[: n + 1]


def _vector_add_from_minus_one(dev, args):
    """A write one element before the start: a shift back that the verdict of the n elements
    misses."""
    a, b, c, n = args
    base = dev.view(c - 4, np.float32)
    base[: n + 1] = 0.0
    dev.view(c, np.float32)[:n] = dev.view(a, np.float32)[:n] + dev.view(b, np.float32)[:n]


@pytest.mark.parametrize("emulate, where", [(_vector_add_one_too_far, "4 bytes past its end (c[100])"),
                                            (_vector_add_from_minus_one, "4 bytes before its start (c[-1])")])
def test_a_write_outside_a_buffer_fails_the_verdict_by_itself(fake, monkeypatch, emulate, where):
    """Every element right, one written outside: the guard zones of a verified run see it, no
    sanitizer needed; under a tool (no verdict) the buffer is allocated bare, so memcheck sees its
    real bounds."""
    monkeypatch.setitem(FakeDevice.emulations, "vector_add", emulate)
    data = run_job(fake, job_for("vector_add", {"N": 100}))
    assert data["status"] == "failed", data["checks"]
    c, bounds = data["checks"]
    assert c["ok"] and c["name"] == "c"  # the n elements are right
    assert not bounds["ok"] and bounds["metric"] == "bounds" and where in bounds["message"], bounds
    assert "kprof sanitize --tool memcheck" in bounds["message"]
    sizes = []
    real = FakeDevice.alloc
    monkeypatch.setattr(FakeDevice, "alloc", lambda self, n: (sizes.append(n), real(self, n))[1])
    monkeypatch.setitem(FakeDevice.emulations, "vector_add", _vector_add)
    assert run_job(fake, job_for("vector_add", {"N": 100}, RunMode(verify=False)))["status"] == "ok"
    assert sizes == [400, 400, 400]  # bare: a, b, c


def test_a_right_kernel_leaves_the_guards_as_they_were(fake):
    data = run_job(fake, job_for("vector_add", {"N": 1000003}))
    assert data["status"] == "ok" and [c["name"] for c in data["checks"]] == ["c"], data["checks"]


def test_values_detector_runs_all_its_launches(fake, monkeypatch):
    data = run_job(fake, job_for("vector_add", {"N": 100}, ValuesMode(repeats=5)))
    assert data["status"] == "ok" and data["findings"] == []
    monkeypatch.setitem(FakeDevice.emulations, "vector_add", None)
    data = run_job(fake, job_for("vector_add", {"N": 100}, ValuesMode(repeats=5)))
    assert [f["kind"] for f in data["findings"]] == ["unwritten-output"]


@pytest.mark.parametrize("mode", ["cold", "warm", "hot"])
def test_bench_loop_in_every_mode(fake, mode):
    cfg = timing(mode, batch=4 if mode == "hot" else None, timer="events")
    data = run_job(fake, job_for("vector_add", {"N": 256}, cfg))
    assert data["status"] == "ok", data.get("error")
    assert data["timer"] == "events" and data["event_samples"] == data["samples"]
    assert data["stop"] == "noise" and len(data["samples"]) >= 3
    assert data["batch"] == (4 if mode == "hot" else 1)
    expected = 0.25e-3 / 4 if mode == "hot" else 0.25e-3
    assert data["samples"][0] == pytest.approx(expected)


def test_hot_mode_replays_many_launches_even_when_the_warm_up_was_slowed(fake, monkeypatch):
    """Every warm-up launch read 3 ms (another process's time slices on a shared GPU): the graph
    still holds HOT_MIN_BATCH launches, not one."""
    from kprof.child import timing as timing_mod

    monkeypatch.setattr(FakeDevice, "elapsed_ms", lambda self, start, end: 3.0)
    data = run_job(fake, job_for("vector_add", {"N": 256}, timing("hot", timer="events")))
    assert data["status"] == "ok", data.get("error")
    assert data["batch"] == timing_mod.HOT_MIN_BATCH > 1


def test_a_run_asked_for_digests_gives_each_output_s_and_the_mutants_compare_by_them(fake):
    """RunMode(digest=True): each check carries a BLAKE2b digest of the output's bytes, the same for
    the same output and seed; kprof mutants' fingerprint is then the digests, not the verdict's
    numbers."""
    from kprof.corpus import mutants

    first = run_job(fake, job_for("vector_add", {"N": 1000}, RunMode(digest=True)))
    again = run_job(fake, job_for("vector_add", {"N": 1000}, RunMode(digest=True)))
    assert first["status"] == "ok" and len(first["checks"][0]["digest"]) == 32
    assert first["checks"][0]["digest"] == again["checks"][0]["digest"]
    other = run_job(fake, job_for("vector_add", {"N": 1000}, RunMode(digest=True), seed=5))
    assert other["checks"][0]["digest"] != first["checks"][0]["digest"]
    assert "digest" not in run_job(fake, job_for("vector_add", {"N": 1000}, RunMode()))["checks"][0]
    from kprof.launch.childresult import checks_of

    # the same bytes, a reference summed in another order
    moved = checks_of([{**first["checks"][0], "rel_err": 1e-17}])
    assert mutants.fingerprint(checks_of(first["checks"])) == mutants.fingerprint(moved)
    assert (mutants.fingerprint(checks_of(first["checks"])) != mutants.fingerprint(checks_of(other["checks"])))


def test_bench_never_times_a_wrong_kernel(fake, monkeypatch):
    monkeypatch.setitem(FakeDevice.emulations, "vector_add", None)
    data = run_job(fake, job_for("vector_add", {"N": 64}, timing("cold")))
    assert data["status"] == "failed" and "samples" not in data


def test_params_reach_the_runner(fake):
    data = run_job(fake, job_for("vector_add", {"N": 1000}, params={"BLOCK": "128"}))
    assert data["launch"]["block"] == [128, 1, 1] and data["status"] == "ok"


def test_bfloat16_inputs_and_scalars(fake, data_dir):
    from kprof import spec as spec_mod

    spec = spec_mod.load(data_dir / "kernels" / "scale_bf16.yaml")
    data = run_job(fake, job_for(spec))
    assert data["status"] == "ok", data.get("error") or data.get("checks")
    assert data["checks"][0]["rel_err"] == 0.0


def test_steps_launch_in_order_with_their_own_arguments(fake, data_dir, tmp_path):
    from kprof import spec as spec_mod

    spec = spec_mod.load(data_dir / "kernels" / "two_steps.yaml")
    data = run_job(fake, job_for(spec))
    assert data["status"] == "ok", data.get("error") or data.get("checks")
    assert [s["entry"] for s in data["steps"]] == ["twice", "plus_one"]
    assert data["steps"][0]["block"] == [128, 1, 1] and data["steps"][1]["block"] == [256, 1, 1]
    # Reversed, plus_one reads the scratch buffer's poison (NaN): the output fails verification.
    import shutil

    import yaml

    text = yaml.safe_load((data_dir / "kernels" / "two_steps.yaml").read_text())
    text["steps"].reverse()
    shutil.copy(data_dir / "kernels" / "two_steps.cu", tmp_path / "two_steps.cu")
    (tmp_path / "two_steps.yaml").write_text(yaml.safe_dump(text))
    reversed_spec = spec_mod.load(tmp_path / "two_steps.yaml")
    data = run_job(fake, job_for(reversed_spec))
    assert data["status"] == "failed" and data["checks"][0]["nonfinite"] == 1000


@pytest.mark.nvcc
def test_steps_kernels_build(data_dir):
    from kprof import spec as spec_mod

    built = build.build(spec_mod.load(data_dir / "kernels" / "two_steps.yaml"), "sm_90")
    assert built.usage_of("twice").registers > 0 and built.usage_of("plus_one").registers > 0


@pytest.mark.nvcc
def test_bfloat16_kernel_builds(data_dir):
    from kprof import spec as spec_mod

    spec = spec_mod.load(data_dir / "kernels" / "scale_bf16.yaml")
    assert build.build(spec, "sm_90").usage_of("scale_bf16").registers > 0


class FakeClock:
    """Stands in for cupti_timer.KernelClock: one record per kernel the fake device launched,
    kprof's helpers 5 us long, every other kernel 2 us, back to back."""

    device: FakeDevice | None = None

    def __init__(self, hw_trace: bool = False) -> None:
        self.hw_trace = False
        self.seen = 0
        self.closed = False

    def take(self):
        from kprof.child.cupti_timer import KernelRecord

        names = self.device.launched[self.seen:]
        self.seen += len(names)
        out, t = [], 1_000_000  # GPU timestamps: never 0 for a kernel that finished
        for name in names:
            ns = 5000 if name.startswith("kprof_") else 2000
            out.append(KernelRecord(name, t, t + ns))
            t += ns + 100
        return out

    def close(self):
        self.closed = True


@pytest.fixture
def fake_cupti(fake, monkeypatch):
    import kprof.child.device
    from kprof.child import cupti_timer

    class Device(FakeDevice):
        def __init__(self, ordinal=0):
            super().__init__(ordinal)
            FakeClock.device = self

    monkeypatch.setattr(kprof.child.device, "Device", Device)
    monkeypatch.setattr(cupti_timer, "unavailable", lambda: None)
    monkeypatch.setattr(cupti_timer, "KernelClock", FakeClock)
    return fake


@pytest.mark.parametrize("mode", ["cold", "warm", "hot"])
def test_bench_reads_kernel_timestamps_when_cupti_works(fake_cupti, mode):
    data = run_job(fake_cupti, job_for("vector_add", {"N": 256}, timing(mode, batch=4 if mode == "hot" else None)))
    assert data["status"] == "ok", data.get("error")
    assert data["timer"] == "cupti" and "timer_note" not in data
    # The kernel's own 2 us, never the helpers' time or the events' 0.25 ms.
    assert data["samples"] == [pytest.approx(2e-6)] * len(data["samples"])
    assert data["event_samples"][0] == pytest.approx(0.25e-3 / (4 if mode == "hot" else 1))


def test_bench_falls_back_to_events_and_says_why(fake, monkeypatch):
    from kprof.child import cupti_timer

    monkeypatch.setattr(cupti_timer, "unavailable", lambda: "cupti-python is not installed")
    data = run_job(fake, job_for("vector_add", {"N": 256}, timing("warm", timer="auto")))
    assert data["status"] == "ok" and data["timer"] == "events"
    assert data["timer_note"] == "cupti-python is not installed"
    data = run_job(fake, job_for("vector_add", {"N": 256}, timing("warm", timer="cupti")))
    assert (data["status"] == "error" and "--timer cupti: cupti-python is not installed" in data["error"]["message"])


def test_job_round_trips_through_json():
    job = job_for("rmsnorm_onepass", {"R": 3}, timing("hot", batch=7), params={"PER": "4"}, seed=5)
    again = job_mod.from_json(job.to_json())
    assert again == job and again.kind == "timing" and again.target.seed == 5


@pytest.mark.parametrize("text, message", [
    ("not json", "not JSON"),
    ('{"version": 1, "kind": "run"}', "version 1 but this runner reads version 9"),
    ('{"version": 9, "kind": "run", "target": {}, "mode": {}}', "malformed: KeyError"),
    ('{"version": 9, "kind": "nope", "target": {}, "mode": {}}', "malformed: KeyError"),
])
def test_a_job_the_child_cannot_take_is_one_clear_error(tmp_path, text, message):
    (tmp_path / "job.json").write_text(text)
    assert runner.main([str(tmp_path / "job.json"), str(tmp_path / "result.json")]) == 3
    data = json.loads((tmp_path / "result.json").read_text())
    assert (data["status"] == "error" and data["error"]["type"] == "JobError" and message in data["error"]["message"])
    assert "traceback" not in data["error"]


def test_the_child_never_reads_the_spec(fake, tmp_path, monkeypatch):
    """The job carries everything the child needs: it never loads a spec."""
    from kprof import spec as spec_mod

    job = job_for("vector_add", {"N": 100}, RunMode())
    monkeypatch.setattr(spec_mod, "load", lambda *a, **k: pytest.fail("the runner loaded a spec"))
    assert run_job(fake, job)["status"] == "ok"


def test_shared_memory_beyond_the_devices_limit_is_refused(fake, tmp_path):
    """The fake device allows 232,448 B per block (an H200's opt-in limit)."""
    from kprof.launch.job import Job, target_of

    spec = catalog.load("vector_add")
    resolved = spec.resolve({"N": 100})
    step = resolved.steps[0]
    from dataclasses import replace

    big = replace(resolved, steps=(replace(step, shared_mem=300_000),))
    data = run_job(fake, Job(target_of(big, fake_cubin()), RunMode()))
    assert data["status"] == "error" and data["error"]["type"] == "UsageError"
    assert ("300,000 B of dynamic shared memory" in data["error"]["message"] and "232,448 B per block" in data["error"]["message"])


def test_kprof_new_writes_a_kernel_that_verifies_as_written(fake, tmp_path, monkeypatch, capsys):
    """The template's reference is what its kernel computes (the kernel emulated here; its build is
    checked with nvcc in test_new_kernels_build)."""
    from kprof import spec as spec_mod
    from kprof.commands import cli

    assert cli.main(["new", "my_saxpy", "--dir", str(tmp_path / "k")]) == 0

    def saxpy(dev, args):
        x, y, alpha, n = args
        dev.view(y, np.float32)[:n] = alpha * dev.view(x, np.float32)[:n] + dev.view(y, np.float32)[:n]

    monkeypatch.setitem(FakeDevice.emulations, "my_saxpy", saxpy)
    spec = spec_mod.load(tmp_path / "k" / "my_saxpy.yaml")
    for sizes in [{}] + [dict(c.sizes) for c in spec.checks]:
        data = run_job(fake, job_for(spec, sizes or {"N": 4096}))
        assert data["status"] == "ok", (sizes, data.get("checks"))


@pytest.mark.nvcc
def test_new_kernels_build(tmp_path):
    from kprof.commands import cli

    assert cli.main(["new", "mine", "--dir", str(tmp_path)]) == 0
    assert cli.main(["new", "mm", "--dir", str(tmp_path), "--like", "tiled_matmul"]) == 0
    assert (cli.main(["build", str(tmp_path / "mine.yaml"), str(tmp_path / "mm.yaml"), "--arch", "sm_90"]) == 0)
    assert cli.main(["new", "mine", "--dir", str(tmp_path)]) == 2, "never overwrites"


def _histogram(dev, args):
    x, hist, n = args
    v = dev.view(x, np.int32)[:n]
    # the kernel leaves values outside the bins out
    np.add.at(dev.view(hist, np.int32), v[(v >= 0) & (v < 256)], 1)


def _exclusive_scan(dev, args):
    x, y, rows, cols = args
    xs = dev.view(x, np.int32)[: rows * cols].reshape(rows, cols)
    dev.view(y, np.int32)[: rows * cols] = (np.cumsum(xs, axis=1) - xs).ravel()


def _gather_rows(dev, args):
    table, idx, y, rows, vocab, dim = args
    t = dev.view(table, np.float32)[: vocab * dim].reshape(vocab, dim)
    i = np.clip(dev.view(idx, np.int32)[:rows], 0, vocab - 1)
    dev.view(y, np.float32)[: rows * dim] = t[i].ravel()


def _prefix_max(dev, args):
    x, y, rows, cols = args
    xs = dev.view(x, np.float32)[: rows * cols].reshape(rows, cols)
    dev.view(y, np.float32)[: rows * cols] = np.maximum.accumulate(xs, axis=1).ravel()


@pytest.mark.parametrize("name, emulate", [("histogram", _histogram), ("exclusive_scan", _exclusive_scan),
                                           ("gather_rows", _gather_rows), ("prefix_max", _prefix_max)])
def test_vocabulary_and_python_reference_kernels_verify(fake, monkeypatch, name, emulate):
    """The histogram (bincount), exclusive scan (cumsum exclusive), gather (take) and running
    maximum (a Python reference) specs agree with what their kernels compute, at every checked
    size."""
    monkeypatch.setitem(FakeDevice.emulations, name, emulate)
    spec = catalog.load(name)
    for sizes in [dict(c.sizes) for c in spec.checks] + [spec.preset("sanitize")]:
        data = run_job(fake, job_for(name, sizes))
        assert data["status"] == "ok", (name, sizes, data.get("error") or data.get("checks"))
    # and a wrong answer fails, exactly: one count or one element off
    def off_by_one(dev, args):
        emulate(dev, args)
        out = dev.memory[args[1] if name in ("histogram", "exclusive_scan", "prefix_max") else args[2]]
        out[0] ^= 1  # flip the lowest bit of the first element

    monkeypatch.setitem(FakeDevice.emulations, name, off_by_one)
    assert run_job(fake, job_for(name, spec.preset("sanitize")))["status"] == "failed"


def _bf16_values(dev, ptr, n):
    return (dev.view(ptr, np.uint16)[:n].astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _attention(key_shift=0, causal=0):
    """flash_attention's arithmetic in NumPy: float32 logits, P rounded to bfloat16 for P V while
    the row sum adds the float32 values, tiles of 64 keys with a running maximum (what the kernel
    does, not how); ``causal``: the spec's CAUSAL define; ``key_shift`` 1: the causal mask one key
    late (each query also sees the next key)."""
    def emulate(dev, args):
        from kprof.child.hostdata import to_bf16

        q, k, v, o, S = args
        d = 128  # the specs' HD
        bh = dev.grid[1]  # a block row per head
        n = bh * S * d
        Q, K, V = (_bf16_values(dev, p, n).reshape(bh, S, d) for p in (q, k, v))
        logits = (Q @ np.swapaxes(K, -1, -2) / np.sqrt(d)).astype(np.float32)
        if causal:
            logits[:, np.arange(S)[:, None] + key_shift < np.arange(S)[None, :]] = -np.inf
        p = np.exp2((logits - logits.max(-1, keepdims=True)) * np.float32(1.4426950408889634)).astype(np.float32)
        pb = (to_bf16(p.astype(np.float64)).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        out = (pb @ V) / p.sum(-1, keepdims=True, dtype=np.float32)
        # O is bfloat16, as FlashAttention writes it
        dev.view(o, np.uint16)[:n] = to_bf16(out.ravel())

    return emulate


@pytest.mark.parametrize("name", ["flash_attention", "flash_attention_causal"])
def test_the_attention_specs_verify_what_flash_attention_computes(fake, monkeypatch, name):
    """The float64 reference (attention_ref.py), the normwise tolerance and the CAUSAL define agree
    with the kernel's arithmetic (P rounded to bfloat16) at every checked size (with its fills:
    logits of about +-100 too); a causal mask one key late fails. (Of the CUDA code itself nothing
    is run here.)"""
    spec = catalog.load(name)
    causal = int(dict(spec.defines)["CAUSAL"])
    assert causal == name.endswith("causal")
    monkeypatch.setitem(FakeDevice.emulations, "flash_attention", _attention(causal=causal))
    checks = [c for c in spec.checks if dict(c.sizes)["S"] <= 1000]
    assert any(c.fills for c in checks)
    for check in checks:
        data = run_job(fake, job_for(spec.with_fills(check.fills), dict(check.sizes)))
        assert data["status"] == "ok", (name, check.label, data.get("error") or data.get("checks"))
    data = run_job(fake, job_for(name, spec.preset("sanitize")))
    assert data["status"] == "ok", (name, data.get("error") or data.get("checks"))
    if causal:
        monkeypatch.setitem(FakeDevice.emulations, "flash_attention", _attention(key_shift=1, causal=1))
        data = run_job(fake, job_for(name, spec.preset("sanitize")))
        assert data["status"] == "failed" and "normwise" in json.dumps(data["checks"])


@pytest.mark.parametrize("kind", ["read", "write", "copy", "add"])
@pytest.mark.parametrize("width", [4, 8, 16])
def test_peak_stream_kernels_verify_and_time_at_every_width(fake, kind, width):
    """What kprof peak hands the child for each ceiling: the builtin specs load, resolve (n = BYTES
    / WIDTH), verify (the read kernel's flag stays 0, the write kernel's output is all ones) and
    time."""
    job = job_for(catalog.builtin(f"kprof_{kind}"), {"BYTES": 8192, "BLOCKS": 2}, timing("cold"),
                  params={"WIDTH": str(width)})
    assert job.target.scalars[0][0].name == "n" and job.target.scalars[0][1] == 8192 // width
    data = run_job(fake, job)
    assert data["status"] == "ok", data.get("error") or data.get("checks")
    assert data["samples"] and all(c["ok"] for c in data["checks"])


def test_peak_memcpy_ceiling_times_the_driver_copy(fake):
    job = job_for(catalog.builtin("kprof_copy"), {"BYTES": 8192},
                  timing("cold", library="memcpy_dtod", timer="events"))
    data = run_job(fake, job)
    assert data["status"] == "ok" and data["timer"] == "events", data.get("error")


# ------------------------------------------------------------------------------ Python baselines


class _NumpyFramework:
    """A framework over the fake device's memory: kprof's buffers as NumPy views, as PyTorch wraps
    them."""

    name = "fake"
    device = None
    streams: list = []

    def wrap(self, view):
        cai = view.__cuda_array_interface__
        base = self.device.memory[cai["data"][0]]
        return np.frombuffer(base, dtype=np.dtype(cai["typestr"]), count=int(np.prod(cai["shape"]))).reshape(cai["shape"])

    from contextlib import contextmanager

    @contextmanager
    def on_stream(self, handle):
        self.streams.append(handle)
        yield

    def copy_into(self, dst, src):
        dst[...] = np.asarray(src).reshape(dst.shape)

    def matches(self, obj):
        return isinstance(obj, np.ndarray)

    def info(self, obj):
        from kprof.child.framework import ArrayInfo

        return ArrayInfo(0, obj.shape, obj.dtype.name, True, 0, self.name)

    allocated: list = []  # every block alloc gave (the pool kprof poisons before a verified call)

    def alloc(self, shape, dtype, like, zero=False):
        block = (np.zeros if zero else np.empty)(shape, dtype=like.dtype)
        self.allocated.append(block)
        return block


@pytest.fixture
def numpy_framework(fake, monkeypatch):
    import kprof.child.device
    from kprof.child import framework

    class Recording(FakeDevice):
        def __init__(self, ordinal=0):
            super().__init__(ordinal)
            _NumpyFramework.device = self

        def stream(self):
            return 42

    monkeypatch.setattr(kprof.child.device, "Device", Recording)
    monkeypatch.setattr(framework, "choose", _NumpyFramework)
    _NumpyFramework.streams = []
    return fake


def _baseline_job(tmp_path, body, name="vector_add", sizes=None):
    from kprof.spec import pyref

    (tmp_path / "base.py").write_text(body)
    stored = pyref.Ref(tmp_path / "base.py", "op").stored()
    return job_for(name, sizes or {"N": 1000}, timing("cold", python=stored))


def test_a_python_baseline_is_verified_then_timed_on_kprofs_stream(numpy_framework):
    body = "calls = []\ndef op(a, b, N):\n    calls.append(N)\n    return a + b\n" \
           "def _prep(a, b, N):\n    calls.append('prepared')\nop.prepare = _prep\n"
    data = run_job(numpy_framework, _baseline_job(numpy_framework, body))
    assert data["status"] == "ok", data.get("error")
    assert data["checks"][0]["ok"] and data["samples"] and data["baseline_framework"] == "fake"
    assert data["baseline_callable"] == "base.py:op" and data["baseline_prepare_s"] >= 0
    assert set(_NumpyFramework.streams) == {42}, "every call ran on kprof's timing stream"


def test_a_baseline_result_of_another_dtype_is_flagged_other_dtype(numpy_framework):
    """A float64 result where the spec's c is float32: right values (kprof converts it to verify
    it), and another job than the kernel's; a float32 result is not flagged."""
    data = run_job(numpy_framework, _baseline_job(numpy_framework, "def op(a, b):\n    return (a + b).astype('float64')\n"))
    assert data["status"] == "ok", data.get("error")
    (flag,) = [f for f in data["integrity"]["flags"] if f.startswith("other-dtype")]
    assert ("returned c as float64 where the spec's is float32" in flag and "result dtype" in data["integrity"]["checked"])
    data = run_job(numpy_framework, _baseline_job(numpy_framework, "def op(a, b):\n    return a + b\n"))
    assert not [f for f in data["integrity"]["flags"] if f.startswith("other-dtype")]


def test_a_wrong_python_baseline_fails_verification_and_is_not_timed(numpy_framework):
    data = run_job(numpy_framework, _baseline_job(numpy_framework, "def op(a, b):\n    return a - b\n"))
    assert data["status"] == "failed" and not data["checks"][0]["ok"] and "samples" not in data


def test_an_exception_in_a_python_baseline_is_the_users_with_their_traceback(numpy_framework):
    data = run_job(numpy_framework, _baseline_job(numpy_framework, "def op(a, b):\n    return a / undefined_name\n"))
    assert data["status"] == "error" and data["error"]["type"] == "UserCodeError"
    assert "your baseline base.py:op raised NameError" in data["error"]["message"]
    assert "base.py" in data["error"].get("log", "") or "base.py" in json.dumps(data["error"])


def test_a_python_baseline_returning_the_wrong_number_of_outputs_is_named(numpy_framework):
    data = run_job(numpy_framework, _baseline_job(numpy_framework, "def op(a, b):\n    return a + b, a\n"))
    assert (data["status"] == "error" and "returned 2 result(s); the spec has 1 output(s) (c)" in data["error"]["message"])


# ------------------------------------------------------------------------------ Python operations

_OP_SPEC = ("python: ops.py:{func}\nsizes: {{N: 1000}}\nargs:\n"
            "  - {{name: a, buffer: float32, shape: [N], role: in}}\n  - {{name: b, buffer: float32, shape: [N], role: in}}\n"
            "  - {{name: c, buffer: float32, shape: [N], role: out}}\nreference: {{c: a + b}}\n")


def _op_spec(tmp_path, func, body):
    from kprof import spec as spec_mod

    (tmp_path / "ops.py").write_text(body)
    (tmp_path / "op.yaml").write_text(_OP_SPEC.format(func=func))
    return spec_mod.load(tmp_path / "op.yaml")


@pytest.mark.parametrize("func, body", [
    ("add", "def add(a, b):\n    return a + b\n"),  # returns its output
    # writes it in place, as a Triton kernel does
    ("add_into", "def add_into(a, b, c, N):\n    c[:N] = a + b\n"),
])
def test_a_python_operation_runs_verifies_and_times_like_a_kernel(numpy_framework, func, body):
    spec = _op_spec(numpy_framework, func, body)
    assert spec.python and spec.entry == func and spec.entries == ()
    data = run_job(numpy_framework, job_for(spec, None, RunMode(time=True)))
    assert data["status"] == "ok" and data["checks"][0]["ok"], data.get("error") or data["checks"]
    assert data["operation_framework"] == "fake" and data["registers"] is None
    timed = run_job(numpy_framework, job_for(spec, None, timing("cold")))
    assert timed["status"] == "ok" and timed["samples"], timed.get("error")


def test_a_wrong_python_operation_fails_verification(numpy_framework):
    spec = _op_spec(numpy_framework, "add", "def add(a, b):\n    return a * b\n")
    data = run_job(numpy_framework, job_for(spec, None, RunMode()))
    assert data["status"] == "failed" and "elements exceed" in data["checks"][0]["message"]


def test_a_python_operations_defines_reach_it_so_param_sweeps_work(numpy_framework):
    from kprof import spec as spec_mod

    (numpy_framework / "ops.py").write_text("def add(a, b, SCALE):\n    return (a + b) * SCALE\n")
    (numpy_framework / "op.yaml").write_text(_OP_SPEC.format(func="add").replace("reference: {c: a + b}",
                                             "defines: {SCALE: 1}\nreference: {c: (a + b) * SCALE}"))
    spec = spec_mod.load(numpy_framework / "op.yaml")
    data = run_job(numpy_framework, job_for(spec, None, RunMode(), params={"SCALE": "3"}))
    assert data["status"] == "ok" and data["checks"][0]["ok"], data.get("error") or data["checks"]


MM_SPEC = """source: k.cu
entry: mm_fake
sizes: {M: 16, N: 16, K: 4096}
args:
  - {name: A, buffer: float32, shape: [M, K], role: in}
  - {name: B, buffer: float32, shape: [K, N], role: in}
  - {name: C, buffer: float32, shape: [M, N], role: out}
  - {name: M, scalar: int32, value: M}
  - {name: N, scalar: int32, value: N}
  - {name: K, scalar: int32, value: K}
launch: {grid: [1], block: [32]}
reference: {C: A @ B}
"""


def _mm_fake(extra_term):
    def emulate(dev, args):
        a, b, c, m, n, k = args
        A = dev.view(a, np.float32)[: m * k].reshape(m, k)
        B = dev.view(b, np.float32)[: k * n].reshape(k, n)
        C = np.zeros((m, n), np.float32)
        # one float32 product at a time, in order: rounding like a simple kernel's
        for i in range(k):
            C += np.outer(A[:, i], B[i, :])
        if extra_term:
            # a term counted twice: a real bug, small beside the row's sum
            C[3, 5] += A[3, 100] * B[100, 5]
        dev.view(c, np.float32)[: m * n] = C.ravel()
    return emulate


def test_a_scale_tolerance_judges_a_sum_by_the_size_of_its_terms(fake, monkeypatch, tmp_path):
    """``tolerance.scale: {C: "abs(A) @ abs(B)"}``: rtol times the size of what each element sums,
    not
    |C| (small where the terms cancel), so a correct float32 matmul passes at rtol 1e-6 where the
    plain bound fails it, and a term counted twice still fails."""
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "plain.yaml").write_text(MM_SPEC + "tolerance: {rtol: 1e-6, atol: 0}\n")
    (tmp_path / "scaled.yaml").write_text(MM_SPEC + 'tolerance: {rtol: 1e-6, atol: 0, scale: {C: "abs(A) @ abs(B)"}}\n')
    plain, scaled = spec_mod.load(tmp_path / "plain.yaml"), spec_mod.load(tmp_path / "scaled.yaml")
    assert scaled.tolerance.scale == (("C", "abs(A) @ abs(B)"),)
    job = job_for(scaled)
    assert job_mod.from_json(job.to_json()) == job and job.target.scale == scaled.tolerance.scale
    monkeypatch.setitem(FakeDevice.emulations, "mm_fake", _mm_fake(False))
    assert run_job(fake, job_for(plain))["status"] == "failed"
    data = run_job(fake, job)
    assert (data["status"] == "ok" and "0.0e+00 + 1.0e-06 x (abs(A) @ abs(B))" in data["checks"][0]["message"])
    values = run_job(fake, job_for(scaled, mode=ValuesMode(repeats=2)))
    assert values["status"] == "ok" and values["findings"] == [], "the values detector judges with the same scale"
    monkeypatch.setitem(FakeDevice.emulations, "mm_fake", _mm_fake(True))
    data = run_job(fake, job)
    assert (data["status"] == "failed" and data["checks"][0]["failing"] == 1 and "C[3, 5]" in data["checks"][0]["message"])
    values = run_job(fake, job_for(scaled, mode=ValuesMode(repeats=2)))
    assert [f["kind"] for f in values["findings"]] == ["wrong-result"]


class _Ranges:
    """A stand-in for the nvtx package: ranges pushed and popped, into the log the operation writes
    too."""

    def __init__(self, log):
        self.log = log

    def push_range(self, name, domain):
        self.log.append(("push", name))

    def pop_range(self, domain):
        self.log.append(("pop",))


_PREPARED_OP = ("import _kprof_log\n"
                "def add_into(a, b, c, N):\n    _kprof_log.log.append('call')\n    {body}\n"
                "def _prep(a, b, c, N):\n    _kprof_log.log.append('prepare')\n    c[:N] = a + b\n"
                "add_into.prepare = _prep\n")


def _prepared_run(numpy_framework, monkeypatch, body):
    import types

    import kprof.child.workspace

    log = []
    monkeypatch.setitem(sys.modules, "_kprof_log", types.SimpleNamespace(log=log))
    monkeypatch.setattr(kprof.child.workspace, "nvtx_module", lambda: _Ranges(log))
    spec = _op_spec(numpy_framework, "add_into", _PREPARED_OP.format(body=body))
    return run_job(numpy_framework, job_for(spec, None, RunMode())), log


def test_a_python_operation_is_prepared_outside_the_range_a_profiler_selects(numpy_framework, monkeypatch):
    """kprof profile --baseline torch.compile: ncu profiled the compile's and the autotuner's
    launches (690 kernels for two operations) when prepare ran inside the range; one call is inside
    it now."""
    data, log = _prepared_run(numpy_framework, monkeypatch, "c[:N] = a + b")
    assert data["status"] == "ok" and data["checks"][0]["ok"], data.get("error") or data["checks"]
    assert log == ["prepare", ("push", "op"), "call", ("pop",)]


def test_what_a_prepare_wrote_cannot_hide_an_output_the_call_leaves_unwritten(numpy_framework, monkeypatch):
    data, log = _prepared_run(numpy_framework, monkeypatch, "pass")
    assert data["status"] == "failed" and not data["checks"][0]["ok"], "the buffers were uploaded again after prepare"
    assert log[0] == "prepare"


@pytest.mark.parametrize("dtype, fill, value", [("float32", "const(3.5)", 3.5), ("bfloat16", "ones", 1.0),
                                                ("int32", "zeros", 0), ("float64", "const(2.0)", 2.0)])
def test_constant_inputs_and_poison_are_set_on_the_device(fake, monkeypatch, tmp_path, dtype, fill, value):
    """An input of one value and an output's poison are cuMemsetD32 words (kprof peak's 1 GiB
    buffers need no host array and no copy); a reference that names the input still reads it; 8-byte
    values are copied as before."""
    sets, copies = [], []
    real_set, real_copy = FakeDevice.memset32, FakeDevice.upload
    monkeypatch.setattr(FakeDevice, "memset32", lambda self, p, v, n: (sets.append((p, v, n)), real_set(self, p, v, n)))
    monkeypatch.setattr(FakeDevice, "upload", lambda self, p, a: (copies.append(p), real_copy(self, p, a)))

    def copy_in(dev, args):
        x, y, n = args
        nbytes = n * np.dtype(hostdata.numpy_dtype(dtype)).itemsize
        dev.memory[y][:nbytes] = dev.memory[x][:nbytes]

    monkeypatch.setitem(FakeDevice.emulations, "copy_in", copy_in)
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "k.yaml").write_text(
        f"entry: copy_in\nsizes: {{N: 1000}}\nargs:\n  - {{name: x, buffer: {dtype}, shape: [N], role: in, fill: '{fill}'}}\n"
        f"  - {{name: y, buffer: {dtype}, shape: [N], role: out}}\n  - {{name: n, scalar: int64, value: N}}\n"
        f"launch: {{grid: [1], block: [256]}}\nreference: {{y: x}}\ntolerance: {{rtol: 0, atol: 0}}\n")
    data = run_job(fake, job_for(spec_mod.load(tmp_path / "k.yaml")))
    assert data["status"] == "ok", data.get("error") or data.get("checks")
    x, y = (next(a["base"] for a in data["allocations"] if a["name"] == n) for n in "xy")
    # not the guard zones around them (bytes of one value)
    copies = [p for p in copies if p in (x, y)]
    if dtype == "float64":
        assert [p for p, _, _ in sets] == [] and sorted(copies) == sorted([x, y])
    else:
        assert {p for p, _, _ in sets} == {x, y} and copies == []
        word = next(v for p, v, _ in sets if p == x)
        expected = np.full(4 // np.dtype(hostdata.numpy_dtype(dtype)).itemsize,
                           hostdata.to_bf16(value) if dtype == "bfloat16" else value, hostdata.numpy_dtype(dtype))
        assert word == int(expected.view("<u4")[0])


def test_a_batch_runs_its_jobs_in_one_process_and_stops_after_an_error(fake, monkeypatch):
    """kprof.child.runner --batch: each job's own result and wall time, a progress line before each;
    after a job that ends in an error (here: more memory than the device has) the rest are left to
    the parent."""
    import json as json_mod

    from kprof.launch.job import RunMode

    jobs = [job_for("vector_add", {"N": 100}), job_for("vector_add", {"N": 1 << 29}), job_for("vector_add", {"N": 7})]
    pairs = [(fake / f"job-{i}.json", fake / f"result-{i}.json") for i in range(3)]
    for (path, _), job in zip(pairs, jobs):
        path.write_text(job.to_json())
    manifest = fake / "batch.json"
    manifest.write_text(json_mod.dumps({"jobs": [[str(a), str(b)] for a, b in pairs], "progress": str(fake / "p.txt")}))
    assert runner.main(["--batch", str(manifest)]) == 3
    first, second = (json_mod.loads(b.read_text()) for _, b in pairs[:2])
    assert first["status"] == "ok" and first["checks"][0]["ok"] and first["job_seconds"] > 0
    assert second["status"] == "error" and "GiB of device memory" in second["error"]["message"]
    assert not pairs[2][1].exists()
    assert [line.split()[0] for line in (fake / "p.txt").read_text().splitlines()] == ["0", "1"]
    assert isinstance(jobs[0].mode, RunMode)


@pytest.mark.parametrize("keep", [0, None])
def test_a_verification_batch_holds_one_context_for_all_its_jobs(fake, monkeypatch, keep):
    """"keep_context": the GPU's primary context held once around every job (each job's Device
    retains and releases it; without the hold the last release would destroy it, and the next job
    make it again); a batch without it (a tool's) holds nothing."""
    import json as json_mod
    from contextlib import contextmanager

    import kprof.child.device

    events = []

    @contextmanager
    def held(ordinal):
        events.append(("hold", ordinal))
        yield
        events.append(("release", ordinal))

    monkeypatch.setattr(kprof.child.device, "primary_context_held", held)
    real_close = FakeDevice.close
    monkeypatch.setattr(FakeDevice, "close", lambda self: (events.append(("job",)), real_close(self)))
    pairs = [(fake / f"job-{i}.json", fake / f"result-{i}.json") for i in range(3)]
    for path, _ in pairs:
        path.write_text(job_for("vector_add", {"N": 100}).to_json())
    plan = {"jobs": [[str(a), str(b)] for a, b in pairs], "progress": str(fake / "p.txt")}
    if keep is not None:
        plan["keep_context"] = keep
    (fake / "batch.json").write_text(json_mod.dumps(plan))
    assert runner.main(["--batch", str(fake / "batch.json")]) == 0
    jobs = [("job",)] * 3
    assert events == ([("hold", 0), *jobs, ("release", 0)] if keep is not None else jobs)


def test_run_kernels_asks_for_one_context_and_a_tool_s_batch_does_not(monkeypatch):
    from kprof.launch import launch

    plans = []

    def fake_run(argv, **kw):
        plans.append(json.loads(Path(argv[-1]).read_text()))
        return SimpleNamespace(code=0, stdout="", stderr="", timed_out=False, seconds=0.1)

    monkeypatch.setattr(launch.proc, "run", fake_run)
    job = job_for("vector_add", {"N": 100})
    launch.run_batch([job, job], keep_context=True)
    launch.run_batch([job, job], keep_context=True, wrapper=["compute-sanitizer"])
    launch.run_batch([job, job])
    assert [p.get("keep_context") for p in plans] == [0, None, None]


# --------------------------------------------------------------------------- benchmark integrity

_CHEATS = {
    # a result replayed from a cache keyed on the input's address: right for the first inputs only
    "ignores-input": "cache = {}\ndef op(a, b, N):\n    key = a.__array_interface__['data'][0]\n"
                     "    if key not in cache:\n        cache[key] = a + b\n    return cache[key]\n",
    # the input changed so that the next call has less to do
    "changed-input": "def op(a, b, N):\n    out = a + b\n    b[:] = 0\n    return out\n",
    # the output written once, by the first call, and left as it is after
    "stale-output": "done = []\ndef op(a, b, c, N):\n    if not done:\n        c[:N] = a + b\n        done.append(1)\n",
}


@pytest.fixture
def honest_clock(monkeypatch):
    """Events that read 1 ns a call: the fake device's 0.25 ms would add up to more than the loop's
    wall time, which the timer check flags (next test)."""
    monkeypatch.setattr(FakeDevice, "elapsed_ms", lambda self, start, end: 1e-6)


def test_a_timer_that_reads_more_than_the_host_clock_is_flagged(fake, monkeypatch):
    """The fake device's events say 50 ms a call, in a loop that takes far less by the host's
    clock."""
    monkeypatch.setattr(FakeDevice, "elapsed_ms", lambda self, start, end: 50.0)
    data = run_job(fake, job_for("vector_add", {"N": 1000}, timing("cold")))
    assert [f.split(":")[0] for f in data["integrity"]["flags"]] == ["timer"], data["integrity"]


@pytest.mark.parametrize("kind", sorted(_CHEATS))
def test_a_cheating_python_baseline_raises_its_integrity_flag(numpy_framework, honest_clock, kind):
    """Each cheat passes the verdict of its first call, is timed, and raises the flag of what it
    does in the two verified calls after the loop (or in the inputs it left); the honest one raises
    none."""
    data = run_job(numpy_framework, _baseline_job(numpy_framework, _CHEATS[kind]))
    assert data["status"] == "ok" and data["checks"][0]["ok"], data.get("error") or data["checks"]
    flags = data["integrity"]["flags"]
    # a call that writes nothing ignores new inputs too
    assert [f.split(":")[0] for f in flags] == ([kind, "ignores-input"] if kind == "stale-output" else [kind]), flags
    assert "new inputs" in data["integrity"]["checked"] and data["integrity_seconds"] >= 0


def test_an_honest_python_baseline_and_kernel_raise_no_flag(numpy_framework, fake, honest_clock):
    data = run_job(numpy_framework, _baseline_job(numpy_framework, "def op(a, b, N):\n    return a + b\n"))
    assert data["status"] == "ok" and data["integrity"]["flags"] == [], data["integrity"]
    kernel = run_job(fake, job_for("vector_add", {"N": 1000}, timing("cold")))
    assert kernel["status"] == "ok" and kernel["integrity"]["flags"] == [], kernel["integrity"]


def test_a_kernel_that_changes_its_input_is_flagged(fake, monkeypatch, honest_clock):
    def add_and_spoil(dev, args):
        a, b, c, n = args
        dev.view(c, np.float32)[:n] = dev.view(a, np.float32)[:n] + dev.view(b, np.float32)[:n]
        dev.view(a, np.float32)[:n] = 0.0  # a is an input (role in)

    monkeypatch.setitem(FakeDevice.emulations, "vector_add", add_and_spoil)
    data = run_job(fake, job_for("vector_add", {"N": 1000}, timing("cold")))
    flags = data["integrity"]["flags"]
    assert any(f.startswith("changed-input: the timed calls changed a ") for f in flags), flags


def test_kprof_peak_s_own_kernels_go_without_the_checks(fake):
    job = job_for("vector_add", {"N": 1000}, timing("cold", integrity=False))
    data = run_job(fake, job)
    assert data["status"] == "ok" and "integrity" not in data


def test_a_call_that_launches_no_kernel_is_flagged_not_an_error_under_cupti(numpy_framework, monkeypatch, honest_clock):
    """A Python operation whose calls launch nothing (a replayed result: the fake device sees no
    kernel of a NumPy call) is timed by events and flagged no-kernel, even with --timer cupti;
    without the checks, --timer cupti stays an error that says why."""
    from kprof.child import cupti_timer

    monkeypatch.setattr(cupti_timer, "unavailable", lambda: None)
    monkeypatch.setattr(cupti_timer, "KernelClock", lambda hw_trace=False: SimpleNamespace(
        hw_trace=False, take=lambda: [], close=lambda: None))
    body = "def op(a, b, N):\n    return a + b\n"
    job = _baseline_job(numpy_framework, body)
    job = job_mod.Job(job.target, dataclasses.replace(job.mode, timer="cupti"))
    data = run_job(numpy_framework, job)
    assert data["status"] == "ok" and data["timer"] == "events", data.get("error")
    assert [f.split(":")[0] for f in data["integrity"]["flags"]] == ["no-kernel"], data["integrity"]
    job = job_mod.Job(job.target, dataclasses.replace(job.mode, integrity=False))
    data = run_job(numpy_framework, job)
    assert (data["status"] == "error" and "CUPTI delivered no kernel record" in data["error"]["message"])


def test_the_doubled_inputs_are_exact_and_keep_signs_zeros_and_specials():
    """kprof_double's rule (emulated bit for bit here, built for the GPU in test_build): every
    normal value doubled exactly; zeros, subnormals, infinities, NaNs and values that would overflow
    kept."""
    values = np.array([1.5, -3.25, 0.0, -0.0, 1e-45, np.inf, -np.inf, np.nan, 3e38, 1e-30], dtype=np.float32)
    dev = FakeDevice()
    ptr = dev.alloc(values.nbytes)
    dev.upload(ptr, values)
    _double(dev, [ptr, values.size, 2])
    got = dev.view(ptr, np.float32)[: values.size]
    want = np.array([3.0, -6.5, 0.0, -0.0, 1e-45, np.inf, -np.inf, np.nan, 3e38, 2e-30], dtype=np.float32)
    assert np.array_equal(got, want, equal_nan=True) and np.signbit(got[3])
    bf = hostdata.to_bf16(np.array([0.75, -2.0, 0.0], dtype=np.float32))
    p2 = dev.alloc(bf.nbytes)
    dev.upload(p2, bf)
    _double(dev, [p2, bf.size, 1])
    assert list(hostdata.decode("bfloat16", dev.view(p2, np.uint16)[: bf.size])) == [1.5, -4.0, 0.0]


def test_timed_calls_of_which_some_launch_no_kernel_are_flagged_not_an_error(fake_cupti, monkeypatch, honest_clock):
    """Work done once for several calls (a CUDA graph of many calls replayed every few): the calls
    that launch nothing are timed by events and counted, and the check flags them."""
    real = FakeDevice.launch
    seen = {"n": 0}

    def some_launch_nothing(self, func, *args, **kw):
        if func == "vector_add":
            seen["n"] += 1
            if seen["n"] > 2 and seen["n"] % 2:
                return None
        return real(self, func, *args, **kw)

    monkeypatch.setattr(FakeDevice, "launch", some_launch_nothing)
    # samples of two kinds never meet the noise rule: a second of them, not RULE's five
    data = run_job(fake_cupti, job_for("vector_add", {"N": 1000},
                                         dataclasses.replace(timing("cold"), rule=dataclasses.replace(RULE, max_time=1.0))))
    assert data["status"] == "ok", data.get("error")
    assert "no-kernel" in [f.split(":")[0] for f in data["integrity"]["flags"]], data["integrity"]


def _tma_tile(seen):
    """tests/data/kernels/tma_tile.cu on the fake device: the source buffer, its shape and the box
    from the tensor map (FakeDevice.tensor_map writes them in the clear)."""
    def emulate(dev, args):
        x, tmap, y, rows, cols = args
        ptr, shape, box = FakeDevice.decode_tensor_map(tmap)
        seen.append((ptr, shape, box))
        assert ptr == x
        dev.view(y, np.float32)[: rows * cols] = dev.view(ptr, np.float32)[: rows * cols]

    return emulate


def test_a_tensor_map_argument_is_encoded_for_its_buffer_and_passed_by_value(fake, monkeypatch, data_dir):
    """A spec's ``tensormap:`` argument: the child encodes it once the buffer is allocated (the
    address kprof allocated for x, its shape at these sizes, the box) and packs its 128 bytes in the
    argument's place."""
    seen = []
    monkeypatch.setitem(FakeDevice.emulations, "tma_tile", _tma_tile(seen))
    spec = spec_mod.load(data_dir / "kernels" / "tma_tile.yaml")
    every = [{}] + [dict(c.sizes) for c in spec.checks]
    for sizes in every:
        data = run_job(fake, job_for(spec, sizes))
        assert data["status"] == "ok", (sizes, data.get("error") or data.get("checks"))
    assert [shape for _, shape, _ in seen] == [(37, 100), (1, 4), (64, 256)]
    assert all(box == (8, 32) and ptr % 256 == 0 for ptr, _, box in seen)


def test_two_swizzled_tensor_maps_reach_a_kernel_in_their_places(fake, monkeypatch, data_dir):
    """tests/data/kernels/wgmma_tile: A's and Bt's tensor maps (128-byte swizzle) among eight
    arguments, each encoded for its own buffer; the spec's reference (A @ transpose(Bt)) and scale
    tolerance take a product computed from them at every checked size. (The wgmma code itself runs
    on Hopper only: tests/child/test_gpu_kernels.py.)"""
    seen = []

    def emulate(dev, args):
        a, bt, ta, tb, c, m, n, k = args
        for tmap, ptr, box in ((ta, a, (64, 64)), (tb, bt, (256, 64))):
            at, _, tbox = FakeDevice.decode_tensor_map(tmap)
            assert at == ptr and tbox == box
        seen.append((m, n, k))
        A = _bf16_values(dev, a, m * k).reshape(m, k)
        B = _bf16_values(dev, bt, n * k).reshape(n, k)
        dev.view(c, np.float32)[: m * n] = (A @ B.T).astype(np.float32).ravel()

    monkeypatch.setitem(FakeDevice.emulations, "wgmma_tile", emulate)
    spec = spec_mod.load(data_dir / "kernels" / "wgmma_tile.yaml")
    for sizes in [{}, spec.preset("sanitize")] + [dict(c.sizes) for c in spec.checks]:
        data = run_job(fake, job_for(spec, sizes))
        assert data["status"] == "ok", (sizes, data.get("error") or data.get("checks"))
    assert seen == [(128, 512, 256), (70, 300, 104), (1, 1, 8), (200, 700, 520)]


def _wgmma_schedule(grid, defines, m, n):
    """kernels/wgmma_matmul.cu's walk over the tiles, in Python: cluster c (blocks c CLUSTER .. ,
    rank r the r-th) takes cluster tiles c, c + its count, ..., at the origin ``tile_origin`` gives
    it (GROUP cluster tile rows a group, column by column within it; rank r the r-th BM rows of the
    cluster's). A tile wholly past M is a rank's share of a cluster's that it loads and stores
    nothing of."""
    bm, bn, group, cluster = defines["BM"], defines["BN"], defines["GROUP"], defines["CLUSTER"]
    tiles_m, tiles_n = -(-m // (bm * cluster)), -(-n // bn)
    out = {}
    for block in range(grid[0]):
        rank, step = block % cluster, grid[0] // cluster
        for t in range(block // cluster, tiles_m * tiles_n, step):
            per_group, first = group * tiles_n, (t // (group * tiles_n)) * group
            rows, r = min(tiles_m - first, group), t % per_group
            out.setdefault((((first + r % rows) * cluster + rank) * bm, (r // rows) * bn), []).append(block)
    return out


@pytest.mark.parametrize("cluster", ["1", "2"])
def test_the_wgmma_matmul_walks_every_tile_once_at_every_checked_size(fake, monkeypatch, cluster):
    """kernels/wgmma_matmul on the fake device, its persistent schedule in NumPy: the grid its spec
    launches (at most SMS blocks), each block's tiles in the kernel's grouped order, each tile a box
    of A and Bt that TMA fills with zeros past the edges and a store within M x N. Every tile is
    taken by exactly one block, the blocks share them evenly, and the spec's reference and scale
    tolerance pass the result; a tile the walk missed would leave the poisoned output. (The wgmma
    code runs on Hopper only: tests/child/test_gpu_kernels.py.)"""
    spec = catalog.load("wgmma_matmul")
    defines = {k: int(v) for k, v in spec.defines} | {"CLUSTER": int(cluster)}
    launches, walks = FakeDevice.record_launches(monkeypatch), []

    def emulate(dev, args):
        a, bt, ta, tb, c, m, n, k = args
        for tmap, ptr, box in ((ta, a, (defines["BM"], defines["BK"])), (tb, bt, (defines["BN"] // defines["CLUSTER"], defines["BK"]))):
            at, _, tbox = FakeDevice.decode_tensor_map(tmap)
            assert at == ptr and tbox == box
        grid, block, shared = launches[-1]
        assert block[0] == 128 * (defines["BM"] // 64 + 1) and grid[0] <= defines["SMS"]
        assert (shared >= defines["STAGES"] * (defines["BM"] + defines["BN"]) * defines["BK"] * 2 + 1024)
        A = _bf16_values(dev, a, m * k).reshape(m, k)
        B = _bf16_values(dev, bt, n * k).reshape(n, k)
        out = dev.view(c, np.float32)[: m * n].reshape(m, n)
        walk = _wgmma_schedule(grid, defines, m, n)
        for (m0, n0), _ in walk.items():
            out[m0:m0 + defines["BM"], n0:n0 + defines["BN"]] = A[m0:m0 + defines["BM"]] @ B[n0:n0 + defines["BN"]].T
        walks.append((m, n, grid[0], walk))

    monkeypatch.setitem(FakeDevice.emulations, "wgmma_matmul", emulate)
    checks = [dict(c.sizes) for c in spec.checks]
    # not 4096^3 on a CPU
    every = [spec.preset("sanitize")] + [s for s in checks if s["M"] * s["N"] * s["K"] < 1e9]
    for sizes in every:
        data = run_job(fake, job_for(spec, sizes, params={"CLUSTER": cluster}))
        assert data["status"] == "ok", (sizes, data.get("error") or data.get("checks"))
    assert len(walks) == len(every)
    cluster = defines["CLUSTER"]
    for m, n, blocks, walk in walks:
        inside = {o: b for o, b in walk.items() if o[0] < m}
        tiles = -(-m // defines["BM"]) * -(-n // defines["BN"])
        # each tile once
        assert len(inside) == tiles and all(len(b) == 1 for b in walk.values()), (m, n)
        per_block = np.bincount([b[0] for b in walk.values()], minlength=blocks)
        cluster_tiles = -(-m // (defines["BM"] * cluster)) * -(-n // defines["BN"])
        assert blocks == cluster * min(cluster_tiles, defines["SMS"] // cluster), (m, n)
        assert per_block.max() - per_block.min() <= 1, (m, n)
    # a check where blocks take two tiles
    assert any(len(walk) > blocks for _, _, blocks, walk in walks)


class _Mbarrier:
    """An mbarrier as PTX defines it: a phase completes when its pending arrivals reach zero and its
    expected transaction bytes have all landed; ``try_wait.parity(p)`` succeeds once the phase of
    parity ``p`` has completed (the count of completed phases has the other parity)."""

    def __init__(self, count):
        self.count, self.pending, self.tx, self.completed = count, count, 0, 0

    def _complete_if_done(self):
        if self.pending == 0 and self.tx == 0:
            self.completed += 1
            self.pending = self.count

    def arrive(self, tx=0):
        assert self.pending > 0
        self.pending -= 1
        self.tx += tx
        self._complete_if_done()

    def land(self, nbytes):
        self.tx -= nbytes
        self._complete_if_done()

    def passed(self, parity):
        return self.completed % 2 != parity


def _attention_ring(tiles, stages, consumers, rng, mutant=None):
    """kernels/wgmma_attention.cu's K and V ring in Python, one random interleaving of the producer,
    the consumer warpgroups and the copies: the producer loads K then V of each tile into slot ``j %
    stages``, waiting on the slot's empty barriers from tile ``stages`` on; each consumer waits for
    K, computes the scores (reading K), releases K's slot and the last tile's V slot (its P V is
    complete after that wait), waits for V and issues P V (reading V until its next wait); the last
    V slot is released at the end. Fails on a slot read while it holds another tile, or on a
    deadlock. ``mutant``: a protocol error the test must catch."""
    full = {(m, s): _Mbarrier(1) for m in "KV" for s in range(stages)}
    empty = {(m, s): _Mbarrier(consumers) for m in "KV" for s in range(stages)}
    slot = {(m, s): None for m in "KV" for s in range(stages)}
    in_flight = []  # copies issued, not landed: (matrix, slot, tile)

    def producer():
        for j in range(tiles):
            s, parity = j % stages, (j // stages - 1) & 1
            for m in "KV":
                wait_v = not (mutant == "no V wait" and m == "V")
                while j >= stages and wait_v and not empty[m, s].passed(parity):
                    yield
                full[m, s].arrive(tx=1)
                in_flight.append((m, s, j))

    def consumer():
        for j in range(tiles):
            s, parity = j % stages, (j // stages) & 1
            while not full["K", s].passed(parity):
                yield
            assert slot["K", s] == j, f"scores of tile {j} read slot {s} holding {slot['K', s]}"
            # the wait that completes this tile's scores completes the last tile's P V too
            if j > 0:
                last = (j - 1) % stages
                assert slot["V", last] == j - 1, f"P V of tile {j - 1} read a slot holding {slot['V', last]}"
                if mutant != "V released early":
                    empty["V", last].arrive()
            empty["K", s].arrive()
            yield
            while not full["V", s].passed(parity):
                yield
            assert slot["V", s] == j, f"P V of tile {j} read slot {s} holding {slot['V', s]}"
            if mutant == "V released early":
                empty["V", s].arrive()
            yield
        assert slot["V", (tiles - 1) % stages] == tiles - 1
        if mutant != "V released early":
            empty["V", (tiles - 1) % stages].arrive()

    actors = [producer()] + [consumer() for _ in range(consumers)]
    done = [False] * len(actors)
    for _ in range(100_000):
        if all(done) and not in_flight:
            return
        if in_flight and rng.random() < 0.3:  # a copy lands
            m, s, j = in_flight.pop(rng.integers(len(in_flight)))
            slot[m, s] = j
            full[m, s].land(1)
            continue
        live = [i for i, d in enumerate(done) if not d]
        if live:
            i = live[rng.integers(len(live))]
            try:
                next(actors[i])
            except StopIteration:
                done[i] = True
    raise AssertionError(f"deadlock: tiles {tiles}, stages {stages}, consumers {consumers}")


@pytest.mark.parametrize("stages", [2, 3])
@pytest.mark.parametrize("consumers", [1, 2, 3])
def test_the_wgmma_attention_ring_never_reads_a_slot_before_or_after_its_tile(stages, consumers):
    """The K and V ring's barriers and parities, as the kernel uses them, under random
    interleavings: every slot is read only while it holds its tile, and the block finishes, for 1 to
    9 tiles; a V slot released before P V has read it, or a producer that does not wait for V's
    slot, is caught."""
    rng = np.random.default_rng(0)
    for tiles in (1, 2, 3, 5, 9):
        for _ in range(40):
            _attention_ring(tiles, stages, consumers, rng)
    for mutant in ("V released early", "no V wait"):
        with pytest.raises(AssertionError):
            for _ in range(200):
                _attention_ring(9, stages, consumers, rng, mutant)


def _wgmma_attention(defines, seen, tile_count=lambda last, bkv: last // bkv + 1):
    """kernels/wgmma_attention.cu's walk and arithmetic in NumPy: block (x, head) takes query tile x
    (with CAUSAL, the last tile first), walks ``tile_count`` key tiles of BKV with float32 scores,
    the running maximum of the raw scores, ``exp2(s * scale - m * scale)``, P rounded to bfloat16
    for P V while the row sum adds the float32 values, and stores its rows below S. ``seen``
    collects (head, first row) of each block's tile."""
    hd, bq, bkv, causal = defines["HD"], defines["BQ"], defines["BKV"], defines["CAUSAL"]
    scale2 = np.float32(1.4426950408889634 / np.sqrt(hd))

    def emulate(dev, args):
        from kprof.child.hostdata import to_bf16

        q, k, v, tq, tk, tv, o, S = args
        for tmap, ptr, box in ((tq, q, (1, bq, 64)), (tk, k, (1, bkv, 64)), (tv, v, (1, bkv, 64))):
            at, shape, tbox = FakeDevice.decode_tensor_map(tmap)
            assert at == ptr and len(shape) == 3 and tbox == box
        bh = dev.grid[1]  # a block row per head
        n = bh * S * hd
        Q, K, V = (_bf16_values(dev, p, n).reshape(bh, S, hd) for p in (q, k, v))
        # O is bfloat16, as FlashAttention writes it
        out = dev.view(o, np.uint16)[:n].reshape(bh, S, hd)
        blocks = -(-S // bq)
        for head in range(bh):
            for x in range(blocks):
                q0 = (blocks - 1 - x if causal else x) * bq
                seen.append((head, q0))
                rows = np.arange(q0, q0 + bq)
                qt = np.zeros((bq, hd))
                qt[: max(0, min(bq, S - q0))] = Q[head, q0:q0 + bq]  # TMA: zeros past S
                last = min(S - 1, q0 + bq - 1) if causal else S - 1
                m = np.full(bq, -np.inf, np.float32)
                total = np.zeros(bq, np.float32)
                acc = np.zeros((bq, hd))
                for j in range(tile_count(last, bkv)):
                    keys = np.arange(j * bkv, (j + 1) * bkv)
                    kt, vt = np.zeros((bkv, hd)), np.zeros((bkv, hd))
                    kt[: max(0, min(bkv, S - j * bkv))] = K[head, j * bkv:(j + 1) * bkv]
                    vt[: max(0, min(bkv, S - j * bkv))] = V[head, j * bkv:(j + 1) * bkv]
                    s = (qt @ kt.T).astype(np.float32)
                    s[(keys[None, :] >= S) | (bool(causal) & (keys[None, :] > rows[:, None]))] = -np.inf
                    mx = np.maximum(m, s.max(1))
                    alpha = np.exp2((m - mx) * scale2)
                    p = np.exp2(s * scale2 - mx[:, None] * scale2).astype(np.float32)
                    m, total = mx, total * alpha + p.sum(1, dtype=np.float32)
                    pb = (to_bf16(p.astype(np.float64)).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
                    acc = acc * alpha[:, None] + pb @ vt
                keep = rows < S
                out[head, rows[keep]] = to_bf16((acc / total[:, None])[keep])

    return emulate


@pytest.mark.parametrize("name", ["wgmma_attention", "wgmma_attention_causal"])
def test_the_wgmma_attention_specs_verify_what_the_kernel_computes(fake, monkeypatch, name):
    """The wgmma_attention specs on the fake device, the kernel's walk and arithmetic in NumPy:
    their three-dimensional tensor maps (boxes of one head's BQ or BKV rows of 64 columns), the
    launch (a producer warpgroup and BQ / 64 consumers, the shared memory of Q and both rings), one
    block a query tile of each head (each tile once), and the float64 reference with the normwise
    tolerance at every checked size up to S 1000. A walk one key tile short fails. (The wgmma code
    runs on Hopper only.)"""
    spec = catalog.load(name)
    defines = {k: int(v) for k, v in spec.defines}
    assert defines["CAUSAL"] == name.endswith("causal")
    launches = FakeDevice.record_launches(monkeypatch)
    seen = []
    monkeypatch.setitem(FakeDevice.emulations, "wgmma_attention", _wgmma_attention(defines, seen))
    checks = [c for c in spec.checks if dict(c.sizes)["S"] <= 1000]
    assert (any(c.fills for c in checks) and any(dict(c.sizes)["S"] > 2 * defines["BKV"] * defines["STAGES"] for c in checks))
    for check in checks:
        seen.clear()
        data = run_job(fake, job_for(spec.with_fills(check.fills), dict(check.sizes)))
        assert data["status"] == "ok", (name, check.label, data.get("error") or data.get("checks"))
        grid, block, shared = launches[-1]
        bh, S = dict(check.sizes)["BH"], dict(check.sizes)["S"]
        assert (grid[:2] == (-(-S // defines["BQ"]), bh) and block[0] == 128 * (defines["BQ"] // 64 + 1))
        assert (shared >= (defines["BQ"] + 2 * defines["STAGES"] * defines["BKV"]) * defines["HD"] * 2 + 1024)
        assert sorted(seen) == [(h, t * defines["BQ"]) for h in range(bh) for t in range(grid[0])]
    short = _wgmma_attention(defines, [], tile_count=lambda last, bkv: max(1, last // bkv))
    monkeypatch.setitem(FakeDevice.emulations, "wgmma_attention", short)
    data = run_job(fake, job_for(name, {"BH": 2, "S": 600}))
    assert data["status"] == "failed" and "normwise" in json.dumps(data["checks"])


def _consuming_spec(tmp_path, reset: bool):
    """A kernel that takes its write index from a counter and bumps it (a stream compaction's
    shape)."""
    (tmp_path / "count_up.cu").write_text("// emulated\n")
    (tmp_path / "ref.py").write_text("import numpy as np\n\ndef out(N):\n    return np.zeros(N)\n\n"
                                     "def count():\n    return np.ones(1)\n")
    (tmp_path / "count_up.yaml").write_text(
        "sizes: {N: 4}\nargs:\n  - {name: out, buffer: float32, shape: [N], role: out}\n"
        f"  - {{name: count, buffer: int32, shape: [1], role: inout, fill: zeros, reset: {str(reset).lower()}}}\n"
        "launch: {grid: [1], block: [1]}\nreference: {out: ref.py:out, count: ref.py:count}\n")
    return spec_mod.load(tmp_path / "count_up.yaml")


@pytest.mark.parametrize("reset", [True, False])
def test_a_buffer_the_kernel_consumes_is_written_again_before_each_timed_launch(fake, monkeypatch, tmp_path, reset):
    """reset: true: every launch the loop makes (warm-up and timed) finds the counter at its fill,
    written before the launch's timed window; without it the counter runs on (and would run past the
    output)."""
    seen: list[int] = []

    def count_up(dev, args):
        out, count = args
        at = int(dev.view(count, np.int32)[0])
        seen.append(at)
        dev.view(out, np.float32)[:4] = float(at)
        dev.view(count, np.int32)[0] = at + 1

    monkeypatch.setitem(FakeDevice.emulations, "count_up", count_up)
    data = run_job(fake, job_for(_consuming_spec(tmp_path, reset), None, timing("cold", timer="events")))
    assert data["status"] == "ok", data.get("error")
    assert len(seen) > 3
    assert (set(seen) == {0}) is reset


def test_a_consumed_buffer_is_not_timed_hot(fake, monkeypatch, tmp_path):
    monkeypatch.setitem(FakeDevice.emulations, "count_up", lambda dev, args: None)
    data = run_job(fake, job_for(_consuming_spec(tmp_path, True), None, timing("hot", timer="events", batch=4)))
    assert data["status"] == "error" and "use --mode cold or warm" in data["error"]["message"]


def test_reset_is_for_an_inout_buffer(tmp_path):
    from kprof.errors import SpecError

    spec = _consuming_spec(tmp_path, True)
    assert [a.reset for a in spec.args] == [False, True]
    text = (tmp_path / "count_up.yaml").read_text().replace("role: inout, fill: zeros, reset: true", "role: in, reset: true")
    (tmp_path / "count_up.yaml").write_text(text)
    with pytest.raises(SpecError, match=r"args\[1\].reset: true marks an inout buffer"):
        spec_mod.load(tmp_path / "count_up.yaml")


def test_a_stream_compaction_is_verified_as_a_multiset_with_its_counter_reset(fake, monkeypatch, tmp_path):
    """The kept elements land in the order the threads' atomics happened (here reversed); the spec
    says order: any, and the counter it takes write indices from is reset before each timed
    launch."""
    def compact(dev, args):
        x, y, count, n = args
        xs = dev.view(x, np.float32)[:n]
        kept = xs[xs > 0][::-1]
        at = int(dev.view(count, np.int32)[0])
        dev.view(y, np.float32)[at:at + kept.size] = kept
        dev.view(count, np.int32)[0] = at + kept.size

    monkeypatch.setitem(FakeDevice.emulations, "compact", compact)
    (tmp_path / "compact.cu").write_text("// emulated\n")
    (tmp_path / "ref.py").write_text("import numpy as np\n\ndef kept(x):\n    return x[x > 0]\n\n"
                                     "def count(x):\n    return np.array([np.count_nonzero(x > 0)])\n")
    (tmp_path / "compact.yaml").write_text(
        "sizes: {N: 64}\nargs:\n  - {name: x, buffer: float32, shape: [N], role: in}\n"
        "  - {name: y, buffer: float32, shape: [N], role: out, order: any}\n"
        "  - {name: count, buffer: int32, shape: [1], role: inout, fill: zeros, reset: true}\n"
        "  - {name: n, scalar: int32, value: N}\n"
        "launch: {grid: [1], block: [64]}\nreference: {y: ref.py:kept, count: ref.py:count}\n")
    spec = spec_mod.load(tmp_path / "compact.yaml")
    data = run_job(fake, job_for(spec, None, timing("warm", timer="events")))
    assert data["status"] == "ok", data.get("error") or data.get("checks")
    assert "multiset" in next(c for c in data["checks"] if c["name"] == "y")["note"]
    text = (tmp_path / "compact.yaml").read_text().replace("role: in}", "role: in, order: any}")
    (tmp_path / "compact.yaml").write_text(text)
    from kprof.errors import SpecError

    with pytest.raises(SpecError, match=r"args\[0\].order: any: an output whose order"):
        spec_mod.load(tmp_path / "compact.yaml")


def _constant_spec(tmp_path, memory="constant"):
    (tmp_path / "scale_by.cu").write_text("// emulated\n")
    (tmp_path / "scale_by.yaml").write_text(
        "sizes: {N: 16, K: 4}\nargs:\n  - {name: x, buffer: float32, shape: [N], role: in}\n"
        f"  - {{name: w, buffer: float32, shape: [K], role: in, fill: \"uniform(1, 2)\", memory: {memory}}}\n"
        "  - {name: y, buffer: float32, shape: [N], role: out}\n  - {name: n, scalar: int32, value: N}\n"
        "launch: {grid: [1], block: [16]}\nreference: {y: x * sum(w)}\n")
    return spec_mod.load(tmp_path / "scale_by.yaml")


def test_a_constant_table_is_filled_from_the_spec_and_is_no_kernel_parameter(fake, monkeypatch, tmp_path):
    """memory: constant: the module's __constant__ array of that name gets the spec's fill before
    the launch, the reference reads it as an input, and the kernel's parameters leave it out."""
    params = []

    def scale_by(dev, args):
        params.append(len(args))
        x, y, n = args
        w = dev.view(dev.globals["w"], np.float32)[:4]
        dev.view(y, np.float32)[:n] = dev.view(x, np.float32)[:n] * w.sum()

    monkeypatch.setitem(FakeDevice.emulations, "scale_by", scale_by)
    monkeypatch.setattr(FakeDevice, "constants", {"w": 16})
    spec = _constant_spec(tmp_path)
    assert spec.resolve({}).steps[0].args == ("x", "y", "n")
    data = run_job(fake, job_for(spec, None, RunMode()))
    assert data["status"] == "ok", data.get("error") or data.get("checks")
    assert params and set(params) == {3}


def test_a_constant_table_the_module_lacks_or_of_another_size_is_one_line(fake, monkeypatch, tmp_path):
    monkeypatch.setitem(FakeDevice.emulations, "scale_by", lambda dev, args: None)
    monkeypatch.setattr(FakeDevice, "constants", {})
    data = run_job(fake, job_for(_constant_spec(tmp_path), None, RunMode()))
    assert (data["status"] == "error" and "has no __constant__ array named w" in data["error"]["message"])
    monkeypatch.setattr(FakeDevice, "constants", {"w": 64})
    data = run_job(fake, job_for(_constant_spec(tmp_path), None, RunMode()))
    assert "holds 64 bytes, the spec's shape 16" in data["error"]["message"]
    from kprof.errors import SpecError

    with pytest.raises(SpecError, match=r"args\[1\].memory: constant: the kernel's __constant__ array"):
        _constant_spec(tmp_path, memory="shared")
