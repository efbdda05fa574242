"""FileContext's sub-tree queries (span, end, contains, descendants) are slices of the
index's pre-order node list: they must list exactly what a walk of the tree lists
(devicelint.tree.walk_descendants, children()), for every node of the fixtures, and fall
back to that walk for nodes the index does not hold."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from devicelint.context import FileContext
from devicelint.incremental import IncrementalParser
from devicelint.tree import children, walk_descendants

FIXTURES = sorted((Path(__file__).parent.parent / "fixtures").rglob("*.py"))
NESTED = (cst.FunctionDef, cst.ClassDef)
# (types, skip) pairs asked of every node: one type, several, none, with and without skips.
QUERIES = [
    (None, ()),
    (cst.Call, ()),
    ((cst.Call,), NESTED),
    (cst.Name, NESTED),
    ((cst.Assign, cst.AnnAssign, cst.AugAssign), (cst.FunctionDef,)),
    (None, (cst.FunctionDef, cst.Lambda, cst.ListComp)),
    ((cst.Attribute, cst.Name, cst.Call), (cst.ClassDef, cst.GeneratorExp)),
    (cst.While, ()),  # often none at all
]


def indexed(source: str) -> FileContext:
    ctx = FileContext("t.py", source, cst.parse_module(source))
    ctx.walk({}, {})
    return ctx


def walked(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Pre-order by recursion over children(): the reference, independent of both."""
    found = []
    for child in children(node):
        found.append(child)
        found.extend(walked(child))
    return found


def popped(node: cst.CSTNode, types, skip) -> list[cst.CSTNode]:
    """The order of the walks the semantic model was written with: children pushed in
    source order onto a stack, the last popped first."""
    wanted = None if types is None else (types if type(types) is tuple else (types,))
    found = []
    stack = list(children(node))
    while stack:
        current = stack.pop()
        if wanted is None or type(current) in wanted:
            found.append(current)
        if type(current) not in skip:
            stack.extend(children(current))
    return found


def check_tree(ctx: FileContext) -> None:
    nodes = ctx.nodes
    assert walked(ctx.module) == nodes[1:] and nodes[0] is ctx.module
    for order, node in enumerate(nodes):
        below = walked(node)
        start, end = ctx.span(node)
        assert start == order and ctx.end(order) == end == order + 1 + len(below)
        assert nodes[start + 1:end] == below
        for types, skip in QUERIES:
            assert ctx.descendants(node, types, skip) == walk_descendants(node, types, skip), \
                (ctx.code(node)[:80], types, skip)
        for types, skip in QUERIES[:4]:
            assert ctx.descendants(node, types, skip, last_first=True) \
                == walk_descendants(node, types, skip, last_first=True) == popped(node, types, skip)
        # "inside" is an integer comparison: it must agree with a climb of the parents.
        for child in below[:3] + below[-3:]:
            assert ctx.contains(node, child)
            climbed = child
            while climbed is not None and climbed is not node:
                climbed = ctx.parent(climbed)
            assert climbed is node
        after = nodes[end] if end < len(nodes) else None
        if after is not None:
            assert not ctx.contains(node, after)
        assert ctx.contains(node, node)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(p.parent.parent)))
def test_slices_equal_walks_on_fixtures(path: Path) -> None:
    check_tree(indexed(path.read_text(encoding="utf-8")))


def test_walk_descendants_by_hand() -> None:
    source = """\
def f(a):
    g(a, h(1))
    def inner():
        k()
    class C:
        m()
    return [n() for _ in a]
"""
    ctx = indexed(source)
    function = ctx.module.body[0]
    calls = [ctx.code(c.func) for c in ctx.descendants(function, cst.Call)]
    assert calls == ["g", "h", "k", "m", "n"]
    not_nested = [ctx.code(c.func) for c in ctx.descendants(function, cst.Call, NESTED)]
    assert not_nested == ["g", "h", "n"]
    # The skipped nodes themselves are listed, not what they hold.
    tops = ctx.descendants(function.body, (cst.FunctionDef, cst.ClassDef, cst.Call), NESTED)
    assert [type(n).__name__ for n in tops] == ["Call", "Call", "FunctionDef", "ClassDef", "Call"]
    inner = function.body.body[1]  # a skip type applies below the node asked about
    assert [ctx.code(c.func) for c in ctx.descendants(inner, cst.Call, NESTED)] == ["k"]
    check_tree(ctx)


def test_nodes_outside_the_index_are_walked() -> None:
    ctx = indexed("x = f(g(1))\n")
    made = cst.parse_expression("a(b(c), d)")  # a node a rule makes: not in the index
    assert ctx.span(made) is None
    assert ctx.descendants(made, cst.Call) == walk_descendants(made, cst.Call) == [made.args[0].value]
    assert [type(n).__name__ for n in ctx.descendants(made)] == [
        "Name", "Arg", "Call", "Name", "Arg", "Name", "Arg", "Name"]
    assert not ctx.contains(made, made.args[0].value)  # no parents known: as a climb says
    assert ctx.contains(made, made)
    inside = ctx.nodes[3]
    assert not ctx.contains(made, inside) and not ctx.contains(inside, made)


def test_incrementally_parsed_trees_slice_as_walked() -> None:
    """The language server's spliced trees reuse the previous tree's statement nodes: the
    index of the new tree is still its own."""
    parser = IncrementalParser()
    first = "import torch\n\n\ndef f(x):\n    return x.cuda()\n\n\ndef g(y):\n    return y\n"
    parser.parse(first)
    second = first.replace("return y\n", "return [h(z) for z in y]\n")
    module = parser.parse(second)
    assert parser.reparsed == 1
    ctx = FileContext("t.py", second, module)
    ctx.walk({}, {})
    check_tree(ctx)
