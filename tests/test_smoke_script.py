"""scripts/smoke_commands.py, the smoke `.ci/run` runs against the installed wheel, covers every
command of kprof's command line (the smoke itself runs there, outside pytest, where it costs no test
time)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from kprof.commands import cli

_PATH = Path(__file__).resolve().parent.parent / "scripts" / "smoke_commands.py"
_spec = importlib.util.spec_from_file_location("smoke_commands", _PATH)
smoke = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(smoke)


def test_every_command_has_its_smoke():
    parser = cli._parser()
    commands = set(next(a for a in parser._actions if a.dest == "command").choices)
    assert set(smoke.SMOKES) == commands
    assert all(args[0] == name for name, (args, _) in smoke.SMOKES.items())
