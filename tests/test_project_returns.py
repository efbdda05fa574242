"""What a function of another file returns, with its parameters bound to what one call
passes (SemanticModel._project_returned / returned_for; fixtures/project_returns)."""

from __future__ import annotations

from pathlib import Path

from devicelint.runner import Overrides, lint_paths

from conftest import FIXTURES
from fixture_markers import expected_findings

PROJECT = FIXTURES / "project_returns"


def _found(paths) -> set[tuple[str, int, str]]:
    run = lint_paths([str(p) for p in paths], Overrides(select=["ALL"]), use_cache=False, jobs=1)
    return {(Path(f.path).resolve().relative_to(PROJECT.resolve()).as_posix(), f.line, f.code)
            for f in run.findings}


def test_one_run_over_the_project_finds_what_its_markers_say() -> None:
    """Device tensors that `metrics.accuracy` (a list) and `logged` (a dict) compute from a
    step's device outputs are read on the host; silent where the same helper is given host
    tensors, where the helper returns a new host tensor or a number."""
    expected = {(p.relative_to(PROJECT).as_posix(), line, code)
                for p in sorted(PROJECT.rglob("*.py")) for line, code in expected_findings(p)}
    found = _found([PROJECT])
    assert found == expected and ("train.py", 25, "DL004") in found

