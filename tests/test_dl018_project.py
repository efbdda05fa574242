"""fixtures/DL018/project/: a module class of layers.py refills its registered buffers from
host draws in a method that train.py's step loop runs on a model moved to the GPU (through
the model's own method, `self.hidden.reset_noise()`). Linted as one run (the project index),
the findings are the folder's markers, each naming the call in train.py; without the index
layers.py shows no step loop and is silent."""

from __future__ import annotations

from pathlib import Path

from devicelint.engine import enabled_rules, lint_source
from devicelint.runner import Overrides, lint_paths

from conftest import FIXTURES
from fixture_markers import expected_findings

PROJECT = FIXTURES / "DL018" / "project"


def test_a_refill_run_by_another_files_step_loop_is_reported_where_it_copies() -> None:
    run = lint_paths([str(PROJECT)], Overrides(), use_cache=False, jobs=1)
    found = {(Path(f.path).name, f.line, f.code) for f in run.findings}
    expected = {(p.name, line, code) for p in sorted(PROJECT.glob("*.py")) for line, code in expected_findings(p)}
    assert found == expected and ("layers.py", 20, "DL018") in found
    for finding in run.findings:
        assert "train.py" in finding.message
        [related] = finding.related
        assert related["path"].endswith("train.py") and related["line"] == 73


def test_without_the_index_the_layer_is_silent() -> None:
    rules = enabled_rules(["DL018"])
    path = PROJECT / "layers.py"
    assert not lint_source(str(path), path.read_text(encoding="utf-8"), rules).findings
