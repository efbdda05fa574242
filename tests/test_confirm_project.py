"""`devicelint confirm` lints what it runs as `devicelint check` does: one lint of PATHS with
the project index (issue 13), so a finding that only another file of the project explains is
planned and run like any other; a flagged line of a module that is only imported is watched in
the runs of the scripts that import it. No torch here: the child is replaced by a stand-in that
answers for the lines its plan watches (the slow suite, tests/test_confirm_fixtures.py, runs them)."""

from __future__ import annotations

import json
import os

from click.testing import CliRunner

from devicelint.rule import all_rules
from devicelint.runner import lint_file
from devicelint.runtime import command
from devicelint.runtime.launch import ChildRun
from devicelint.runtime.plan import Plan, imported_files, real

from conftest import FIXTURES, ROOT

CROSSFILE = "fixtures/project_crossfile"
# train.py's reads through helpers of util/misc.py: made only with the project index
CROSS_FILE_LINES = {("train.py", 33, "DL004"), ("train.py", 34, "DL004"), ("train.py", 49, "DL004")}


def _confirm(monkeypatch, tmp_path, args: list[str]) -> tuple[dict, list[Plan]]:
    """Run `devicelint confirm ARGS --device sim --format json` with a stand-in child: each
    watched line is confirmed where the run's script imports its file, and not reached in the
    run of its own file (a module run as a script defines what others call)."""
    plans: list[Plan] = []

    def child(plan: Plan, timeout, quiet_output=False) -> ChildRun:
        plans.append(plan)
        script = real(plan.argv[-1])
        verdicts = [{"path": path, "line": line, "code": code,
                     "confirmation": {"status": "not-reached" if path == script else "confirmed",
                                      "device": "sim", "summary": "stand-in"}}
                    for path, lines in plan.lines.items() for line, codes in lines.items()
                    for code in codes]
        result = {"device": "sim", "device_name": "sim", "torch": "stand-in", "exit_code": 0,
                  "verdicts": verdicts, "premise": {}, "found": []}
        return ChildRun(result, 0, False, False, "", 0.1)

    monkeypatch.setattr(command, "run_child", child)
    monkeypatch.chdir(ROOT)
    target = tmp_path / "confirm.json"
    paths, rest = (args[:args.index("--")], args[args.index("--"):]) if "--" in args else (args, [])
    result = CliRunner().invoke(command.confirm, [*paths, "--device", "sim", "--format", "json",
                                                  "-o", str(target), *rest])
    assert result.exit_code in (0, 1), result.output
    data = json.loads(target.read_text(encoding="utf-8"))
    return data, plans


def _watched(plans: list[Plan], root: str) -> set[tuple[str, int, str]]:
    base = real(os.path.join(ROOT, root))
    return {(os.path.relpath(path, base), line, code) for plan in plans
            for path, lines in plan.lines.items() for line, codes in lines.items()
            for code in codes}


def test_the_fixture_run_plans_the_cross_file_findings(monkeypatch, tmp_path) -> None:
    # Linted alone (the engine without the index), train.py has none of them: the old lint.
    alone = {("train.py", f.line, f.code) for f in lint_file(
        str(FIXTURES / "project_crossfile" / "train.py"), "train.py", list(all_rules()), 10**7)}
    assert not alone & CROSS_FILE_LINES
    data, plans = _confirm(monkeypatch, tmp_path, [CROSSFILE])
    assert CROSS_FILE_LINES <= _watched(plans, CROSSFILE)
    statuses = {(os.path.relpath(f["path"], CROSSFILE), f["line"], f["code"]):
                f["confirmation"]["status"] for f in data["findings"]}
    assert CROSS_FILE_LINES <= set(statuses)


def test_the_command_run_plans_the_cross_file_findings(monkeypatch, tmp_path) -> None:
    _data, plans = _confirm(monkeypatch, tmp_path, [CROSSFILE, "--", "python",
                                          f"{CROSSFILE}/train.py"])
    [plan] = plans
    assert CROSS_FILE_LINES <= _watched(plans, CROSSFILE)


def test_a_module_line_is_watched_in_the_script_that_imports_it(monkeypatch, tmp_path) -> None:
    """fixtures/DL008/project: splits.py builds the loader (the finding), fit.py copies its
    batches and has no finding of its own: fit.py runs, watching splits.py's line, and the
    line takes that run's verdict, not the not-reached of splits.py's own run."""
    folder = "fixtures/DL008/project"
    data, plans = _confirm(monkeypatch, tmp_path, [folder])
    by_script = {os.path.basename(plan.argv[-1]): plan for plan in plans}
    assert "fit.py" in by_script
    assert _watched([by_script["fit.py"]], folder) == {("splits.py", 13, "DL008")}
    [finding] = [f for f in data["findings"] if f["path"].endswith("splits.py")]
    assert finding["line"] == 13 and finding["confirmation"]["status"] == "confirmed"
    assert finding["confirmation"]["run"] == f"{folder}/fit.py"
    # A module nobody imports with a finding (none here) would still run alone; a file that
    # neither has nor imports a finding does not run.
    assert "__init__.py" not in by_script and "nested.py" not in by_script


def test_imported_files_follow_what_python_would_import(tmp_path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .layers import *\n")
    (tmp_path / "pkg" / "layers.py").write_text("from . import deep\nimport numpy\n")
    (tmp_path / "pkg" / "deep.py").write_text("import os\n")
    (tmp_path / "helpers.py").write_text("def f():\n    import late\n")
    (tmp_path / "late.py").write_text("")
    (tmp_path / "unused.py").write_text("")
    (tmp_path / "train.py").write_text("import torch\nfrom pkg.layers import x\nimport helpers\n")
    found = [os.path.relpath(p, real(str(tmp_path))) for p in imported_files(str(tmp_path / "train.py"))]
    assert found[0] == "train.py"
    assert sorted(found[1:]) == sorted(["pkg/__init__.py", "pkg/layers.py", "pkg/deep.py",
                                        "helpers.py", "late.py"])
    # A file Python would not find from the script's folder is not followed.
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "run.py").write_text("import helpers\n")
    assert imported_files(str(tmp_path / "sub" / "run.py")) == [real(str(tmp_path / "sub" / "run.py"))]
