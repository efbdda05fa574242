"""Every rule's fixtures: bad cases flagged at their exact line, near-misses silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from devicelint.engine import enabled_rules, lint_file
from devicelint.rule import all_rules

from conftest import FIXTURES
from fixture_markers import expected_findings

FIXTURE_FILES = sorted(
    p for p in FIXTURES.glob("DL*/*.py") if p.name.startswith(("bad_", "good_"))
)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture(path: Path) -> None:
    code = path.parent.name
    assert code in all_rules(), f"fixtures for unknown rule {code}"
    expected = {(line, c) for line, c in expected_findings(path) if c == code}
    if path.name.startswith("bad_"):
        assert expected, f"{path} is a bad fixture without an `# expect: {code}` marker"
    result = lint_file(str(path), str(path), enabled_rules([code]), 10**7)
    found = {(f.line, f.code) for f in result.findings if f.code == code}
    assert found == expected, (
        f"missing: {sorted(expected - found)}, unexpected: {sorted(found - expected)}"
    )


def test_every_rule_has_fixtures() -> None:
    for code, rule in all_rules().items():
        if not rule.handlers():
            continue  # engine diagnostics
        bad = list((FIXTURES / code).glob("bad_*.py"))
        good = list((FIXTURES / code).glob("good_*.py"))
        assert bad and good, f"{code} needs bad_*.py and good_*.py fixtures"
