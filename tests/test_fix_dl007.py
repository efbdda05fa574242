"""DL007's fixes verified by execution on the CPU: the fixed fixture computes the same values
as the original (seeded; on the CPU a `device=` fill draws from the same generator, so even
the random factories must agree), and the safe/unsafe split is the documented one. The
byte-for-byte before/after check and idempotency are `tests/test_fix.py::test_fixture_pair`."""

from __future__ import annotations

import runpy
from pathlib import Path

import torch

from conftest import FIXTURES
from devicelint.engine import enabled_rules, lint_source
from devicelint.fix import fix_text
from fixture_markers import expected_findings

PAIR = FIXTURES / "DL007" / "fix_chains.py"
RULES = enabled_rules(["DL007"])
# line -> safe: conversions, shapes and fills are safe; arithmetic, random ops and random
# factories are not; no fix for a dtype after ops (9), a device not bound before the
# factory (18) or a binding another path reads (25).
FIXES = {6: True, 7: True, 8: False, 12: True, 16: False}


def _findings():
    source = PAIR.read_text(encoding="utf-8")
    return [f for f in lint_source(str(PAIR), source, RULES).findings if f.code == "DL007"]


def test_markers_and_fix_safety() -> None:
    findings = _findings()
    assert {(f.line, f.code) for f in findings} == expected_findings(PAIR)
    assert {f.line: f.fix.safe for f in findings if f.fix is not None} == FIXES


def _build(path: Path):
    module = runpy.run_path(str(path), run_name="dl007_fixture")
    torch.manual_seed(0)
    return module["build"](torch.device("cpu"))


def test_fixed_file_computes_the_same(tmp_path) -> None:
    result = fix_text(str(PAIR), PAIR.read_text(encoding="utf-8"), RULES, lambda fix: True)
    assert result.messages == [] and len(result.applied) == len(FIXES)
    fixed = tmp_path / "fix_chains_fixed.py"
    fixed.write_text(result.text, encoding="utf-8")
    before, after = _build(PAIR), _build(fixed)
    assert len(before) == len(after)
    for index, (x, y) in enumerate(zip(before, after)):
        assert x.shape == y.shape and x.dtype == y.dtype and x.device == y.device, index
        if index != 6:  # `w` is torch.empty: uninitialised either way
            assert torch.equal(x, y), index


def test_only_safe_fixes_without_unsafe_fixes() -> None:
    result = fix_text(str(PAIR), PAIR.read_text(encoding="utf-8"), RULES, lambda fix: fix.safe)
    assert len(result.applied) == sum(FIXES.values())
