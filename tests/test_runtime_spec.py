"""A rule's runtime part is declared in the rule (`runtime = RuntimeSpec(...)`), and the
runtime names no rule by its code (issue 18)."""

from __future__ import annotations

import ast
import re

from conftest import ROOT
from devicelint.rule import all_rules
from devicelint.runtime_spec import STATUSES, CopyStats, LineRecord, RuntimeSpec, Watch

RULE_CODE = re.compile(r"^[A-Z]+[0-9]+$")
# The engine's own diagnostics are findings about files, not rules (devicelint/diagnostics.py).
ENGINE_CODES = {"DL900", "DL901", "DL902"}


def test_every_watch_has_an_installer() -> None:
    from devicelint.runtime import hooks

    assert set(hooks.INSTALLERS) == set(Watch)
    assert all(callable(install) for install in hooks.INSTALLERS.values())


def test_runtime_specs_are_well_formed() -> None:
    specs = {code: rule.runtime for code, rule in all_rules().items() if rule.runtime is not None}
    assert specs, "no rule declares a runtime spec"
    for code, spec in specs.items():
        assert isinstance(spec, RuntimeSpec), code
        assert callable(spec.probe), code
        assert all(isinstance(watch, Watch) for watch in spec.watch), code


def test_no_rule_code_in_engine_or_runtime() -> None:
    """No string constant of devicelint/ (rules/ aside) is a rule's code."""
    found = []
    for path in sorted((ROOT / "devicelint").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and RULE_CODE.match(node.value) and node.value not in ENGINE_CODES:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value}")
    assert not found, "\n".join(found)


def test_the_runtime_names_no_rule() -> None:
    """No string constant of devicelint/runtime/ is a rule's public name either: what the
    finder reports under which code comes from the rules' specs (`finds`, `covers`)."""
    names = {rule.name for rule in all_rules().values()}
    found = []
    for path in sorted((ROOT / "devicelint" / "runtime").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value}")
    assert not found, "\n".join(found)


def test_every_finder_case_has_one_rule() -> None:
    from devicelint.runtime_spec import Find

    claimed: dict = {}
    for code, rule in sorted(all_rules().items()):
        for find in rule.runtime.finds if rule.runtime is not None else ():
            claimed.setdefault(find, []).append(code)
    assert {find: codes for find, codes in claimed.items() if len(codes) > 1} == {}
    assert set(claimed) == set(Find), f"no rule stands for {set(Find) - set(claimed)}"


def test_statuses_are_defined_once() -> None:
    """The confirmation statuses and their report order live in runtime_spec alone."""
    found = []
    for path in sorted((ROOT / "devicelint").rglob("*.py")):
        if path.name == "runtime_spec.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Tuple) and [getattr(e, "value", None) for e in node.elts] \
                    in (["confirmed", "found"], ["confirmed", "found", "refuted", "inconclusive",
                                                 "not-reached"]):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.Tuple) and len(node.elts) >= 4 and all(
                    getattr(e, "value", None) in STATUSES for e in node.elts):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, sorted(set(found))


class FakeRun:
    """The parts of devicelint.runtime.probes.ProbeRun a copy probe uses, on the simulated
    device's cost table."""

    device = "sim"
    estimated = True
    table = {"item_us": 10.0, "empty_cache_us": 100.0}

    def base(self, status, summary, **figures):
        return {"status": status, "summary": summary, **figures}

    def copy_ms(self, copies, kind):
        return copies.count * 0.01


def test_a_probe_judges_a_typed_record() -> None:
    probe = all_rules()["DL009"].runtime.probe
    rec = LineRecord(reached=True)
    assert probe(FakeRun(), rec)["status"] == "refuted"
    rec.copies["h2d"] = CopyStats(count=3, bytes=300, pageable_non_blocking=2)
    verdict = probe(FakeRun(), rec)
    assert verdict["status"] == "confirmed" and verdict["count"] == 2
