"""fixtures/DL016/project/: DL016 cases that need the project index (a helper of another local
module that copies to the device on every call, called in a loop), linted as one run; the
findings are exactly the folder's `# expect:` markers."""

from __future__ import annotations

from pathlib import Path

from devicelint.runner import Overrides, lint_paths
from fixture_markers import expected_findings

from conftest import FIXTURES

ROOT = FIXTURES / "DL016" / "project"


def test_project_findings_are_the_markers():
    run = lint_paths([str(ROOT)], Overrides(), use_cache=False, jobs=1)
    found = {(Path(f.path).name, f.line, f.code) for f in run.findings}
    expected = {(p.name, line, code) for p in sorted(ROOT.glob("*.py")) for line, code in expected_findings(p)}
    assert expected and found == expected
    for f in run.findings:
        if f.code == "DL016" and f.path.endswith(("train.py", "evaluation.py")):
            # names the copy in the other file
            assert any(name in f.message for name in ("losses.py", "codec.py", "metrics.py", "perceptual.py"))
