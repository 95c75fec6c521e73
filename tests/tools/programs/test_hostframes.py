"""A plain C++ program's launch site from the native frames compute-sanitizer saves
(kprof.tools.programs.hostframes .native_site, kprof.tools.programs.addr2line): the function and
module always, the line where the binary has host line information. The report is shaped as the tool
writes one (the Python frames of the recorded reports in tests/data/programs are native frames of
the same form); the binary is built here."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from kprof.tools.programs import addr2line, hostframes
from kprof.tools.sanitizers import sanitizer_xml

VECADD = r"""#include <cstdio>
__global__ void vecadd(const float* a, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) c[i] = a[i];
}
static void launch(const float* a, float* c, int n) {
    vecadd<<<(n + 255) / 256, 256>>>(a, c, n);
}
int main() {
    float *a, *c;
    cudaMalloc(&a, 4000); cudaMalloc(&c, 4000);
    launch(a, c, 1000);
    cudaDeviceSynchronize();
    printf("done\n");
    return 0;
}
"""


def _frame(func, pc, module):
    name = f"<func>{func}</func>" if func else ""
    return f"<frame>{name}<pc>{pc:#x}</pc><module>{module}</module></frame>"


def _report(binary: str, launch_pc: int, main_pc: int) -> str:
    """memcheck's record of vecadd's write past the end of c, with the host stack of its launch."""
    stack = "".join([
        _frame(None, 0x2F1A5B, "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
        # the CUDA runtime nvcc linked into the program
        _frame("cudaLaunchKernel", 0x702A0, binary),
        _frame("_Z26__device_stub__Z6vecaddPKfPfiPKfPfi", 0x8EF0, binary),
        _frame("_Z6vecaddPKfPfi", 0x8F60, binary),  # the kernel's host stub
        _frame("_ZL6launchPKfPfi", launch_pc, binary),
        _frame("main", main_pc, binary),
        _frame("__libc_start_main", 0x29E40, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
    ])  # fmt: skip
    return ("<?xml version='1.0' "
            "encoding='utf-8'?><ComputeSanitizerOutput><record><kind>Precise</kind><what><text>Invalid __global__ write of size 4 bytes</text><accessType>Write</accessType><size>4</size>"
            "<address>0x7f0000000fa0</address><threadIdx><x>232</x><y>0</y><z>0</z></threadIdx>"
            "<blockIdx><x>3</x><y>0</y><z>0</z></blockIdx></what>"
            "<where><func>_Z6vecaddPKfPfi</func><path>/src/vecadd.cu</path><line>4</line><pc>0x100</pc></where>"
            "<hostStack><saveLocation>kernel launch "
            f"time</saveLocation>{stack}</hostStack></record></ComputeSanitizerOutput>")


def _returns_after_calls(binary, caller: str, callee: str) -> int:
    """The return address of ``caller``'s call to ``callee`` (what a saved stack holds), from
    objdump."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], capture_output=True,
                          text=True, check=True).stdout
    body = text.split(f"<{caller}>:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    for i, line in enumerate(body):
        if re.search(rf"call\s+[0-9a-f]+ <{re.escape(callee)}>", line):
            return int(body[i + 1].split(":", 1)[0], 16)
    raise AssertionError(f"no call to {callee} in {caller}")


needs_binutils = pytest.mark.skipif(not (shutil.which("addr2line") and shutil.which("objdump")),
                                    reason="binutils (addr2line, objdump) not installed")


def _build(tmp_path, *flags):
    from kprof.build import toolchain

    compiler = toolchain.compiler_for("sm_90")
    if compiler.kind != "nvcc":
        pytest.skip(f"needs nvcc to build a host program ({compiler.kind} builds kernels only)")
    source = tmp_path / "vecadd.cu"
    source.write_text(VECADD)
    binary = tmp_path / "vecadd"
    subprocess.run([*compiler.program, "-arch=sm_90", "-lineinfo", *flags, "-o", str(binary),
                    str(source)],
                   check=True, capture_output=True)
    return source, str(binary)


@pytest.mark.nvcc
@needs_binutils
@pytest.mark.parametrize("flags", [["-g"], ["-g", "-Xcompiler", "-no-pie", "-Xlinker", "-no-pie"]],
                         ids=["pie", "fixed-address"])
def test_a_cpp_programs_launch_is_its_line_with_g(tmp_path, flags):
    source, binary = _build(tmp_path, *flags)
    base = addr2line.elf_base(Path(binary).read_bytes()[: 1 << 16])
    launch_pc = _returns_after_calls(binary, "_ZL6launchPKfPfi", "_Z6vecaddPKfPfi") - base
    main_pc = _returns_after_calls(binary, "main", "_ZL6launchPKfPfi") - base
    (f,), _ = sanitizer_xml.parse_xml(_report(binary, launch_pc, main_pc), "memcheck")
    # the <<<...>>> line, not the stub's
    assert f.launch == f"{source}:7 (launch in vecadd)", f.launch
    assert f.kernel == "vecadd(float const*, float*, int)" and f.location() == "vecadd.cu:4"


@pytest.mark.nvcc
def test_without_host_line_information_the_function_and_module_name_the_site(tmp_path):
    _, binary = _build(tmp_path)
    (f,), _ = sanitizer_xml.parse_xml(_report(binary, 0x8CCF, 0x8D14), "memcheck")
    assert f.launch == "launch in vecadd"


def test_the_native_site_skips_the_runtime_the_stub_and_other_peoples_modules():
    frames = [hostframes.Frame(None, None, None, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", 1),
              hostframes.Frame("cudaLaunchKernel", None, None, "/home/u/app", 2),
              hostframes.Frame("_Z6vecaddPKfPfi", None, None, "/home/u/app", 3),
              hostframes.Frame("_ZN5torch3fooEv", None, None,
                               "/opt/env/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so",
                               4),
              hostframes.Frame(None, None, None, "/home/u/app", 0x8D14)]
    site = hostframes.native_site(frames, "vecadd(float const*, float*, int)")
    assert site is not None and site.pc == 0x8D14 and site.where() == "0x8d14 in app"
    assert hostframes.native_site(frames[:4], "vecadd(float const*, float*, int)") is None
    assert (not hostframes.is_user_module("/opt/venv/bin/python3")
            and not hostframes.is_user_module("app"))
    assert hostframes.is_user_module("/home/u/build/libmykernels.so")


def test_addr2lines_answer_is_read_and_an_unknown_line_is_none():
    assert addr2line.parse("launch(float const*, float*, int)\n/src/v.cu:7 (discriminator 3)\n", 1) == [
        ("launch(float const*, float*, int)", "/src/v.cu", 7)]
    assert addr2line.parse("??\n??:0\n", 1) == [(None, None, None)]
    # a cut answer
    assert addr2line.parse("main\n", 2) == [("main", None, None), (None, None, None)]
    assert (addr2line.argv("addr2line", "/x/app", [0x10, 0x8ccf]) == ["addr2line", "-f", "-C", "-e", "/x/app", "0x10", "0x8ccf"])


def test_the_elf_base_of_each_kind_of_file():
    def elf(e_type, loads=()):
        head = bytearray(64)
        head[:6] = b"\x7fELF\x02\x01"
        struct.pack_into("<H", head, 16, e_type)
        struct.pack_into("<Q", head, 0x20, 64)
        struct.pack_into("<HH", head, 0x36, 56, len(loads))
        for vaddr in loads:
            ph = bytearray(56)
            struct.pack_into("<I", ph, 0, 1)
            struct.pack_into("<Q", ph, 0x10, vaddr)
            head += ph
        return bytes(head)

    assert addr2line.elf_base(elf(3)) == 0  # position-independent: offsets are addresses
    assert addr2line.elf_base(elf(2, [0x400000, 0x401000])) == 0x400000
    assert addr2line.elf_base(elf(2)) is None and addr2line.elf_base(b"#!/bin/sh\n" + bytes(60)) is None
    assert addr2line.elf_base(elf(1)) is None  # a relocatable object is no program
    assert addr2line.line_of(None, 1) is None and addr2line.line_of("relative/app", 1) is None
    assert addr2line.line_of("/nonexistent/app", 0x10) is None
