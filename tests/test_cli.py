"""The command line: exit codes, options, config, suppressions, discovery, cache."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import BAD_DP, run_cli, write


def test_findings_exit_1_with_source_snippet(tmp_path: Path) -> None:
    write(tmp_path / "train.py", BAD_DP)
    result = run_cli(["train.py"], tmp_path)
    assert result.exit_code == 1
    assert "train.py:3:9: DL005" in result.output
    assert "   3 | model = nn.DataParallel(nn.Linear(4, 4))" in result.output
    assert "^^^^" in result.output
    assert "Found 1 finding in 1 file checked." in result.output


def test_clean_exit_0(tmp_path: Path) -> None:
    write(tmp_path / "ok.py", "import torch\nx = torch.zeros(2)\n")
    result = run_cli(["."], tmp_path)
    assert result.exit_code == 0, result.output
    assert "All checks passed" in result.output


def test_exit_zero_and_quiet(tmp_path: Path) -> None:
    write(tmp_path / "train.py", BAD_DP)
    assert run_cli(["--exit-zero", "train.py"], tmp_path).exit_code == 0
    quiet = run_cli(["-q", "train.py"], tmp_path)
    assert quiet.exit_code == 1
    assert quiet.output.startswith("train.py:3:9: DL005") and "Found" not in quiet.output
    silent = run_cli(["-qq", "train.py"], tmp_path)
    assert silent.exit_code == 1 and silent.output == ""


def test_no_paths_defaults_to_cwd(tmp_path: Path) -> None:
    write(tmp_path / "pkg" / "train.py", BAD_DP)
    result = run_cli([], tmp_path)
    assert result.exit_code == 1
    assert "pkg/train.py:3:9" in result.output


def test_select_ignore_and_unknown_code(tmp_path: Path) -> None:
    write(tmp_path / "train.py", BAD_DP)
    assert run_cli(["--ignore", "DL005", "train.py"], tmp_path).exit_code == 0
    assert run_cli(["--select", "DL9", "train.py"], tmp_path).exit_code == 0
    assert run_cli(["--select", "DL0", "train.py"], tmp_path).exit_code == 1
    unknown = run_cli(["--select", "DL777", "train.py"], tmp_path)
    assert unknown.exit_code == 2
    assert "unknown rule code or prefix `DL777`" in unknown.output


def test_usage_error_exit_2(tmp_path: Path) -> None:
    result = run_cli(["--format", "xml", "."], tmp_path)
    assert result.exit_code == 2


def test_noqa_and_devicelint_ignore(tmp_path: Path) -> None:
    write(
        tmp_path / "train.py",
        """\
        import torch.nn as nn
        a = nn.DataParallel(nn.Linear(4, 4))  # noqa: DL005
        b = nn.DataParallel(nn.Linear(4, 4))  # noqa
        c = nn.DataParallel(nn.Linear(4, 4))  # devicelint: ignore[DL005]
        d = nn.DataParallel(nn.Linear(4, 4))  # noqa: E501
        e = "# noqa"; f = nn.DataParallel(nn.Linear(4, 4))
        """,
    )
    result = run_cli(["--format", "json", "train.py"], tmp_path)
    lines = [f["line"] for f in json.loads(result.output)]
    assert lines == [5, 6]


def test_skip_file(tmp_path: Path) -> None:
    write(tmp_path / "gen.py", "# devicelint: skip-file\n" + BAD_DP)
    assert run_cli(["gen.py"], tmp_path).exit_code == 0


def test_pyproject_config_and_per_file_ignores(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.devicelint]\nper-file-ignores = { "legacy/*" = ["DL005"] }\n')
    write(tmp_path / "legacy" / "old.py", BAD_DP)
    write(tmp_path / "new.py", BAD_DP)
    result = run_cli(["--format", "json", "."], tmp_path)
    assert [f["path"] for f in json.loads(result.output)] == ["new.py"]


def test_config_is_found_from_a_subdirectory(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.devicelint]\nignore = ["DL005"]\n')
    write(tmp_path / "src" / "train.py", BAD_DP)
    assert run_cli(["src/train.py"], tmp_path).exit_code == 0
    assert run_cli(["train.py"], tmp_path / "src").exit_code == 0


def test_malformed_and_unknown_config(tmp_path: Path) -> None:
    write(tmp_path / "train.py", BAD_DP)
    write(tmp_path / "pyproject.toml", "[tool.devicelint\nselect = [")
    bad = run_cli(["train.py"], tmp_path)
    assert bad.exit_code == 2 and "pyproject.toml" in bad.output and "invalid TOML" in bad.output
    write(tmp_path / "pyproject.toml", '[tool.devicelint]\nselect = ["DL999"]\n')
    unknown = run_cli(["train.py"], tmp_path)
    assert unknown.exit_code == 2 and "DL999" in unknown.output
    write(tmp_path / "pyproject.toml", '[tool.devicelint]\nselekt = ["DL005"]\n')
    typo = run_cli(["train.py"], tmp_path)
    assert typo.exit_code == 2 and "selekt" in typo.output


def test_explicit_config_flag(tmp_path: Path) -> None:
    write(tmp_path / "train.py", BAD_DP)
    write(tmp_path / "conf" / "pyproject.toml", '[tool.devicelint]\nignore = ["DL005"]\n')
    assert run_cli(["--config", "conf/pyproject.toml", "train.py"], tmp_path).exit_code == 0


def test_default_excludes_and_gitignore(tmp_path: Path) -> None:
    for folder in (".venv/lib", "dist", "node_modules/x", "generated"):
        write(tmp_path / folder / "m.py", BAD_DP)
    write(tmp_path / ".gitignore", "generated/\n")
    write(tmp_path / "src" / "m.py", BAD_DP)
    result = run_cli(["--format", "json", "."], tmp_path)
    assert [f["path"] for f in json.loads(result.output)] == ["src/m.py"]


def test_extend_exclude_and_force_exclude(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.devicelint]\nextend-exclude = ["vendor", "src/gen_*.py"]\n')
    write(tmp_path / "vendor" / "lib.py", BAD_DP)
    write(tmp_path / "src" / "gen_a.py", BAD_DP)
    write(tmp_path / "src" / "main.py", BAD_DP)
    listed = run_cli(["--format", "json", "."], tmp_path)
    assert [f["path"] for f in json.loads(listed.output)] == ["src/main.py"]
    # Named explicitly, an excluded file is linted, unless --force-exclude (pre-commit).
    assert run_cli(["vendor/lib.py"], tmp_path).exit_code == 1
    assert run_cli(["--force-exclude", "vendor/lib.py", "src/gen_a.py"], tmp_path).exit_code == 0
    # A directory named on the command line is walked even if its name is excluded.
    assert run_cli(["vendor"], tmp_path).exit_code == 1


def test_nothing_to_lint_exits_0_quietly(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.devicelint]\nextend-exclude = ["vendor"]\n')
    write(tmp_path / "vendor" / "lib.py", BAD_DP)
    result = run_cli(["--force-exclude", "vendor/lib.py"], tmp_path)
    assert result.exit_code == 0 and result.output == ""


def test_missing_path_and_syntax_error_keep_going(tmp_path: Path) -> None:
    write(tmp_path / "broken.py", "def f(:\n    pass\n")
    write(tmp_path / "train.py", BAD_DP)
    result = run_cli(["--format", "json", "nope.py", "broken.py", "train.py"], tmp_path)
    assert result.exit_code == 1
    found = {(f["path"], f["code"]) for f in json.loads(result.output)}
    assert found == {("nope.py", "DL902"), ("broken.py", "DL900"), ("train.py", "DL005")}


def test_statistics(tmp_path: Path) -> None:
    write(tmp_path / "a.py", BAD_DP)
    write(tmp_path / "b.py", BAD_DP)
    result = run_cli(["--statistics", "--no-show-source", "."], tmp_path)
    assert result.output.startswith("2\tDL005\t[ ] data-parallel\nFound 2 findings")


def test_output_file(tmp_path: Path) -> None:
    write(tmp_path / "a.py", BAD_DP)
    result = run_cli(["--format", "json", "-o", "out.json", "a.py"], tmp_path)
    assert result.exit_code == 1 and result.output == ""
    assert json.loads((tmp_path / "out.json").read_text())[0]["code"] == "DL005"


def test_cache_hit_and_invalidation(tmp_path: Path) -> None:
    write(tmp_path / "a.py", BAD_DP)
    write(tmp_path / "b.py", "x = 1\n")
    first = run_cli(["--format", "json", "."], tmp_path)
    cache_dir = tmp_path / ".devicelint_cache"
    assert cache_dir.is_dir() and (cache_dir / ".gitignore").read_text().strip().endswith("*")
    second = run_cli(["--format", "json", "."], tmp_path)
    assert first.output == second.output
    write(tmp_path / "b.py", BAD_DP)
    third = run_cli(["--format", "json", "."], tmp_path)
    assert [f["path"] for f in json.loads(third.output)] == ["a.py", "b.py"]
    # Different settings must not reuse results.
    assert run_cli(["--ignore", "DL005", "."], tmp_path).exit_code == 0


def test_cache_reuse_is_counted(tmp_path: Path) -> None:
    from devicelint.runner import lint_paths

    write(tmp_path / "a.py", BAD_DP)
    import os

    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        cold = lint_paths(["."])
        warm = lint_paths(["."])
        uncached = lint_paths(["."], use_cache=False)
    finally:
        os.chdir(old)
    assert (cold.cached, warm.cached, uncached.cached) == (0, 1, 0)
    assert [f.to_dict() for f in cold.findings] == [f.to_dict() for f in warm.findings]


def test_parallel_output_is_sorted_and_same_as_serial(tmp_path: Path) -> None:
    for i in range(40):
        write(tmp_path / f"m{i:02d}.py", BAD_DP if i % 3 == 0 else "x = 1\n")
    serial = run_cli(["--no-cache", "--jobs", "1", "--format", "json", "."], tmp_path)
    parallel = run_cli(["--no-cache", "--jobs", "2", "--format", "json", "."], tmp_path)
    assert serial.output == parallel.output
    paths = [f["path"] for f in json.loads(parallel.output)]
    assert paths == sorted(paths) and len(paths) == 14


def test_rule_docs_and_list_rules(tmp_path: Path) -> None:
    docs = run_cli(["rule", "DL005"], tmp_path)
    assert docs.exit_code == 0
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert heading in docs.output
    assert run_cli(["--explain", "dl005"], tmp_path).output == docs.output
    assert run_cli(["rule", "DL123"], tmp_path).exit_code == 2
    listing = run_cli(["--list-rules"], tmp_path)
    assert "DL005" in listing.output and "data-parallel" in listing.output


def test_color_only_on_tty(tmp_path: Path) -> None:
    write(tmp_path / "a.py", BAD_DP)
    assert "\033[" not in run_cli(["a.py"], tmp_path).output
    assert "\033[" in run_cli(["a.py"], tmp_path, NO_COLOR="", FORCE_COLOR="1").output


def test_every_rule_documents_why_example_and_fix(tmp_path: Path) -> None:
    """Rules with handlers carry the ruff-style docs that `devicelint rule CODE` prints."""
    from devicelint.rule import all_rules

    for code, rule in all_rules().items():
        if not rule.handlers():
            continue
        docs = run_cli(["rule", code], tmp_path).output
        for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
            assert heading in docs, f"{code} docs lack {heading!r}"
