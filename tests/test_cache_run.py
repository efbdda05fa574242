"""The record of a whole run (devicelint.cache `last_run`/`record_run`, issue 17): a run whose
every file was served from the cache is recorded with the stat of every path its results
depend on, and the next run with the same files is served from that record alone (no
results file read, no file hashed) only while none of those paths changed. Every way a
result can go stale must still invalidate it: a changed, added or removed file, a changed
module it imports (linted or not), a new module where an import looked, a new __init__.py,
settings, devicelint's code, the day; a forged record is never served."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from devicelint import cache as cache_module
from devicelint import rule as rule_module
from devicelint import runner
from devicelint.datafile import decode, encode
from devicelint.runner import Overrides, lint_paths

USES = ("import torch\nfrom {source} import Base\n\n\nclass Net(Base):\n    def __init__(self):\n"
        "        super().__init__()\n        self.w = torch.ones(2)\n\n    def forward(self, x):\n"
        "        return x * self.w\n")  # DL017 while Base is a module class
LAYERS = "import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n"
DP = "import torch.nn as nn\n\nmodel = nn.DataParallel(nn.Linear(4, 4))\n"


@pytest.fixture(autouse=True)
def record_at_once(monkeypatch):
    """Record runs however recent the files (each test's edits change sizes, so a stat
    within one timestamp tick still differs); `served` lists each run's use of a record."""
    monkeypatch.setattr(cache_module, "RACY_NS", 0)
    served: list[bool] = []
    original = runner._served_whole

    def watched(*args):
        found = original(*args)
        served.append(found is not None)
        return found

    monkeypatch.setattr(runner, "_served_whole", watched)
    return served


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"pyproject.toml": "[tool.devicelint]\n", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _lint(root: Path, paths=None, **overrides):
    return lint_paths([str(root / p) for p in paths] if paths else [str(root)],
                      Overrides(**overrides) if overrides else Overrides(), use_cache=True, jobs=1)


def _found(run, root: Path) -> list:
    return [(os.path.relpath(f.path, root), f.line, f.code, f.message) for f in run.findings]


def _truth(root: Path, paths=None, **overrides) -> list:
    kind = Overrides(**overrides) if overrides else Overrides()
    run = lint_paths([str(root / p) for p in paths] if paths else [str(root)], kind, use_cache=False, jobs=1)
    return _found(run, root)


def _warm(root: Path, paths=None, **overrides) -> None:
    """Lint until the run is recorded (cold, then all cached), then once served from it."""
    _lint(root, paths, **overrides)
    _lint(root, paths, **overrides)
    run = _lint(root, paths, **overrides)
    assert run.cached == run.files and _found(run, root) == _truth(root, paths, **overrides)


def _record(root: Path) -> tuple[Path, dict]:
    (found,) = (root / ".devicelint_cache").glob("run-*.json")
    return found, decode(cache_module.RUN_FORMAT, found.read_bytes())



def _checked(root: Path, served: list, expect_served: bool, paths=None, **overrides):
    run = _lint(root, paths, **overrides)
    assert served[-1] is expect_served
    assert _found(run, root) == _truth(root, paths, **overrides)
    return run


def test_a_run_with_nothing_changed_is_served_from_its_record(tmp_path, record_at_once, monkeypatch) -> None:
    root = _project(tmp_path / "p", {"layers.py": LAYERS, "uses.py": USES.format(source="layers"), "dp.py": DP})
    _warm(root)
    assert record_at_once[-1] is True
    _file, record = _record(root)
    assert sorted(record["files"]) == ["dp.py", "layers.py", "uses.py"]
    loads = []
    monkeypatch.setattr(cache_module.Cache, "_read", lambda self, folder: loads.append(self))
    run = _checked(root, record_at_once, True)
    assert loads == [] and run.cached == run.files == 3
    assert {code for _p, _l, code, _m in _found(run, root)} >= {"DL005", "DL017"}


def test_a_changed_linted_file_is_linted_again(tmp_path, record_at_once) -> None:
    root = _project(tmp_path / "p", {"layers.py": LAYERS, "uses.py": USES.format(source="layers")})
    _warm(root)
    assert record_at_once[-1] is True
    (root / "layers.py").write_text("Base = object  # no module class any more\n")
    run = _checked(root, record_at_once, False)
    assert run.files - run.cached == 2
    assert not any(code == "DL017" for _p, _l, code, _m in _found(run, root))


