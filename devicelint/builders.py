"""Fix builders shared by rules: helpers that shape a replacement node so the engine can
render it in place. Engine level (the lint layer): rules import it, it imports no rule."""

from __future__ import annotations

import libcst as cst


def block_indent(ctx, at: cst.CSTNode) -> str:
    """The indentation of the statement block that holds `at` (sum of the enclosing
    IndentedBlocks' indents)."""
    parts = []
    for ancestor in ctx.ancestors(at):
        if isinstance(ancestor, cst.IndentedBlock):
            parts.append(ctx.module.default_indent if ancestor.indent is None else ancestor.indent)
    return "".join(reversed(parts))


class _Reindent(cst.CSTTransformer):
    def __init__(self, indent: str) -> None:
        self.indent = indent

    def leave_ParenthesizedWhitespace(self, original, updated):
        if not updated.indent:
            return updated
        return updated.with_changes(
            indent=False,
            last_line=cst.SimpleWhitespace(self.indent + updated.last_line.value),
        )

    def leave_EmptyLine(self, original, updated):
        if not updated.indent:
            return updated
        return updated.with_changes(
            indent=False, whitespace=cst.SimpleWhitespace(self.indent + updated.whitespace.value)
        )


def reindent(ctx, at: cst.CSTNode, replacement: cst.CSTNode) -> cst.CSTNode:
    """`replacement` made to render with the indentation of the block around `at`.

    The engine renders a fix with `Module.code_for_node`, which knows nothing of the
    enclosing blocks: the continuation lines of a multi-line call would lose their
    indentation. This bakes it into the node."""
    indent = block_indent(ctx, at)
    if not indent:
        return replacement
    return replacement.visit(_Reindent(indent))
