"""Which files are linted, as ruff decides: ruff's default excludes (not `env`, `.env`,
`build`), .gitignore files with git's precedence, .git/info/exclude and the user's global
excludes file."""

from __future__ import annotations

from pathlib import Path

from helpers import BAD_DP, run_cli, write


def _files(tmp_path: Path, **env) -> list[str]:
    result = run_cli(["--show-files", "."], tmp_path, **env)
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def test_env_and_build_directories_are_linted_as_ruff_does(tmp_path: Path) -> None:
    for folder in ("env", ".env", "build", "src"):
        write(tmp_path / folder / "dp.py", BAD_DP)
    for folder in ("venv", ".venv", ".direnv", "_build", "buck-out", ".vscode", "dist"):
        write(tmp_path / folder / "dp.py", BAD_DP)
    assert _files(tmp_path) == [".env/dp.py", "build/dp.py", "env/dp.py", "src/dp.py"]
    assert run_cli(["env/"], tmp_path).exit_code == 1  # what the pre-commit hook passed


def test_git_info_exclude_is_honoured(tmp_path: Path) -> None:
    write(tmp_path / ".git" / "info" / "exclude", "scratch/\nlocal_*.py\n")
    write(tmp_path / "scratch" / "a.py", BAD_DP)
    write(tmp_path / "local_try.py", BAD_DP)
    write(tmp_path / "src" / "local_b.py", BAD_DP)
    write(tmp_path / "src" / "train.py", BAD_DP)
    assert _files(tmp_path) == ["src/train.py"]
    # Named on the command line, an excluded directory is still walked (as ruff does).
    assert run_cli(["--show-files", "scratch"], tmp_path).output.splitlines() == ["scratch/a.py"]


def test_git_info_exclude_applies_from_the_work_tree_root(tmp_path: Path) -> None:
    write(tmp_path / ".git" / "info" / "exclude", "/pkg/gen/\n")
    write(tmp_path / "pkg" / "pyproject.toml", "[tool.devicelint]\n")
    write(tmp_path / "pkg" / "gen" / "a.py", BAD_DP)
    write(tmp_path / "pkg" / "b.py", BAD_DP)
    assert _files(tmp_path / "pkg") == ["b.py"]


def test_global_excludes_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "project"
    write(project / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(project / "notes_scratch.py", BAD_DP)
    write(project / "train.py", BAD_DP)
    # git's default location: $XDG_CONFIG_HOME/git/ignore
    write(home / ".config" / "git" / "ignore", "*_scratch.py\n")
    assert _files(project, HOME=str(home), XDG_CONFIG_HOME="") == ["train.py"]
    # core.excludesFile in ~/.gitconfig wins
    write(home / ".gitconfig", '[user]\n\tname = x\n[core]\n\texcludesFile = "~/my ignores"\n')
    write(home / "my ignores", "train.py\n")
    assert _files(project, HOME=str(home), XDG_CONFIG_HOME="") == ["notes_scratch.py"]
    # Outside a git work tree, git applies neither.
    (project / ".git" / "HEAD").unlink()
    (project / ".git").rmdir()
    assert _files(project, HOME=str(home), XDG_CONFIG_HOME="") == ["notes_scratch.py", "train.py"]


def test_gitignore_negation_in_a_deeper_file_wins(tmp_path: Path) -> None:
    write(tmp_path / ".gitignore", "*_gen.py\n")
    write(tmp_path / "src" / ".gitignore", "!keep_gen.py\n")
    write(tmp_path / "src" / "keep_gen.py", BAD_DP)
    write(tmp_path / "src" / "drop_gen.py", BAD_DP)
    write(tmp_path / ".git" / "info" / "exclude", "src/other.py\n")
    write(tmp_path / "src" / ".gitignore", "!keep_gen.py\n!other.py\n")
    write(tmp_path / "src" / "other.py", BAD_DP)
    assert _files(tmp_path) == ["src/keep_gen.py", "src/other.py"]


NEWER_SYNTAX = """\
def first[T](items: list[T]) -> T:
    return items[0]


type Batch = list[int]


class Box[T = int]:
    pass
"""


def test_newer_python_syntax_parses_whatever_python_runs_devicelint(tmp_path: Path) -> None:
    """3.12 type parameters and `type`, 3.13 parameter defaults: no DL900 on Python 3.10/3.11
    either, whether or not a rule needs the file parsed."""
    write(tmp_path / "plain.py", NEWER_SYNTAX)
    write(tmp_path / "model.py", NEWER_SYNTAX + BAD_DP)
    write(tmp_path / "broken.py", "def first[T](items: list[T]) -> T\n    return items[0]\n")
    result = run_cli(["--output-format", "concise", "--no-cache", "."], tmp_path)
    lines = result.output.splitlines()
    assert lines[0].startswith("broken.py:1:") and " DL900 " in lines[0]  # the column: Python's
    assert lines[1].startswith("model.py:12:9: DL005 ")
    assert lines[2] == "Found 2 findings in 3 files checked."


def test_a_walk_places_files_without_asking_project_paths_each_time(tmp_path: Path, monkeypatch) -> None:
    """Each walked file's path relative to the project root comes from its directory's,
    worked out once (issue 17: a warm run on timm discovers 304 files): the same answer as
    ProjectPaths.key, which is asked only where the walk cannot place a file lexically
    (reached through a link from outside the root)."""
    import os

    from devicelint.config import load_settings
    from devicelint.discovery import ProjectPaths, discover

    project = tmp_path / "project"
    write(project / "pyproject.toml", "[tool.devicelint]\n")
    for name in ("a.py", "pkg/__init__.py", "pkg/sub/b.py", "pkg/sub/c.ipynb"):
        write(project / name, "x = 1\n")
    write(tmp_path / "outside" / "d.py", "x = 1\n")
    (project / "pkg" / "out").symlink_to(tmp_path / "outside")
    (tmp_path / "link").symlink_to(project)
    asked: list[str] = []
    real_key = ProjectPaths.key
    monkeypatch.setattr(ProjectPaths, "key", lambda self, path: asked.append(str(path)) or real_key(self, path))
    for where, paths in ((project, ["."]), (project / "pkg", [".", "../a.py"]), (tmp_path / "link", ["pkg"])):
        monkeypatch.chdir(where)
        asked.clear()
        settings = load_settings(None, project)
        candidates, problems = discover(paths, settings)
        keys = ProjectPaths(str(project))
        assert not problems
        assert [c.relative for c in candidates] == [real_key(keys, c.path) for c in candidates]
        walked = [c for c in candidates if not c.explicit]
        assert {c.relative for c in walked} >= {"pkg/sub/b.py", "pkg/sub/c.ipynb"}
        # Asked for the files named on the command line only (a link to the project is
        # resolved by the walk's directory, once).
        assert asked == [c.path for c in candidates if c.explicit], (where, asked)
        assert os.path.join(str(project), "pkg", "out", "d.py") not in asked


def test_exclude_expressions_are_compiled_on_the_first_match(tmp_path: Path) -> None:
    """A run over files named on the command line may never ask the excludes: their
    expressions (the defaults: ~30 glob patterns) are compiled only when one is matched."""
    from devicelint.config import load_settings
    from devicelint.discovery import Excluder

    excluder = Excluder(load_settings(None, tmp_path))
    assert not excluder._compiled and excluder._name_re is None
    assert excluder.matches(tmp_path / "node_modules") and not excluder.matches(tmp_path / "train.py")
    assert excluder._compiled and excluder._name_re is not None