def test_an_imported_module_that_is_not_linted_still_invalidates(tmp_path, record_at_once) -> None:
    root = _project(tmp_path / "p", {"layers.py": LAYERS, "app/uses.py": USES.format(source="layers")})
    _warm(root, ["app"])
    assert record_at_once[-1] is True
    _checked(root, record_at_once, True, ["app"])
    (root / "layers.py").write_text("Base = object  # no module class any more\n")
    _checked(root, record_at_once, False, ["app"])


def test_a_new_module_where_an_import_looked_invalidates(tmp_path, record_at_once) -> None:
    root = _project(tmp_path / "p", {"app/uses.py": USES.format(source="layers")})
    _warm(root, ["app"])
    assert record_at_once[-1] is True
    assert not _found(_lint(root, ["app"]), root)
    (root / "layers.py").write_text(LAYERS)  # outside the linted folder: not a linted file
    run = _checked(root, record_at_once, False, ["app"])
    assert [code for _p, _l, code, _m in _found(run, root)] == ["DL017"]


def test_added_and_removed_files_invalidate(tmp_path, record_at_once) -> None:
    root = _project(tmp_path / "p", {"dp.py": DP, "b.py": "x = 1\n"})
    _warm(root)
    assert record_at_once[-1] is True
    (root / "sub").mkdir()
    (root / "sub" / "new.py").write_text(DP)
    _checked(root, record_at_once, False)  # sub/new.py linted: not recorded yet
    _checked(root, record_at_once, False)  # every file cached: recorded
    _checked(root, record_at_once, True)
    (root / "b.py").unlink()
    _checked(root, record_at_once, False)


def test_a_new_init_py_in_a_files_folder_invalidates(tmp_path, record_at_once) -> None:
    """Whether a file's folder is a package is part of its cache key (DL010: library code)."""
    code = "import torch\n\n\ndef f(t):\n    return t.to('cuda:1')\n"
    root = _project(tmp_path / "p", {"pkg/m.py": code})
    root.joinpath("pyproject.toml").write_text('[tool.devicelint]\nextend-select = ["DL010"]\n')
    _warm(root)
    assert record_at_once[-1] is True
    (root / "pkg" / "__init__.py").write_text("")
    run = _checked(root, record_at_once, False)
    assert run.files - run.cached == 2  # __init__.py (new) and pkg/m.py (its key changed)


def test_a_new_init_py_that_is_not_linted_invalidates(tmp_path, record_at_once) -> None:
    code = "import torch\n\n\ndef f(t):\n    return t.to('cuda:1')\n"
    root = _project(tmp_path / "p", {"pkg/m.py": code})
    root.joinpath("pyproject.toml").write_text('[tool.devicelint]\nextend-select = ["DL010"]\n')
    _warm(root, ["pkg/m.py"])
    assert record_at_once[-1] is True
    (root / "pkg" / "__init__.py").write_text("")
    run = _checked(root, record_at_once, False, ["pkg/m.py"])
    assert run.files - run.cached == 1


def test_a_retargeted_module_link_invalidates(tmp_path, record_at_once) -> None:
    root = _project(tmp_path / "p", {"real/a.py": LAYERS, "real/b.py": "Base = object\n",
                                     "app/uses.py": USES.format(source="layers")})
    (root / "layers.py").symlink_to(root / "real" / "a.py")
    _warm(root, ["app"])
    assert record_at_once[-1] is True
    assert _found(_lint(root, ["app"]), root)
    (root / "layers.py").unlink()
    (root / "layers.py").symlink_to(root / "real" / "b.py")
    run = _checked(root, record_at_once, False, ["app"])
    assert not _found(run, root)


def test_settings_invalidate_and_per_file_ignores_filter_after(tmp_path, record_at_once) -> None:
    root = _project(tmp_path / "p", {"dp.py": DP})
    _warm(root)
    assert record_at_once[-1] is True
    _checked(root, record_at_once, False, select=["DL001"])  # another fingerprint, its own record
    _checked(root, record_at_once, True)
    # per-file-ignores filter after the cache: the record is served, then filtered.
    root.joinpath("pyproject.toml").write_text('[tool.devicelint]\nper-file-ignores = { "dp.py" = ["DL005"] }\n')
    assert not _found(_checked(root, record_at_once, True), root)


def test_another_devicelint_invalidates(tmp_path, record_at_once, monkeypatch) -> None:
    root = _project(tmp_path / "p", {"dp.py": DP})
    _warm(root)
    assert record_at_once[-1] is True
    monkeypatch.setattr(rule_module, "_signature_value", "another-devicelint")
    _checked(root, record_at_once, False)


