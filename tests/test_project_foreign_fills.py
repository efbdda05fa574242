"""DL007 through a function of another local module that returns a host fill
(dataflow.foreign_fill; fixtures/DL007/project_foreign_fills)."""

from __future__ import annotations

from pathlib import Path

from devicelint.runner import Overrides, lint_paths

from conftest import FIXTURES
from fixture_markers import expected_findings

ROOT = FIXTURES / "DL007" / "project_foreign_fills"


def _run(paths):
    return lint_paths([str(p) for p in paths], Overrides(select=["ALL"]), use_cache=False, jobs=1)


def test_one_run_over_the_project_finds_what_its_markers_say() -> None:
    """`causal_mask(step).to(device)` with `causal_mask` of masks.py returning a `torch.ones`
    fill; silent where the helper writes its fill element by element, reads it on the host,
    or computes from its argument's data."""
    found = {(Path(f.path).name, f.line, f.code) for f in _run([ROOT]).findings}
    expected = {(p.name, line, code) for p in sorted(ROOT.glob("*.py")) for line, code in expected_findings(p)}
    assert found == expected and ("bad_decode.py", 8, "DL007") in found


def test_the_finding_names_the_factory_in_the_other_file_and_has_no_fix() -> None:
    [finding] = [f for f in _run([ROOT]).findings if f.code == "DL007"]
    assert "masks.py:6" in finding.message and "causal_mask()" in finding.message
    [related] = finding.related
    assert related["path"].endswith("masks.py") and related["line"] == 6
    assert finding.fix is None
