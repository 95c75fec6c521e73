"""A fake device for the runner's tests on a machine without a GPU (tests/child/test_runner.py and
the others that run the child's code in this process): buffers are NumPy byte arrays and a "launch"
runs a NumPy emulation of the kernel (vector_add, reduce_sum, ...) or does nothing (a kernel that
writes nothing)."""

from __future__ import annotations

import json
import struct
from types import SimpleNamespace

import numpy as np
from helpers import job_for as typed_job

from kprof.build import build
from kprof.child import hostdata, runner
from kprof.launch.childresult import DeviceInfo
from kprof.launch.job import TimingMode
from kprof.spec import catalog
from kprof.stats import StopRule


class _Memory(dict):
    """The fake device's allocations by base address; a pointer inside one (past a verified run's
    guard zone) gives a view from there to the allocation's end, as the device's memory would."""

    def __getitem__(self, ptr):
        if dict.__contains__(self, ptr):
            return dict.__getitem__(self, ptr)
        for base, data in self.items():
            if base <= ptr < base + len(data):
                return memoryview(data)[ptr - base:]
        raise KeyError(ptr)


class FakeDevice:
    """Just enough of kprof.child.device.Device for the runner."""

    emulations: dict = {}
    # a test of an older GPU sets sm_61 or sm_75 (monkeypatch.setattr(FakeDevice, "arch", ...))
    arch = "sm_90"
    occupancies: list = []  # (block threads, dynamic shared memory) of every occupancy question

    def __init__(self, ordinal: int = 0) -> None:
        self.memory: dict[int, bytearray] = _Memory()
        self.next = 0x10000
        self.launched: list[str] = []
        self.tensor_maps: list = []
        self.closed = False

    # information
    def info(self) -> DeviceInfo:
        from kprof.build import occupancy

        lim = occupancy.limits_for(self.arch)
        return DeviceInfo(0, f"Fake {self.arch} GPU", self.arch, 2, 1 << 30,
                          13000 if self.arch == "sm_90" else 12040,
                          lim.max_smem_per_block, lim.max_threads_per_sm, 1 << 20)

    def mem_info(self):
        return 1 << 30, 1 << 30

    def attribute(self, name):
        return 0

    # modules
    def load_module(self, image: bytes):
        return object()

    def function(self, module, entry: str):
        return entry

    constants: dict = {}  # a module's __constant__ arrays: name -> bytes (a test sets them)

    def module_global(self, module, name: str):
        from kprof.errors import CudaError

        if name not in self.constants:
            raise CudaError("cuModuleGetGlobal", "CUDA_ERROR_NOT_FOUND")
        ptr = self.alloc(self.constants[name])
        self.__dict__.setdefault("globals", {})[name] = ptr
        return ptr, self.constants[name]

    def function_attribute(self, func, name: str) -> int:
        return {"NUM_REGS": 32, "SHARED_SIZE_BYTES": 0}.get(name, 0)

    def set_max_dynamic_shared(self, func, nbytes):
        pass

    def occupancy(self, func, block_threads, dynamic_smem):
        """The driver's answer, as kprof's model of this architecture gives it for 32 registers."""
        from kprof.build import occupancy

        self.occupancies.append((block_threads, dynamic_smem))
        return occupancy.compute(occupancy.limits_for(self.arch), block_threads, 32, 0, dynamic_smem).blocks_per_sm

    # memory
    def alloc(self, nbytes: int) -> int:
        ptr = self.next
        self.memory[ptr] = bytearray(max(nbytes, 1))
        self.next += (nbytes + 0xFFF) & ~0xFFF or 0x1000
        return ptr

    def free(self, ptr):
        del self.memory[ptr]

    def upload(self, ptr, array):
        self.memory[ptr][: array.nbytes] = array.tobytes()

    def download(self, ptr, array):
        array.view(np.uint8).reshape(-1)[:] = np.frombuffer(bytes(self.memory[ptr][: array.nbytes]),
                                                            np.uint8)

    def memset32(self, ptr, value, count):
        self.memory[ptr][: 4 * count] = struct.pack("<I", value & 0xFFFFFFFF) * count

    def memset32_async(self, ptr, value, count, stream):
        self.memset32(ptr, value, count)

    def view(self, ptr, dtype):
        return np.frombuffer(self.memory[ptr], dtype=dtype)

    def tensor_map(self, ptr, tm):
        """Not the driver's encoding: the address, shape and box in the clear (an emulation decodes
        them)."""
        self.tensor_maps.append((ptr, tm))
        rank = len(tm.shape)
        return struct.pack(f"<QI{rank}Q{rank}I", ptr, rank, *tm.shape, *tm.box).ljust(128, b"\0")

    @staticmethod
    def decode_tensor_map(tmap):
        """(address, shape, box) of a tensor map :meth:`tensor_map` wrote."""
        assert isinstance(tmap, bytes) and len(tmap) == 128
        ptr, rank = struct.unpack_from("<QI", tmap)
        return ptr, struct.unpack_from(f"<{rank}Q", tmap, 12), struct.unpack_from(f"<{rank}I", tmap, 12 + 8 * rank)

    @classmethod
    def record_launches(cls, monkeypatch):
        """A list that gets (grid, block, shared memory) of each launch from now on."""
        launches, real = [], cls.launch

        def record(self, func, grid, block, shared_mem, args, stream=0):
            launches.append((grid, block, shared_mem))
            return real(self, func, grid, block, shared_mem, args, stream)

        monkeypatch.setattr(cls, "launch", record)
        return launches

    # launches
    def launch(self, func, grid, block, shared_mem, args, stream=0):
        self.launched.append(func)
        # what an emulation may read of its launch (the attention kernels' heads: grid y)
        self.grid = grid
        emulate = self.emulations.get(func)
        if emulate:
            emulate(self, [v for _, v in args])

    def synchronize(self):
        pass

    def stream(self):
        return "stream"

    def stream_synchronize(self, stream):
        pass

    def capture(self, stream, body):
        calls = []
        real, self.launch = self.launch, lambda *a, **k: calls.append((a, k))
        try:
            body()
        finally:
            self.launch = real
        return calls

    def graph_launch(self, graph, stream):
        for a, k in graph:
            self.launch(*a, **k)

    def graph_destroy(self, graph):
        pass

    def host_flag(self):
        return SimpleNamespace(value=0), self.alloc(4)

    def event(self):
        return object()

    def record(self, event, stream=0):
        pass

    def elapsed_ms(self, start, end):
        return 0.25

    def close(self):
        self.closed = True


