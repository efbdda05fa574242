"""Suppression upkeep: `--add-noqa` and DL901 unused-suppression."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from devicelint.engine import enabled_rules, lint_source
from devicelint.noqa import with_noqa
from devicelint.rule import all_rules

ALL = enabled_rules(list(all_rules()))


def devicelint(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "devicelint", "--no-cache", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )


def codes_at(source: str) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in lint_source("x.py", source, ALL).findings]


# -- with_noqa -------------------------------------------------------------------------

def test_with_noqa_appends_merges_and_respects_bare() -> None:
    assert with_noqa("x = f()   ", None, ["DL005"]) == "x = f()  # noqa: DL005"
    line = "x = f()  # keep  # noqa: E501"
    assert with_noqa(line, 9, ["DL005"]) == "x = f()  # keep  # noqa: E501, DL005"
    assert with_noqa("x = f()  # noqa:E501,DL005", 9, ["DL005"]) is None
    assert with_noqa("x = f()  # noqa", 9, ["DL005"]) is None
    assert with_noqa("x = f()  # why", 9, ["DL005", "DL001"]) == "x = f()  # why  # noqa: DL001, DL005"


# -- --add-noqa end to end -------------------------------------------------------------

BAD = '''import torch
from torch import nn

a = nn.DataParallel(m)
b = nn.DataParallel(m)  # noqa: E501
c = nn.DataParallel(m)  # a comment
d = nn.DataParallel(m); e = nn.DataParallel(m)
s = str(nn.DataParallel(m)) + f"""text {m}
"""
t = nn.DataParallel(m) + \\
    1
'''


def test_add_noqa_then_lint_is_clean_except_skipped(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(BAD, encoding="utf-8")
    result = devicelint("--add-noqa", "train.py", cwd=tmp_path)
    text = path.read_text(encoding="utf-8")
    assert "a = nn.DataParallel(m)  # noqa: DL005\n" in text
    assert "b = nn.DataParallel(m)  # noqa: E501, DL005\n" in text
    assert "c = nn.DataParallel(m)  # a comment  # noqa: DL005\n" in text
    assert text.count("# noqa: DL005\n") == 3  # a, c, and one comment for both on line 7
    # The multi-line string and the backslash line are left alone and reported.
    assert 's = str(nn.DataParallel(m)) + f"""text {m}\n' in text
    assert "t = nn.DataParallel(m) + \\\n" in text
    assert "train.py:8: no `# noqa: DL005` added: the line ends inside a multi-line string" in result.stderr
    assert "train.py:10: no `# noqa: DL005` added: the line ends with a backslash" in result.stderr
    assert result.returncode == 1
    compile(text, "train.py", "exec")
    after = devicelint("--format", "json", "train.py", cwd=tmp_path)
    import json
    assert sorted(f["line"] for f in json.loads(after.stdout)) == [8, 10]


def test_add_noqa_keeps_crlf_and_encoding(tmp_path: Path) -> None:
    path = tmp_path / "w.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\r\nfrom torch import nn\r\n"
                     b"m = nn.DataParallel(x)  # caf\xe9\r\n")
    result = devicelint("--add-noqa", "w.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert path.read_bytes().endswith(b"m = nn.DataParallel(x)  # caf\xe9  # noqa: DL005\r\n")
    assert "Added 1 noqa comment in 1 file." in result.stdout


# -- DL901 -----------------------------------------------------------------------------

def test_unused_noqa_codes_are_reported() -> None:
    source = (
        "from torch import nn\n"
        "a = nn.DataParallel(m)  # noqa: DL005\n"   # used
        "b = 1  # noqa: DL005, E501\n"              # DL005 unused; E501 is not ours
        "c = 2  # devicelint: ignore[DL005]\n"      # unused
        "d = 3  # noqa\n"                           # bare: never reported
        "e = 4  # noqa: DL005, DL901\n"             # kept on purpose
    )
    found = lint_source("x.py", source, ALL).findings
    assert [(f.code, f.line, f.column) for f in found] == [("DL901", 3, 8), ("DL901", 4, 8)]
    assert "DL005" in found[0].message and "E501" not in found[0].message


def test_unused_suppression_in_a_file_no_rule_looks_at() -> None:
    # No rule's prefilter tokens occur here, so no rule runs; the comment is still stale.
    assert codes_at("x = 1  # noqa: DL005\n") == [("DL901", 1)]
    assert codes_at("x = 1\n") == []


def test_only_enabled_rules_are_judged() -> None:
    only_dl005 = enabled_rules(["DL005"])
    source = "x = 1  # noqa: DL001\n"
    assert lint_source("x.py", source, only_dl005).findings == []


def test_dl901_can_be_disabled_from_the_cli(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1  # noqa: DL005\n", encoding="utf-8")
    assert "DL901" in devicelint("a.py", cwd=tmp_path).stdout
    result = devicelint("--ignore", "DL901", "a.py", cwd=tmp_path)
    assert result.returncode == 0 and "DL901" not in result.stdout


def test_noqa_left_to_caller_when_asked() -> None:
    source = "from torch import nn\na = nn.DataParallel(m)  # noqa: DL005\n"
    found = lint_source("x.py", source, ALL, honour_noqa=False).findings
    assert [(f.code, f.line) for f in found] == [("DL005", 2)]
