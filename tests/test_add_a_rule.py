"""Adding a rule touches rules/ and fixtures/ only (issue 18).

In a temporary copy of the project, a rule module and its fixtures are added from the
template in docs/new-rule/ (as CONTRIBUTING.md tells a rule author to), and the fixture tests
and the runtime-fixture tests run for the new rule there. Nothing else of the copy is edited:
no registry, no runtime table, no test list.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from devicelint.rule import all_rules

TEMPLATE = ROOT / "docs" / "new-rule"
COPIED = ("devicelint", "rules", "fixtures", "tests", "pyproject.toml")

pytestmark = pytest.mark.slow


def _free_code() -> str:
    taken = set(all_rules())
    return next(f"DL{number:03d}" for number in range(100, 900) if f"DL{number:03d}" not in taken)


def _copy_project(target: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".devicelint_cache")
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=ignore)
        else:
            shutil.copy2(source, target / name)
    # Installed, rules/ is the package devicelint.rules; the copy imports from its own tree.
    (target / "devicelint" / "rules").symlink_to(Path("..") / "rules")


def _add_rule(target: Path, code: str) -> list[Path]:
    """What a rule author adds: a module in rules/ and a folder in fixtures/."""
    rule = (TEMPLATE / "dl999_example_item_call.py").read_text(encoding="utf-8")
    module = target / "rules" / f"dl{code[2:]}_example_item_call.py"
    module.write_text(rule.replace("DL999", code), encoding="utf-8")
    folder = target / "fixtures" / code
    folder.mkdir()
    added = [module]
    for name in ("bad_item.py", "good_item.py"):
        text = (TEMPLATE / name).read_text(encoding="utf-8").replace("DL999", code)
        (folder / name).write_text(text, encoding="utf-8")
        added.append(folder / name)
    return added


def _run_tests(target: Path, code: str, *test_args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": str(target),
        "XDG_CACHE_HOME": str(target / ".cache"),  # the copy's rule catalogue, not the user's
        "DEVICELINT_CONFIRM_RULES": code,
        "CUDA_VISIBLE_DEVICES": "",
    }
    return subprocess.run(
        # `-m ""`: run the slow tests too (pyproject.toml's addopts deselect them by default).
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "", *test_args],
        cwd=target, env=env, capture_output=True, text=True, timeout=900,
    )


def test_a_new_rule_needs_only_rules_and_fixtures(tmp_path: Path) -> None:
    target = tmp_path / "project"
    _copy_project(target)
    before = {p.relative_to(target): p.read_bytes() for p in target.rglob("*")
              if p.is_file() and not p.is_symlink() and "rules" not in p.relative_to(target).parts[:1]}
    code = _free_code()
    added = _add_rule(target, code)
    assert {p.relative_to(target).parts[0] for p in added} == {"rules", "fixtures"}

    # The fixture tests of the new rule (and the check that every rule has fixtures), and
    # `devicelint confirm` over its fixture folder on the simulated device.
    proc = _run_tests(target, code, "-v", "tests/test_fixtures.py", "tests/test_confirm_fixtures.py",
                      "-k", f"{code} or every_rule_has_fixtures or exit_code or not_run")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    for test in (f"test_fixture[{code}/bad_item.py]", f"test_fixture[{code}/good_item.py]",
                 "test_every_rule_has_fixtures", "test_confirm_fixtures_exit_code",
                 f"test_bad_fixtures_confirmed[{code}]",
                 f"test_good_fixtures_without_their_pitfall[{code}]"):
        assert f"{test} PASSED" in proc.stdout, proc.stdout[-4000:]

    # The copy's devicelint knew the rule: registry, runtime spec and fixtures, from the
    # module alone.
    check = subprocess.run(
        [sys.executable, "-c", f"from devicelint.rule import all_rules; r = all_rules()['{code}']; "
                               "print(r.__module__, r.runtime.watch)"],
        cwd=target, env={**os.environ, "PYTHONPATH": str(target),
                         "XDG_CACHE_HOME": str(target / ".cache")},
        capture_output=True, text=True, timeout=120,
    )
    assert check.returncode == 0, check.stderr[-2000:]
    assert "example_item_call" in check.stdout and "SYNCS" in check.stdout

    # Nothing outside rules/ and fixtures/<code>/ changed.
    after = {p.relative_to(target): p.read_bytes() for p in target.rglob("*")
             if p.is_file() and not p.is_symlink() and p.relative_to(target) in before}
    assert after == before
