"""The result cache keeps each distinct dependency row once (issue 17: a warm run on timm
decoded and checked 13,811 noted rows, 3,806 of them distinct); entries name their rows by
number. Every number and row read back is checked: a forged or garbled one re-lints the
files that use it, never serves them. Module lookups read directory listings once per run
and find exactly the files `os.path.isfile` would."""

from __future__ import annotations

import os
from pathlib import Path

from devicelint import cache as cache_module
from devicelint.cache import Cache
from devicelint.datafile import decode, encode
from devicelint.project_index import ProjectIndex
from devicelint.runner import Overrides, lint_paths

USES = ("import torch\nfrom layers import Base\n\n\nclass Net(Base):\n    def __init__(self):\n"
        "        super().__init__()\n        self.w = torch.ones(2)\n\n    def forward(self, x):\n"
        "        return x * self.w\n")  # DL017 while Base is a module class
LAYERS = "import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n"


def _project(root: Path, users: int = 2) -> Path:
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.devicelint]\n")
    (root / "layers.py").write_text(LAYERS)
    for i in range(users):
        (root / f"uses{i}.py").write_text(USES)
    return root


def _run(root: Path):
    return lint_paths([str(root)], Overrides(), use_cache=True, jobs=1)


def _payload(root: Path) -> tuple[Path, dict]:
    (found,) = (root / ".devicelint_cache").glob("results-*")
    return found, decode(cache_module.FORMAT, found.read_bytes())


def _rows_of(payload: dict, key: str) -> list:
    return [payload["rows"][n] for n in payload["entries"][key][2]]


