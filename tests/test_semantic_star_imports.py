"""Names bound by `from m import *` of a local module (devicelint/project_index.py,
FileView.star_name; ImportTable.star_lookup): m's `__all__` if it defines one, else its
public names, the modules m imports among them. A star import of a module not under the
project is not followed."""

from __future__ import annotations

from pathlib import Path

from devicelint.runner import Overrides, lint_paths
from tests.fixture_markers import expected_findings

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "DL007" / "project_star"


def test_torch_bound_by_a_star_import_of_a_local_module_resolves():
    run = lint_paths([str(ROOT)], Overrides(), use_cache=False, jobs=1)
    found = {(Path(f.path).name, f.line, f.code) for f in run.findings}
    expected = {(p.name, line, code) for p in sorted(ROOT.glob("*.py")) for line, code in expected_findings(p)}
    assert found == expected and ("bad_star_torch.py", 9, "DL007") in found


def test_without_the_index_a_star_import_binds_nothing(tmp_path):
    source = (ROOT / "bad_star_torch.py").read_text(encoding="utf-8")
    (tmp_path / "alone.py").write_text(source, encoding="utf-8")
    run = lint_paths([str(tmp_path / "alone.py")], Overrides(), use_cache=False, jobs=1)
    assert not [f for f in run.findings if f.code == "DL007"]


def test_a_cached_result_follows_an_edit_of_the_star_imported_module(tmp_path):
    """The importing file's cached findings rest on what the star-imported module binds:
    adding `import torch` there re-lints the importer, which then finds the fill."""
    (tmp_path / "bad_star_torch.py").write_text((ROOT / "bad_star_torch.py").read_text(encoding="utf-8"))
    helpers = (ROOT / "helpers.py").read_text(encoding="utf-8")
    (tmp_path / "helpers.py").write_text(helpers.replace("import torch\n", "import numpy as torch\n", 1))

    def dl007():
        run = lint_paths([str(tmp_path)], Overrides(), use_cache=True, jobs=1)
        return {(Path(f.path).name, f.line) for f in run.findings if f.code == "DL007"}

    assert dl007() == set()  # `torch` is NumPy there: not followed as torch
    (tmp_path / "helpers.py").write_text(helpers)
    assert dl007() == {("bad_star_torch.py", 9)}
