# A stand-in for a program under kprof's launch recorder (tests/tools/programs/test_launchlog.py),
# on a machine with no GPU: it writes the recorder's log lines itself
# (kprof.tools.programs.launchlog's format), two launches, the second's argument 2 as the mode says:
#   same        the same hash every run (a deterministic program)
#   race        another hash each run; captured, an int32 counter far apart (counter[0]++ by many
# threads)
#   quiet-race  the same hash every run on an idle GPU, another on a crowded one
# (KPROF_LAUNCH_CROWD=1): as
#               counter[0]++ by 51,200 threads, which on an idle H200 ends at 1 every run; captured,
# 1 or 25
#   atomics     another hash each run; captured, a float32 sum one unit in the last place apart
#   nokernel    the recorder started and saw no launch;   norecorder  no recorder line at all
#   unreadable  the recorder started and could read no launch (an error line for each)
#   fails       exits with code 3 before any launch
import json
import os
import struct
import sys

mode = sys.argv[1]
log = os.environ["KPROF_LAUNCH_LOG"]
capture, folder = os.environ.get("KPROF_LAUNCH_CAPTURE", ""), os.environ.get("KPROF_LAUNCH_CAPTURE_DIR", "")
crowded = os.environ.get("KPROF_LAUNCH_CROWD") == "1"


def emit(**event):
    with open(log, "a") as f:
        f.write(json.dumps(event) + "\n")


if mode == "fails":
    sys.exit(3)
if mode != "norecorder":
    emit(event="recorder", ok=True, crowd_us=1000 if crowded else None)
if mode in ("nokernel", "norecorder"):
    sys.exit(0)
if mode == "unreadable":
    emit(event="error", seq=0, why="TypeError: the callback data has no address")
    sys.exit(0)
emit(event="launch", seq=0, kernel="fill", site=f"{__file__}:40", args=[[0, 400, "aa"]])
emit(event="launch", seq=1, kernel="count", site=f"{__file__}:41",
     args=[[0, 400, "aa"],
           [2, 4,
            "bb" if mode == "same" or (mode == "quiet-race" and not crowded)
            else f"{os.getpid()}"]])
if capture == "1:2":
    second = os.path.exists(os.path.join(folder, "first"))
    open(os.path.join(folder, "first"), "w").close()
    if mode == "quiet-race":
        data = struct.pack("<i", 25 if crowded else 1)
    elif mode == "race":
        data = struct.pack("<i", 51200 if second else 37)
    else:
        data = struct.pack("<f", 1000.0 + (6.103515625e-05 if second else 0.0))
    path = os.path.join(folder, f"capture-{int(second)}.bin")
    with open(path, "wb") as f:
        f.write(data)
    emit(event="capture", seq=1, arg=2, path=path)
