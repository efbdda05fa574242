"""Issue 19, item 10: the configuration is read as TOML (dotted keys and inline tables too)
and typed strictly; every error is one line naming the key and the file, exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import BAD_DP, run_cli, write


def lint(tmp_path: Path, *args: str):
    write(tmp_path / "a.py", BAD_DP)
    return run_cli(["--no-cache", *args, "a.py"], tmp_path)


@pytest.mark.parametrize("text", [
    '[tool]\ndevicelint.ignore = ["DL005"]\n',
    '[tool]\ndevicelint = { ignore = ["DL005"] }\n',
    'tool.devicelint.ignore = ["DL005"]\n',
    '[project]\nname = "x"\n\n[tool.devicelint]\nignore = ["DL005"]\n',
    '[tool."devicelint"]\nignore = ["DL005"]\n',
])
def test_every_toml_spelling_of_the_table_is_read(tmp_path: Path, text: str) -> None:
    write(tmp_path / "pyproject.toml", text)
    result = lint(tmp_path)
    assert result.exit_code == 0, result.output


def test_dotted_keys_found_from_a_subdirectory(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool]\ndevicelint.per-file-ignores = { "pkg/*" = ["DL005"] }\n')
    write(tmp_path / "pkg" / "a.py", BAD_DP)
    assert run_cli(["--no-cache", "a.py"], tmp_path / "pkg").exit_code == 0


def test_a_text_mention_is_not_a_table(tmp_path: Path) -> None:
    """`[tool.devicelint` inside a string is not a devicelint table."""
    write(tmp_path / "pyproject.toml", '[tool.other]\nnote = "see [tool.devicelint] docs"\n')
    assert lint(tmp_path).exit_code == 1


@pytest.mark.parametrize("text, key", [
    ("[tool.devicelint]\nmax-file-size = true\n", "max-file-size"),
    ("[tool.devicelint]\nmax-file-size = 0\n", "max-file-size"),
    ("[tool.devicelint]\nmax-file-size = -5\n", "max-file-size"),
    ("[tool.devicelint]\nmax-file-size = 1.5\n", "max-file-size"),
    ('[tool.devicelint]\ncache-dir = ["x"]\n', "cache-dir"),
    ("[tool.devicelint]\ncache-dir = 5\n", "cache-dir"),
    ('[tool.devicelint]\ncache-dir = ""\n', "cache-dir"),
    ('[tool.devicelint]\nselect = [""]\n', "select"),
    ('[tool.devicelint]\nselect = ["  "]\n', "select"),
    ('[tool.devicelint]\nignore = ["DL005", 5]\n', "ignore"),
    ('[tool.devicelint]\nextend-select = [true]\n', "extend-select"),
    ('[tool.devicelint]\nexclude = [""]\n', "exclude"),
    ('[tool.devicelint]\nextend-exclude = 3\n', "extend-exclude"),
    ('[tool.devicelint]\nrespect-gitignore = 1\n', "respect-gitignore"),
    ('[tool.devicelint]\nforce-exclude = "yes"\n', "force-exclude"),
    ('[tool.devicelint]\nper-file-ignores = ["x"]\n', "per-file-ignores"),
    ('[tool.devicelint]\nper-file-ignores = { "tests/*" = [""] }\n', "per-file-ignores.tests/*"),
    ('[tool.devicelint]\nper-file-ignores = { "tests/*" = 5 }\n', "per-file-ignores.tests/*"),
    ('[tool.devicelint]\nper-file-ignores = { "" = ["DL005"] }\n', "per-file-ignores"),
    ("[tool]\ndevicelint = 5\n", "tool.devicelint"),
])
def test_type_errors_name_the_key_and_the_file(tmp_path: Path, text: str, key: str) -> None:
    write(tmp_path / "pyproject.toml", text)
    (tmp_path / "x").mkdir()
    result = lint(tmp_path)
    assert result.exit_code == 2, result.output
    assert f"`{key}`" in result.stderr and "pyproject.toml" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "['x']").exists()


def test_tool_that_is_not_a_table(tmp_path: Path) -> None:
    write(tmp_path / "conf.toml", "tool = 5\n")
    result = lint(tmp_path, "--config", "conf.toml")
    assert result.exit_code == 2 and "`tool` must be a table" in result.stderr and "conf.toml" in result.stderr
    write(tmp_path / "pyproject.toml", "tool = 5\n")
    result = lint(tmp_path, "--config", "pyproject.toml")
    assert result.exit_code == 2 and "`tool` must be a table" in result.stderr


def test_non_utf8_config_is_one_clean_line(tmp_path: Path) -> None:
    (tmp_path / "conf.toml").write_bytes(b'select = ["DL005"]\n# caf\xe9\n')
    result = lint(tmp_path, "--config", "conf.toml")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "conf.toml" in result.stderr and "UTF-8" in result.stderr
    assert "Traceback" not in result.output


def test_non_utf8_pyproject_found_by_search_is_an_error_when_it_configures_devicelint(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_bytes(b'[tool.devicelint]\n# caf\xe9\nignore = ["DL005"]\n')
    result = lint(tmp_path)
    assert result.exit_code == 2 and "pyproject.toml" in result.stderr and "UTF-8" in result.stderr


def test_unrelated_broken_pyproject_above_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_bytes(b"[project\nname = \xff\n")
    assert lint(tmp_path).exit_code == 1


def test_valid_configs_keep_working(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", (
        '[tool.devicelint]\nselect = ["DL"]\nextend-select = ["DL010"]\nignore = "DL004"\n'
        'extend-exclude = ["third_party", "src/generated/*.py"]\nper-file-ignores = { "tests/*" = ["DL001"] }\n'
        'respect-gitignore = true\nforce-exclude = false\nmax-file-size = 5000000\ncache-dir = ".cache/dl"\n'
    ))
    assert lint(tmp_path).exit_code == 1
    from devicelint.config import load_settings

    settings = load_settings(tmp_path / "pyproject.toml", tmp_path)
    assert settings.ignore == ["DL004"] and settings.max_file_size == 5_000_000
    assert settings.cache_dir == str(tmp_path.resolve() / ".cache" / "dl")


def test_empty_select_on_the_command_line_is_not_everything(tmp_path: Path) -> None:
    from devicelint.config import ConfigError, expand_codes

    with pytest.raises(ConfigError, match="empty rule code"):
        expand_codes([""], ["DL001", "DL005"], "command line")