def test_files_that_use_the_same_module_share_its_rows(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", users=3)
    first = _run(root)
    _file, payload = _payload(root)
    users = [key for key, entry in payload["entries"].items() if len(entry) == 3]
    assert len(users) >= 3
    numbers = [payload["entries"][key][2] for key in users]
    # Each notes its own facts, and the same lookups and facts of layers.py: stored once.
    shared = set(numbers[0]).intersection(*numbers[1:])
    assert len(shared) >= 2 and all(len(set(n) - shared) == 1 for n in numbers)
    assert len(payload["rows"]) == len(shared) + len(users)
    assert ["lookup", "layers", [str(root.resolve())], [str((root / "layers.py").resolve())]] in \
        [payload["rows"][n] for n in shared]
    again = _run(root)
    assert again.cached == again.files and [f.to_dict() for f in again.findings] == \
        [f.to_dict() for f in first.findings]


def test_a_changed_shared_module_relints_every_file_that_used_it(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", users=3)
    first = _run(root)
    assert any(f.code == "DL017" for f in first.findings)
    (root / "layers.py").write_text("Base = object\n")  # no module class any more
    changed = _run(root)
    assert changed.files - changed.cached == 4  # layers.py and its three users
    assert not any(f.code == "DL017" for f in changed.findings)
    assert _run(root).cached == 4


def test_forged_row_numbers_and_rows_relint_only_the_files_using_them(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", users=2)
    truth = [f.to_dict() for f in _run(root).findings]
    file, payload = _payload(root)
    users = sorted(key for key, entry in payload["entries"].items() if len(entry) == 3)
    victim = users[0]

    def forge(entries=None, rows=None) -> None:
        forged = {**payload, "entries": {**payload["entries"], **(entries or {})},
                  "rows": rows if rows is not None else payload["rows"]}
        file.write_bytes(encode(cache_module.FORMAT, forged))

    day, findings, numbers = payload["entries"][victim]
    for bad in ([len(payload["rows"])], [-1], [True], ["0"], [0.0], 3, None, {"0": 1}):
        forge(entries={victim: [day, findings, bad]})
        run = _run(root)
        assert [f.to_dict() for f in run.findings] == truth and run.cached == run.files - 1, bad
    # A row of the wrong shape: every file that used it is linted again, the rest served.
    for garbled in (["lookup", 3, [], []], [], "facts", ["facts", {"a": 1}, "x", "y"], [["x", [1]]]):
        rows = list(payload["rows"])
        rows[numbers[0]] = garbled
        forge(rows=rows)
        run = _run(root)
        assert [f.to_dict() for f in run.findings] == truth
        assert run.cached == run.files - len(users), garbled
    # A row table that is no list: no entry with rows is served.
    forge(rows={"0": 1})
    run = _run(root)
    assert [f.to_dict() for f in run.findings] == truth and run.cached == run.files - len(users)
    # Untouched, everything is served again.
    file.write_bytes(encode(cache_module.FORMAT, payload))
    assert _run(root).cached == 3


def test_entries_written_meanwhile_by_another_run_keep_their_rows(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    directory = root / ".devicelint_cache"
    ours, theirs = Cache(root, directory, "f" * 16), Cache(root, directory, "f" * 16)
    shared = ["lookup", "torch", [str(root)], []]
    ours.put("1" * 32, [], [["facts", str(root / "a.py"), "i", "t"], shared])
    ours.save()
    theirs.put("2" * 32, [], [shared, ["model", str(root / "b.py"), "j"]])
    theirs.save()  # ours wrote meanwhile: its entry is kept, its rows renumbered
    merged = Cache(root, directory, "f" * 16)
    assert [merged.dependency_row(n) for n in merged.dependencies("1" * 32)] == \
        [["facts", str(root / "a.py"), "i", "t"], shared]
    assert [merged.dependency_row(n) for n in merged.dependencies("2" * 32)] == \
        [shared, ["model", str(root / "b.py"), "j"]]
    assert len(merged.rows) == 3


def test_the_size_limit_keeps_the_rows_of_the_entries_kept(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "p"
    root.mkdir()
    directory = root / ".devicelint_cache"
    cache = Cache(root, directory, "f" * 16)
    for i in range(40):
        cache.put(f"{i:032x}", [], [["model", str(root / f"m{i}.py"), "x" * 40], ["lookup", "torch", [], []]])
    monkeypatch.setattr(cache_module, "MAX_BYTES", 2500)
    cache.save()
    kept = Cache(root, directory, "f" * 16)
    assert 0 < len(kept.entries) < 40
    for key in kept.entries:
        i = int(key, 16)
        assert [kept.dependency_row(n) for n in kept.dependencies(key)] == \
            [["model", str(root / f"m{i}.py"), "x" * 40], ["lookup", "torch", [], []]]
    assert len(kept.rows) == len(kept.entries) + 1  # unused rows are not written


def _isfile_lookup(root: str, dotted: str, search: tuple[str, ...]) -> list[str]:
    """What a module lookup found before it read directory listings (one stat per guess)."""
    parts = dotted.split(".")
    if not all(parts):
        return []
    for base in search:
        here = os.path.join(base, *parts)
        for candidate in (os.path.join(here, "__init__.py"), here + ".py"):
            real = os.path.realpath(candidate)
            if os.path.isfile(candidate) and real.startswith(root + os.sep):
                return [real]
    return []


def test_module_lookups_find_what_a_stat_of_each_guess_finds(tmp_path: Path) -> None:
    root = tmp_path / "p"
    outside = tmp_path / "outside"
    for path in ("pkg/__init__.py", "pkg/sub.py", "pkg/deep/__init__.py", "pkg/deep/leaf.py",
                 "nopkg/mod.py", "both/__init__.py", "both.py", "real/thing.py", "dir.py/x.py",
                 "shadow/__init__.py/oops.py"):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        if not path.endswith("__init__.py/oops.py"):
            (root / path).write_text("x = 1\n")
    (outside / "far.py").parent.mkdir(parents=True)
    (outside / "far.py").write_text("x = 1\n")
    (root / "linked.py").symlink_to(root / "real" / "thing.py")
    (root / "linkdir").symlink_to(root / "pkg", target_is_directory=True)
    (root / "away.py").symlink_to(outside / "far.py")
    (root / "dangling.py").symlink_to(root / "missing.py")
    (root / "fifo.py").mkdir()  # a directory named like a module file
    real_root = os.path.realpath(root)
    index = ProjectIndex(str(root))
    search = (real_root, os.path.join(real_root, "pkg"))
    names = ["pkg", "pkg.sub", "pkg.deep", "pkg.deep.leaf", "pkg.nothing", "nopkg", "nopkg.mod", "both",
             "real.thing", "dir", "dir.x", "shadow", "shadow.oops", "linked", "linkdir", "linkdir.sub",
             "linkdir.deep.leaf", "away", "dangling", "fifo", "sub", "deep.leaf", "torch", "torch.nn",
             "", "a..b", "pkg.", ".pkg", "PKG", "pkg.SUB"]
    for dotted in names:
        assert index._lookup(dotted, search) == _isfile_lookup(real_root, dotted, search), dotted
