"""Record real compute-sanitizer and ncu output on a GPU machine, for parser tests in tests/data/.

    python3 scripts/record_tool_output.py OUTDIR
    python3 scripts/record_tool_output.py OUTDIR --cases CASE... [--exe COMPUTE_SANITIZER]

Each recording is the tool wrapping kprof's own runner on a small kernel from tests/data/kernels
(or a ladder kernel), exactly as kprof runs it. Files: NAME.TOOL.xml (the --save output),
NAME.TOOL.txt (what the tool printed), plus the job's allocations (NAME.result.json), so tests can
map addresses to buffers. Also records `compute-sanitizer --help` and `ncu --help`.

``--cases``: each named sanitizer case and its fixed twin under the case's tool, with the argv kprof
builds for that tool and version (``compute_sanitizer.build_argv``), by ``--exe`` (default: the one
kprof finds): CASE.TOOL.{xml,txt} and CASE_fixed.TOOL.{xml,txt}, and the version in version.txt.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kprof import proc  # noqa: E402
from kprof import spec as spec_mod  # noqa: E402
from kprof.build import build  # noqa: E402
from kprof.commands import pipeline  # noqa: E402
from kprof.launch import launch  # noqa: E402
from kprof.launch.job import Job, RunMode  # noqa: E402
from kprof.spec import catalog  # noqa: E402

DATA = ROOT / "tests" / "data" / "kernels"


def job_for(spec_path: Path, poison: bool = True) -> Job:
    prepared = pipeline.prepare(spec_mod.load(spec_path), preset="sanitize")
    return prepared.job(RunMode(verify=False, poison=poison))


def wrap(out: Path, name: str, tool_argv: list[str], job: Job, timeout: float = 300) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        jp, rp = Path(tmp) / "job.json", Path(tmp) / "result.json"
        jp.write_text(job.to_json())
        argv = tool_argv + launch.runner_argv(jp, rp)
        done = proc.run(argv, timeout=timeout, env=proc.child_env())
        (out / f"{name}.txt").write_text(
            f"$ {' '.join(argv)}\n# rc={done.returncode} timed_out={done.timed_out} "
            f"seconds={done.seconds:.2f}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}\n"
        )
        if rp.exists():
            shutil.copy(rp, out / f"{name}.result.json")
    print(f"{name}: rc={done.returncode} {done.seconds:.1f}s", flush=True)


def record_occupancy(out: Path) -> None:
    """The driver's occupancy answers for every ladder kernel, to test kprof's own calculator."""
    from kprof.child.device import Device

    dev = Device()
    attrs = {name: dev.attribute(name) for name in (
        "MULTIPROCESSOR_COUNT", "MAX_THREADS_PER_MULTIPROCESSOR", "MAX_BLOCKS_PER_MULTIPROCESSOR",
        "MAX_REGISTERS_PER_MULTIPROCESSOR", "MAX_REGISTERS_PER_BLOCK",
        "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
        "MAX_SHARED_MEMORY_PER_BLOCK", "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
        "RESERVED_SHARED_MEMORY_PER_BLOCK",
        "WARP_SIZE", "L2_CACHE_SIZE", "GLOBAL_MEMORY_BUS_WIDTH", "MEMORY_CLOCK_RATE", "CLOCK_RATE")}
    kernels = []
    for entry in catalog.entries():
        spec = spec_mod.load(entry.path)
        built = build.build(spec)
        func = dev.function(dev.load_module(built.cubin.read_bytes()), spec.entry)
        regs = dev.function_attribute(func, "NUM_REGS")
        static = dev.function_attribute(func, "SHARED_SIZE_BYTES")
        max_threads = dev.function_attribute(func, "MAX_THREADS_PER_BLOCK")
        answers = []
        for block in range(32, max_threads + 1, 32):
            for dyn in (0, 1024, 16384, 49152):
                answers.append({"block": block, "dynamic_smem": dyn,
                                "blocks_per_sm": dev.occupancy(func, block, dyn)})
        kernels.append({"name": spec.name, "registers": regs, "static_smem": static,
                        "max_threads_per_block": max_threads,
                        "ptxas": build.asdict(built.usage_of(spec.entry)), "answers": answers})
    dev.close()
    (out / "occupancy_sm90.json").write_text(json.dumps({"device": attrs, "kernels": kernels},
                                                        indent=1))
    print("occupancy recorded", flush=True)


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    cs = str(proc.find_tool("compute-sanitizer"))
    ncu = str(proc.find_tool("ncu"))
    for exe, name in ((cs, "compute-sanitizer"), (ncu, "ncu")):
        done = proc.run([exe, "--help"], timeout=60)
        (out / f"{name}.help.txt").write_text(done.stdout + done.stderr)
    base = [cs, "--xml", "--error-exitcode", "99", "--print-limit", "100"]
    plan = [
        ("rec_oob.memcheck", ["--tool", "memcheck", "--leak-check", "full"], DATA / "rec_oob.yaml",
         True),
        ("rec_oob.memcheck_padding", ["--tool", "memcheck", "--padding", "256"],
         DATA / "rec_oob.yaml", True),
        ("rec_leak.memcheck", ["--tool", "memcheck", "--leak-check", "full"],
         DATA / "rec_leak.yaml", True),
        ("rec_race.racecheck", ["--tool", "racecheck", "--racecheck-report", "all"],
         DATA / "rec_race.yaml", True),
        ("rec_race.racecheck_default", ["--tool", "racecheck"], DATA / "rec_race.yaml", True),
        ("rec_uninit.initcheck", ["--tool", "initcheck"], DATA / "rec_uninit.yaml", False),
        ("rec_sync.synccheck", ["--tool", "synccheck"], DATA / "rec_sync.yaml", True),
        ("fault.memcheck", ["--tool", "memcheck"], DATA / "fault.yaml", True),
    ]
    tiled = catalog.find("tiled_matmul")
    for tool in ("memcheck", "racecheck", "initcheck", "synccheck"):
        plan.append((f"tiled_matmul.{tool}", ["--tool", tool], tiled, tool != "initcheck"))
    for name, extra, spec_path, poison in plan:
        xml = out / f"{name}.xml"
        wrap(out, name, base + extra + ["--save", str(xml)], job_for(spec_path, poison))
    record_occupancy(out)
    # ncu: the runner filtered by its NVTX range, as kprof profile will run it.
    nc = [ncu, "--nvtx", "--nvtx-include", "kprof@tiled_matmul/", "--clock-control", "none"]
    tjob = pipeline.prepare(catalog.load("tiled_matmul"), {"M": 1024, "N": 1024, "K": 1024}).job(RunMode(verify=False))
    wrap(out, "tiled_matmul.ncu_full_raw", nc + ["--set", "full", "--page", "raw", "--csv"], tjob)
    wrap(out, "tiled_matmul.ncu_details", nc + ["--set", "full", "--page", "details", "--csv"],
         tjob)
    wrap(out, "tiled_matmul.ncu_report",
         nc + ["--set", "full", "-f", "-o", str(out / "tiled_matmul")], tjob)
    nomatch = [ncu, "--nvtx", "--nvtx-include", "kprof@no_such_kernel/", "--clock-control", "none",
               "--page", "raw", "--csv"]
    wrap(out, "nomatch.ncu", nomatch, tjob)
    return 0


def record_cases(out: Path, names: list[str], exe: str) -> int:
    """Each case and its twin under the case's tool, as kprof runs that tool (see the module's
    docstring)."""
    from kprof.corpus import cases
    from kprof.tools.sanitizers import compute_sanitizer

    out.mkdir(parents=True, exist_ok=True)
    version = compute_sanitizer.version(exe)
    (out / "version.txt").write_text(f"{exe}\n{version}\n")
    for name in names:
        case = cases.load_case(catalog.load(name))
        tool = case.expect.tool
        for spec in (case.spec, case.spec.twin_spec()):
            prepared = pipeline.prepare(spec, preset="sanitize")
            job = prepared.job(RunMode(verify=False, poison=tool != "initcheck"))
            xml = out / f"{spec.name}.{tool}.xml"
            wrap(out, f"{spec.name}.{tool}",
                 compute_sanitizer.build_argv(exe, tool, xml, tool_version=version), job)
    return 0


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="record real compute-sanitizer and ncu output "
                                                 "(see the docstring)")
    parser.add_argument("out", type=Path)
    parser.add_argument("--cases", nargs="+",
                        help="sanitizer cases to record under their tool, with their twins")
    parser.add_argument("--exe", help="the compute-sanitizer to run (default: the one kprof finds)")
    opts = parser.parse_args()
    if opts.cases:
        sys.exit(record_cases(opts.out, opts.cases,
                              opts.exe or str(proc.find_tool("compute-sanitizer"))))
    sys.exit(main(opts.out))
