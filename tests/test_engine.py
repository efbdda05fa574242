"""The engine's shared analyses: name resolution, loops, bindings, suppressions."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from devicelint.context import FileContext
from devicelint.engine import lint_source
from devicelint.source import decode_source
from devicelint.rule import Rule
from devicelint.suppress import parse_suppressions, skips_file


def context(source: str) -> FileContext:
    source = textwrap.dedent(source)
    ctx = FileContext("t.py", source, cst.parse_module(source))
    ctx.walk({}, {})
    return ctx


def find(ctx: FileContext, cls, predicate=lambda n: True):
    found = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node):
            if isinstance(node, cls) and predicate(node):
                found.append(node)
            return True

    ctx.module.visit(Collect())
    return found


@pytest.mark.parametrize(
    "imports, expr, expected",
    [
        ("import torch", "torch.nn.DataParallel", "torch.nn.DataParallel"),
        ("import torch as T", "T.nn.DataParallel", "torch.nn.DataParallel"),
        ("from torch import nn", "nn.DataParallel", "torch.nn.DataParallel"),
        ("import torch.nn as nn", "nn.Linear", "torch.nn.Linear"),
        ("from torch.nn import DataParallel as DP", "DP", "torch.nn.DataParallel"),
        ("import torch.nn.parallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.DataParallel"),
        ("from torch.nn import *", "DataParallel", "torch.nn.DataParallel"),
        ("import numpy as np", "np.zeros", "numpy.zeros"),
        ("import torch", "model.to", None),
        ("def f():\n    import torch as th", "th.zeros", "torch.zeros"),
    ],
)
def test_qualname(imports: str, expr: str, expected) -> None:
    ctx = context(f"{imports}\nx = {expr}\n")
    assign = find(ctx, cst.Assign)[-1]
    assert ctx.qualname(assign.value) == expected


def test_loops_body_not_iterable() -> None:
    ctx = context(
        """
        for row in rows.cuda():
            row.to(dev)
        while flag.item():
            pass
        ys = [r.cuda() for r in data.cuda() if r.sum()]
        def f():
            for x in xs:
                def g():
                    x.cuda()
        """
    )
    calls = {ctx.code(c): c for c in find(ctx, cst.Call)}
    assert ctx.loops(calls["rows.cuda()"]) == []
    assert [type(l).__name__ for l in ctx.loops(calls["row.to(dev)"])] == ["For"]
    assert [type(l).__name__ for l in ctx.loops(calls["flag.item()"])] == ["While"]
    assert [type(l).__name__ for l in ctx.loops(calls["r.cuda()"])] == ["ListComp"]
    assert ctx.loops(calls["data.cuda()"]) == []
    assert [type(l).__name__ for l in ctx.loops(calls["r.sum()"])] == ["ListComp"]
    # A function defined in a loop does not run per iteration where it is defined.
    assert ctx.loops(calls["x.cuda()"]) == []


def test_nested_loops_innermost_first() -> None:
    ctx = context(
        """
        for epoch in range(3):
            for x, y in loader:
                loss.item()
        """
    )
    call = find(ctx, cst.Call, lambda c: ctx.code(c) == "loss.item()")[0]
    loops = ctx.loops(call)
    assert [ctx.code(l.target) for l in loops] == ["x, y", "epoch"]
    assert FileContext.loop_targets(loops[0]) == ["x", "y"]


def test_bindings_in_order_and_scopes() -> None:
    ctx = context(
        """
        device = "cpu"
        def train(model, device="cuda"):
            x = torch.zeros(3)
            x = x.to(device)
            for batch in loader:
                pass
            with torch.no_grad() as ng:
                y = (z := 3)
            return x
        """
    )
    fn = find(ctx, cst.FunctionDef)[0]
    table = ctx.bindings(fn)
    assert [b.kind for b in table["x"]] == ["assign", "assign"]
    assert table["x"][0].order < table["x"][1].order
    assert [b.kind for b in table["device"]] == ["param"]
    assert table["batch"][0].kind == "for" and table["ng"][0].kind == "with"
    assert table["z"][0].kind == "walrus"
    ret = find(ctx, cst.Return)[0]
    assert ctx.bindings_of("device", ret)[0].kind == "param"
    assert ctx.bindings_of("loader", ret) == []
    assert ctx.bindings(ctx.module)["train"][0].kind == "def"


def test_positions_are_lazy_and_one_based() -> None:
    ctx = context("import torch\nx = torch.zeros(2)\n")
    assert ctx._positions is None
    call = find(ctx, cst.Call)[0]
    assert ctx.position(call) == (2, 5, 2, 19)


def test_positions_equal_libcsts_metadata_wrapper() -> None:
    """The engine's positions (a positioned codegen of only the top-level statements that
    hold findings, started where plain codegen says the statements before end) are the ones
    MetadataWrapper resolves, for every node of every fixture, with LF and CRLF line breaks,
    and the whole-module table too."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    from conftest import FIXTURES
    from devicelint.context import _positions

    files = sorted(FIXTURES.glob("DL*/*.py"))
    assert len(files) > 20
    texts = [path.read_text(encoding="utf-8") for path in files]
    texts += [text.replace("\n", "\r\n") for text in texts[::5]]
    texts.append("#!/usr/bin/env python\n# header comment\n\nimport torch  # c\n\n\nx = (\n    torch.zeros(2)\n)\n")
    for text in texts:
        module = cst.parse_module(text)
        expected = dict(MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider))
        assert dict(_positions(module)) == expected
        statements = list(module.body)
        for chosen in (statements[::3], statements[-1:], statements[1:2]):
            table = _positions(module, chosen)
            assert table and all(table[node] == expected[node] for node in table)
            assert all(statement in table for statement in chosen)
        # The statement starts kept across calls (as FileContext does), asked out of order.
        starts: list = []
        for chosen in (statements[1:2], statements[-1:], statements[::3], statements[:1]):
            table = _positions(module, chosen, starts)
            assert table and all(table[node] == expected[node] for node in table)
            assert all(statement in table for statement in chosen)


