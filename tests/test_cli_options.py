"""Command-line options a ruff user reaches for: --output-format, --statistics, --show-files,
--show-settings, standard input, --color/FORCE_COLOR, --fix-only, --show-fixes,
--exit-non-zero-on-fix, --watch, the [*] marker and the fix counts, and errors that name
where a wrong value came from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from helpers import BAD_DP, run_cli, write

# One finding with a safe fix (DL007), one without (DL005).
MIXED = """\
import torch
import torch.nn as nn
model = nn.DataParallel(nn.Linear(4, 4))
x = torch.zeros(4).cuda()
"""
# One finding whose only fix is unsafe (DL006: moving to the CPU may change later code).
UNSAFE_ONLY = """\
import torch
x = torch.ones(2, device="cuda")
x.to("cpu")
"""


def test_output_format_full_concise_and_format_alias(tmp_path: Path) -> None:
    write(tmp_path / "a.py", MIXED)
    full = run_cli(["--output-format", "full", "a.py"], tmp_path)
    assert "   4 | x = torch.zeros(4).cuda()" in full.output
    assert "help: Create the tensor on the device" in full.output
    # The why (the first sentence of the rule's "Why is this bad?") is in full output only.
    assert "why: DataParallel runs one Python process for all GPUs" in full.output
    assert run_cli(["a.py"], tmp_path).output == full.output  # full is the default
    assert run_cli(["--format", "text", "a.py"], tmp_path).output == full.output
    concise = run_cli(["--output-format", "concise", "a.py"], tmp_path)
    assert concise.exit_code == 1
    assert "why:" not in concise.output and "help:" not in concise.output
    lines = concise.output.splitlines()
    assert lines[0].startswith("a.py:3:9: DL005 ") and lines[1].startswith("a.py:4:5: DL007 [*] ")
    assert lines[2:] == ["Found 2 findings in 1 file checked.", "[*] 1 fixable with `--fix`."]
    alias = run_cli(["--format", "json", "a.py"], tmp_path)
    assert [f["code"] for f in json.loads(alias.output)] == ["DL005", "DL007"]


def test_fix_counts_separate_safe_and_unsafe(tmp_path: Path) -> None:
    write(tmp_path / "u.py", UNSAFE_ONLY)
    result = run_cli(["--output-format", "concise", "u.py"], tmp_path)
    assert "[*]" not in result.output
    assert result.output.splitlines()[-1] == "1 unsafe fix available with `--fix --unsafe-fixes`."
    unsafe = run_cli(["--output-format", "concise", "--unsafe-fixes", "u.py"], tmp_path)
    assert "u.py:3:1: DL006 [*] " in unsafe.output
    assert unsafe.output.splitlines()[-1] == "[*] 1 fixable with `--fix`."
    write(tmp_path / "a.py", MIXED)
    both = run_cli(["--output-format", "concise", "a.py", "u.py"], tmp_path)
    assert both.output.splitlines()[-1] == (
        "[*] 1 fixable with `--fix` (1 unsafe fix available with `--fix --unsafe-fixes`).")


def test_statistics_prints_the_table_not_the_findings(tmp_path: Path) -> None:
    write(tmp_path / "a.py", MIXED)
    write(tmp_path / "b.py", BAD_DP)
    result = run_cli(["--statistics", "."], tmp_path)
    assert result.exit_code == 1
    table = "2\tDL005\t[ ] data-parallel\n1\tDL007\t[*] create-then-move\n"
    assert result.output == table + "Found 3 findings in 2 files checked.\n[*] 1 fixable with `--fix`.\n"
    assert run_cli(["--statistics", "-q", "."], tmp_path).output == table
    table = json.loads(run_cli(["--statistics", "--output-format", "json", "."], tmp_path).output)
    assert table[0] == {"code": "DL005", "name": "data-parallel", "count": 2, "fixable": False}


def test_show_files_and_show_settings(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.devicelint]\nextend-exclude = ["gen"]\nignore = ["DL010"]\n')
    write(tmp_path / "src" / "a.py", BAD_DP)
    write(tmp_path / "gen" / "b.py", BAD_DP)
    write(tmp_path / ".venv" / "c.py", BAD_DP)
    files = run_cli(["--show-files"], tmp_path)
    assert files.exit_code == 0
    assert files.output.splitlines() == ["src/a.py"]
    settings = run_cli(["--show-settings", "--select", "DL0"], tmp_path)
    assert settings.exit_code == 0
    assert f"config = {tmp_path.resolve() / 'pyproject.toml'}" in settings.output
    assert "extend-exclude = ['gen']" in settings.output and "select = ['DL0']" in settings.output
    enabled = next(line for line in settings.output.splitlines() if line.startswith("enabled = "))
    assert "'DL005'" in enabled and "'DL010'" not in enabled


def test_stdin_with_stdin_filename(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.devicelint]\nper-file-ignores = { "tests/*" = ["DL005"] }\n')
    piped = run_cli(["--stdin-filename", "src/train.py", "--output-format", "concise"], tmp_path, input=MIXED)
    assert piped.exit_code == 1
    assert piped.output.startswith("src/train.py:3:9: DL005 ")
    # The name decides the per-file ignores, as for a file on disk.
    ignored = run_cli(["-", "--stdin-filename", "tests/t.py", "--format", "json"], tmp_path, input=BAD_DP)
    assert (ignored.exit_code, json.loads(ignored.output)) == (0, [])
    dash = run_cli(["-", "--format", "json"], tmp_path, input=BAD_DP)
    assert [(f["path"], f["code"]) for f in json.loads(dash.output)] == [("-", "DL005")]


def test_stdin_fix_prints_the_fixed_text(tmp_path: Path) -> None:
    result = run_cli(["--stdin-filename", "a.py", "--fix"], tmp_path, input=MIXED)
    assert "x = torch.zeros(4, device=\"cuda\")\n" in result.stdout
    assert "DataParallel" in result.stdout and "DL005" not in result.stdout
    assert "a.py:3:9: DL005" in result.stderr and result.exit_code == 1
    assert not (tmp_path / "a.py").exists()


def test_color_option_and_force_color(tmp_path: Path) -> None:
    write(tmp_path / "a.py", BAD_DP)
    assert "\033[" in run_cli(["--color", "always", "a.py"], tmp_path).output  # NO_COLOR=1 set
    assert "\033[" not in run_cli(["--color", "never", "a.py"], tmp_path, FORCE_COLOR="1").output
    # Piped (not a terminal): FORCE_COLOR still colours, which click would strip by default.
    env = {**os.environ, "FORCE_COLOR": "1"}
    env.pop("NO_COLOR", None)
    piped = subprocess.run([sys.executable, "-m", "devicelint", "--no-cache", "a.py"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=120)
    assert "\033[31m\033[1mDL005" in piped.stdout, piped.stdout + piped.stderr


def test_fix_only_show_fixes_and_exit_non_zero_on_fix(tmp_path: Path) -> None:
    write(tmp_path / "a.py", MIXED)
    only = run_cli(["--fix-only", "a.py"], tmp_path)
    assert (only.exit_code, only.output) == (0, "Fixed 1 finding.\n")  # DL005 remains, unreported
    assert 'torch.zeros(4, device="cuda")' in (tmp_path / "a.py").read_text()
    write(tmp_path / "b.py", MIXED)
    strict = run_cli(["--fix-only", "--exit-non-zero-on-fix", "b.py"], tmp_path)
    assert strict.exit_code == 1
    write(tmp_path / "c.py", MIXED)
    shown = run_cli(["--fix", "--show-fixes", "--output-format", "concise", "c.py"], tmp_path)
    assert shown.exit_code == 1  # DL005 remains
    assert "Fixed 1 finding:\n    1 × DL007 (create-then-move)\nin 1 file:\n- c.py\n" in shown.output
    nothing = run_cli(["--fix-only", "--exit-non-zero-on-fix", "c.py"], tmp_path)
    assert (nothing.exit_code, nothing.output) == (0, "No fixes applied.\n")


def test_unknown_code_is_blamed_on_its_origin(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.devicelint]\nignore = ["DL010"]\n')
    write(tmp_path / "a.py", BAD_DP)
    cli = run_cli(["--select", "DL999", "a.py"], tmp_path)
    assert cli.exit_code == 2
    assert "--select: unknown rule code or prefix `DL999`" in cli.output
    assert "pyproject.toml" not in cli.output
    ignore = run_cli(["--extend-select", "DL005", "--ignore", "XY1", "a.py"], tmp_path)
    assert "--ignore: unknown rule code or prefix `XY1`" in ignore.output
    pfi = run_cli(["--per-file-ignores", "a.py:DL998", "a.py"], tmp_path)
    assert pfi.exit_code == 2 and "--per-file-ignores: unknown rule code" in pfi.output
    write(tmp_path / "pyproject.toml", '[tool.devicelint]\nignore = ["DL997"]\n')
    config = run_cli(["a.py"], tmp_path)
    assert config.exit_code == 2 and "pyproject.toml: unknown rule code or prefix `DL997`" in config.output


def test_watch_lints_again_on_change(tmp_path: Path) -> None:
    target = write(tmp_path / "a.py", BAD_DP)
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR",)}
    process = subprocess.Popen(
        [sys.executable, "-m", "devicelint", "--watch", "--output-format", "concise", "a.py"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        seen = _read_until(process, "Found 1 finding")
        time.sleep(0.1)  # a different modification time, whatever the file system's granularity
        target.write_text("x = 1\n")
        seen += _read_until(process, "All checks passed")
        assert "File change detected" in seen
    finally:
        process.kill()
        process.wait(timeout=30)


def _read_until(process: subprocess.Popen, marker: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    seen = ""
    while marker not in seen:
        assert time.monotonic() < deadline, f"no {marker!r} in {seen!r}"
        line = process.stdout.readline()
        assert line, f"devicelint --watch ended: {seen!r}"
        seen += line
    return seen


def test_full_output_shows_the_rule_hint_when_there_is_no_fix(monkeypatch) -> None:
    from dataclasses import replace

    from devicelint.finding import Finding
    from devicelint.reporters import ReportContext, renderer
    from devicelint.rule import rule_catalog

    catalog = dict(rule_catalog())
    catalog["DL005"] = replace(catalog["DL005"], hint="use `DistributedDataParallel`")
    monkeypatch.setattr("devicelint.rule.rule_catalog", lambda: catalog)
    finding = Finding("DL005", "data-parallel", "nowhere.py", 1, 1, 1, 2, "`nn.DataParallel`")
    out = renderer("text")([finding], ReportContext(files=1))
    assert "     help: use `DistributedDataParallel`\n" in out


def test_ruff_short_options_and_file_selection_switches(tmp_path: Path) -> None:
    write(tmp_path / "a.py", MIXED)
    write(tmp_path / ".gitignore", "ignored/\n")
    write(tmp_path / "ignored" / "b.py", BAD_DP)
    assert run_cli(["-e", "-n", "a.py"], tmp_path).exit_code == 0  # --exit-zero, --no-cache
    silent = run_cli(["-s", "a.py"], tmp_path)
    assert (silent.exit_code, silent.output) == (1, "")
    assert run_cli(["--fix", "--no-fix", "a.py"], tmp_path).exit_code == 1
    assert "torch.zeros(4).cuda()" in (tmp_path / "a.py").read_text()  # --no-fix won
    assert run_cli(["--show-files"], tmp_path).output.splitlines() == ["a.py"]
    unignored = run_cli(["--show-files", "--no-respect-gitignore"], tmp_path).output.splitlines()
    assert unignored == ["a.py", "ignored/b.py"]
    fresh = tmp_path / "fresh"
    write(fresh / "c.py", BAD_DP)
    run_cli(["--cache-dir", "cache-here", "c.py"], fresh)
    assert (fresh / "cache-here").is_dir() and not (fresh / ".devicelint_cache").exists()


def test_extend_per_file_ignores_adds_to_the_configured_ones(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.devicelint]\nper-file-ignores = { "tests/*" = ["DL005"] }\n')
    write(tmp_path / "tests" / "t.py", BAD_DP)
    write(tmp_path / "src" / "s.py", MIXED)
    args = ["--output-format", "concise", "--extend-per-file-ignores", "src/*:DL007", "."]
    lines = run_cli(args, tmp_path).output.splitlines()
    assert [line.split(" ")[:2] for line in lines[:-1]] == [["src/s.py:3:9:", "DL005"]]
    wrong = run_cli(["--extend-per-file-ignores", "src/*:DL996", "."], tmp_path)
    assert wrong.exit_code == 2 and "--extend-per-file-ignores: unknown rule code" in wrong.output
