"""DL016's unsafe fix (move a loop-invariant transfer above its loop), verified by execution:
the fixed fixture computes the same values as the original. The byte-for-byte before/after
check and idempotency are `tests/test_fix.py::test_fixture_pair`."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

import torch  # noqa: E402

from devicelint.engine import enabled_rules, lint_source  # noqa: E402
from devicelint.fix import fix_text  # noqa: E402

from conftest import FIXTURES  # noqa: E402
from fixture_markers import expected_findings  # noqa: E402

PAIR = FIXTURES / "DL016" / "fix_hoist.py"
RULES = enabled_rules(["DL016"])


def _results(path: Path) -> dict:
    return runpy.run_path(str(path), run_name="dl016_fixture")["results"]()


def _flat(value) -> list:
    return [t for item in value for t in _flat(item)] if isinstance(value, (list, tuple)) else [value]


def test_markers_match_findings_and_fixes() -> None:
    source = PAIR.read_text(encoding="utf-8")
    findings = [f for f in lint_source(str(PAIR), source, RULES).findings if f.code == "DL016"]
    assert {(f.line, f.code) for f in findings} == expected_findings(PAIR)
    fixed_lines = {f.line for f in findings if f.fix is not None}
    assert fixed_lines == {19, 26}  # the no_fix() cases are reported without a fix


def test_fixed_file_computes_the_same(tmp_path) -> None:
    result = fix_text(str(PAIR), PAIR.read_text(encoding="utf-8"), RULES, lambda fix: True)
    assert result.messages == [] and len(result.applied) == 2
    fixed = tmp_path / "fix_hoist_fixed.py"
    fixed.write_text(result.text, encoding="utf-8")
    before, after = _results(PAIR), _results(fixed)
    assert before.keys() == after.keys()
    for key in before:
        a, b = _flat(before[key]), _flat(after[key])
        assert len(a) == len(b), key
        for x, y in zip(a, b):
            assert x.shape == y.shape and x.dtype == y.dtype and x.device == y.device, key
            assert torch.equal(x, y), key


def test_the_fix_is_unsafe_and_offered_only_with_unsafe_fixes() -> None:
    result = fix_text(str(PAIR), PAIR.read_text(encoding="utf-8"), RULES, lambda fix: fix.safe)
    assert result.applied == []
