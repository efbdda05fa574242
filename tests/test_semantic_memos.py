"""The per-node memo tables of FileContext and the semantic model answer as the plain
computations do, whatever order the questions come in (session 15, issue 17).

`loops()` is kept per ancestor (a climb stops at the first ancestor whose list is known);
`defs()`, `qualname()`, `_free_defs()` and a method's class are kept per node where final.
Each is compared here, over every node of a set of fixture files asked in a shuffled order,
with what a reference climb or a fresh model asked in source order says."""

from __future__ import annotations

import random
from pathlib import Path

import libcst as cst
import pytest

from devicelint.context import COMPREHENSIONS, FileContext

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FILES = (sorted(FIXTURES.glob("DL00[1-4]/*.py")) + sorted(FIXTURES.glob("DL016/*.py")))[::4]


# Nested clauses, conditions, loops in loops, lambdas and classes: the climbs' special cases.
SYNTHETIC = """
import torch
from torch import nn

def step(rows, device, n):
    out = [r.to(device) for batch in rows for r in batch if r.sum() > 0]
    pairs = {k: v.cuda() for k, v in ((a, b) for a in rows for b in a) if v is not None}
    while n > 0:
        for i, row in enumerate(rows):
            total = sum(x.item() for x in row if x.dim() for _ in range(2))
            f = lambda t: [u.cpu() for u in t]
            n -= 1
        else:
            rows = [[y for y in r] for r in rows]
    return out, pairs, total, f

class Net(nn.Module):
    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return [self.head(t) for t in x]
"""
SOURCES = [("synthetic", SYNTHETIC)] + [(f"{p.parent.name}/{p.name}", p.read_text()) for p in FILES]


def _context(name: str, source: str) -> FileContext:
    ctx = FileContext(name, source, cst.parse_module(source))
    ctx.walk({}, {})
    return ctx


def _reference_loops(ctx: FileContext, node: cst.CSTNode) -> list:
    """The loops around `node`, by one climb from it to its function (the definition)."""
    found = []
    child, parent = node, ctx.parent(node)
    while parent is not None:
        if type(parent) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
            break
        if type(parent) is cst.For and child is parent.body:
            found.append(parent)
        elif type(parent) is cst.While and (child is parent.body or child is parent.test):
            found.append(parent)
        elif type(parent) is cst.CompFor:
            inner = type(ctx.parent(parent)) is cst.CompFor
            if (child is not parent.iter and child is not parent.target) or (child is parent.iter and inner):
                owner = next((a for a in ctx.ancestors(parent) if type(a) in COMPREHENSIONS), None)
                found.append(owner or parent)
        elif type(parent) in COMPREHENSIONS and child is not parent.for_in:
            found.append(parent)
        child, parent = parent, ctx.parent(parent)
    unique: list = []
    for loop in found:
        if not unique or unique[-1] is not loop:
            unique.append(loop)
    return unique


@pytest.mark.parametrize("name, source", SOURCES, ids=[name for name, _ in SOURCES])
def test_loops_kept_per_ancestor_match_one_climb(name: str, source: str) -> None:
    ctx = _context(name, source)
    nodes = list(ctx.nodes)
    random.Random(name).shuffle(nodes)
    for node in nodes:
        got, expected = ctx.loops(node), _reference_loops(ctx, node)
        assert len(got) == len(expected) and all(a is b for a, b in zip(got, expected)), \
            (name, type(node).__name__)


@pytest.mark.parametrize("name, source", SOURCES, ids=[name for name, _ in SOURCES])
def test_kept_names_answer_as_a_fresh_model_in_any_order(name: str, source: str) -> None:
    """defs() and qualname() of every Name and Attribute, asked in a shuffled order of one
    model (its memo tables filling as it goes, values asked in between), equal those of
    another model of the same tree asked in source order."""
    ctx = _context(name, source)
    asked = [n for n in ctx.nodes if type(n) in (cst.Name, cst.Attribute)]
    shuffled = list(asked)
    random.Random(name).shuffle(shuffled)
    model = ctx.semantic
    first = {}
    for node in shuffled:
        if type(node) is cst.Name:
            model.value(node)  # values in between: what they ask fills the tables too
        first[id(node)] = ([id(d) for d in model.defs(node)] if type(node) is cst.Name else None,
                           model.qualname(node))
    again = {id(n): ([id(d) for d in model.defs(n)] if type(n) is cst.Name else None, model.qualname(n))
             for n in asked}
    assert again == first  # the kept answers are the ones first given
    from devicelint.semantic import SemanticModel

    fresh = SemanticModel(ctx)
    for node in asked:
        defs = [(d.name, d.kind, id(d.node), d.path) for d in fresh.defs(node)] if type(node) is cst.Name else None
        kept = [(d.name, d.kind, id(d.node), d.path) for d in model.defs(node)] if type(node) is cst.Name else None
        assert (kept, model.qualname(node)) == (defs, fresh.qualname(node)), (name, ctx.code(node))


def test_value_with_is_dataclasses_replace() -> None:
    import dataclasses

    from devicelint.semantic.values import CONTIGUOUS, Kind, Place, tensor

    value = tensor(Place.CPU, shape=(1, 2), node="site", hint=True)
    for changes in ({"place": Place.DEVICE}, {"kind": Kind.UNKNOWN, "collated": True}, {},
                    {"node": None, "layout": CONTIGUOUS}):
        made, replaced = value.with_(**changes), dataclasses.replace(value, **changes)
        assert type(made) is type(replaced) and made == replaced and hash(made) == hash(replaced)
        assert all(getattr(made, f.name) is getattr(replaced, f.name) for f in dataclasses.fields(made))
    with pytest.raises(TypeError):
        value.with_(colour="red")
