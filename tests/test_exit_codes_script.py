"""One list of exit codes (kprof.errors.EXIT_CODES): kprof --help prints it, and README.md and
docs/limits.md hold it as scripts/exit_codes.py generates it; every EXIT_* the code uses is in
it."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from kprof import errors
from kprof.commands import cli

_PATH = Path(__file__).resolve().parent.parent / "scripts" / "exit_codes.py"
_spec = importlib.util.spec_from_file_location("exit_codes", _PATH)
exit_codes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(exit_codes)


def test_every_exit_code_constant_is_in_the_one_list():
    constants = {v for k, v in vars(errors).items() if k.startswith("EXIT_") and isinstance(v, int)}
    listed = [code for code, _, _ in errors.EXIT_CODES]
    assert sorted(listed) == listed and set(listed) == constants


def test_the_readme_and_the_limits_page_are_what_the_list_generates():
    assert exit_codes.main(["--check", "--root", str(_PATH.parent.parent)]) == 0, "run python scripts/exit_codes.py"


def test_help_prints_every_code_and_its_meaning(capsys):
    assert cli.main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for code, meaning, _ in errors.EXIT_CODES:
        assert f"{code} {meaning}" in text


def test_a_stale_page_is_found_and_rewritten(tmp_path):
    for name in exit_codes.GENERATED:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_PATH.parent.parent / name, tmp_path / name)
    limits = tmp_path / "docs" / "limits.md"
    limits.write_text(limits.read_text().replace("| 5 | no CUDA driver or no GPU",
                                                 "| 5 | no GPU at all"))
    assert exit_codes.main(["--check", "--root", str(tmp_path)]) == 1
    assert (exit_codes.main(["--root", str(tmp_path)]) == 0
            and exit_codes.main(["--check", "--root", str(tmp_path)]) == 0)
