"""`ProjectIndex.may_reach` (devicelint/project_index.py): `importers_of` skips, unread, the
files from where no module lookup can find the asking module. The skip must never change an
answer: each test compares `importers_of` with and without it, on layouts where the paths
decide (directories whose names are not identifiers, packages named so, symbolic links)."""

from __future__ import annotations

import os

import pytest

from devicelint.project_index import ProjectIndex

LOADER = "def get_loader():\n    pass\n"


def _index(root, files: dict[str, str], links: dict[str, str] = {}) -> ProjectIndex:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for name, target in links.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(root / target, root / name)
    linted = [n for n in files if not any(n.startswith(link + "/") for link in links)]
    return ProjectIndex.build(str(root), [(str(root / n), n, (root / n).read_bytes()) for n in linted])


def _importers(root, files, links={}, skip=True) -> tuple[dict, int]:
    """{(file, function): the files importing it} for every top-level function of every
    file, and how many files were parsed to answer."""
    index = _index(root, files, links)
    if not skip:
        index.may_reach = lambda start, target: True
    found = {}
    for key, info in sorted(index.by_key.items()):
        view = index.view(key)
        for function in sorted(info.functions):
            found[key, function] = sorted(m.key for m in view.importers_of(function))
    return found, index.parses


def _same_with_and_without_the_skip(tmp_path, files, links={}) -> tuple[dict, int, int]:
    (tmp_path / "with").mkdir()
    (tmp_path / "without").mkdir()
    found, parses = _importers(tmp_path / "with", files, links)
    unskipped, all_parses = _importers(tmp_path / "without", files, links, skip=False)
    assert found == unskipped
    return found, parses, all_parses


PROJECTS = {
    # Two projects side by side, in directories no import can name (`d2l-en`, `gan-1`).
    "apart": {
        "d2l-en/d2l/torch.py": "import torch\n" + LOADER,
        "d2l-en/chapter.py": "from d2l import torch as d2l\nd2l.get_loader()\n",
        "gan-1/data.py": LOADER,
        "gan-1/train.py": "from data import get_loader\nimport torch\n",
        "gan-1/models/__init__.py": "from .layers import *\n",
        "gan-1/models/layers.py": "from data import get_loader as make\n",
        "other-2/train.py": "from data import get_loader\nimport d2l\n",
    },
    # A package whose directory name is no identifier: its own relative imports name it.
    "odd package": {
        "z/my-pkg/__init__.py": "",
        "z/my-pkg/t.py": "from .data import get_loader\n",
        "my-pkg/__init__.py": "",
        "my-pkg/data.py": LOADER,
        "my-pkg/inner/__init__.py": "",
        "my-pkg/inner/u.py": "from ..data import get_loader\n",
        "plain-dir/v.py": "from data import get_loader\n",
    },
    # Everything at identifier paths from the root: nothing can be ruled out.
    "all reachable": {
        "pkg/__init__.py": "from .data import get_loader\n",
        "pkg/data.py": LOADER,
        "app/train.py": "from pkg import get_loader\n",
        "app/eval.py": "import pkg.data\n",
    },
}


@pytest.mark.parametrize("layout", sorted(PROJECTS))
def test_the_skip_never_changes_which_files_import_a_function(tmp_path, layout) -> None:
    _same_with_and_without_the_skip(tmp_path, PROJECTS[layout])


def test_files_apart_from_the_module_are_not_parsed(tmp_path) -> None:
    found, _parses, _all = _same_with_and_without_the_skip(tmp_path, PROJECTS["apart"])
    assert found["d2l-en/d2l/torch.py", "get_loader"] == ["d2l-en/chapter.py"]
    assert found["gan-1/data.py", "get_loader"] == ["gan-1/models/layers.py", "gan-1/train.py"]
    # One question alone reads the asking file and the one next to it, not the other project.
    index = _index(tmp_path / "with", PROJECTS["apart"])
    assert [m.key for m in index.view("d2l-en/d2l/torch.py").importers_of("get_loader")] == ["d2l-en/chapter.py"]
    assert sorted(os.path.relpath(m.path, index.root) for m in index.modules.values() if m.ready) == [
        "d2l-en/chapter.py", "d2l-en/d2l/torch.py"]


def test_a_package_named_as_no_identifier_is_walked_through_by_its_own_modules(tmp_path) -> None:
    """`z/my-pkg/t.py` is module `my-pkg.t`: its `from .data import ...` is looked up as
    `my-pkg.data` from each of its search directories, the root among them, where it finds
    `my-pkg/data.py` of another package of the same name."""
    found, _parses, _all = _same_with_and_without_the_skip(tmp_path, PROJECTS["odd package"])
    assert found["my-pkg/data.py", "get_loader"] == ["my-pkg/inner/u.py", "z/my-pkg/t.py"]


def test_a_symbolic_link_that_leads_into_the_module_s_directory_keeps_every_file(tmp_path) -> None:
    """`app-one/shared` links to `lib-x/shared`: `train.py` reaches `lib-x/shared/data.py`
    through a directory no import can name (`lib-x`)."""
    files = {"lib-x/shared/data.py": LOADER, "app-one/train.py": "from shared.data import get_loader\n"}
    found, _parses, _all = _same_with_and_without_the_skip(
        tmp_path, files, links={"app-one/shared": "lib-x/shared"})
    assert found["lib-x/shared/data.py", "get_loader"] == ["app-one/train.py"]


def test_may_reach_from_paths_alone(tmp_path) -> None:
    index = _index(tmp_path, {"a-b/c/m.py": LOADER, "a-b/n.py": "", "x-y/n.py": "", "a-b/bad-name.py": ""})
    module = {key: index.by_key[key] for key in index.by_key}
    assert index.may_reach(module["a-b/n.py"], module["a-b/c/m.py"])
    assert not index.may_reach(module["x-y/n.py"], module["a-b/c/m.py"])
    # A module whose own name is no identifier is found by no lookup.
    assert not index.may_reach(module["a-b/n.py"], module["a-b/bad-name.py"])
    assert index.parses == 0
