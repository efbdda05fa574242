"""Reads one call away in another file (fixtures/project_crossfile): a helper that hands back
the dict it is given on one process (`SemanticModel._handed_back`), a module's dict output
walked with `.items()`/`.values()`, and a method of a class reached through `import a.b as c`
(`SyncModel.foreign_methods`) that reads each tensor of `**kwargs` on the host."""

from __future__ import annotations

from pathlib import Path

from devicelint.runner import Overrides, lint_paths

from conftest import FIXTURES
from fixture_markers import expected_findings

PROJECT = FIXTURES / "project_crossfile"


def _found(paths) -> set[tuple[str, int, str]]:
    run = lint_paths([str(p) for p in paths], Overrides(select=["ALL"]), use_cache=False, jobs=1)
    return {(Path(f.path).resolve().relative_to(PROJECT.resolve()).as_posix(), f.line, f.code)
            for f in run.findings}


def test_one_run_over_the_project_finds_what_its_markers_say() -> None:
    expected = {(p.relative_to(PROJECT).as_posix(), line, code)
                for p in sorted(PROJECT.rglob("*.py")) for line, code in expected_findings(p)}
    found = _found([PROJECT])
    assert found == expected
    assert {("train.py", 33, "DL004"), ("train.py", 34, "DL004"), ("train.py", 49, "DL004")} <= found


def test_the_logger_call_names_the_read_in_the_other_file() -> None:
    run = lint_paths([str(PROJECT)], Overrides(select=["DL004"]), use_cache=False, jobs=1)
    messages = {f.line: f.message for f in run.findings}
    assert "util/misc.py:28" in messages[34]
