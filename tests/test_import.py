"""import kprof and kprof --help load no CUDA, nvtx or NumPy module."""

import subprocess
import sys

HEAVY = ("cuda", "nvtx", "numpy", "pynvml")

# What Python loads before kprof is imported is not kprof's: cuda-bindings 12.x installs a .pth file
# (_cuda_bindings_redirector) that imports the bare `cuda` namespace package at every start.
PROBE = """
import sys
before = set(sys.modules)
{body}
heavy = sorted(m for m in set(sys.modules) - before if m.split('.')[0] in {heavy!r})
print('HEAVY:' + ','.join(heavy))
"""


def loaded_after(body: str) -> str:
    code = PROBE.format(body=body, heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.rsplit('HEAVY:', 1)[1].strip()


def test_import_kprof_is_light():
    assert loaded_after("import kprof, kprof.commands.cli, kprof.errors, kprof.spec, kprof.spec.sizeexpr, kprof.spec.reference") == ""


def test_help_is_light():
    body = "from kprof.commands import cli\ntry:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass"
    assert loaded_after(body) == ""


def test_list_is_light():
    assert loaded_after("from kprof.commands import cli\ncli.main(['list'])") == ""


def test_help_kprof_lists_the_api_and_stays_light():
    """help(kprof) names every API function and the types they return (they are loaded on first use, so
    the module must list them itself), and loads no CUDA, nvtx or NumPy module to do it."""
    body = ("import pydoc, kprof\ntext = pydoc.render_doc(kprof, renderer=pydoc.plaintext)\n"
            "missing = [n for n in kprof.__all__ if n != '__version__' and n not in text]\n"
            "assert not missing, missing")
    assert loaded_after(body) == ""
