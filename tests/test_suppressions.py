"""DL901 beyond unused codes, as ruff's RUF100: DL codes no rule has, entries that are no
code, `# noqa DL005` without its colon; the fix that removes what DL901 reports; and
`# devicelint: skip-file` honoured only as a real comment."""

from __future__ import annotations

from pathlib import Path

from helpers import BAD_DP, run_cli, write

from devicelint.engine import enabled_rules, lint_source
from devicelint.fix import fix_text
from devicelint.rule import all_rules

ALL = enabled_rules(list(all_rules()))

SOURCE = (
    "from torch import nn\n"
    "a = nn.DataParallel(m)  # noqa: DL005, DL099\n"
    "b = 1  # noqa: DL005, E501\n"
    "c = 2  # devicelint: ignore[DL005, DL 5]\n"
    "d = 3  # noqa DL005\n"
    "e = 4  # type: ignore  # noqa: DL004\n"
    "f = 5  # noqa: DL004 -- kept for the reason\n"
    "g = 6  # noqa: DL004, DL901\n"
)


def _dl901(source: str) -> list:
    return [f for f in lint_source("x.py", source, ALL).findings if f.code == "DL901"]


def test_unknown_malformed_and_colonless_suppressions_are_reported() -> None:
    found = {f.line: f.message for f in _dl901(SOURCE)}
    assert sorted(found) == [2, 3, 4, 5, 6, 7]  # line 8 keeps DL901 on purpose
    assert found[2] == "Unknown code DL099 in `# noqa`: no such rule"
    assert "`DL 5` in `# devicelint: ignore[...]` is not a rule code" in found[4]
    assert found[5].startswith("`# noqa DL005` without a colon suppresses every code")


def test_colonless_noqa_suppresses_everything_until_fixed() -> None:
    source = "from torch import nn\nmodel = nn.DataParallel(m)  # noqa DL004\n"
    codes = [f.code for f in lint_source("x.py", source, ALL).findings]
    assert codes == ["DL901"]  # DL005 hidden by what reads as a bare noqa


def test_the_fix_removes_what_dl901_reports() -> None:
    fixed = fix_text("x.py", SOURCE, ALL, accept=lambda fix: fix.safe)
    assert fixed.text.splitlines()[1:] == [
        "a = nn.DataParallel(m)  # noqa: DL005",
        "b = 1  # noqa: E501",
        "c = 2",
        "d = 3  # noqa DL005",  # adding the colon is unsafe
        "e = 4  # type: ignore",
        "f = 5  # -- kept for the reason",
        "g = 6  # noqa: DL004, DL901",
    ]
    unsafe = fix_text("x.py", SOURCE, ALL, accept=lambda fix: True)
    assert unsafe.text.splitlines()[4] == "d = 3"  # colon added, then the unused DL005 removed
    assert [f.code for f in unsafe.findings] == []


def test_dl901_fix_from_the_command_line(tmp_path: Path) -> None:
    write(tmp_path / "a.py", "x = 1  # noqa: DL005\n")
    listed = run_cli(["--output-format", "concise", "a.py"], tmp_path)
    assert "a.py:1:8: DL901 [*] Unused `# noqa` code DL005" in listed.output
    assert run_cli(["--fix", "a.py"], tmp_path).exit_code == 0
    assert (tmp_path / "a.py").read_text() == "x = 1\n"


def test_skip_file_only_as_a_comment(tmp_path: Path) -> None:
    write(tmp_path / "doc.py", '"""Add\n# devicelint: skip-file\nto skip a file."""\n' + BAD_DP)
    write(tmp_path / "inline.py", "import torch.nn as nn  # devicelint: skip-file\n" + BAD_DP.split("\n", 1)[1])
    write(tmp_path / "real.py", '"""A module."""\n    # devicelint: skip-file\n' + BAD_DP)
    result = run_cli(["--output-format", "concise", "."], tmp_path)
    assert [line.split(":")[0] for line in result.output.splitlines()[:-1]] == ["doc.py", "inline.py"]
