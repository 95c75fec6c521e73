# A stand-in compute-sanitizer for the plugin's tests on a machine with no GPU
# (tests/test_suite.py): it runs the target as the real tool does and writes XML records with host
# stacks, as the real tool saves them, for the tests whose names ask for it:
#   *racy*    racecheck: a hazard launched from the test (the kprof_test_<i> frame and the test's
# own)
#   *noframe* racecheck: a hazard whose stack has the test's frame only (no kprof_test_<i> frame)
#   *fault*   memcheck: an invalid write; the tool stops the target in that test, as a fault can
#   *ldg*     initcheck: an uninitialized read at a line inside a CUDA header (an inlined __ldg)
#   *breaks*  memcheck: an invalid write in a test after which kprof's child says its context broke
#             (the suite's conftest makes the child's driver check say so for such a test); the tool
# then
#             takes 3 s to end, as memcheck takes seconds to end a process with torch loaded
# Each start and end appends a line to $KPROF_FAKE_CALLS (the node ids on its command line; the
# tests that started in it), so a test counts the children and what each ran.
import json
import os
import subprocess
import sys
import time
from pathlib import Path

args = sys.argv[1:]
if args == ["--version"]:  # as the real tool prints it (KPROF_FAKE_CS_VERSION: another)
    print("NVIDIA (R) Compute Sanitizer\n" + os.environ.get("KPROF_FAKE_CS_VERSION",
                                                            "Version 2025.3.1.0 (build 36400806) "
                                                            "(public-release)"))
    sys.exit(0)
save = args[args.index("--save") + 1]
tool = args[args.index("--tool") + 1]
# the target: kprof starts it with the interpreter this script runs on
start = args.index(sys.executable)
cmd = args[start:]
events = os.environ.get("KPROF_SUITE_EVENTS")

def log(**entry):
    with open(os.environ["KPROF_FAKE_CALLS"], "a") as f:
        f.write(json.dumps(dict(entry, tool=tool, t=time.time(), pid=os.getpid())) + "\n")


frames_kind = args[args.index("--show-backtrace") + 1] if "--show-backtrace" in args else "yes"
log(event="start", nodeids=[a for a in cmd if "::" in a], batch=bool(events), backtrace=frames_kind)

HAZARD = """<record><kind>Hazard</kind><what><text>Potential RAW hazard detected</text>
<common><gridid>{grid}</gridid><type>RAW</type><address>0x580</address><blockIdx><x>0</x><y>0</y><z>0</z></blockIdx></common>
<thread0><access>Write</access><threadIdx><x>1</x><y>0</y><z>0</z></threadIdx>
<where><func>block_sum</func><path>/src/block_sum.cu</path><line>10</line></where></thread0>
<thread1><access>Read</access><threadIdx><x>2</x><y>0</y><z>0</z></threadIdx>
<where><func>block_sum</func><path>/src/block_sum.cu</path><line>11</line></where></thread1>
</what><hostStack>{frames}</hostStack></record>"""
PRECISE = """<record><kind>Precise</kind><who><threadIdx><x>7</x><y>0</y><z>0</z></threadIdx>
<blockIdx><x>3</x><y>0</y><z>0</z></blockIdx></who><what><text>Invalid __global__ write of size 4 bytes</text>
<space>__global__</space><size>4</size><direction>write</direction><error>out of bounds</error>
<address>0x7f0000001000</address></what><where><func>scale</func><path>/src/scale.cu</path><line>27</line></where>
<hostStack>{frames}</hostStack></record>"""
INIT_IN_HEADER = """<record><kind>Initcheck</kind><who><threadIdx><x>0</x><y>0</y><z>0</z></threadIdx>
<blockIdx><x>0</x><y>0</y><z>0</z></blockIdx></who><what><text>Uninitialized __global__ memory read of size 4 bytes</text>
<address>0x7f0000000200</address><size>4</size></what>
<where><func>__ldg</func><path>/usr/local/cuda/include/sm_32_intrinsics.hpp</path><line>95</line></where>
<hostStack>{frames}</hostStack></record>"""
FRAME = "<frame><func>{func}</func><path>{path}</path><line>{line}</line></frame>"


def frames(i, nodeid, kprof_frame=True):
    path = str(Path.cwd() / nodeid.split("::")[0])
    func = nodeid.split("::")[-1].split("[")[0]
    out = FRAME.format(func=func, path=path, line=5)
    if kprof_frame:
        out += FRAME.format(func=f"kprof_test_{i}", path="/site/kprof/pytest_child.py", line=40)
    return out


def read(offset):
    if not events or not os.path.exists(events):
        return [], offset
    with open(events, "rb") as f:
        f.seek(offset)
        chunk = f.read()
    complete = chunk[: chunk.rfind(b"\n") + 1]
    return [json.loads(line) for line in complete.decode().splitlines()], offset + len(complete)


def started(offset):
    out, offset = read(offset)
    dead.extend(e for e in out if e.get("event") == "dead")
    return [e for e in out if e.get("event") == "start"], offset


dead = []


records, order, offset = [], [], 0
child = subprocess.Popen(cmd)
stopped = slow = False
while child.poll() is None:
    new, offset = started(offset)
    for e in new:
        order.append(e["nodeid"])
        if tool == "memcheck" and "fault" in e["nodeid"]:
            records.append(PRECISE.format(frames=frames(e["i"], e["nodeid"])))
            child.kill()
            stopped = True
    for e in [e for e in dead if tool == "memcheck" and "breaks" in e["nodeid"]]:
        records.append(PRECISE.format(frames=frames(e["i"], e["nodeid"])))
        slow = True
    dead.clear()
    time.sleep(0.02)
if slow:
    time.sleep(3)
new, offset = started(offset)
order += [e["nodeid"] for e in new]
if not events:  # one child per test (--kprof-per-test): the test named on its command line
    order = [a for a in cmd if "::" in a]
    if tool == "memcheck" and any("fault" in n for n in order):
        records.append(PRECISE.format(frames=frames(0, order[0])))
if tool == "racecheck":
    for i, nodeid in enumerate(order):
        if "racy" in nodeid:
            records.append(HAZARD.format(grid=i + 1, frames=frames(i, nodeid)))
        if "noframe" in nodeid:
            records.append(HAZARD.format(grid=i + 1, frames=frames(i, nodeid, kprof_frame=False)))
if tool == "initcheck":
    for i, nodeid in enumerate(order):
        if "ldg" in nodeid:
            records.append(INIT_IN_HEADER.format(frames=frames(i, nodeid)))
Path(save).write_text("<ComputeSanitizerOutput>" + "".join(records) + "</ComputeSanitizerOutput>")
log(event="end", ran=order)
sys.exit(99 if records else (child.returncode if child.returncode >= 0 else 1))
