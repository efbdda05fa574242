"""DL010 flags index 0 only where several processes or callers run the code: a package module
is one (found by its directory's __init__.py, or a relative import); a lone script is not."""

from __future__ import annotations

from devicelint.runner import lint_file

HELPER = 'import torch\n\n\ndef load(path):\n    return torch.load(path, map_location="cuda:0")\n'


def _dl010(path) -> list[int]:
    return [f.line for f in lint_file(str(path), str(path), ["DL010"], 10**7) if f.code == "DL010"]


def test_index_zero_in_a_package_module_is_flagged(tmp_path):
    package = tmp_path / "mylib"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "io.py").write_text(HELPER)
    assert _dl010(package / "io.py") == [5]


def test_index_zero_in_a_lone_script_is_not(tmp_path):
    (tmp_path / "train.py").write_text(HELPER)
    assert _dl010(tmp_path / "train.py") == []


def test_a_relative_import_makes_a_package_module(tmp_path):
    (tmp_path / "io.py").write_text("from . import config\n" + HELPER)
    assert _dl010(tmp_path / "io.py") == [6]


def test_index_one_is_flagged_in_a_lone_script(tmp_path):
    (tmp_path / "train.py").write_text(HELPER.replace("cuda:0", "cuda:1"))
    assert _dl010(tmp_path / "train.py") == [5]


def test_package_evidence_does_not_depend_on_the_working_directory(tmp_path, monkeypatch):
    """A run names files relative to the project root; the package is found on disk, and the
    cache tells the file before and after its directory became a package."""
    from devicelint.runner import Overrides, lint_paths

    project = tmp_path / "project"
    (project / "src" / "mylib").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.devicelint]\nextend-select = ["DL010"]\n')
    module = project / "src" / "mylib" / "io.py"
    module.write_text(HELPER)

    def found(cwd, target):
        monkeypatch.chdir(cwd)
        run = lint_paths([target], Overrides())
        return [f.line for f in run.findings if f.code == "DL010"]

    assert found(project / "src", "mylib/io.py") == []  # a lone module, cached as such
    (project / "src" / "mylib" / "__init__.py").write_text("")
    for cwd, target in [(project / "src", "mylib/io.py"), (tmp_path, "project"), (module.parent, "io.py")]:
        assert found(cwd, target) == [5], (cwd, target)
