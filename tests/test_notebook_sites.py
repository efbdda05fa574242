"""A finding whose message names a place in another file of the project names a notebook's
place by its cell (`cell 5:2 of train.ipynb`), as the reporters write a notebook finding's own
position, never by a line of the notebook's cells run together (the virtual source the engine
lints). fixtures/DL008/notebook_project/: data.py's loader, whose batches train.ipynb copies
to the GPU, is reported in data.py naming the copy."""

from __future__ import annotations

import json
from pathlib import Path

from devicelint import notebook
from devicelint.runner import Overrides, lint_paths
from fixture_markers import expected_findings

from conftest import FIXTURES

ROOT = FIXTURES / "DL008" / "notebook_project"


def test_the_findings_are_the_markers_and_name_the_cell():
    run = lint_paths([str(ROOT)], Overrides(), use_cache=False, jobs=1)
    found = {(Path(f.path).name, f.line, f.code) for f in run.findings}
    expected = {(p.name, line, code) for p in sorted(ROOT.glob("*.py")) for line, code in expected_findings(p)}
    assert expected and found == expected
    [finding] = run.findings
    # The copy is the second line of the notebook's fifth cell (its 13th line run together).
    assert "(cell 5:2 of " in finding.message and "train.ipynb: `x.to(device)`)" in finding.message
    assert "line 13" not in finding.message
    [related] = finding.related
    assert related["path"].endswith("train.ipynb")
    assert (related["line"], related["cell"], related["cell_line"]) == (13, 5, 2)


def test_sarif_places_the_related_copy_in_the_cell():
    from helpers import run_cli

    result = run_cli(["check", "--no-cache", "--exit-zero", "--output-format", "sarif", "."], cwd=ROOT)
    [run] = json.loads(result.output)["runs"]
    [found] = run["results"]
    [location] = found["relatedLocations"]
    assert location["physicalLocation"]["artifactLocation"]["uri"].endswith("notebook_project/train.ipynb")
    assert (location["properties"]["cell"], location["properties"]["cell_line"]) == (5, 2)
    # the region is the line of the .ipynb JSON text that stores the cell's line
    line = location["physicalLocation"]["region"]["startLine"]
    assert "x.to(device), y.to(device)" in (ROOT / "train.ipynb").read_text().splitlines()[line - 1]


def test_cell_map_agrees_with_the_notebook():
    """The cell map the project index keeps for a notebook (without the notebook) places every
    line of the virtual source as Notebook.locate does."""
    for path in sorted((FIXTURES / "notebooks").glob("*.ipynb")) + [ROOT / "train.ipynb"]:
        read = notebook.load(path.read_bytes())
        locate = notebook.cell_map(read)
        lines = read.source.count("\n") + 2
        assert [locate(n) for n in range(0, lines + 1)] == [read.locate(n) for n in range(0, lines + 1)], path


def test_site_names_a_python_line_as_before():
    site = notebook.Site("data.py", 8, 5)
    assert site == ("data.py", 8, 5) and site.ref() == "line 8 of data.py" and site.short() == "data.py:8"
    cell = notebook.Site("train.ipynb", 13, 12, (5, 2))
    assert cell.ref() == "cell 5:2 of train.ipynb" and cell.short() == "train.ipynb:cell 5:2"
    path, line, column = cell
    assert (path, line, column) == ("train.ipynb", 13, 12)
