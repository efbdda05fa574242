"""What a run imports (issue 17: one small file, start-up included, in 0.3 s): only the
rules whose tokens occur in the files it lints, and nothing for plugins when none is
installed. Each check runs devicelint in a fresh interpreter and reads its sys.modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

# Prints, after a run of the command line, the rule modules and the other modules of
# interest that the process imported.
_PROBE = """
import atexit, json, sys
def _report():
    names = sorted(m for m in sys.modules if m.startswith(("devicelint.rules.", "importlib.metadata", "libcst")))
    print("MODULES " + json.dumps(names), file=sys.stderr)
atexit.register(_report)
sys.argv = ["devicelint", *sys.argv[1:]]
from devicelint.cli import main
main()
"""


def _run(args: list[str], cwd: Path, cache: Path) -> tuple[str, list[str]]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    line = [row for row in done.stderr.splitlines() if row.startswith("MODULES ")][-1]
    return done.stdout, json.loads(line[len("MODULES "):])


def test_a_run_imports_only_the_rules_whose_tokens_occur(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch.nn as nn\n\nmodel = nn.DataParallel(nn.Linear(4, 4))\n")
    args = ["--no-cache", "-q", "--select", "ALL", "train.py"]
    first, _ = _run(args, tmp_path, tmp_path / "xdg")  # builds the rule catalogue: imports every rule
    output, modules = _run(args, tmp_path, tmp_path / "xdg")
    assert output == first and "DL005" in output
    rules = [m for m in modules if m.startswith("devicelint.rules.")]
    assert rules == ["devicelint.rules.dl005_data_parallel"], rules
    # Plugins are found through entry points only when some distribution declares them.
    assert not [m for m in modules if m.startswith("importlib.metadata")], modules


def test_a_file_no_rule_matches_imports_no_rule_and_no_libcst(tmp_path: Path) -> None:
    (tmp_path / "one.py").write_text("import os\nprint(os.sep)\n")
    _run(["--no-cache", "one.py"], tmp_path, tmp_path / "xdg")
    output, modules = _run(["--no-cache", "one.py"], tmp_path, tmp_path / "xdg")
    assert "All checks passed" in output
    assert modules == [], modules


def test_a_catalogue_entry_imports_only_a_builtin_rule_module(monkeypatch) -> None:
    """The catalogue is a file in the user's cache: a module name in it is imported only if
    it names a built-in rule module; anything else is loaded as a plugin is, by all_rules."""
    from devicelint import rule as rule_module
    from devicelint.rule import RuleMeta, all_rules, rule_class

    registry = all_rules()
    imported: list[str] = []
    real_import = rule_module.importlib.import_module
    monkeypatch.setattr(rule_module.importlib, "import_module",
                        lambda name: imported.append(name) or real_import(name))
    monkeypatch.setattr(rule_module, "_registry", None)
    dl005 = rule_module._metadata(registry)["DL005"]
    assert dl005.module == "devicelint.rules.dl005_data_parallel"
    assert rule_class(dl005) is registry["DL005"]
    assert imported == ["devicelint.rules.dl005_data_parallel"]

    imported.clear()
    forged = RuleMeta(**{**dl005.__dict__, "module": "antigravity"})
    monkeypatch.setattr(rule_module, "_registry", None)
    assert rule_class(forged) is registry["DL005"]
    assert "antigravity" not in imported and "antigravity" not in sys.modules
