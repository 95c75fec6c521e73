"""The public API's arguments held to their annotations (kprof.commands.apitypes): a wrong type is a
TypeError that names the function and the argument, never an AttributeError or a KeyError from
inside kprof."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

import kprof
from kprof.commands import apitypes
from kprof.errors import UsageError


@pytest.mark.parametrize("value, annotation, verdict", [
    ("x", "str | Path", True), (3, "str | Path", False), (None, "dict[str, int] | None", True),
    ({"N": 3}, "dict[str, int] | None", True), ({"N": "3"}, "dict[str, int] | None", False),
    ({"N": True}, "dict[str, int]", False), (math.nan, "float", False), (10**400, "float", False),
    (2, "float", True),
    (["a"], "Sequence[str]", True), ("abc", "Sequence[str]", False),
    (("a", 1), "tuple[str, ...]", False), (("a", 1), "tuple[str, int]", True),
    (("a",), "tuple[str, int]", False),
    ("cold", "Literal['cold', 'warm']", True), ("hot", "Literal['cold', 'warm']", False),
    (object(), "Sweep", None), (print, "Callable[[str], None] | None", True),
])
def test_an_annotation_is_read_as_written(value, annotation, verdict):
    assert apitypes.matches(value, annotation) is verdict


def test_a_wrong_type_names_the_function_the_argument_and_what_it_must_be():
    with pytest.raises(TypeError, match=r"kprof.occupancy_of\(\): name must be a str, not int 3"):
        kprof.occupancy_of(3)
    with pytest.raises(TypeError,
                       match=r"kprof.run\(\): timeout must be a finite number, not float nan"):
        kprof.run("vector_add", timeout=math.nan)
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        kprof.run("vector_add", colour=1)


PROBE = """
import inspect, math, kprof
from kprof.errors import KprofError
bad = [None, 3, -1, 10**400, math.nan, math.inf, "x", ["a", 1], {"N": -5}, {"N": 10**400}, {"N": math.nan}, {"Q": 1},
       object(), b"\\xff", 1.5, True]
found = []
for name in kprof.__all__:
    f = getattr(kprof, name)
    if not inspect.isfunction(f) or name in ("range", "prestart_tests", "sanitize_tests"):
        continue
    params = [p for p in inspect.signature(f).parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for p in params:
        for v in bad:
            if v is True and p.name == "all":
                continue  # build_kernels(all=True) is the right call: it builds every kernel
            kwargs = {q.name: {"cmd": ["true"], "checks": [], "names": ["vector_add"]}.get(q.name, "vector_add")
                      for q in params if q is not p and q.default is inspect.Parameter.empty}
            kwargs[p.name] = v
            try:
                f(**kwargs)
            except (KprofError, TypeError, ValueError) as e:
                if "\\n" in str(e).strip() or not str(e).strip():
                    found.append((name, p.name, repr(v)[:30], "not one line"))
            except Exception as e:
                found.append((name, p.name, repr(v)[:30], type(e).__name__, str(e)[:80]))
assert not found, found
"""


def test_every_api_function_given_wrong_types_sizes_nan_and_extra_keys_answers_in_one_line(tmp_path):
    """Each public function, each argument in turn given a wrong type, a negative or 10**400 size,
    NaN, an unknown size: kprof's one-line error, or a TypeError or ValueError with a message (the
    GPU hidden, as on CI)."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", KPROF_HISTORY=str(tmp_path / "h.sqlite"))
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("call, says", [
    (lambda: kprof.bench_history(limit=0), "limit must be a whole number from 1"),
    (lambda: kprof.bench_history(limit=10**400), "limit must be a whole number from 1"),
    (lambda: kprof.bench_history(limit=10**5000), "an int of"),
    (lambda: kprof.occupancy_of("vector_add", arch="sm_90\n"), "arch is not an architecture"),
    (lambda: kprof.occupancy_of("vector_add", dynamic_smem=-5, arch="sm_90"), "dynamic_smem must be"),
    (lambda: kprof.occupancy_of("vector_add", dynamic_smem=10**12, arch="sm_90"), "dynamic_smem must be"),
    (lambda: kprof.load("vector_add", BLOCK=None, arch="sm_90"), "define BLOCK must be a number or a word"),
    (lambda: kprof.run("vector_add", timeout=0), "timeout must be from 1"),
    (lambda: kprof.run_bench("vector_add", max_time=-1.0), "max_time must be a positive number"),
    (lambda: kprof.sanitize(["python", "x.py"], jobs=0), "jobs must be a whole number from 1"),
])  # fmt: skip
def test_the_api_refuses_what_the_cli_refuses_in_the_clis_words(call, says):
    """Issue 79: the Python API skipped the CLI's checks (a limit of 0 or below, an architecture with
    a newline, negative or enormous shared memory, a None define); a 400-digit limit reached SQLite
    as a traceback. One check, in kprof.commands.apitypes, holds every API function to the CLI's
    rules, before anything is built or run."""
    with pytest.raises(UsageError, match="^[^\n]*$") as info:
        call()
    assert says in str(info.value)