def test_positions_of_findings_in_later_statements() -> None:
    ctx = context("""\
        import torch
        def f():
            return 1
        y = [torch.zeros(3)
             for _ in range(2)]
    """)
    calls = find(ctx, cst.Call)
    assert [ctx.position(call) for call in calls] == [(4, 6, 4, 20), (5, 15, 5, 23)]


def test_positions_in_one_long_function_generate_it_at_most_twice(monkeypatch) -> None:
    """A line asked for node after node of one long function (messages naming lines, as the
    walk goes): its code is generated up to the first, then once whole, not again from its
    start for each (context._Spans counted); the positions are libcst's."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    from devicelint import context as context_module

    source = "import torch\n\n\ndef train(x):\n" + "".join(f"    y{i} = torch.zeros({i})\n" for i in range(60))
    ctx = context(source)
    made = []
    original = context_module._Spans

    def counted(*args, **kwargs):
        made.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(context_module, "_Spans", counted)
    expected = MetadataWrapper(ctx.module, unsafe_skip_copy=True).resolve(PositionProvider)
    for call in find(ctx, cst.Call):
        r = expected[call]
        assert ctx.position(call) == (r.start.line, r.start.column + 1, r.end.line, r.end.column + 1)
    assert len(made) <= 2


_STARTS_CASES = {
    "decorators with comments between and before them":
        "# top\n\nimport torch\n# before\n@a\n# between\n\n@b.c(1)\ndef f():\n    return 1\n",
    "semicolons and a parenthesized first token":
        "a = 1; b = (\n    2)\n(c\n) = 3\nif a: pass\nclass K: x = 1\n",
    "a continuation line and a string spanning lines":
        "x = 1 + \\\n    2\ns = \"\"\"\nfoo\n\"\"\"\nfor i in []:\n    pass\n# trailing\nz = 0",
    "a comment block ending a function, then a statement": "def f():\n    x = 1\n    # end of f\n\n# about g\ng = 2\n",
    "async and with statements": "async def f():\n    async with a as b:\n        pass\nwith open('x') as h:\n    pass\n",
}


@pytest.mark.parametrize("case", sorted(_STARTS_CASES))
@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_statement_starts_read_from_ast_are_the_generated_ones(case, newline) -> None:
    """Where each top-level statement starts, read from CPython's line numbers and the
    comment lines libcst holds before it (context.statement_starts), is where the code of
    the statements before it ends; every node's position from those starts is libcst's."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    from devicelint.context import _NEWLINE_RE, _positions, statement_starts

    text = _STARTS_CASES[case].replace("\n", newline)
    module = cst.parse_module(text)
    generated, line = [], 1
    for node in (*module.header, *module.body):
        generated.append((line, 0))
        line += len(_NEWLINE_RE.findall(module.code_for_node(node)))
    assert statement_starts(module, text) == generated
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    for statement in module.body:
        table = _positions(module, [statement], list(generated), source=text)
        assert statement in table and all(table[node] == expected[node] for node in table)


