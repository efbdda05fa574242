"""Bad inputs through the CLI: each gives a clear message naming the path, the other files of
the same run are still linted, and the exit code follows the contract (1: findings, which
DL900/DL902 diagnostics are; 2: usage or configuration error)."""

from __future__ import annotations

import builtins
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import BAD_DP, run_cli, write

GOOD_LINE = "other.py:3:9: DL005"  # BAD_DP's finding: proof the rest of the run went on


def lint(tmp_path: Path, *args: str):
    """Lint `tmp_path` (or `args`) plus other.py, a file with one DL005 finding."""
    write(tmp_path / "other.py", BAD_DP)
    targets = list(args) or ["."]
    if "." not in targets:
        targets.append("other.py")
    return run_cli(["--no-cache", "--no-show-source", *targets], tmp_path)


def assert_reported(result, prefix: str, *words: str) -> str:
    """Exit 1, other.py still linted, and one line starting with `prefix` holding `words`."""
    assert result.exit_code == 1, result.output
    assert GOOD_LINE in result.output, result.output
    lines = [line for line in result.output.splitlines() if line.startswith(prefix)]
    assert lines, f"no line starting with {prefix!r} in:\n{result.output}"
    for word in words:
        assert word in lines[0], lines[0]
    assert "Traceback" not in result.output
    return lines[0]


def test_syntax_error(tmp_path: Path) -> None:
    write(tmp_path / "broken.py", "import torch\ndef f(:\n    pass\n")
    assert_reported(lint(tmp_path), "broken.py:2:7: DL900", "Cannot parse")


def test_syntax_error_is_reported_under_a_narrow_select(tmp_path: Path) -> None:
    # `--select DL005` must not make a broken or missing file pass silently.
    write(tmp_path / "broken.py", "def f(:\n")
    write(tmp_path / "other.py", BAD_DP)
    result = run_cli(["--no-cache", "--select", "DL005", "broken.py", "gone.py", "other.py"], tmp_path)
    assert result.exit_code == 1
    assert "broken.py:1:7: DL900" in result.output
    assert "gone.py:1:1: DL902 No such file or directory" in result.output
    ignored = run_cli(["--no-cache", "--select", "DL005", "--ignore", "DL900,DL902",
                       "broken.py", "gone.py"], tmp_path)
    assert ignored.exit_code == 0, ignored.output


def test_non_utf8_bytes(tmp_path: Path) -> None:
    (tmp_path / "latin.py").write_bytes(b"import torch\nname = 'caf\xe9'\n")
    assert_reported(lint(tmp_path), "latin.py:1:1: DL902", "not valid UTF-8", "line 2", "0xe9")


def test_pep263_latin1_cookie_lints_fine(tmp_path: Path) -> None:
    source = "# -*- coding: latin-1 -*-\nimport torch.nn as nn\nname = 'café'\nm = nn.DataParallel(net)\n"
    (tmp_path / "cookie.py").write_bytes(source.encode("latin-1"))
    line = assert_reported(lint(tmp_path), "cookie.py:4:5: DL005")
    assert "DL902" not in line


def test_nul_bytes(tmp_path: Path) -> None:
    (tmp_path / "nul.py").write_bytes(b"import torch\nx = 1\0\n")
    assert_reported(lint(tmp_path), "nul.py:1:1: DL902", "NUL bytes")


def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "empty.py").write_bytes(b"")
    result = lint(tmp_path)
    assert result.exit_code == 1 and GOOD_LINE in result.output
    assert "empty.py" not in result.output  # an empty file is valid Python: nothing to say
    assert "2 files checked" in result.output


PLAIN_BLOCK = (
    "def step_{i}(model, batch, device):\n"
    "    x = batch.to(device)\n"
    "    for k in range(3):\n"
    "        x = model(x) + k\n"
    "    return x\n\n"
)
BAD_BLOCK = (
    "def rows_{i}(model, device):\n"
    "    batch = torch.randn(8, 4)\n"
    "    out = []\n"
    "    for row in batch:\n"
    "        out.append(model(row.to(device)).sum().item())\n"
    "    return out\n\n"
)


