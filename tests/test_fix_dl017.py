"""DL017's fix (a plain tensor attribute becomes a non-persistent buffer), verified by
execution: the fixed module computes the same, saves the same state_dict, and its tensor now
follows `module.to()`. The byte-for-byte before/after check is
`tests/test_fix.py::test_fixture_pair`."""

from __future__ import annotations

import runpy
from pathlib import Path

import torch

from devicelint.engine import enabled_rules, lint_source
from devicelint.fix import fix_text

from conftest import FIXTURES
from fixture_markers import expected_findings

PAIR = FIXTURES / "DL017" / "fix_register_buffer.py"
RULES = enabled_rules(["DL017"])


def test_markers_match_findings_and_fixes() -> None:
    source = PAIR.read_text(encoding="utf-8")
    findings = [f for f in lint_source(str(PAIR), source, RULES).findings if f.code == "DL017"]
    assert {(f.line, f.code) for f in findings} == expected_findings(PAIR)
    # Before super().__init__() a buffer cannot be registered; a tensor that requires
    # gradients wants nn.Parameter: reported without a fix.
    assert {f.line for f in findings if f.fix is not None} == {9}


def test_fixed_module_keeps_state_dict_and_moves_with_the_model(tmp_path) -> None:
    result = fix_text(str(PAIR), PAIR.read_text(encoding="utf-8"), RULES, lambda fix: fix.safe)
    assert result.messages == [] and len(result.applied) == 1
    fixed = tmp_path / "fixed.py"
    fixed.write_text(result.text, encoding="utf-8")
    before = runpy.run_path(str(PAIR))["Scale"](3)
    after = runpy.run_path(str(fixed))["Scale"](3)
    assert before.state_dict().keys() == after.state_dict().keys()
    x = torch.randn(2, 3)
    assert torch.equal(before(x), after(x))
    assert [name for name, _ in after.named_buffers()] == ["scale"]
    assert list(before.named_buffers()) == []
    after.to(torch.float64)  # a stand-in for .to(device): _apply reaches buffers only
    assert after.scale.dtype == torch.float64 and before.to(torch.float64).scale.dtype == torch.float32
