"""A finding must not depend on which other rules are enabled, nor on which question the
semantic model happened to be asked first (issues 12/13: the model memoises answers per file,
and rules ask overlapping questions).

- Each rule run alone (`--select DLxxx`) reports exactly, byte for byte, the findings that
  `--select ALL` reports under its code: on a sample of fixtures here (the project folders,
  which go through the project index, and the GPU-flag and loop-carried cases whose memos
  were order-dependent), on all of fixtures/ in the slow test (bench/rule_isolation.py, which
  also runs on the practitioner corpus and the libraries).
- The model itself: every expression's value, every call's GPU path and step loop, every
  test's truth with a GPU, asked in source order of one model and in reverse order of another
  model of the same tree, agree.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from devicelint import safe_parse
from devicelint.context import FileContext
from devicelint.rule import all_rules
from devicelint.runner import Overrides, lint_paths

from conftest import FIXTURES, ROOT

SAMPLE = [
    FIXTURES / "DL008" / "project",
    FIXTURES / "DL008" / "notebook_project",
    FIXTURES / "DL016" / "project",
    FIXTURES / "project_crossfile",
]
# Files whose model answered differently by the order of the questions (a flag's memo, a
# loop-carried binding left out of a join while computed): the memos now keyed and kept as
# SemanticModel.remembered / _memoised say.
ORDER_CASES = [
    FIXTURES / "DL004" / "good_literal_gpu_flag.py",
    FIXTURES / "DL004" / "good_switch_gpu_flag.py",
    FIXTURES / "DL004" / "bad_literal_gpu_flag.py",
    FIXTURES / "DL004" / "good_literal_gpu_flag_off.py",
    FIXTURES / "DL004" / "bad_number_conversions.py",
]


def _rules() -> list[str]:
    return sorted(code for code in all_rules() if code.startswith("DL") and code != "DL901")


def _lint(paths: list[Path], select: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in paths:
        run = lint_paths([str(path)], Overrides(select=[select]), use_cache=False, jobs=1)
        for finding in run.findings:
            found.setdefault(finding.code, []).append(json.dumps(finding.to_dict(), sort_keys=True))
    return {code: sorted(texts) for code, texts in found.items()}


def test_each_rule_alone_reports_what_all_reports_on_the_sample():
    paths = SAMPLE + ORDER_CASES
    every = _lint(paths, "ALL")
    assert every.get("DL008") and every.get("DL016") and every.get("DL004")
    for code in _rules():
        alone = _lint(paths, code)
        assert set(alone) <= {code, "DL900", "DL902"}, (code, sorted(alone))
        assert alone.get(code, []) == every.get(code, []), f"--select {code} differs from --select ALL"


_TYPES = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.BinaryOperation)


def _signature(value, depth: int = 0):
    if value is None or depth > 4:
        return None
    layout = value.layout
    return (value.kind, value.place, value.pinned, value.shape, layout.state, layout.perm, layout.strides,
            value.origin, value.cls if isinstance(value.cls, str) else None, value.hint, repr(value.literal),
            value.collated, _signature(value.element, depth + 1),
            tuple(_signature(v, depth + 1) for v in value.items) if value.items is not None else None)


def _answers(ctx: FileContext, nodes: list, reverse: bool) -> dict:
    sem = ctx.semantic
    out = {}
    for index in (range(len(nodes) - 1, -1, -1) if reverse else range(len(nodes))):
        node = nodes[index]
        if isinstance(node, _TYPES):
            out[(index, "value")] = _signature(sem.value(node))
        if isinstance(node, cst.Call):
            out[(index, "gpu path")] = sem.on_gpu_path(node)
            out[(index, "step loop")] = sem.loops.step_loop(node) is not None
        if isinstance(node, (cst.If, cst.IfExp)):
            out[(index, "truth")] = sem.gpu_truth(node.test)
    return out


@pytest.mark.parametrize("path", ORDER_CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_answers_do_not_depend_on_the_order_of_the_questions(path: Path):
    source = path.read_text()
    module = safe_parse.parse_module(source)
    contexts = []
    for _ in range(2):
        ctx = FileContext(str(path), source, module)
        ctx.walk({}, {})
        contexts.append(ctx)
    nodes = [n for n in contexts[0]._nodes if isinstance(n, _TYPES + (cst.If, cst.IfExp))]
    forward = _answers(contexts[0], nodes, reverse=False)
    backward = _answers(contexts[1], nodes, reverse=True)
    differ = [(contexts[0].position(nodes[i])[0], contexts[0].code(nodes[i]).strip()[:60], what)
              for (i, what) in forward if forward[(i, what)] != backward[(i, what)]]
    assert not differ, differ


@pytest.mark.slow
def test_each_rule_alone_reports_what_all_reports_on_every_fixture():
    """bench/rule_isolation.py on fixtures/ (each selection in its own process), -j 1 and -j 2."""
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "rule_isolation.py"), "fixtures", "--jobs-too"],
                            cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 difference(s)" in result.stdout
