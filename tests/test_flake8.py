"""The flake8 plugin: same rules, flake8's `# noqa`, columns that agree with devicelint."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import flake8 as _flake8  # noqa: F401 - in the dev extra: a broken install must fail, not skip

from conftest import FIXTURES, ROOT

LINE_RE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) ", re.M)


def flake8(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )


def devicelint_json(*args: str, cwd: Path = ROOT) -> list[dict]:
    result = subprocess.run(
        [sys.executable, "-m", "devicelint", "--no-cache", "--format", "json", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )
    return json.loads(result.stdout)


def reported(output: str) -> set[tuple[str, int, int, str]]:
    return {(m["path"], int(m["line"]), int(m["col"]), m["code"]) for m in LINE_RE.finditer(output)}


def test_plugin_is_registered() -> None:
    result = flake8("--version")
    assert "devicelint" in result.stdout, result.stdout + result.stderr


def test_flake8_reports_what_devicelint_reports_on_the_fixtures() -> None:
    files = [str(p.relative_to(ROOT)) for p in sorted((FIXTURES / "DL005").glob("*.py"))]
    result = flake8("--select", "DL", *files)
    assert "Traceback" not in result.stderr, result.stderr
    from_flake8 = reported(result.stdout)
    expected = {
        (f["path"], f["line"], f["column"], f["code"])
        for f in devicelint_json("--select", "DL", *files)
    }
    assert from_flake8, result.stdout + result.stderr
    assert from_flake8 == expected  # same findings, same 1-based columns once flake8 prints them


def test_flake8_lints_each_file_as_devicelint_check_file_does() -> None:
    # Facts from the file's own calls and from the local modules it imports come from the
    # project index: a file linted by the engine alone missed both (bad_round_trip_cycles:54,
    # a model handed in by the file's own __main__ block; project_crossfile/train.py's
    # helpers of another file).
    files = ["fixtures/DL016/bad_round_trip_cycles.py", "fixtures/project_crossfile/train.py",
             "fixtures/DL004/project/bad_grad_clip.py"]
    from_flake8 = set()
    expected = set()
    for path in files:  # one file per run, as an editor or pre-commit hands them
        result = flake8("--select", "DL", path)
        assert "Traceback" not in result.stderr, result.stderr
        from_flake8 |= reported(result.stdout)
        expected |= {(f["path"], f["line"], f["column"], f["code"])
                     for f in devicelint_json("--select", "DL", path)}
    assert ("fixtures/DL016/bad_round_trip_cycles.py", 54, 24, "DL004") in from_flake8
    assert {(path, line) for path, line, _, _ in from_flake8} >= {
        ("fixtures/project_crossfile/train.py", 33), ("fixtures/project_crossfile/train.py", 49),
        ("fixtures/DL004/project/bad_grad_clip.py", 24)}
    assert from_flake8 == expected


def test_columns_are_not_off_by_one(tmp_path: Path) -> None:
    # TorchFix handed flake8 1-based columns; flake8 adds 1, so they printed one too far.
    (tmp_path / "m.py").write_text(
        "from torch import nn\n"
        "m = nn.DataParallel(x)\n"
        "if True:\n"
        "\tk = 'é' + str(nn.DataParallel(x))\n",
        encoding="utf-8",
    )
    result = flake8("--select", "DL005", "m.py", cwd=tmp_path)
    assert reported(result.stdout) == {("m.py", 2, 5, "DL005"), ("m.py", 4, 16, "DL005")}


def test_noqa_is_flake8s(tmp_path: Path) -> None:
    (tmp_path / "n.py").write_text(
        "from torch import nn\n"
        "a = nn.DataParallel(x)  # noqa: DL005\n"
        "b = nn.DataParallel(x)  # noqa\n"
        "c = nn.DataParallel(x)  # noqa: E501\n"
        "d = nn.DataParallel(x)  # devicelint: ignore[DL005]\n"
        "e = 1  # noqa: DL005\n",
        encoding="utf-8",
    )
    result = flake8("--select", "DL", "n.py", cwd=tmp_path)
    # flake8 applies `# noqa`; devicelint's own ignore comment still works; a stale
    # `# noqa` is not judged in flake8 mode (flake8 owns noqa).
    assert reported(result.stdout) == {("n.py", 4, 5, "DL005")}
    disabled = flake8("--select", "DL", "--disable-noqa", "n.py", cwd=tmp_path)
    assert {r[1] for r in reported(disabled.stdout)} == {2, 3, 4}


def test_syntax_errors_are_flake8s_e999(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("def f(:\n", encoding="utf-8")
    result = flake8("--select", "E999,DL", "bad.py", cwd=tmp_path)
    assert "E999" in result.stdout and "DL900" not in result.stdout
    assert "Traceback" not in result.stderr
