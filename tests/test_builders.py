"""devicelint/builders.py: fix builders shared by rules (no rule imports another for them)."""

from __future__ import annotations

import libcst as cst

from devicelint.builders import block_indent, reindent
from devicelint.context import FileContext

SOURCE = """\
def f(x):
    if x:
        y = g(
            1,
        )
"""


def _context() -> FileContext:
    module = cst.parse_module(SOURCE)
    ctx = FileContext("t.py", SOURCE, module)
    ctx.walk({}, {})
    return ctx


def _call(ctx: FileContext) -> cst.Call:
    return next(ctx.iter_nodes(cst.Call))


def test_block_indent_sums_the_enclosing_blocks() -> None:
    ctx = _context()
    assert block_indent(ctx, _call(ctx)) == "        "


def test_reindent_bakes_the_block_indent_into_continuation_lines() -> None:
    ctx = _context()
    call = _call(ctx)
    replacement = call.with_changes(func=cst.Name("h"))
    rendered = ctx.module.code_for_node(reindent(ctx, call, replacement))
    assert rendered == "h(\n            1,\n        )"
    # Without it the continuation lines would lose the block's indentation.
    assert ctx.module.code_for_node(replacement) == "h(\n    1,\n)"


def test_rules_take_reindent_from_the_engine() -> None:
    from devicelint.rules import dl001_transfer_in_loop, dl007_create_then_move, dl014_deprecated_cuda_amp

    for module in (dl001_transfer_in_loop, dl007_create_then_move, dl014_deprecated_cuda_amp):
        assert module.reindent is reindent


def _loop_context(source: str):
    module = cst.parse_module(source)
    ctx = FileContext("t.py", source, module)
    ctx.walk({}, {})
    return ctx, next(ctx.iter_nodes(cst.For))


def test_source_text_renders_as_written() -> None:
    from devicelint.builders import SourceText

    module = cst.parse_module("x = 1\n")
    assert module.code_for_node(SourceText("a = 1\n    b = 2")) == "a = 1\n    b = 2"


def test_hoist_statement_moves_one_line_above_its_loop() -> None:
    from devicelint.builders import hoist_statement

    source = (
        "def f(x, d):\n"
        "    for i in range(3):  # loop\n"
        "        y = x.to(d)  # move\n"
        "        z = y.cpu()  # back\n"
        "    return z\n"
    )
    ctx, loop = _loop_context(source)
    text = hoist_statement(ctx, loop.body.body[0], loop).text
    assert text == "y = x.to(d)  # move\n    for i in range(3):  # loop\n        z = y.cpu()"
    # The last statement of the body: its trailing comment lies outside the loop's span.
    last = "for i in range(3):\n    z = i\n    y = x.to(d)  # move\nprint(y)\n"
    ctx, loop = _loop_context(last)
    assert hoist_statement(ctx, loop.body.body[-1], loop) is None
    ctx, loop = _loop_context(last.replace("  # move", ""))
    assert hoist_statement(ctx, loop.body.body[-1], loop).text == (
        "y = x.to(d)\nfor i in range(3):\n    z = i")


def test_hoist_statement_refuses_what_lines_cannot_cut() -> None:
    from devicelint.builders import hoist_statement

    only = "for i in range(3):\n    y = f(\n        i,\n    )\n    z = y\n"
    ctx, loop = _loop_context(only)
    assert hoist_statement(ctx, loop.body.body[0], loop) is None  # a multi-line statement
    single = "for i in range(3):\n    y = g()\n"
    ctx, loop = _loop_context(single)
    assert hoist_statement(ctx, loop.body.body[0], loop) is None  # the body's only statement


def test_with_keyword_args_follows_the_call_layout() -> None:
    from devicelint.builders import with_keyword_args

    def render(text: str) -> str:
        call = cst.parse_expression(text)
        new = with_keyword_args(call, [("device", cst.Name("d")), ("dtype", cst.Name("t"))])
        return cst.Module([]).code_for_node(new)

    assert render("f(n, m)") == "f(n, m, device=d, dtype=t)"
    assert render("f()") == "f(device=d, dtype=t)"
    assert render("f(\n    n,\n    m,\n)") == "f(\n    n,\n    m,\n    device=d,\n    dtype=t,\n)"
    assert render("f(\n    n,\n)") == "f(\n    n,\n    device=d,\n    dtype=t,\n)"
