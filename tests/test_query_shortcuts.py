"""Shortcuts the rules and the semantic model take before a query (docs/performance.md,
"Session 12: speed"): each must give what the query it spares would have given."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from devicelint import safe_parse
from devicelint.context import FileContext
from devicelint.semantic import Kind
from devicelint.semantic import dataflow
from devicelint.semantic.model import never_holds_tensor

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# Files with nested functions, comprehensions, lambdas, classes and literal-only calls.
SAMPLES = sorted(FIXTURES.glob("DL00[247]/*.py"))[:40] + sorted(FIXTURES.glob("DL01[567]/*.py"))[:40]

_EXPRESSIONS = (
    cst.Name, cst.Attribute, cst.Call, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString,
    cst.ConcatenatedString, cst.FormattedString, cst.Subscript, cst.BinaryOperation,
    cst.UnaryOperation, cst.Comparison, cst.BooleanOperation, cst.IfExp, cst.Tuple, cst.List,
    cst.Set, cst.Dict, cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp, cst.Lambda,
    cst.Ellipsis, cst.NamedExpr,
)


def _model(path: Path):
    source = path.read_text()
    ctx = FileContext(str(path), source, safe_parse.parse_module(source))
    ctx.walk({}, {})
    return ctx, ctx.semantic


def _walked_names(sem, region: cst.CSTNode, text: str) -> list:
    """_names_in as it was: a walk taking each node's last child first."""
    found = []
    stack = [region]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            if node.value == text:
                found.append(node)
            continue
        stack.extend(sem.children(node))
    return found


def test_samples_exist():
    assert len(SAMPLES) >= 40


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_names_in_from_the_index_is_the_walk(path):
    ctx, sem = _model(path)
    texts = sorted({name.value for name in ctx.iter_nodes(cst.Name)})
    regions = [ctx.module, *ctx.iter_nodes(cst.FunctionDef), *ctx.iter_nodes(cst.ClassDef),
               *ctx.iter_nodes(cst.For), *ctx.iter_nodes(cst.Call)][:200]
    checked = 0
    for region in regions:
        for text in texts:
            expected = _walked_names(sem, region, text)
            got = dataflow._names_in(sem, region, text)
            assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected)), (
                region, text)
            checked += len(got)
    assert checked > 0
    # A Name region is itself the only Name it holds.
    name = next(ctx.iter_nodes(cst.Name))
    assert dataflow._names_in(sem, name, name.value) == [name]
    assert dataflow._names_in(sem, name, name.value + "_other") == []


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_never_holds_tensor_means_no_tensor_and_no_container(path):
    ctx, sem = _model(path)
    seen = 0
    for kind in _EXPRESSIONS:
        for node in ctx.iter_nodes(kind):
            if never_holds_tensor(node):
                seen += 1
                assert sem.value(node).kind not in (Kind.TENSOR, Kind.SEQUENCE, Kind.MAPPING), \
                    ctx.code(node)
    assert seen > 0


def test_never_holds_tensor_leaves_displays_and_names_to_the_model():
    for text in ("[x]", "(x, y)", "{'a': x}", "{x}", "[t for t in ts]", "(t for t in ts)", "x", "-x",
                 "x.y", "f(1)"):
        assert not never_holds_tensor(cst.parse_expression(text)), text
    for text in ("1", "-1", "1.5", "'s'", "f'{x}'", "True", "None", "not x", "x is None",
                 "lambda: 0", "..."):
        assert never_holds_tensor(cst.parse_expression(text)), text