def _vector_add(dev, args):
    a, b, c, n = args
    dev.view(c, np.float32)[:n] = dev.view(a, np.float32)[:n] + dev.view(b, np.float32)[:n]


def _reduce_sum(dev, args):
    x, out, n = args
    dev.view(out, np.float32)[0] += dev.view(x, np.float32)[:n].sum(dtype=np.float64)


def _scale_bf16(dev, args):

    x, y, factor, n = args
    xs = hostdata.decode("bfloat16", dev.view(x, np.uint16)[:n])
    dev.view(y, np.float32)[:n] = xs * hostdata.decode("bfloat16", np.uint16(factor))


def _twice(dev, args):
    x, t, n = args
    dev.view(t, np.float32)[:n] = 2 * dev.view(x, np.float32)[:n]


def _plus_one(dev, args):
    t, y, n = args
    dev.view(y, np.float32)[:n] = dev.view(t, np.float32)[:n] + 1


def _stream(kind):
    """kprof peak's stream kernels: args (in, out, n words) / (in, flag, n) / (out, n); WIDTH from
    the word count."""
    def emulate(dev, args):
        if kind == "copy":
            src, dst, n = args
            nbytes = len(dev.memory[src])
            dev.memory[dst][:nbytes] = dev.memory[src][:nbytes]
        elif kind == "write":
            dst, n = args
            dev.view(dst, np.float32)[:] = 1.0
        elif kind == "add":
            a, b, dst, n = args
            dev.view(dst, np.float32)[:] = dev.view(a, np.float32) + dev.view(b, np.float32)
        # read: every value is 1, so the flag is never written
    return emulate


def _fingerprint(dev, args):
    """kprof_fingerprint: any function of the buffer's bytes will do for the checks (equal or
    not)."""
    import hashlib

    ptr, nbytes, out = args
    digest = hashlib.blake2b(bytes(dev.memory[ptr][:nbytes]), digest_size=8).digest()
    dev.view(out, np.uint64)[0] += np.frombuffer(digest, np.uint64)[0]


_DOUBLED = {0: (np.uint16, 10, 5), 1: (np.uint16, 7, 8), 2: (np.uint32, 23, 8),
            3: (np.uint64, 52, 11)}


def _double(dev, args):
    """kprof_double, bit for bit: one more in the exponent of every normal value that stays
    finite."""
    ptr, count, kind = args
    word, mant, bits = _DOUBLED[kind]
    w = dev.view(ptr, word)[:count]
    mask = (1 << bits) - 1
    e = (w >> word(mant)) & word(mask)
    w[:] = np.where((e == 0) | (e >= mask - 1), w, w + (word(1) << word(mant)))


def _copy_async(self, dst, src, nbytes, stream=0):
    self.memory[dst][:nbytes] = self.memory[src][:nbytes]


FakeDevice.copy_async = _copy_async
FakeDevice.emulations = {"kprof_copy": _stream("copy"), "kprof_read": _stream("read"),
                         "kprof_write": _stream("write"), "kprof_add": _stream("add"),
                         "vector_add": _vector_add, "reduce_sum": _reduce_sum,
                         "vector_add_vec4": _vector_add,
                         "scale_bf16": _scale_bf16, "twice": _twice, "plus_one": _plus_one,
                         "kprof_fingerprint": _fingerprint, "kprof_double": _double}


def run_job(tmp_path, job) -> dict:
    job_path, result_path = tmp_path / "job.json", tmp_path / "result.json"
    job_path.write_text(job.to_json())  # through JSON, as the parent hands it over
    runner.main([str(job_path), str(result_path)])
    return json.loads(result_path.read_text())


def fake_cubin():
    cubin = build.cache_dir() / "fake.cubin"  # read by the runner, ignored by the fake device
    cubin.parent.mkdir(parents=True, exist_ok=True)
    cubin.write_bytes(b"not a cubin")
    return cubin


def job_for(name_or_spec, sizes=None, mode=None, **kw):
    spec = catalog.load(name_or_spec) if isinstance(name_or_spec, str) else name_or_spec
    return typed_job(spec, fake_cubin(), sizes, mode=mode, **kw)


RULE = StopRule(rel_stdev=0.5, min_samples=3, min_time=0.0, max_time=5.0)


def timing(mode, **kw):
    cubin = str(fake_cubin())
    return TimingMode(mode, RULE, spin_cubin=cubin, flush_cubin=cubin, integrity_cubin=cubin,
                      **{"warmup": 0.0, **kw})
