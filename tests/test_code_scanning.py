"""SARIF that GitHub code scanning deduplicates, and GitLab Code Quality placed on the
lines a merge request shows: fingerprints that survive line shifts, URIs relative to the
repository root (originalUriBaseIds), precision and problem.severity per rule; notebook
findings on the .ipynb's own lines, runtime evidence in both."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema

from conftest import FIXTURES, ROOT
from helpers import BAD_DP, run_cli, write

from devicelint.finding import Finding
from devicelint.reporters import ReportContext, renderer

SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
TWO = BAD_DP + "other = nn.DataParallel(nn.Linear(4, 4))\n"


def _sarif(args: list[str], cwd: Path) -> dict:
    document = json.loads(run_cli(["--output-format", "sarif", *args], cwd).output)
    jsonschema.validate(document, SCHEMA)
    return document["runs"][0]


def _prints(run: dict) -> list[str]:
    return [r["partialFingerprints"]["devicelint/v1"] for r in run["results"]]


def test_fingerprints_survive_lines_added_above(tmp_path: Path) -> None:
    write(tmp_path / "train.py", TWO)
    before = _prints(_sarif(["train.py"], tmp_path))
    write(tmp_path / "train.py", "import os\nimport sys\n\n" + TWO)
    after = _sarif(["train.py"], tmp_path)
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in after["results"]] == [6, 7]
    assert _prints(after) == before and len(set(before)) == 2
    # The same line twice: told apart by occurrence, and still stable.
    write(tmp_path / "twice.py", BAD_DP + "model = nn.DataParallel(nn.Linear(4, 4))\n")
    assert len(set(_prints(_sarif(["twice.py"], tmp_path)))) == 2


def test_uris_are_relative_to_the_repository_root(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path / "src" / "pyproject.toml", "[tool.devicelint]\n")
    write(tmp_path / "src" / "pkg" / "a b#1.py", BAD_DP)
    run = _sarif(["a b#1.py"], tmp_path / "src" / "pkg")  # from a subdirectory
    location = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "src/pkg/a%20b%231.py", "uriBaseId": "%SRCROOT%"}
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": tmp_path.resolve().as_uri() + "/"}}


def test_rules_carry_precision_severity_and_help(tmp_path: Path) -> None:
    write(tmp_path / "a.py", BAD_DP)
    rules = {r["id"]: r for r in _sarif(["a.py"], tmp_path)["tool"]["driver"]["rules"]}
    assert rules["DL005"]["properties"]["problem.severity"] == "warning"
    assert rules["DL900"]["properties"]["problem.severity"] == "error"
    assert rules["DL900"]["properties"]["precision"] == "very-high"
    assert {r["properties"]["precision"] for r in rules.values()} <= {"very-high", "high", "medium", "low"}
    assert "## Why is this bad?" in rules["DL005"]["help"]["markdown"]


def test_notebook_findings_on_ipynb_lines_in_gitlab(tmp_path: Path) -> None:
    notebook = tmp_path / "bad_training.ipynb"
    shutil.copy(FIXTURES / "notebooks" / "bad_training.ipynb", notebook)
    raw = notebook.read_text(encoding="utf-8").splitlines()
    issues = json.loads(run_cli(["--output-format", "gitlab", notebook.name], tmp_path).output)
    dp = next(i for i in issues if i["check_name"].startswith("DL005"))
    assert "nn.DataParallel(net)" in raw[dp["location"]["lines"]["begin"] - 1]


def test_runtime_evidence_in_gitlab_and_sarif() -> None:
    finding = Finding("DL004", "sync-in-loop", "t.py", 3, 5, 3, 12, "sync in loop",
                      confirmation={"status": "confirmed", "syncs": 40, "device": "cuda (NVIDIA H200)"})
    for fmt in ("gitlab", "sarif"):
        text = renderer(fmt)([finding], ReportContext(extra={"enabled": ["DL004"]}))
        assert "runtime:" in text, fmt
