"""import kprof and kprof --help load no CUDA, nvtx or NumPy module."""

import os
import re
import subprocess
import sys
from pathlib import Path

HEAVY = ("cuda", "nvtx", "numpy", "pynvml")

# What Python loads before kprof is imported is not kprof's: cuda-bindings 12.x installs a .pth file
# (_cuda_bindings_redirector) that imports the bare `cuda` namespace package at every start.
PROBE = """
import sys
from pathlib import Path
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
    assert loaded_after("import kprof, kprof.commands.cli, kprof.errors, kprof.spec, "
                        "kprof.spec.sizeexpr, kprof.spec.reference") == ""


def test_help_is_light():
    body = "from kprof.commands import cli\ntry:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass"
    assert loaded_after(body) == ""


def test_list_is_light():
    assert loaded_after("from kprof.commands import cli\ncli.main(['list'])") == ""


def test_help_kprof_lists_the_api_and_stays_light():
    """help(kprof) names every API function and the types they return (they are loaded on first use,
    so the module must list them itself), and loads no CUDA, nvtx or NumPy module to do it."""
    body = ("import pydoc, kprof\ntext = pydoc.render_doc(kprof, renderer=pydoc.plaintext)\n"
            "missing = [n for n in kprof.__all__ if n != '__version__' and n not in text]\n"
            "assert not missing, missing")
    assert loaded_after(body) == ""


def test_every_public_name_is_listed_once_and_loads():
    """kprof's public surface: the API functions and the types they return, each once in __all__,
    each loading from where kprof says it lives."""
    import kprof

    assert len(kprof.__all__) == len(set(kprof.__all__))
    for name in kprof.__all__:
        assert getattr(kprof, name) is not None, name
    assert ({"Diagnosis", "PointResult", "KernelProfile", "ToolResult", "Finding", "SanitizeReport"} <= set(kprof.__all__))
    assert (kprof.sanitize.__module__ == "kprof.commands.api"
            and kprof.range.__module__ == "kprof.annotate")


def test_an_old_module_path_is_gone_and_import_kprof_installs_no_finder():
    """No compatibility layer before 1.0 (CHANGELOG.md says where names went): kprof.bench is no
    module, and ``import kprof`` leaves sys.meta_path as it found it."""
    body = ("import sys\nbefore = list(sys.meta_path)\nimport kprof\nprint('SAME', sys.meta_path "
            "== before)\ntry:\n    import kprof.bench\nexcept ModuleNotFoundError:\n    "
            "print('GONE')\n")
    out = subprocess.run([sys.executable, "-c", body], capture_output=True, text=True, check=True).stdout
    assert "SAME True" in out and "GONE" in out


EVERY_SUBMODULE = """
import importlib, pkgutil, kprof
for m in pkgutil.walk_packages(kprof.__path__, "kprof."):
    if m.name.endswith("__main__"):
        continue  # the command line itself
    try:
        importlib.import_module(m.name)
    except ImportError as exc:  # an optional extra (torch, matplotlib) not installed here
        assert exc.name and exc.name.split(".")[0] in ("torch", "cupy", "matplotlib", "triton", "cupti"), (m.name, exc)
"""


def test_every_public_name_keeps_its_kind_after_every_submodule_is_imported():
    """A documented function stays a function: kprof.diagnose was shadowed by the subpackage of the
    same name once anything imported it (now kprof.diagnosis). The API functions are functions, the
    types classes, after every module of kprof has been imported."""
    body = EVERY_SUBMODULE + """
import inspect
from kprof import _PUBLIC
wrong = []
for name in kprof.__all__:
    if name == "__version__":
        continue
    value = getattr(kprof, name)
    function = name[0].islower() and name != "range"  # the API's verbs; kprof.range is a context manager's class
    if function and not inspect.isfunction(value) or not function and not inspect.isclass(value):
        wrong.append((name, type(value).__name__))
assert not wrong, wrong
assert not set(_PUBLIC) & {m.name for m in pkgutil.iter_modules(kprof.__path__)}  # no API name is a module's
"""
    done = subprocess.run([sys.executable, "-c", body], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


README_CALL = re.compile(r"`(kprof\.(\w+)\((?:[^`]*)\))`")


def readme_calls() -> list[str]:
    """The README's Python calls whose arguments are literals (`kprof.run("tiled_matmul",
    sizes={"M": 512})`)."""
    import ast

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    calls = []
    for call, _name in README_CALL.findall(text):
        node = ast.parse(call, mode="eval").body
        if isinstance(node, ast.Call) and all(_literal(a)
                                              for a in [*node.args,
                                                        *(k.value for k in node.keywords)]):
            calls.append(call)
    return calls


def _literal(node) -> bool:
    import ast

    try:
        value = ast.literal_eval(node)
    except ValueError:
        return False
    return value is not Ellipsis  # `kprof.profile(...)`: a placeholder, not a call


def test_the_readmes_api_calls_run_as_written(tmp_path):
    """Each call the README shows, as written, after every submodule is imported: a result, or
    kprof's own one-line error (the GPU hidden, also on a GPU machine: NoGPUError, exit 5), never a
    TypeError or an AttributeError."""
    calls = readme_calls()
    assert {"run", "run_bench", "run_cases", "diagnose", "sanitize"} <= {c.split("(")[0].split(".")[1] for c in calls}, calls
    body = EVERY_SUBMODULE + f"""
from kprof.errors import KprofError
for call in {calls!r}:
    try:
        eval(call)
    except KprofError as exc:
        assert "\\n" not in str(exc).strip(), (call, str(exc))
"""
    # the corpus is not run here, whatever the machine has
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    done = subprocess.run([sys.executable, "-c", body], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]


def api_block() -> str:
    """The API's signatures as kprof's docstring lists them, first thing in help(kprof): one a
    function, its annotations left to help(kprof.NAME)."""
    import inspect
    import textwrap

    import kprof

    lines = []
    for name in kprof.__all__:
        value = getattr(kprof, name)
        if not inspect.isfunction(value):
            continue
        sig = inspect.signature(value)
        bare = sig.replace(parameters=[p.replace(annotation=inspect.Parameter.empty)
                                       for p in sig.parameters.values()],
                           return_annotation=inspect.Signature.empty)
        text = f"kprof.{name}{bare} -> {sig.return_annotation}"
        lines += textwrap.wrap(text, width=96, initial_indent="    ", subsequent_indent="        ",
                               break_on_hyphens=False)
    return "\n".join(lines)


def test_help_kprof_starts_with_the_apis_signatures():
    """help(kprof) is the docstring first: each API function's signature there, as the code has it
    (the API's signatures began at line 1,430 of 1,559)."""
    import pydoc

    import kprof

    block = api_block()
    assert block in kprof.__doc__, "kprof/__init__.py's docstring should list, as now:\n" + block
    text = pydoc.render_doc(kprof, renderer=pydoc.plaintext)
    assert text.index("kprof.run(") < 60 * 100 and text.index("kprof.run(") < text.index("CLASSES")
