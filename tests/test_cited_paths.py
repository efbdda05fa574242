"""A finding that cites another file of the project (a helper's host read, a copy made in
another module) names that file as it names its own: from the directory devicelint ran in,
in the message, the JSON `related` locations, SARIF relatedLocations and GitHub output, run
from the root or a subdirectory, with relative or absolute arguments, fresh or served from
the cache (rules see paths from the project root: devicelint.runner.ReportedPaths)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from conftest import FIXTURES
from helpers import run_cli

PROJECT = FIXTURES / "project_index"
# The findings of that project that cite another file: DL004 (the helper's `.item()` in
# metrics.py), DL008 (the copy in train.py of a loader built in data.py), DL016 (the copy
# made by metrics.py's helper).
CITING = {"DL004", "DL008", "DL016"}


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root)
    (root / "pyproject.toml").write_text("[tool.devicelint]\n")
    return root


def _json(cwd: Path, target: str) -> list[dict]:
    result = run_cli(["--format", "json", "--select", "ALL", target], cwd)
    assert result.exit_code == 1, result.output
    return json.loads(result.output)


def _check_cited(findings: list[dict], cwd: Path, root: Path) -> None:
    citing = [f for f in findings if any("path" in r for r in f.get("related", []))]
    assert {f["code"] for f in citing} == CITING
    for finding in citing:
        assert (cwd / finding["path"]).is_file()
        for related in finding["related"]:
            cited = Path(related["path"])
            assert (cwd / cited).resolve().parent == root.resolve(), (cwd, related)
            assert (cwd / cited).is_file()
            # The message names the file with the same path (`metrics.py:6`, `line 25 of ...`).
            assert f"{cited.as_posix()}:{related['line']}" in finding["message"] \
                or f"line {related['line']} of {cited.as_posix()}" in finding["message"], finding


def test_cited_files_are_named_from_the_working_directory(tmp_path: Path) -> None:
    root = _project(tmp_path)
    below = root / "pkg"
    runs = [(root, "."), (below, ".."), (below, str(root)), (tmp_path, str(root)),
            (below, "..")]  # the last again from the cache, after runs from elsewhere
    seen = []
    for cwd, target in runs:
        findings = _json(cwd, target)
        _check_cited(findings, cwd, root)
        seen.append(sorted(f["message"] for f in findings if f["code"] == "DL004"))
    assert seen[1] == seen[2] == seen[4] != seen[0]  # only the working directory matters
    assert "../metrics.py:6" in seen[1][0] and "project/metrics.py:6" in seen[3][0]


def test_sarif_related_locations_and_github_messages_open_from_a_subdirectory(tmp_path) -> None:
    root = _project(tmp_path)
    below = root / "pkg"
    result = run_cli(["--format", "sarif", "--select", "ALL", ".."], below)
    sarif = json.loads(result.output)
    related = [loc for r in sarif["runs"][0]["results"] for loc in r.get("relatedLocations", [])
               if "uri" in loc["physicalLocation"]["artifactLocation"]]
    assert related
    for location in related:
        artifact = location["physicalLocation"]["artifactLocation"]
        assert artifact.get("uriBaseId") == "%SRCROOT%" and (root / artifact["uri"]).is_file()
    github = run_cli(["--format", "github", "--select", "DL004,DL008,DL016", ".."], below).output
    assert "(`.item()` at ../metrics.py:6)" in github
    assert "line 25 of ../train.py" in github and "line 14 of ../metrics.py" in github
    assert "fixtures/" not in github and "of metrics.py" not in github
