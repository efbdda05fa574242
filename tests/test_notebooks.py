"""Notebooks: code cells linted as one virtual file, magics blanked, cell positions reported,
suppressions inside cells, broken JSON as DL902, `--fix` keeping outputs and metadata."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devicelint.runner import lint_file
from devicelint.notebook import blank_magics, load, raw_lines
from devicelint.rule import all_rules

from conftest import FIXTURES, ROOT

NOTEBOOKS = sorted((FIXTURES / "notebooks").glob("*.ipynb"))
EXPECT_RE = re.compile(r"#\s*expect:\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")


def expected_in_cells(path: Path) -> set[tuple[int, int, str]]:
    """(cell, line within cell, code) for every `# expect:` marker in a code cell."""
    document = json.loads(path.read_text(encoding="utf-8"))
    expected = set()
    for index, cell in enumerate(document["cells"], 1):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for number, line in enumerate(source.splitlines(), 1):
            match = EXPECT_RE.search(line)
            if match:
                for code in re.split(r"\s*,\s*", match.group("codes")):
                    expected.add((index, number, code))
    return expected


def lint(path: Path):
    return lint_file(str(path), str(path), list(all_rules()), 10**7)


def devicelint(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "devicelint", "--no-cache", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_fixture(path: Path) -> None:
    expected = expected_in_cells(path)
    if path.name.startswith("bad_"):
        assert expected, f"{path} needs `# expect:` markers"
    found = {(f.cell, f.cell_line, f.code) for f in lint(path) if f.code != "DL901"}
    assert found == expected


def test_magics_are_blanked_keeping_lines_and_blocks() -> None:
    lines = [
        "!pip install torch\n",
        "x = (1\n",
        "     % 2)\n",  # modulo inside brackets: Python, kept
        "for i in range(2):\n",
        "    %time f(i)\n",
        "files = !ls\n",
        "torch.cuda?\n",
        "s = '''\n",
        "!not a shell line, inside a string\n",
        "'''\n",
        "!echo one \\\n",
        "     two\n",
        "y = 1  # really?\n",
    ]
    blanked: set[int] = set()
    out = blank_magics(lines, blanked)
    assert len(out) == len(lines)
    assert blanked == {0, 4, 5, 6, 10, 11}
    assert out[4] == "    pass\n"
    compile("".join(out), "<cell>", "exec")


def test_foreign_cell_magic_blanks_the_cell_and_python_ones_keep_the_body() -> None:
    assert blank_magics(["%%bash\n", "echo nn.DataParallel(x)\n"], set()) == ["pass\n", "pass\n"]
    assert blank_magics(["%%time\n", "y = f()\n"], set()) == ["pass\n", "y = f()\n"]


def test_text_output_names_cell_and_line() -> None:
    result = devicelint("fixtures/notebooks/bad_training.ipynb")
    assert result.returncode == 1, result.stderr
    assert "fixtures/notebooks/bad_training.ipynb:cell 4:2:9: DL005" in result.stdout
    assert "   2 | model = nn.DataParallel(net)" in result.stdout
    assert "Traceback" not in result.stderr


def test_json_keeps_virtual_line_and_adds_cell_keys() -> None:
    result = devicelint("--format", "json", "fixtures/notebooks/bad_training.ipynb")
    findings = json.loads(result.stdout)
    first = findings[0]
    assert (first["cell"], first["cell_line"], first["column"]) == (4, 2, 9)
    source = load((FIXTURES / "notebooks" / "bad_training.ipynb").read_bytes()).source
    assert "nn.DataParallel(net)" in source.splitlines()[first["line"] - 1]
    # Files that are not notebooks do not get the keys.
    plain = json.loads(devicelint("--format", "json", "fixtures/DL005/bad_aliases.py").stdout)
    assert plain and all("cell" not in f for f in plain)


def test_github_and_sarif_point_into_the_ipynb_text() -> None:
    path = FIXTURES / "notebooks" / "bad_training.ipynb"
    raw = path.read_text(encoding="utf-8").splitlines()
    github = devicelint("--format", "github", str(path.relative_to(ROOT))).stdout
    line, col = map(int, re.search(r"line=(\d+),endLine=\d+,col=(\d+)", github).groups())
    assert raw[line - 1][col - 1:].startswith("nn.DataParallel(net)")
    sarif = json.loads(devicelint("--format", "sarif", str(path.relative_to(ROOT))).stdout)
    result = sarif["runs"][0]["results"][0]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert raw[region["startLine"] - 1][region["startColumn"] - 1:].startswith("nn.DataParallel")
    assert result["properties"] == {"cell": 4, "cell_line": 2, "column": 9}


def test_raw_lines_for_string_and_list_sources() -> None:
    text = json.dumps({"cells": [
        {"cell_type": "markdown", "source": "# x"},
        {"cell_type": "code", "source": ["a = 1\n", "b = \"q\"\n"], "outputs": [{"text": ["a\n"]}]},
        {"cell_type": "code", "source": "c = 3"},
    ]}, indent=1)
    table = raw_lines(text)
    lines = text.splitlines()
    line, column = table[(2, 2)]
    assert lines[line - 1][column - 1:].startswith('b = \\"q\\"')
    assert (3, 1) in table and (1, 1) in table


def test_broken_notebooks_get_dl902_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "truncated.ipynb").write_text('{"cells": [', encoding="utf-8")
    (tmp_path / "list.ipynb").write_text("[1, 2]", encoding="utf-8")
    (tmp_path / "latin1.ipynb").write_bytes(b'{"cells": [], "x": "\xe9"}')
    result = devicelint(str(tmp_path))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stdout.count("DL902") == 3
    assert "not valid JSON" in result.stdout and "no top-level `cells` list" in result.stdout


def _notebook(tmp_path: Path, cells: list[dict], name: str = "nb.ipynb") -> Path:
    path = tmp_path / name
    document = {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4,
                "nbformat_minor": 5}
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def _code(source: list[str], outputs=None) -> dict:
    return {"cell_type": "code", "execution_count": 1, "metadata": {"tags": ["keep"]},
            "outputs": outputs or [], "source": source}


def test_a_broken_cell_does_not_hide_the_others(tmp_path: Path) -> None:
    path = _notebook(tmp_path, [
        _code(["import torch\n", "from torch import nn\n"]),
        _code(["def broken(:\n"]),
        _code(["m = nn.DataParallel(net)\n"]),
    ])
    found = {(f.code, f.cell, f.cell_line) for f in lint(path)}
    assert ("DL900", 2, 1) in found
    assert ("DL005", 3, 1) in found


def test_suppressions_and_unused_suppressions_in_cells(tmp_path: Path) -> None:
    path = _notebook(tmp_path, [
        _code(["from torch import nn\n"]),
        _code(["a = nn.DataParallel(net)  # noqa: DL005\n", "b = 1  # noqa: DL005\n"]),
    ])
    found = [(f.code, f.cell, f.cell_line) for f in lint(path)]
    assert found == [("DL901", 2, 2)]


def test_fix_rewrites_cells_and_keeps_outputs_and_metadata(tmp_path: Path) -> None:
    outputs = [{"name": "stdout", "output_type": "stream", "text": ["trained\n"]}]
    path = _notebook(tmp_path, [
        {"cell_type": "markdown", "metadata": {}, "source": ["# AMP, é\n"]},
        _code(["%pip install torch\n", "import torch\n"], outputs),
        _code(["with torch.cuda.amp.autocast():\n", "    !nvidia-smi\n", "    y = 1"]),
    ])
    before = json.loads(path.read_text(encoding="utf-8"))
    result = devicelint("--fix", "--select", "DL014", str(path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    after = json.loads(path.read_text(encoding="utf-8"))
    assert after["cells"][2]["source"] == [
        'with torch.amp.autocast("cuda"):\n', "    !nvidia-smi\n", "    y = 1"]
    assert after["cells"][:2] == before["cells"][:2]
    assert after["metadata"] == before["metadata"]
    assert after["cells"][2]["metadata"] == {"tags": ["keep"]}
    assert "é" in path.read_text(encoding="utf-8")


def test_discovery_finds_notebooks_and_skips_checkpoints(tmp_path: Path) -> None:
    cells = [_code(["from torch import nn\n", "nn.DataParallel(m)\n"])]
    _notebook(tmp_path, cells)
    (tmp_path / ".ipynb_checkpoints").mkdir()
    _notebook(tmp_path / ".ipynb_checkpoints", cells, "nb-checkpoint.ipynb")
    result = devicelint(".", cwd=tmp_path)
    assert "nb.ipynb:cell 1:2:1: DL005" in result.stdout
    assert "checkpoint" not in result.stdout


def test_sarif_for_notebooks_is_schema_valid() -> None:
    import jsonschema  # in the dev extra: a broken install must fail, not skip

    schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    sarif = json.loads(devicelint("--format", "sarif", "fixtures/notebooks/").stdout)
    jsonschema.validate(sarif, schema)


def test_add_noqa_in_a_notebook(tmp_path: Path) -> None:
    outputs = [{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}]
    path = _notebook(tmp_path, [
        _code(["!pip install torch\n", "from torch import nn\n"], outputs),
        _code(["m = nn.DataParallel(net)  # wrap\n", "%time m(x)"]),
    ])
    result = devicelint("--add-noqa", str(path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    after = json.loads(path.read_text(encoding="utf-8"))
    assert after["cells"][1]["source"] == ["m = nn.DataParallel(net)  # wrap  # noqa: DL005\n", "%time m(x)"]
    assert after["cells"][0]["outputs"] == outputs
    assert devicelint(str(path), cwd=tmp_path).returncode == 0


# -- messages that cite other lines name them by cell ---------------------------------------

CELL_REFERENCES = FIXTURES / "notebooks" / "bad_cell_references.ipynb"


def test_messages_name_other_lines_as_cell_and_line() -> None:
    """A message citing another line of a notebook names it as the reporters name a
    finding's position (`cell 3:1`), not by the merged source's line (`line 4`)."""
    messages = {f.code: f.message for f in lint(CELL_REFERENCES)}
    assert "`torch.zeros(...)` at cell 3:1 creates" in messages["DL007"]  # the factory, two cells up
    assert "(`.item()` at cell 6:2)" in messages["DL004"]  # the helper, a cell up
    assert "(loop at cell 8:2)" in messages["DL016"]
    assert not any("line" in message for message in messages.values())


def test_the_same_code_as_a_python_file_names_lines(tmp_path: Path) -> None:
    path = tmp_path / "same.py"
    path.write_text(load(CELL_REFERENCES.read_bytes()).source, encoding="utf-8")
    messages = {f.code: f.message for f in lint(path)}
    assert "`torch.zeros(...)` at line 4 creates" in messages["DL007"]
    assert "(`.item()` at line 8)" in messages["DL004"]
    assert "(loop at line 14)" in messages["DL016"]


def test_text_output_and_fix_remainders_name_cells(tmp_path: Path) -> None:
    result = devicelint(str(CELL_REFERENCES.relative_to(ROOT)))
    assert ":cell 5:2:12: DL007 [*] `torch.zeros(...)` at cell 3:1 creates" in result.stdout
    notebook = tmp_path / "nb.ipynb"
    shutil.copy(CELL_REFERENCES, notebook)
    fixed = devicelint("--fix", "nb.ipynb", cwd=tmp_path)  # DL007 fixed; DL004 and DL016 remain
    assert "DL007" not in fixed.stdout and "(loop at cell 8:2)" in fixed.stdout, fixed.stdout


def test_related_locations_in_a_notebook_name_cells_and_point_into_the_ipynb(tmp_path: Path) -> None:
    raw = CELL_REFERENCES.read_text(encoding="utf-8").splitlines()
    findings = json.loads(devicelint("--format", "json", str(CELL_REFERENCES.relative_to(ROOT))).stdout)
    related = next(f["related"] for f in findings if f["code"] == "DL004")
    assert [(r["cell"], r["cell_line"], r["column"]) for r in related] == [(6, 2, 12)]
    sarif = json.loads(devicelint("--format", "sarif", str(CELL_REFERENCES.relative_to(ROOT))).stdout)
    result = next(r for r in sarif["runs"][0]["results"] if r["ruleId"] == "DL004")
    location, = result["relatedLocations"]
    region = location["physicalLocation"]["region"]
    assert raw[region["startLine"] - 1][region["startColumn"] - 1:].startswith("loss.item()")
    assert location["properties"] == {"cell": 6, "cell_line": 2, "column": 12}
    # A run served from the result cache gives the same related locations.
    shutil.copy(CELL_REFERENCES, tmp_path / "nb.ipynb")
    runs = [subprocess.run([sys.executable, "-m", "devicelint", "--format", "json", "nb.ipynb"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120).stdout for _ in range(2)]
    assert runs[0] == runs[1] and '"cell_line": 2' in runs[1]


def test_line_references() -> None:
    from devicelint.notebook import line_reference, lines_reference

    cells = {4: (3, 1), 8: (6, 2)}.get
    assert line_reference(4) == "line 4" and line_reference(4, cells) == "cell 3:1"
    assert line_reference(5, cells) == "line 5"  # not in a code cell: the line itself
    assert lines_reference([4, 8]) == "lines 4, 8" and lines_reference([4, 8], None, "line") == "line 4, 8"
    assert lines_reference([4, 8], cells) == "cells 3:1, 6:2"


def test_a_broken_cell_is_reported_at_its_own_column_whatever_the_file_holds(tmp_path: Path) -> None:
    """CPython's parser, given the name of a file that exists, takes the error's line text
    from that file: for a cell, a line of the .ipynb JSON, which moved the column (here
    `\\u00e9` escapes) and made it depend on the directory devicelint ran from."""
    path = _notebook(tmp_path, [_code(["import torch\n"]), _code(['s = "\u00e9\u00e9" ; x = = 1\n'])])
    path.write_text(path.read_text(encoding="utf-8").replace("é", "\\u00e9"), encoding="utf-8")
    errors = [(f.cell, f.cell_line, f.column) for f in lint(path) if f.code == "DL900"]
    assert errors == [(2, 1, 16)]  # the second `=` of `x = = 1`
