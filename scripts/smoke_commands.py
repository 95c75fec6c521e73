"""One smoke per command of an installed kprof, as a user types it, with no GPU: each ends with the
exit code kprof documents for a machine without one, prints at most one line on stderr and no
traceback. `.ci/run` runs it with the wheel's environment from an empty folder (the source tree out
of reach); tests/test_smoke_script.py holds that every command of kprof's command line is here."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

NO_GPU, USAGE = 5, 2
# command -> (arguments, the exit code on a machine with no GPU)
SMOKES: dict[str, tuple[list[str], int]] = {
    "list": (["list"], 0),
    "new": (["new", "my_scale", "--dir", "{tmp}"], 0),
    "build": (["build", "vector_add", "--arch", "sm_90"], 0),
    "run": (["run", "vector_add"], NO_GPU),
    "sanitize": (["sanitize", "--list-tools"], 0),
    "cases": (["cases", "--list"], 0),
    "mutants": (["mutants", "vector_add", "--dry-run"], 0),
    "profile": (["profile", "vector_add"], NO_GPU),
    "occupancy": (["occupancy", "tiled_matmul"], 0),
    "bench": (["bench", "vector_add"], NO_GPU),
    "peak": (["peak"], NO_GPU),
    "history": (["history"], 0),
    "compare": (["compare", "last~1", "last"], USAGE),  # an empty history has no runs to compare
    "doctor": (["doctor", "--for", "build"], 0),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kprof", default=shutil.which("kprof") or "kprof",
                        help="the installed kprof (default: PATH's)")
    opts = parser.parse_args(argv)
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, KPROF_CACHE_DIR=str(Path(tmp) / "cache"),
                   KPROF_HISTORY=str(Path(tmp) / "h.sqlite"),
                   CUDA_VISIBLE_DEVICES="")  # the same answers on a machine with a GPU
        for command, (args, want) in SMOKES.items():
            words = [a.replace("{tmp}", tmp) for a in args]
            done = subprocess.run([opts.kprof, *words], cwd=tmp, env=env, capture_output=True,
                                  text=True, timeout=600)
            err = done.stderr.strip().splitlines()
            # the rest is progress ([1/2] ...)
            said = [line for line in err if line.startswith("kprof: error:")]
            ok = done.returncode == want and "Traceback" not in done.stderr and len(said) == (1 if want else 0)
            print(f"{'ok  ' if ok else 'FAIL'} kprof {' '.join(args)}: exit {done.returncode} "
                  f"(want {want})"
                  + ("" if ok else f"; stderr: {done.stderr.strip()[-400:]}"))
            if not ok:
                failed.append(command)
    print(f"{len(SMOKES) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
