"""The README copy-pastes: every shell, YAML and TOML block in it is checked. What can run
offline runs (each `devicelint ...` line, in a small project); what cannot (a download) is
checked for what it names: a pip requirement must be the repository (its URL, a path, an
extra that pyproject.toml defines), a pre-commit `rev:` must exist in this repository and its
hook in .pre-commit-hooks.yaml, a link must name a file that exists, and `.ci/run` must run
the README's test commands."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from helpers import run_cli, write

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

README = (ROOT / "README.md").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT_URL = PYPROJECT["project"]["urls"]["Homepage"]
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def blocks(language: str) -> list[str]:
    found = [body for lang, body in BLOCK.findall(README) if lang == language]
    assert found, f"no {language} block in README.md"
    return found


def shell_commands(text: str) -> list[str]:
    """Commands of a shell block or `run:` step: continuation lines joined, comments and
    `&&` chains split."""
    joined = re.sub(r"\\\n\s*", " ", text)
    commands = []
    for line in joined.splitlines():
        line = re.sub(r"\s+#\s.*$", "", line).strip()
        if line and not line.startswith("#"):
            commands.extend(part.strip() for part in line.split("&&"))
    return commands


def pip_requirements(command: str) -> list[str]:
    words = shlex.split(command)
    at = next(i for i, w in enumerate(words) if w == "install")
    requirements = []
    skip = False
    for word in words[at + 1:]:
        if skip:
            skip = False
        elif word in ("--index-url", "-i", "--extra-index-url", "-r", "-c"):
            skip = True
        elif not word.startswith("-"):
            requirements.append(word)
    return requirements


def check_requirement(requirement: str) -> None:
    """A requirement the README asks to install: the repository (by URL or path, with
    extras pyproject.toml defines), a pinned torch, or another project's distribution."""
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    name, _, url = requirement.partition(" @ ")
    source = url or name
    match = re.fullmatch(r"(?:devicelint)?(?:\[([\w,]+)\])?", name) if url else None
    if source.startswith("git+"):
        assert source.removeprefix("git+").split("@")[0] == PROJECT_URL, requirement
        if match and match.group(1):
            assert set(match.group(1).split(",")) <= extras, requirement
        return
    local = re.fullmatch(r"(\.|/path/to/devicelint)(?:\[([\w,]+)\])?", source)
    if local:
        assert set((local.group(2) or "").split(",")) - {""} <= extras, requirement
        return
    assert source != "devicelint" and not source.startswith("devicelint["), (
        f"{requirement}: no package index carries devicelint")
    assert re.fullmatch(r"[A-Za-z0-9_.-]+(==[\w.]+)?", source), requirement


def all_commands() -> list[str]:
    commands = [c for block in blocks("sh") for c in shell_commands(block)]
    for block in blocks("yaml"):
        document = yaml.safe_load(block)
        for job in (document.get("jobs") or {}).values():
            for step in job.get("steps", []):
                commands.extend(shell_commands(step.get("run", "")))
    # Commands quoted inline in the prose: `pip install ...`.
    commands += re.findall(r"`((?:\.venv/bin/)?pip install [^`]+)`", README)
    return commands


def test_pip_installs_name_what_exists() -> None:
    installs = [c for c in all_commands() if re.match(r"(\.venv/bin/)?pip install ", c)]
    assert len(installs) >= 5, installs
    for command in installs:
        for requirement in pip_requirements(command):
            check_requirement(requirement)


def test_pre_commit_snippet_names_a_rev_and_hook_that_exist() -> None:
    hooks = {hook["id"] for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    configs = [yaml.safe_load(b) for b in blocks("yaml")]
    repos = [repo for config in configs for repo in config.get("repos", [])]
    assert repos, "no pre-commit configuration in README.md"
    for repo in repos:
        assert repo["repo"] == PROJECT_URL
        assert {hook["id"] for hook in repo["hooks"]} <= hooks
        assert _resolves(repo["rev"]), f"rev {repo['rev']!r} is not a commit of this repository"


def _resolves(rev: str) -> bool:
    """`rev` names a commit here (a branch, a tag, a hash). A checkout without git metadata
    for it (an archive, a detached shallow clone) cannot tell: skipped, not passed."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=60)

    try:
        inside = git("rev-parse", "--is-inside-work-tree")
    except FileNotFoundError:
        pytest.skip("git is not installed")
    if inside.returncode != 0:
        pytest.skip("not a git checkout")
    for candidate in (rev, f"origin/{rev}", f"refs/remotes/origin/{rev}"):
        if git("rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}").returncode == 0:
            return True
    if git("for-each-ref", "--count=1", "refs/heads", "refs/remotes", "refs/tags").stdout.strip():
        return False
    pytest.skip("this clone holds no branches or tags to resolve a rev against")


def test_ci_runs_the_readme_test_commands() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    ci_commands = [line.strip() for line in ci.splitlines() if line.strip() and not line.strip().startswith("#")]
    tests = [c for c in all_commands() if " -m pytest" in c]
    assert tests == [".venv/bin/python -m pytest", ".venv/bin/python -m pytest -m slow"]
    positions = [ci_commands.index(command) for command in tests]
    assert positions == sorted(positions), "CI must run the README's test commands in the README's order"
    install = next(c for c in all_commands() if c.startswith("python3 -m venv"))
    assert install in ci, "CI must install as the README says"


def test_toml_blocks_parse_and_the_config_example_is_valid(tmp_path: Path) -> None:
    configs = 0
    for block in blocks("toml"):
        document = tomllib.loads(block)
        if "tool" in document and "devicelint" in document["tool"] or block.startswith("[tool.devicelint]"):
            write(tmp_path / "pyproject.toml", block)
            write(tmp_path / "ok.py", "x = 1\n")
            result = run_cli(["--show-settings"], tmp_path)
            assert result.exit_code == 0, result.output
            configs += 1
    assert configs == 1


def test_devicelint_commands_run(tmp_path: Path) -> None:
    """Each `devicelint ...` line of the README, in a project with a src/ folder and a
    finding in it: it must run (exit 0 or 1), never fail as a usage error (2)."""
    write(tmp_path / "src" / "train.py", "import torch.nn as nn\nmodel = nn.DataParallel(nn.Linear(2, 2))\n")
    write(tmp_path / "fixtures" / "m.py", "x = 1\n")
    ran = 0
    for command in all_commands():
        words = shlex.split(command.split("|")[0])
        # confirm runs user code and server waits for an editor; --watch never ends.
        runnable = words[1:2] not in (["confirm"], ["server"]) and not {"-w", "--watch"} & set(words)
        if words[0].endswith("devicelint") and runnable:
            result = run_cli(words[1:], tmp_path)
            assert result.exit_code in (0, 1), f"{command}: {result.output}"
            ran += 1
    assert ran >= 8


def test_readme_links_name_files_that_exist() -> None:
    for target in re.findall(r"\]\(((?!https?:|#)[^)\s]+)\)", README):
        assert (ROOT / target.split("#")[0]).exists(), target
    for target in re.findall(r"`((?:docs|tests|bench|devicelint)/[\w./-]+\.(?:md|py))`", README):
        assert (ROOT / target).exists(), target


def test_modules_left_out_of_the_default_run_hold_only_slow_tests() -> None:
    """conftest.SLOW_MODULES are not imported unless slow tests run: each must be marked
    slow as a whole, or its other tests would silently never run."""
    from conftest import SLOW_MODULES

    for name in SLOW_MODULES:
        text = (ROOT / "tests" / name).read_text(encoding="utf-8")
        assert re.search(r"^pytestmark = pytest\.mark\.slow$", text, re.M), name
