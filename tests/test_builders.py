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
