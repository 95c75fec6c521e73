"""Two tiers: unit tests run anywhere; ``gpu`` tests skip with the reason that names what is
missing (``no CUDA driver: cuInit -> ...``), and ``--require-gpu`` turns those skips into
failures on the GPU machine, so a GPU run can never pass by skipping."""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

# The suite starts hundreds of Python processes (kprof's runner, the stand-in tools, pytest inside
# pytest): with bytecode writing off (PYTHONDONTWRITEBYTECODE, set on some machines), each compiled
# kprof from source, and the plugin tests took 63 s of CPU where they take 25 s with __pycache__
# (ignored by git).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pyproject's addopts): one worker more than the CPUs. A fifth of the suite's time
    is waiting (stand-in tools, time limits, children that start and stop), which a further worker
    overlaps with the rest: on two CPUs 123 s against 129 s with two workers."""
    return (os.cpu_count() or 1) + 1


def pytest_configure(config):
    """Under pytest-xdist on a host with several GPUs, each worker's tests, and the children they
    start, use one GPU of it (gw0 the first, gw1 the second, ...), as ``--kprof-sanitize`` does for
    a user's suite: the GPU suite spreads over the host. ``KPROF_TEST_ONE_GPU=1`` keeps every worker
    on the GPUs ``CUDA_VISIBLE_DEVICES`` gives."""
    if os.environ.get("KPROF_TEST_ONE_GPU") != "1":
        from kprof.pytest_plugin import assign_worker_gpu

        assign_worker_gpu()
    _share_the_cpus()


def _share_the_cpus() -> None:
    """Host threads each pytest-xdist worker and its children may use (the variables of
    kprof.parallel.THREAD_VARIABLES: NumPy's BLAS for the float64 references, kprof's verdict), as
    kprof itself shares them between children it runs at once: unset, each child of each of 12
    workers may start a thread per core of the host (16 on the H200's; at 7384478 the verifications
    at the default sizes took 20 to 48 s each with the CPUs 57% busy on average; whether sharing
    them shortens that is not yet measured). What a user or CI sets wins."""
    from kprof import parallel

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if workers <= 1:
        return
    for name in parallel.THREAD_VARIABLES:
        os.environ.setdefault(name, str(parallel.threads_each(workers)))


def pytest_addoption(parser):
    parser.addoption("--require-gpu", action="store_true",
                     help="fail, not skip, when the GPU or a GPU tool is missing")


@pytest.hookimpl(trylast=True)  # after pytest-xdist's own, which names each test's group
def pytest_collection_modifyitems(config, items):
    """The GPU tests first, a ``gpu_alone`` one first of all, then those that build: under
    pytest-xdist the long tests start at once and the short CPU ones fill the gaps at the end, and a
    ``gpu_alone`` test takes the GPU before the others start on it, instead of waiting for every
    running GPU test to end (on an H200, 31266b6: five such tests spread through the run kept others
    waiting up to 57 s)."""
    def rank(item):
        return next((i for i, m in enumerate(("gpu_alone", "gpu", "nvcc")) if item.get_closest_marker(m)), 3)

    items.sort(key=rank)  # stable: the collection's order within each rank
    config.stash[_ALONE] = sum(1 for item in items if item.get_closest_marker("gpu_alone"))
    _keep_the_groups(config, items)


def _keep_the_groups(config, items) -> None:
    """``--dist loadgroup`` sends a test with ``xdist_group(NAME)`` to its group's one worker by the
    suffix ``@NAME`` pytest-xdist puts on the test's id in each worker. pytest 9.2 keeps an id in a
    structured field that pytest-xdist 3.8 does not write (pytest-dev/pytest-xdist#1386, open): its
    suffix is lost and the groups spread over the workers, so two ncu runs share the GPU (one failed
    so, exit code 9) and builds meant to be made once are made by every worker. Where the suffix is
    missing, it is put on the way pytest 9.2 reads it; with a pytest-xdist that writes it, nothing
    is done (tests/test_conftest.py holds it)."""
    if not getattr(config.option, "loadgroup", False):  # set in pytest-xdist's workers alone
        return
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix):
            try:
                # pytest >= 9.2, whose ids pytest-xdist 3.8 cannot suffix
                from _pytest.nodeid import coerce_node_id
            except ImportError:
                # another layout of ids: tests/test_conftest.py fails and says which test lost its
                # group
                return
            item._id = coerce_node_id(item.nodeid + suffix)


# the session's gpu_alone tests (every xdist worker collects them all)
_ALONE = pytest.StashKey[int]()
ALONE_GATE_S = 120.0  # how long another GPU test waits, at most, for them to have run first


_gpu_reason: list[str | None] = []


def gpu_reason() -> str | None:
    if not _gpu_reason:
        from kprof.child import device

        _gpu_reason.append(device.probe())
    return _gpu_reason[0]


_compiler_reason: list[str | None] = []


def _nvcc_reason() -> str | None:
    """Why no CUDA compiler builds sm_90 here (the ``nvcc`` marker: nvcc, or NVRTC where nvcc is
    not)."""
    if not _compiler_reason:
        from kprof.build import toolchain
        from kprof.errors import KprofError

        try:
            toolchain.compiler_for("sm_90")
            _compiler_reason.append(None)
        except KprofError as exc:
            _compiler_reason.append(str(exc))
    return _compiler_reason[0]


def pytest_runtest_setup(item):
    require = item.config.getoption("--require-gpu")
    reasons = []
    if item.get_closest_marker("gpu") and (r := gpu_reason()):
        reasons.append(r)
    if (item.get_closest_marker("nvcc") or item.get_closest_marker("gpu")) and (r := _nvcc_reason()):
        reasons.append(r)
    if reasons:
        if require:
            pytest.fail("--require-gpu: " + "; ".join(reasons), pytrace=False)
        pytest.skip("; ".join(reasons))


@pytest.fixture(scope="session")
def _session_cache(tmp_path_factory) -> Path:
    """One build cache per test session, never the user's; but the GPU's ceilings that ``kprof
    peak`` measured before the suite (scripts/gpu-check.sh) are copied in, so the first timing test
    does not spend minutes measuring them again (seen on the H200: a Triton bench test past its 200
    s limit)."""
    from kprof.build import build

    base = tmp_path_factory.getbasetemp()
    # pytest-xdist's workers share one cache (their base folders are siblings): each kernel is built
    # once for the run, not once a worker: a worker that wants an entry another is building waits on
    # its lock and reads it (tests/build/test_build.py); the cache takes concurrent writers
    # (tests/test_hardening.py)
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "kprof-cache"
    folder.mkdir(parents=True, exist_ok=True)
    for peak in build.cache_dir().glob("peak-*.json"):
        if not (folder / peak.name).exists():
            shutil.copyfile(peak, folder / peak.name)
    return folder


@pytest.fixture(autouse=True)
def _isolated_cache(_session_cache, monkeypatch):
    monkeypatch.setenv("KPROF_CACHE_DIR", str(_session_cache))


# COLUMNS for the tests: what they read is each line whole (kprof wraps text to a pipe at 100)
UNWRAPPED = "100000"


@pytest.fixture(autouse=True)
def _unwrapped(monkeypatch):
    """A test reads what kprof printed, not how a terminal or a pipe would wrap it; the tests of the
    width (tests/commands/test_cli.py) set or remove COLUMNS themselves."""
    from kprof.results import render

    monkeypatch.setenv("COLUMNS", UNWRAPPED)
    monkeypatch.setattr(render, "_chosen_width", None)


@pytest.fixture(autouse=True)
def _gpu_share(request, tmp_path_factory):
    """GPU tests share the GPU between pytest-xdist workers; a test marked ``gpu_alone`` has it to
    itself. The values detector scrubs shared memory right before each launch, and a kernel that
    another worker's process runs in between replaces the scrub: seen once on the H200, where
    uninit_shared_read then read the same stale data under both patterns and was reported as a
    wrong result instead of an uninitialized read.

    A readers-writer lock over two lock files shared by the workers: every test passes the
    turnstile, so a waiting ``gpu_alone`` test (which holds it) is not starved by the others. One
    pair per GPU a worker uses (:func:`gpu_lock_names`): with the suite spread over a host's GPUs, a
    ``gpu_alone`` test waits only for the tests on its own GPU, not for a long one on another."""
    if request.node.get_closest_marker("gpu") is None:
        yield
        return
    alone = request.node.get_closest_marker("gpu_alone") is not None
    where = tmp_path_factory.getbasetemp().parent  # shared by the xdist workers of one run
    turnstile_name, lock_name = gpu_lock_names(os.environ.get("CUDA_VISIBLE_DEVICES"))
    done = where / (lock_name + ".alone-done")
    if not alone:
        _wait_for_alone(done, request.config.stash.get(_ALONE, 0))
    with open(where / turnstile_name, "a") as turnstile, open(where / lock_name, "a") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            if alone:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
                with open(done, "a") as f:
                    f.write(request.node.nodeid + "\n")


def _wait_for_alone(done: Path, expected: int) -> None:
    """A GPU test waits for the session's gpu_alone tests to have run (they come first, on whichever
    workers took them), for at most ALONE_GATE_S: otherwise a worker that starts with a long GPU
    test (an ncu group's first profile, 49 s) holds the GPU shared while a gpu_alone test waits
    behind it, and every other worker waits behind that (on an H200, 4e75d3f: GPU tests 28 to 32 s
    in setup)."""
    import time

    deadline = time.monotonic() + ALONE_GATE_S
    while expected and time.monotonic() < deadline:
        try:
            if len(done.read_text().splitlines()) >= expected:
                return
        except FileNotFoundError:
            pass
        time.sleep(0.2)


def gpu_lock_names(visible: str | None) -> tuple[str, str]:
    """The turnstile and lock files of the GPUs a worker sees: one pair per ``CUDA_VISIBLE_DEVICES``
    value (workers that see the same GPUs share it; no value, every GPU: one pair for all). Pure."""
    key = "".join(c if c.isalnum() else "_" for c in visible.strip()) if visible and visible.strip() else "all"
    return f"kprof-gpu-{key}.turnstile", f"kprof-gpu-{key}.lock"


@pytest.fixture
def data_dir() -> Path:
    return DATA


def has(tool: str) -> bool:
    return shutil.which(tool) is not None


@pytest.fixture
def as_if_a_gpu(monkeypatch):
    """For tests of what comes after the GPU check (a missing tool, a stand-in runner or ncu): kprof
    asks for the GPU first, so here the probe finds one."""
    import kprof.child.device

    monkeypatch.setattr(kprof.child.device, "probe", lambda: None)


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """The child's code in this process on a fake device (tests/fakedevice.py): NumPy buffers,
    emulated kernels."""
    from fakedevice import FakeDevice

    import kprof.child.device
    import kprof.child.workspace
    from kprof.child import cupti_timer

    monkeypatch.setattr(kprof.child.device, "Device", FakeDevice)
    monkeypatch.setattr(kprof.child.workspace, "nvtx_module", lambda: None)
    # events, as on a machine without CUPTI: a real CUPTI beside the fake device sees no kernel
    monkeypatch.setattr(cupti_timer, "unavailable", lambda: "the fake device has no CUPTI")
    return tmp_path


@pytest.fixture
def ptx_compiler():
    """The PTX scan reads nvcc's PTX; where kprof builds with NVRTC (pip's CUDA 12 line), it has
    none."""
    from kprof.build import toolchain
    from kprof.errors import KprofError

    try:
        kind = toolchain.compiler_for("sm_90").kind
    except KprofError as exc:
        pytest.skip(str(exc))
    if kind != "nvcc":
        pytest.skip("kprof builds with NVRTC here: cubins only, no PTX for the line scan")
