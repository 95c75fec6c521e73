"""What the wheel holds, found by discovery rather than listed by hand (the metadata is pyproject.toml's).

Every folder under ``kprof/`` is a package, with or without an ``__init__.py`` (``kprof/hooks`` and
``kprof/templates`` are data that the child programs and ``kprof new`` read), and every file beside its
modules travels with it. The kernels, the sanitizer cases, the performance cases and the bench cases stay
at the top of the repository, where users read them, and travel as ``kprof/kernels`` and the like.
``tests/test_packaging.py`` builds the wheel and holds that nothing under those folders is left out.
"""

from __future__ import annotations

import os

from setuptools import find_namespace_packages, setup

# the folders at the top of the repository that ship inside the package, and their names there
DATA_PACKAGES = {"kprof.kernels": "kernels", "kprof.sanitizer_cases": "sanitizer_cases",
                 "kprof.perf_cases": "perf_cases", "kprof.bench_cases": "bench_cases"}
NOT_SHIPPED = ("__pycache__",)


def _packages() -> list[str]:
    found = find_namespace_packages(include=["kprof", "kprof.*"], exclude=[f"*.{name}" for name in NOT_SHIPPED])
    return sorted(found + list(DATA_PACKAGES))


def _folder(package: str) -> str:
    return DATA_PACKAGES.get(package, package.replace(".", os.sep))


def _data(package: str) -> list[str]:
    """Every file of a package's folder that is not a module: kernels, specs, headers, templates."""
    folder = _folder(package)
    return sorted(name for name in os.listdir(folder) if os.path.isfile(os.path.join(folder, name))
                  and not name.endswith((".pyc", ".pyo")) and not name.endswith(".py"))  # modules travel as modules


PACKAGES = _packages()
setup(packages=PACKAGES, package_dir=DATA_PACKAGES, package_data={p: _data(p) for p in PACKAGES},
      include_package_data=False)
