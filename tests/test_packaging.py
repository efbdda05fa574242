"""The installed product: a wheel built from this checkout, installed into a fresh venv,
has every rule (rules/ ships as devicelint.rules), and so does an editable install. Also the
pre-commit hook, run through pre-commit itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT
from devicelint.rule import all_rules

pytestmark = pytest.mark.slow

BAD = "import torch.nn as nn\nmodel = nn.DataParallel(nn.Linear(2, 2))\n"


def _run(cmd: list[str], cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, **kwargs)


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    return path / "bin"


def _expected_codes() -> set[str]:
    """Codes declared in the checkout's rules/ folder plus the engine's diagnostics."""
    import re

    codes = {code for code, rule in all_rules().items() if not rule.handlers()}
    for module in (ROOT / "rules").glob("*.py"):
        codes.update(re.findall(r'^    code = "(DL[0-9]+)"', module.read_text(), re.M))
    return codes


def _check_installed(bin_dir: Path, workdir: Path) -> None:
    """From a directory outside the checkout: every rule is there and lints."""
    listing = _run([str(bin_dir / "devicelint"), "--list-rules"], workdir)
    assert listing.returncode == 0, listing.stderr
    listed = {line.split()[0] for line in listing.stdout.splitlines() if line.strip()}
    assert listed == _expected_codes(), listing.stdout
    (workdir / "train.py").write_text(BAD)
    lint = _run([str(bin_dir / "devicelint"), "--no-cache", "train.py"], workdir)
    assert lint.returncode == 1, lint.stdout + lint.stderr
    assert "train.py:2:9: DL005" in lint.stdout
    assert "No module named" not in lint.stdout + lint.stderr
    docs = _run([str(bin_dir / "devicelint"), "rule", "DL005"], workdir)
    assert "## Why is this bad?" in docs.stdout
    # The rules ship inside devicelint's namespace, not as a top-level `rules` package.
    python = str(bin_dir / "python")
    probe = _run([python, "-c", "import importlib.util as u; print(u.find_spec('rules'))"], workdir)
    assert probe.stdout.strip() == "None"
    # Linting never imports torch.
    no_torch = _run([python, "-c", textwrap.dedent("""
        import sys
        from devicelint.runner import run_lint
        run_lint(["train.py"])
        print("torch" in sys.modules)
    """)], workdir)
    assert no_torch.stdout.strip() == "False", no_torch.stderr


def test_wheel_installs_with_all_rules(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    build = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)], tmp_path)
    assert build.returncode == 0, build.stderr
    wheel = next(dist.glob("devicelint-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "devicelint/rules/dl005_data_parallel.py" in names
    assert not any(n.startswith("rules/") for n in names)
    bin_dir = _venv(tmp_path / "venv")
    install = _run([str(bin_dir / "pip"), "install", "-q", str(wheel)], tmp_path)
    assert install.returncode == 0, install.stderr
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    _check_installed(bin_dir, outside)


def test_editable_install_with_all_rules(tmp_path: Path) -> None:
    bin_dir = _venv(tmp_path / "venv")
    install = _run([str(bin_dir / "pip"), "install", "-q", "-e", str(ROOT)], tmp_path)
    assert install.returncode == 0, install.stderr
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    _check_installed(bin_dir, outside)


@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_pre_commit_hook(tmp_path: Path) -> None:
    pre_commit = [sys.executable, "-m", "pre_commit"]
    version = _run([*pre_commit, "--version"], tmp_path)
    assert version.returncode == 0, f"pre-commit (in the dev extra) does not run: {version.stderr}"
    repo = tmp_path / "repo"
    repo.mkdir()
    env_home = {"PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    for cmd in (["git", "init", "-q"], ["git", "config", "user.email", "t@example.com"],
                ["git", "config", "user.name", "t"]):
        subprocess.run(cmd, cwd=repo, check=True)

    def hook() -> subprocess.CompletedProcess:
        env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **env_home}
        return subprocess.run([*pre_commit, "try-repo", str(ROOT), "devicelint"], cwd=repo,
                              env=env, capture_output=True, text=True, timeout=900)

    nothing = hook()
    assert nothing.returncode == 0, nothing.stdout + nothing.stderr
    (repo / "train.py").write_text(BAD)
    (repo / "ok.py").write_text("x = 1\n")
    subprocess.run(["git", "add", "train.py", "ok.py"], cwd=repo, check=True)
    staged = hook()
    assert staged.returncode == 1, staged.stdout + staged.stderr
    assert "train.py:2:9: DL005" in staged.stdout
    assert "No module named" not in staged.stdout