def _generated(size: int) -> str:
    """Torch code of about `size` bytes: every rule parses and walks it; one function in 50
    has findings (a generated file full of findings would measure the reporter instead)."""
    parts = ["import torch\n\n"]
    total = len(parts[0])
    i = 0
    while total < size:
        parts.append((BAD_BLOCK if i % 50 == 0 else PLAIN_BLOCK).format(i=i))
        total += len(parts[-1])
        i += 1
    return "".join(parts)


def test_ten_megabyte_file_is_skipped_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "huge.py").write_text(_generated(10_000_000))
    assert_reported(lint(tmp_path), "huge.py:1:1: DL902", "over max-file-size", "5,000,000")


@pytest.mark.slow
def test_three_megabyte_file_lints_in_reasonable_time(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text(_generated(3_000_000))
    started = time.process_time()
    result = lint(tmp_path)
    elapsed = time.process_time() - started
    assert result.exit_code == 1 and GOOD_LINE in result.output
    assert "big.py:" in result.output  # it was linted, not skipped
    assert "DL902" not in result.output and "DL900" not in result.output
    assert elapsed < 240, f"3 MB took {elapsed:.0f} s of CPU"


# Names every rule looks for, so that the file goes through libcst, not only CPython's parser.
TORCH = "import torch\nm = torch.nn.DataParallel(net).to('cuda')\n"
DEEP = {
    # CPython refuses more than 200 nested brackets; libcst's native parser dies with
    # SIGSEGV at a few thousand. Both are reported as a syntax error now.
    "brackets": TORCH + "x = " + "(" * 1000 + "1" + ")" * 1000 + "\n",
    "calls": TORCH + "x = " + "f(" * 1000 + "1" + ")" * 1000 + "\n",
    # Accepted by Python (a flat list of operands) but a deep tree for libcst.
    "and_chain": TORCH + "x = " + " and ".join(["a"] * 10_000) + "\n",
    "unary": TORCH + "x = " + "-" * 100_000 + "1\n",
    "lambda": TORCH + "x = " + "lambda: " * 10_000 + "1\n",
    # 1,000-deep attribute chain: parses, but libcst's positions recurse.
    "attributes": TORCH + "x = torch.nn.DataParallel(m)" + ".a" * 1000 + "\n",
}


@pytest.mark.parametrize("kind", sorted(DEEP))
def test_deeply_nested_expression(tmp_path: Path, kind: str) -> None:
    # In a subprocess: before the fix these crashed the interpreter (SIGSEGV), which
    # would take pytest down with it.
    write(tmp_path / "other.py", BAD_DP)
    (tmp_path / "deep.py").write_text(DEEP[kind])
    command = [sys.executable, "-m", "devicelint", "--no-cache", "--no-show-source",
               "--select", "ALL", "deep.py", "other.py"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert GOOD_LINE in done.stdout, done.stdout
    if kind in ("brackets", "calls", "unary", "lambda"):
        assert "deep.py:" in done.stdout and "DL900" in done.stdout, done.stdout
        assert "too many nested parentheses" in done.stdout or "too deeply nested" in done.stdout
    else:  # parsed: the DataParallel on line 2 is still found
        assert "deep.py:" in done.stdout and "DL005" in done.stdout, done.stdout


def test_symlink_loop(tmp_path: Path) -> None:
    os.symlink("loop_b.py", tmp_path / "loop_a.py")
    os.symlink("loop_a.py", tmp_path / "loop_b.py")
    result = lint(tmp_path)  # found by walking the directory
    assert_reported(result, "loop_a.py:1:1: DL902", "symbolic links")
    assert "loop_b.py:1:1: DL902" in result.output
    explicit = lint(tmp_path, "loop_a.py")  # named on the command line
    assert_reported(explicit, "loop_a.py:1:1: DL902", "link loop")


def _deny_open(monkeypatch, name: str) -> None:
    real_open, real_os_open = builtins.open, os.open

    def fake_open(file, *args, **kwargs):
        if str(file).endswith(name):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    def fake_os_open(file, *args, **kwargs):  # devicelint.source.read_regular
        if str(file).endswith(name):
            raise PermissionError(13, "Permission denied", str(file))
        return real_os_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(os, "open", fake_os_open)


def test_unreadable_file_simulated(tmp_path: Path, monkeypatch) -> None:
    # Works as root too, where chmod 000 does not stop reading.
    write(tmp_path / "secret.py", "import torch\n")
    _deny_open(monkeypatch, "secret.py")
    assert_reported(lint(tmp_path), "secret.py:1:1: DL902", "Permission denied")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="root reads a chmod 000 file anyway; see the simulated test above")
def test_unreadable_file_chmod(tmp_path: Path) -> None:
    path = write(tmp_path / "secret.py", "import torch\n")
    path.chmod(0)
    try:
        assert_reported(lint(tmp_path), "secret.py:1:1: DL902", "Permission denied")
    finally:
        path.chmod(0o644)


def test_directory_named_like_a_python_file(tmp_path: Path) -> None:
    # A directory is walked, whatever its name (as ruff does); its files are linted, and
    # the name itself is no error.
    write(tmp_path / "x.py" / "inner.py", "def f(:\n")
    for args in ((), ("x.py",)):
        result = lint(tmp_path, *args)
        assert_reported(result, os.path.join("x.py", "inner.py") + ":1:7: DL900")
        assert not any(line.startswith("x.py:") for line in result.output.splitlines())


def test_directory_named_like_a_python_file_reaching_the_reader(tmp_path: Path) -> None:
    # If a file is replaced by a directory after discovery, the reader says so.
    from devicelint.runner import lint_file

    (tmp_path / "x.py").mkdir()
    findings = lint_file(str(tmp_path / "x.py"), "x.py", ["DL005", "DL902"], 10**6)
    assert [f.code for f in findings] == ["DL902"]
    assert "directory" in findings[0].message


def test_path_that_does_not_exist(tmp_path: Path) -> None:
    assert_reported(lint(tmp_path, "missing.py"), "missing.py:1:1: DL902", "No such file")


def test_file_deleted_between_discovery_and_read(tmp_path: Path, monkeypatch) -> None:
    import devicelint.runner as runner

    write(tmp_path / "doomed.py", "import torch\n")
    real_discover = runner.discover

    def discover_then_delete(*args, **kwargs):
        found = real_discover(*args, **kwargs)
        (tmp_path / "doomed.py").unlink()
        return found

    monkeypatch.setattr(runner, "discover", discover_then_delete)
    assert_reported(lint(tmp_path), "doomed.py:1:1: DL902", "No such file")


def test_malformed_pyproject(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.devicelint]\nselect = [DL005\n")
    write(tmp_path / "a.py", BAD_DP)
    result = run_cli(["--no-cache", "a.py"], tmp_path)
    assert result.exit_code == 2
    assert "pyproject.toml" in result.output and "invalid TOML" in result.output
    assert "Traceback" not in result.output


def test_unknown_code_in_config(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.devicelint]\nselect = ["DL005", "DL999"]\n')
    write(tmp_path / "a.py", BAD_DP)
    result = run_cli(["--no-cache", "a.py"], tmp_path)
    assert result.exit_code == 2
    assert "pyproject.toml" in result.output and "DL999" in result.output


def test_broken_notebook_json(tmp_path: Path) -> None:
    (tmp_path / "broken.ipynb").write_text('{"cells": [')
    assert_reported(lint(tmp_path), "broken.ipynb:1:1: DL902", "not valid JSON")