def test_statement_starts_give_up_where_the_parses_do_not_line_up() -> None:
    """None (the caller generates code instead) where a line is not what the two parses
    together say (a decorator whose expression starts on the line after its `@`), or `ast`
    cannot read the text."""
    from devicelint.context import statement_starts

    text = "import a\n@(\n    a.b)\ndef f():\n    pass\n"
    assert statement_starts(cst.parse_module(text), text) is None
    assert statement_starts(cst.parse_module("x = 1\n"), "x = (\n") is None


def test_positions_from_read_starts_that_do_not_hold_are_found_again() -> None:
    """Were a read start wrong, the statement's code would not be the text there: the
    positions are then found by generating code, as without read starts."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    source = "import torch\n" + "".join(f"x{i} = torch.zeros({i})\n" for i in range(12))
    ctx = context(source)
    ctx._starts = [(1, 0)] + [(n + 3, 0) for n in range(12)]  # every statement a line too low
    ctx._starts_read = ctx._starts_tried = True
    expected = MetadataWrapper(ctx.module, unsafe_skip_copy=True).resolve(PositionProvider)
    call = find(ctx, cst.Call)[-1]
    r = expected[call]
    assert ctx.position(call) == (r.start.line, r.start.column + 1, r.end.line, r.end.column + 1) == (13, 7, 13, 22)


def test_deep_nesting_does_not_recurse() -> None:
    source = "x = " + "(" * 200 + "1" + ")" * 200 + "\n"
    ctx = context(source)
    assert ctx.order(ctx.module) == 0


class _Reporter(Rule):
    code = "DL999"
    name = "test-reporter"
    summary = "test"

    def visit_Call(self, node: cst.Call) -> None:
        self.report(node, "call")


def test_suppressions_per_line_and_file() -> None:
    source = "f()  # noqa: DL999\ng()  # noqa:DL001\nh()  # devicelint: ignore[DL999, DL001]\nk()\n"
    found = lint_source("t.py", source, [_Reporter]).findings
    assert [f.line for f in found] == [2, 4]
    table = parse_suppressions(source)
    assert table[1][0].codes == frozenset({"DL999"}) and table[3][0].kind == "ignore"
    assert skips_file("x = 1\n# devicelint: skip-file\n")
    assert not skips_file("x = '# devicelint: skip-file'\n")


def test_prefilter_skips_parsing() -> None:
    class Tokened(_Reporter):
        tokens = ("DataParallel",)

    assert lint_source("t.py", "f()\n", [Tokened]).findings == []
    assert len(lint_source("t.py", "DataParallel()\n", [Tokened]).findings) == 1


def test_decode_source() -> None:
    assert decode_source("x = 'é'\n".encode()) == "x = 'é'\n"
    assert decode_source(b"\xef\xbb\xbfx = 1\n") == "x = 1\n"
    assert decode_source(b"# -*- coding: latin-1 -*-\nx = '\xe9'\n").endswith("x = 'é'\n")
    for bad in (b"x = '\xff'\n", b"x = 1\x00\n"):
        with pytest.raises(ValueError):
            decode_source(bad)


def test_a_big_module_is_linted_in_pieces_with_its_lines_and_imports(monkeypatch) -> None:
    """Above BIG_MODULE_CHARS a module is linted a group of top-level statements at a time
    (bounded memory, issue 17): each piece sees the imports and one-line assignments of the
    others and keeps its line numbers (also those named in messages); a decorator stays with
    its function."""
    from devicelint import engine, project_index
    from devicelint.engine import enabled_rules, lint_source

    helper = "def load(batch):\n    return batch.to(DEVICE)\n\n\n"
    loop = ("@decorated\n"
            "def train(model, loader, optimizer):\n"
            "    for batch in loader:\n"
            "        loss = model(batch.to(DEVICE)).sum()\n"
            "        loss.backward()\n"
            "        optimizer.step()\n"
            "        print(loss.item())\n")
    source = "import torch\nDEVICE = torch.device('cuda')\n\n\n" + helper * 40 + loop
    rules = enabled_rules(["DL004"])
    whole = [f.to_dict() for f in lint_source("big.py", source, rules).findings]
    assert [f["line"] for f in whole] == [len(source.splitlines())]
    pieces = project_index.top_level_pieces(source, 200)
    assert len(pieces) > 5 and "".join(p for _l, p in pieces) == source
    assert any("@decorated\ndef train" in p for _l, p in pieces)
    assert all(lines == piece.count("\n") for (_a, piece), lines in zip(
        pieces, [b - a for (a, _p), (b, _q) in zip(pieces, pieces[1:])]))
    monkeypatch.setattr(engine, "BIG_MODULE_CHARS", 1000)
    monkeypatch.setattr(engine, "top_level_pieces", lambda text: project_index.top_level_pieces(text, 200))
    assert [f.to_dict() for f in lint_source("big.py", source, rules).findings] == whole


def _libcst_nodes_left_for_the_collector(run) -> int:
    """How many libcst nodes `run()` leaves in reference cycles (garbage that only the cyclic
    collector would free), counted with the collector off."""
    import gc

    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        run()
        gc.collect()
        return sum(isinstance(thing, cst.CSTNode) for thing in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def test_a_lint_frees_its_tree_without_the_cyclic_collector() -> None:
    """The engine pauses the cyclic collector while it lints a file (devicelint/collector.py)
    and breaks the file's reference cycles when it is done (FileContext.release), so the tree
    is freed by reference counting: also when rules reported findings with fixes and used
    the semantic model."""
    from conftest import FIXTURES
    from devicelint.engine import enabled_rules
    from devicelint.rule import all_rules

    rules = enabled_rules(list(all_rules()))
    for name in ("DL004/bad_gates_and_joins.py", "DL007/fix_chains.py", "DL001/bad_loop_forms.py"):
        path = FIXTURES / name
        if not path.exists():
            continue
        source = path.read_text(encoding="utf-8")
        result = lint_source(name, source, rules)  # imports, caches
        assert result.findings
        assert _libcst_nodes_left_for_the_collector(lambda: lint_source(name, source, rules)) == 0, name


def test_no_cyclic_collection_while_a_file_is_linted() -> None:
    """Without the pause, linting these 3,000 lines starts the collector dozens of times;
    with it, once at most: when it resumes after the file."""
    import gc

    starts = []
    seen_by_rules = []

    def count(phase, info):
        if phase == "start":
            starts.append(info["generation"])

    class Watcher(_Reporter):
        def visit_Module(self, node: cst.Module) -> None:
            seen_by_rules.append(gc.isenabled())

    source = "import torch\n" + "".join(f"x{i} = torch.zeros({i}).to('cuda') + [{i}, ({i},)]\n"
                                         for i in range(3000))
    rules = [Watcher]
    lint_source("t.py", source, rules)
    gc.callbacks.append(count)
    try:
        found = lint_source("t.py", source, rules).findings
        during = list(starts)
        assert gc.isenabled()
        gc.disable()  # a caller's switched-off collector stays off
        lint_source("t.py", source, rules)
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.callbacks.remove(count)
    assert len(found) == 3000 and len(during) <= 1
    assert seen_by_rules == [False, False, False]


def test_walk_calls_handlers_in_source_order_and_iter_nodes_lists_by_type() -> None:
    ctx = context("""\
        def f(a):
            return g(a, h(1))
        y = k()
    """)
    seen = []
    visitors = {"Call": [lambda n: seen.append(("visit", ctx.code(n.func)))],
                "FunctionDef": [lambda n: seen.append(("visit", n.name.value))]}
    leavers = {"Call": [lambda n: seen.append(("leave", ctx.code(n.func)))],
               "FunctionDef": [lambda n: seen.append(("leave", n.name.value))]}
    fresh = FileContext("t.py", ctx.source, ctx.module)
    fresh.walk(visitors, leavers)
    assert seen == [("visit", "f"), ("visit", "g"), ("visit", "h"), ("leave", "h"), ("leave", "g"),
                    ("leave", "f"), ("visit", "k"), ("leave", "k")]
    assert [ctx.code(n.func) for n in fresh.iter_nodes(cst.Call)] == ["g", "h", "k"]
    assert [n.value for n in fresh.iter_nodes(cst.Integer)] == ["1"]
    assert list(fresh.iter_nodes(cst.While)) == []
    calls = find(fresh, cst.Call)
    assert [fresh.order(c) for c in calls] == sorted(fresh.order(c) for c in calls)
    assert fresh.scope(calls[0]) is fresh.module.body[0] and fresh.scope(calls[2]) is fresh.module


def test_a_file_the_gate_read_is_not_parsed_again_by_cpython(monkeypatch):
    """When the gate (which read the file with `ast`) leaves no rule, the engine does not
    check the file's syntax with CPython's parser a second time; a file no rule's tokens
    match, which the gate never read, and one `ast` cannot read are still checked."""
    from devicelint import engine
    from devicelint.engine import enabled_rules
    from devicelint.rule import all_rules

    rules = enabled_rules(list(all_rules()))
    checked: list[str] = []
    original = engine.python_syntax_error

    def recording(path, source):
        checked.append(path)
        return original(path, source)

    monkeypatch.setattr(engine, "python_syntax_error", recording)
    # Tokens of several rules, in a docstring and a comment only: the gate lets none through.
    gated_out = '"""x.view(-1) and DataParallel"""\ny = 1  # noqa: DL003\n'
    assert [f.code for f in lint_source("gated.py", gated_out, rules).findings] == ["DL901"]
    assert checked == []
    assert lint_source("plain.py", "y = 1\n", rules).findings == []
    assert checked == ["plain.py"]
    broken = lint_source("broken.py", "x.view(-1)\ndef f(:\n", rules).findings
    assert [f.code for f in broken] == ["DL900"]


def test_rules_for_looks_for_each_token_once_and_keeps_the_rules_order() -> None:
    """engine.rules_for: a rule is kept when one of its tokens occurs (or it has none), in
    the order given, as `any(token in text)` per rule decides, each token searched once."""
    from pathlib import Path

    from devicelint.engine import rules_for
    from devicelint.rule import rule_catalog

    entries = [entry for entry in rule_catalog().values() if entry.has_handlers]
    root = Path(__file__).resolve().parent.parent / "fixtures"
    texts = ["", "x = 1\n", "m.cuda()", "import time\nt = time.perf_counter()\n"]
    texts += [path.read_text(encoding="utf-8") for path in sorted(root.rglob("*.py"))[:80]]
    for text in texts:
        expected = [entry.code for entry in entries
                    if not entry.tokens or any(token in text for token in entry.tokens)]
        assert [rule.code for rule in rules_for(text, entries)] == expected
        assert [rule.code for rule in rules_for(text, entries[::-1])] == expected[::-1]


def test_needs_parse_is_any_group_of_tokens_found() -> None:
    """runner.needs_parse looks for each token once and answers `any(not group or
    any(token in text for token in group))`."""
    from pathlib import Path

    from devicelint.rule import rule_catalog
    from devicelint.runner import needs_parse

    groups = [entry.tokens for entry in rule_catalog().values() if entry.has_handlers]
    root = Path(__file__).resolve().parent.parent
    texts = ["", "x = 1\n", "m.cuda()", "# noqa: DL005\n", "DataLoader"]
    texts += [path.read_text(encoding="utf-8") for path in sorted((root / "devicelint").rglob("*.py"))[:60]]
    answers = []
    for text in texts:
        for chosen in (groups, groups[3:8], groups[::-1], [("zzz",), ()], [("zzz",)]):
            expected = any(not group or any(token in text for token in group) for group in chosen)
            assert needs_parse(text, chosen) == expected
            answers.append(expected)
    assert True in answers and False in answers