def test_another_day_invalidates(tmp_path, record_at_once, monkeypatch) -> None:
    """A record is served on the day it was written: the results file's entries (dated
    when last used) are then read and dated at least once a day."""
    root = _project(tmp_path / "p", {"dp.py": DP})
    _warm(root)
    assert record_at_once[-1] is True
    today = cache_module._today()
    monkeypatch.setattr(cache_module, "_today", lambda: today + 1)
    _checked(root, record_at_once, False)


def test_a_forged_or_garbled_record_is_never_served(tmp_path, record_at_once) -> None:
    root = _project(tmp_path / "p", {"dp.py": DP, "b.py": "x = 1\n"})
    _warm(root)
    assert record_at_once[-1] is True
    file, record = _record(root)
    (dp_row,) = record["files"]["dp.py"]
    forgeries = [
        {**record, "files": {**record["files"], "dp.py": []}, "paths": record["paths"][:0]},  # no paths: checks pass
        {**record, "files": {**record["files"], "dp.py": [dp_row[:5]]}},
        {**record, "files": {**record["files"], "dp.py": "x"}},
        {**record, "files": {"dp.py": [dp_row]}},
        {**record, "paths": [[p, s[:4] if s else s] for p, s in record["paths"]]},
        {**record, "paths": [[p, None] for p, s in record["paths"]]},
        {**record, "paths": {"x": 1}},
        {**record, "fingerprint": "0" * 16},
        {**record, "day": record["day"] - 1},
        {**record, "index": "yes"},
        [record],
    ]
    for number, forged in enumerate(forgeries):
        file.write_bytes(encode(cache_module.RUN_FORMAT, forged))
        run = _lint(root)
        # The first forgery is well formed: it is served, but only because it also drops
        # every path to check; its findings are then the forger's (the record is data the
        # project's own cache directory holds, like the results file).
        assert record_at_once[-1] is (number == 0), number
        if number:
            assert _found(run, root) == _truth(root), number
        file.write_bytes(encode(cache_module.RUN_FORMAT, record))
    file.write_bytes(file.read_bytes()[:-3])  # a truncated record: its checksum fails
    _checked(root, record_at_once, False)


def test_a_run_after_a_recent_change_is_not_recorded(tmp_path, record_at_once, monkeypatch) -> None:
    """A path changed within RACY_NS of the run could change again within one timestamp
    tick and keep its stat: such a run is not recorded, and the next one is not served."""
    monkeypatch.setattr(cache_module, "RACY_NS", 3_000_000_000)
    root = _project(tmp_path / "p", {"dp.py": DP})
    _lint(root)
    _lint(root)  # every file cached, but the files are seconds old
    assert not list((root / ".devicelint_cache").glob("run-*.json"))
    (root / "dp.py").write_text("x = 1\n" + " " * (len(DP) - 6))  # same size, same tick maybe
    _checked(root, record_at_once, False)
    old = time.time() - 10
    for path in (root / "dp.py", root / "pyproject.toml", root):
        os.utime(path, (old, old))
    now = time.time_ns
    monkeypatch.setattr(time, "time_ns", lambda: now() + 10_000_000_000)  # ctime cannot be set back
    _lint(root)
    assert list((root / ".devicelint_cache").glob("run-*.json"))
    _checked(root, record_at_once, True)


def test_a_file_changed_during_the_run_is_not_recorded(tmp_path, record_at_once, monkeypatch) -> None:
    """A file read (and served) before it changed, later in the same run: the run's record
    would hold its new stat with its old findings. Changed after the run started: no record."""
    monkeypatch.setattr(cache_module, "RACY_NS", 20_000_000)  # over a timestamp tick
    root = _project(tmp_path / "p", {"dp.py": DP, "b.py": "x = 1\n"})
    _lint(root)
    time.sleep(0.05)
    get = cache_module.Cache.get

    def changing(self, key):
        found = get(self, key)
        (root / "dp.py").write_text("x = 2  # no DataParallel any more\n")
        time.sleep(0.1)  # the rest of the run takes a while: the change is not "recent" at its end
        return found

    monkeypatch.setattr(cache_module.Cache, "get", changing)
    assert _lint(root).cached == 2  # both served, as they were read before the change
    monkeypatch.setattr(cache_module.Cache, "get", get)
    assert not list((root / ".devicelint_cache").glob("run-*.json"))
    run = _checked(root, record_at_once, False)
    assert not _found(run, root)
