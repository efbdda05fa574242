"""Every output format: the JSON contract, GitHub escaping, SARIF schema validity, GitLab."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from devicelint.finding import Finding, Fix
from devicelint.reporters import FORMATS, ReportContext, renderer
from devicelint.reporters.github import escape_data, escape_property
from helpers import BAD_DP, run_cli, write

DATA = Path(__file__).parent / "data"
JSON_KEYS = {"code", "name", "path", "line", "column", "end_line", "end_column", "message", "severity"}


def sample(tmp_path: Path) -> Path:
    write(tmp_path / "pkg" / "train.py", BAD_DP + "other = nn.DataParallel(model, device_ids=[0, 1])\n")
    return tmp_path


def test_json_contract(tmp_path: Path) -> None:
    result = run_cli(["--format", "json", "pkg"], sample(tmp_path))
    findings = json.loads(result.output)
    assert len(findings) == 2
    first = findings[0]
    assert set(first) == JSON_KEYS
    assert first == {
        "code": "DL005", "name": "data-parallel", "path": "pkg/train.py", "line": 3,
        "column": 9, "end_line": 3, "end_column": 41, "message": first["message"],
        "severity": "warning",
    }
    assert "DistributedDataParallel" in first["message"]


def test_json_optional_keys() -> None:
    finding = Finding("DL003", "view-on-noncontiguous", "a.py", 1, 1, 1, 5, "m",
                      fix=Fix(1, 1, 1, 5, "x.reshape", True), confirmation={"status": "confirmed"})
    data = json.loads(renderer("json")([finding], ReportContext()))[0]
    assert data["fix"]["content"] == "x.reshape" and data["confirmation"]["status"] == "confirmed"
    assert Finding.from_dict(data) == finding


def test_json_lines(tmp_path: Path) -> None:
    result = run_cli(["--format", "json-lines", "pkg"], sample(tmp_path))
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [r["line"] for r in rows] == [3, 4]


def test_github_annotations(tmp_path: Path) -> None:
    result = run_cli(["--format", "github", "pkg"], sample(tmp_path))
    lines = result.output.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(
        "::warning file=pkg/train.py,line=3,endLine=3,col=9,endColumn=41,"
        "title=devicelint DL005 (data-parallel)::DL005 "
    )


def test_github_escaping() -> None:
    assert escape_data("50% a\r\nb") == "50%25 a%0D%0Ab"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"
    finding = Finding("DL005", "data-parallel", "we,ird:name.py", 1, 1, 1, 2, "line1\nline2 100%")
    out = renderer("github")([finding], ReportContext())
    assert "file=we%2Cird%3Aname.py" in out and "::DL005 line1%0Aline2 100%25" in out


def test_sarif_is_schema_valid(tmp_path: Path) -> None:
    result = run_cli(["--format", "sarif", "pkg"], sample(tmp_path))
    document = json.loads(result.output)
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.validate(document, schema)
    run = document["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "devicelint" and driver["version"] and driver["informationUri"]
    rule = next(r for r in driver["rules"] if r["id"] == "DL005")
    assert rule["name"] == "data-parallel"
    assert rule["shortDescription"]["text"] and rule["help"]["text"]
    assert len(rule["fullDescription"]["text"]) <= 1024
    assert run["columnKind"] == "unicodeCodePoints"
    result0 = run["results"][0]
    assert result0["ruleId"] == "DL005" and result0["level"] == "warning"
    location = result0["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "pkg/train.py"
    assert location["region"] == {"startLine": 3, "startColumn": 9, "endLine": 3, "endColumn": 41}
    assert driver["rules"][result0["ruleIndex"]]["id"] == "DL005"


def test_sarif_with_no_findings_is_valid(tmp_path: Path) -> None:
    write(tmp_path / "ok.py", "x = 1\n")
    document = json.loads(run_cli(["--format", "sarif", "."], tmp_path).output)
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.validate(document, schema)
    assert document["runs"][0]["results"] == []


def test_gitlab_code_quality(tmp_path: Path) -> None:
    issues = json.loads(run_cli(["--format", "gitlab", "pkg"], sample(tmp_path)).output)
    assert len(issues) == 2
    issue = issues[0]
    assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
    assert issue["location"] == {"path": "pkg/train.py", "lines": {"begin": 3, "end": 3}}
    assert issue["severity"] == "minor" and issue["check_name"] == "DL005 data-parallel"
    assert len({i["fingerprint"] for i in issues}) == 2


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders(tmp_path: Path, fmt: str) -> None:
    result = run_cli(["--format", fmt, "pkg"], sample(tmp_path))
    assert result.exit_code == 1 and result.output


def test_rule_pages_and_readme_table_are_current() -> None:
    """docs/rules/*.md (SARIF's helpUri, rdjson's links) and the README's rule table are
    generated from the rules' docstrings and metadata: a rule change must regenerate them."""
    from conftest import ROOT

    from devicelint import rule_docs

    stale = [str(path.relative_to(ROOT)) for path in rule_docs.stale(ROOT)]
    assert not stale, f"regenerate with `.venv/bin/python -m devicelint.rule_docs`: {stale}"
