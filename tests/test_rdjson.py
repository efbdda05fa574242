"""`--format rdjson` / `rdjsonl`: reviewdog's Diagnostic Format, validated against reviewdog's
published JSON schemas (tests/data/reviewdog/, see tests/data/README.md), and exact where the
schema cannot be: 1-based lines, 1-based columns in UTF-8 bytes, exclusive ends, and
suggestions that, applied as reviewdog applies them, give what `--fix` writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from conftest import FIXTURES
from devicelint.docs_url import rule_url
from helpers import run_cli, write

DATA = Path(__file__).parent / "data" / "reviewdog"

# Non-ASCII text before each finding on its line: code points, UTF-16 units and UTF-8 bytes
# all differ there ("é" is 2 bytes, "😀" is 4 bytes and 2 UTF-16 units).
SOURCE = """\
import torch
import torch.nn as nn

B, T, H, D = 2, 3, 4, 8


def merge(y):
    note = "héllo 😀"; return y.permute(0, 2, 1, 3).view(B, T, -1)


device = torch.device("cuda")
s = "ü"; noise = torch.randn(B, T).to(device)

model = nn.DataParallel(nn.Linear(4, 4))
merged = merge(torch.randn(B, H, T, D))
"""


def _schema(name: str) -> jsonschema.Draft4Validator:
    schema = json.loads((DATA / name).read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


def _project(tmp_path: Path) -> Path:
    write(tmp_path / "pkg" / "train.py", SOURCE)
    return tmp_path


def _rdjson(tmp_path: Path, *args: str) -> dict:
    result = run_cli(["--no-cache", "--format", "rdjson", *args, "pkg"], tmp_path)
    assert result.exit_code == 1, result.output
    return json.loads(result.output)


def _byte_column(line: str, needle: str) -> int:
    """1-based UTF-8 byte column of `needle` in `line`, computed independently."""
    data = line.encode("utf-8")
    return data.index(needle.encode("utf-8")) + 1


def _apply(data: bytes, suggestion: dict) -> bytes:
    """Apply one suggestion the way the format defines it: 1-based lines, 1-based UTF-8
    byte columns, end exclusive."""
    lines = data.split(b"\n")
    where = suggestion["range"]

    def offset(position: dict) -> int:
        return sum(len(line) + 1 for line in lines[: position["line"] - 1]) + position["column"] - 1

    return data[: offset(where["start"])] + suggestion["text"].encode("utf-8") + data[offset(where["end"]):]


def test_rdjson_validates_and_positions_are_utf8_bytes(tmp_path: Path) -> None:
    document = _rdjson(_project(tmp_path))
    errors = list(_schema("DiagnosticResult.json").iter_errors(document))
    assert not errors, errors
    assert document["source"] == {"name": "devicelint", "url": "https://github.com/devicelint/devicelint"}
    by_line = {d["location"]["range"]["start"]["line"]: d for d in document["diagnostics"]}
    assert sorted(by_line) == [8, 12, 14]
    lines = SOURCE.splitlines()

    safe = by_line[8]
    assert safe["code"] == {"value": "DL003", "url": rule_url("DL003")}
    assert safe["code"]["url"] == "https://github.com/devicelint/devicelint/blob/main/docs/rules/DL003.md"
    assert safe["severity"] == "WARNING"
    assert safe["source"]["name"] == "devicelint"
    assert safe["location"]["path"] == "pkg/train.py"
    start = _byte_column(lines[7], "y.permute")
    assert safe["location"]["range"] == {
        "start": {"line": 8, "column": start},
        "end": {"line": 8, "column": start + len("y.permute(0, 2, 1, 3).view(B, T, -1)")},
    }
    # The code-point column (30) differs from the byte column (34) here.
    assert start == lines[7].index("y.permute") + 1 + 4
    view = _byte_column(lines[7], "view(B")
    assert safe["suggestions"] == [{
        "range": {"start": {"line": 8, "column": view}, "end": {"line": 8, "column": view + 4}},
        "text": "reshape",
    }]
    assert "unsafe" not in safe["message"]

    unsafe = by_line[12]
    assert unsafe["code"]["value"] == "DL007"
    start = _byte_column(lines[11], "torch.randn")
    end = start + len("torch.randn(B, T).to(device)")
    assert unsafe["suggestions"] == [{
        "range": {"start": {"line": 12, "column": start}, "end": {"line": 12, "column": end}},
        "text": "torch.randn(B, T, device=device)",
    }]
    assert "unsafe fix" in unsafe["message"]

    no_fix = by_line[14]
    assert no_fix["code"]["value"] == "DL005" and "suggestions" not in no_fix
    assert no_fix["location"]["range"] == {"start": {"line": 14, "column": 9}, "end": {"line": 14, "column": 41}}


def test_suggestions_apply_to_what_fix_writes(tmp_path: Path) -> None:
    """Applying the safe suggestion byte-wise gives exactly the file `--fix` writes."""
    project = _project(tmp_path)
    original = (project / "pkg" / "train.py").read_bytes()
    document = _rdjson(project)
    safe = [d for d in document["diagnostics"] if d.get("suggestions") and "unsafe" not in d["message"]]
    assert len(safe) == 1
    suggested = _apply(original, safe[0]["suggestions"][0])
    fixed = run_cli(["--no-cache", "--fix", "pkg"], project)
    assert fixed.exit_code == 1  # DL005 and the unsafe DL007 remain
    assert (project / "pkg" / "train.py").read_bytes() == suggested
    assert suggested != original


def test_rdjsonl_one_valid_diagnostic_per_line(tmp_path: Path) -> None:
    project = _project(tmp_path)
    result = run_cli(["--no-cache", "--format", "rdjsonl", "pkg"], project)
    assert result.exit_code == 1
    rows = [json.loads(line) for line in result.output.splitlines()]
    validator = _schema("Diagnostic.json")
    for row in rows:
        errors = list(validator.iter_errors(row))
        assert not errors, errors
    assert rows == _rdjson(project)["diagnostics"]
    assert [("suggestions" in row) for row in rows] == [True, True, False]


def test_clean_run_and_syntax_error(tmp_path: Path) -> None:
    write(tmp_path / "pkg" / "ok.py", "import torch\nx = torch.zeros(3)\n")
    clean = run_cli(["--no-cache", "--format", "rdjson", "pkg"], tmp_path)
    assert clean.exit_code == 0
    assert json.loads(clean.output)["diagnostics"] == []
    write(tmp_path / "pkg" / "half.py", 'import torch\ns = "é"; x = torch.zeros(3\n')
    broken = json.loads(run_cli(["--no-cache", "--format", "rdjson", "pkg"], tmp_path).output)
    assert not list(_schema("DiagnosticResult.json").iter_errors(broken))
    [error] = broken["diagnostics"]
    assert error["code"]["value"] == "DL900" and error["severity"] == "ERROR"
    # The parser points at the unclosed bracket: code point 25, byte 26.
    assert error["location"]["range"]["start"] == {"line": 2, "column": 26}


def test_notebook_findings_are_line_wise_without_suggestions(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "notebooks" / "bad_training.ipynb", tmp_path / "nb.ipynb")
    result = run_cli(["--no-cache", "--format", "rdjson", "nb.ipynb"], tmp_path)
    document = json.loads(result.output)
    assert not list(_schema("DiagnosticResult.json").iter_errors(document))
    assert document["diagnostics"]
    file_lines = (tmp_path / "nb.ipynb").read_text(encoding="utf-8").splitlines()
    for diagnostic in document["diagnostics"]:
        where = diagnostic["location"]["range"]
        assert set(where["start"]) == {"line"} and "suggestions" not in diagnostic
    dp = next(d for d in document["diagnostics"] if d["code"]["value"] == "DL005")
    assert "DataParallel" in file_lines[dp["location"]["range"]["start"]["line"] - 1]


def test_schema_rejects_a_wrong_document() -> None:
    """The validation above can fail: a wrong severity or a string line is refused."""
    validator = _schema("DiagnosticResult.json")
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"diagnostics": [{"message": "m", "severity": "SEVERE"}]})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"diagnostics": [{"message": "m", "location": {"path": "a.py",
                            "range": {"start": {"line": "1"}}}}]})
