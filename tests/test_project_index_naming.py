"""`ProjectIndex.naming` (devicelint/project_index.py): in a run that keeps no result cache,
`importers_of` lists only the importers whose text spells a name that can stand for the
function, the names of every rename chain that ends at it (`from m import f as g`, `g =
m.f`) included, through modules the run does not lint and the index has not read yet."""

from __future__ import annotations

import os

from devicelint.project_index import ProjectIndex

LOADER = "import torch\n\n\ndef get_loader():\n    return torch.utils.data.DataLoader([])\n"
FILES = {
    "data.py": LOADER,
    # Not linted, not read before the question: each renames the function.
    "relay.py": "from data import get_loader as make_loader\n",
    "pkg/__init__.py": "import relay\n\nbuild = relay.make_loader\n",
    # Linted: names it only through the two renames.
    "train.py": "from pkg import build\n\nfor batch in build():\n    batch.cuda()\n",
    "direct.py": "import data\n\nloader = data.get_loader()\n",
    # Imports the module that holds it, never names it.
    "module_only.py": "import data\n\nprint(data)\n",
    "unrelated.py": "from pkg import relay\n\nrelay.other()\n",
}
LINTED = ["data.py", "train.py", "direct.py", "module_only.py", "unrelated.py"]


def _index(root, recording: bool, links: dict[str, str] = {}) -> ProjectIndex:
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for name, target in links.items():
        os.symlink(root / target, root / name)
    return ProjectIndex.build(str(root), [(str(root / n), n, (root / n).read_bytes()) for n in LINTED],
                              recording=recording)


def test_an_importer_through_renames_in_modules_not_read_is_listed(tmp_path) -> None:
    index = _index(tmp_path, recording=False)
    assert all(not info.ready for info in index.modules.values())  # nothing read yet
    view = index.view("data.py")
    assert sorted(m.key for m in view.importers_of("get_loader")) == ["direct.py", "train.py"]
    assert index.naming(index.by_key["data.py"], "get_loader", index.by_key["train.py"]) == \
        {"get_loader", "make_loader", "build"}
    # The files that spell none of those names were not read.
    assert not index.by_key["module_only.py"].ready and not index.by_key["unrelated.py"].ready


def test_with_a_result_cache_every_importer_is_listed(tmp_path) -> None:
    """A result cache checks the answer again when a file changes (`still_valid`): there
    every importer is searched for as before, `module_only.py` too (`data.get_loader`
    resolves there)."""
    index = _index(tmp_path, recording=True)
    found = sorted(m.key for m in index.view("data.py").importers_of("get_loader"))
    assert found == ["direct.py", "module_only.py", "train.py"]


def test_without_the_names_the_same_importers_that_spell_one(tmp_path) -> None:
    """The names leave out no importer that spells one: the full search (no names) finds
    the same files among those that do."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    named = _index(tmp_path / "a", recording=False)
    full = _index(tmp_path / "b", recording=False)
    full.naming = lambda *args: None
    spelled = {"direct.py", "train.py"}
    assert sorted(m.key for m in named.view("data.py").importers_of("get_loader")) == \
        sorted(m.key for m in full.view("data.py").importers_of("get_loader") if m.key in spelled)


def test_a_symbolic_link_below_gives_no_names(tmp_path) -> None:
    """A lookup may step through a link into files the walk does not see: no names, every
    file is searched."""
    index = _index(tmp_path, recording=False, links={"alias.py": "relay.py"})
    assert index.naming(index.by_key["data.py"], "get_loader", index.by_key["train.py"]) is None
    found = sorted(m.key for m in index.view("data.py").importers_of("get_loader"))
    assert found == ["direct.py", "module_only.py", "train.py"]


def test_spelling_of_files_is_spells_of_each_text():
    """`_Spelling` (a search per word, then one pass over the files' words) says what
    `_spells` (a search of the text) says, for every file and name: names of word characters only, and names that
    are not (searched as before), next to letters, digits, underscores, non-ASCII letters,
    dots and at the ends of a text."""
    import random

    from devicelint.project_index import _Spelling, _spells

    random.seed(7)
    alphabet = ["a", "b", "_", "1", "é", "λ", ".", " ", "\n", "(", "ab", "a_b", "·"]
    texts = {f"f{number}.py": "".join(random.choice(alphabet) for _ in range(random.randint(0, 40)))
             for number in range(60)}
    texts["none.py"] = None
    names = ["a", "b", "ab", "a_b", "_", "a1", "é", "λa", "a·b", "b.a", "x"]
    for searches in (0, 4, 100):  # the words' files from one pass from the first word, the fifth, never
        spelling = _Spelling(list(texts), texts.get)
        spelling.SEARCHES = searches
        for path, text in texts.items():
            for name in names:
                assert spelling.spells(path, name) == _spells(text or "", name), (path, text, name)
        assert (spelling._postings is None) == (searches == 100)
        for group in (["a"], ["ab", "a·b"], ["x"]):
            assert spelling.files_spelling(group) == [path for path, text in texts.items()
                                                      if any(_spells(text or "", name) for name in group)]
