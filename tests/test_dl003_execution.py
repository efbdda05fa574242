"""DL003 fixtures verified by running them with torch (CPU is enough: the stride check is
the same on every device).

Every fixture defines `cases`, a list of callables. In a bad fixture each case must raise
PyTorch's "view size is not compatible" error at a line marked `# expect: DL003`; in a good
fixture every case must run. Applying all DL003 fixes (safe and unsafe) to a bad fixture
must make every case run.
"""

from __future__ import annotations

import runpy
import traceback
from pathlib import Path

import pytest
import torch  # noqa: F401 - the fixtures run here need it; in the dev extra: must not skip

from devicelint.runner import lint_file  # noqa: E402

from conftest import FIXTURES  # noqa: E402
from fixture_markers import expected_findings  # noqa: E402

CODE = "DL003"
VIEW_ERROR = "view size is not compatible"
DIR = FIXTURES / CODE
BAD = sorted(DIR.glob("bad_*.py"))
GOOD = sorted(DIR.glob("good_*.py")) + sorted(DIR.glob("fix_*.py.expected"))


def _cases(path: Path) -> list:
    namespace = runpy.run_path(str(path), run_name="dl003_fixture")
    cases = namespace.get("cases")
    assert cases, f"{path.name} must define a non-empty `cases` list"
    return cases


def _fixed_text(path: Path) -> str:
    """The fixture's text with every DL003 fix applied (bottom-up, non-overlapping)."""
    findings = lint_file(str(path), str(path), [CODE], 10**7)
    text = path.read_text(encoding="utf-8")
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    fixes = sorted(
        (f.fix for f in findings if f.fix is not None),
        key=lambda fix: (fix.line, fix.column),
        reverse=True,
    )
    limit = None
    for fix in fixes:
        start = starts[fix.line - 1] + fix.column - 1
        end = starts[fix.end_line - 1] + fix.end_column - 1
        if limit is not None and end > limit:
            continue
        text = text[:start] + fix.content + text[end:]
        limit = start
    return text


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_fixture_raises_at_flagged_line(path: Path) -> None:
    flagged = {line for line, code in expected_findings(path) if code == CODE}
    for case in _cases(path):
        with pytest.raises(RuntimeError, match=VIEW_ERROR) as info:
            case()
        frames = [f for f in traceback.extract_tb(info.tb) if Path(f.filename) == path]
        assert frames, f"{path.name}: {case.__name__} raised outside the fixture"
        assert frames[-1].lineno in flagged, (
            f"{path.name}: {case.__name__} raised at line {frames[-1].lineno}, "
            f"not at a flagged line {sorted(flagged)}"
        )


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_good_fixture_runs(path: Path, tmp_path: Path) -> None:
    if path.name.endswith(".expected"):
        copy = tmp_path / path.name.removesuffix(".expected")
        copy.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
        path = copy
    for case in _cases(path):
        case()


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_fixed_bad_fixture_runs(path: Path, tmp_path: Path) -> None:
    fixed = _fixed_text(path)
    assert fixed != path.read_text(encoding="utf-8"), f"{path.name}: no DL003 fix offered"
    copy = tmp_path / path.name
    copy.write_text(fixed, encoding="utf-8")
    for case in _cases(copy):
        case()
