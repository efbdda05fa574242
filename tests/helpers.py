"""Small helpers shared by the CLI tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

from click.testing import CliRunner

from devicelint.cli import main

BAD_DP = """\
import torch.nn as nn

model = nn.DataParallel(nn.Linear(4, 4))
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def run_cli(args: list[str], cwd: Path, input=None, **env):
    """Run the CLI in `cwd` in-process (`input`: standard input); returns click's Result
    (exit_code, output)."""
    import os

    runner = CliRunner()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        color = bool(env.get("FORCE_COLOR"))
        return runner.invoke(
            main, args, input=input, env={"NO_COLOR": "1", **env}, catch_exceptions=False,
            color=color,
        )
    finally:
        os.chdir(old)
