"""Fix builders shared by rules: helpers that shape a replacement node so the engine can
render it in place. Engine level (the lint layer): rules import it, it imports no rule."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from devicelint.context import children
from devicelint.names import dotted_name


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


_NO_SPACE = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))


def with_keyword_args(call: cst.Call, keywords: list[tuple[str, cst.BaseExpression]]) -> cst.Call:
    """`call` with `name=value` arguments appended, laid out like its other arguments: in a
    call spread one argument per line with a trailing comma (`f(\n    n,\n)`) the new ones
    take a line each and the author's trailing comma stays at the very end."""
    args = list(call.args)
    new = [cst.Arg(keyword=cst.Name(name), value=value, equal=_NO_SPACE) for name, value in keywords]
    if not new:
        return call
    if args and isinstance(args[-1].comma, cst.Comma):
        last = args[-1]
        if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
            separator = args[-2].comma
        elif isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
            separator = cst.Comma(
                whitespace_after=call.whitespace_before_args.with_changes(
                    first_line=cst.TrailingWhitespace(), empty_lines=()
                )
            )
        else:
            separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        args[-1] = last.with_changes(comma=separator)
        new = [a.with_changes(comma=separator) for a in new[:-1]] + [
            new[-1].with_changes(comma=last.comma)
        ]
    return call.with_changes(args=args + new)


# -- hoisting: moving work out of a loop ---------------------------------------------------


def names_in(node: cst.CSTNode) -> set[str]:
    """Every name read in a (small) expression, attributes' owners included."""
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            found.add(current.value)
            continue
        if isinstance(current, cst.Attribute):
            stack.append(current.value)
            continue
        stack.extend(children(current))
    return found


def plain_reference(node: cst.BaseExpression) -> bool:
    """`x`, `self.x`: evaluating it again reads the same object and runs nothing."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


# `.to`/`.cuda` arguments that mean the same wherever the call runs (and, for a batch, the
# same as for each of its rows). `memory_format=` does not: `channels_last` needs 4-D.
HOIST_KEYWORDS = frozenset({"device", "dtype", "non_blocking", "copy"})


def hoistable_args(call: cst.Call, loop_names: set[str]) -> bool:
    """A transfer's arguments can be evaluated once, before the loop: no loop variable, no
    call other than `torch.device(...)`, only keywords in HOIST_KEYWORDS."""
    for arg in call.args:
        if arg.star:
            return False
        if arg.keyword is not None and arg.keyword.value not in HOIST_KEYWORDS:
            return False
        if names_in(arg.value) & loop_names:
            return False
        stack: list[cst.CSTNode] = [arg.value]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Call) and dotted_name(current.func) not in ("torch.device",):
                return False
            if isinstance(current, (cst.Lambda, cst.Yield, cst.Await, cst.NamedExpr)):
                return False
            stack.extend(children(current))
    return True


@dataclass(frozen=True)
class SourceText(cst.BaseExpression):
    """A replacement given as finished source text, rendered exactly as written (for fixes
    that move whole lines, such as a statement hoisted above its loop, which one node
    cannot express). The text must already carry the indentation of where it lands,
    except on its first line."""

    text: str = ""
    lpar: tuple = ()
    rpar: tuple = ()

    def _visit_and_replace_children(self, visitor) -> "SourceText":
        return self

    def _codegen_impl(self, state) -> None:
        state.add_token(self.text)


_NEWLINE = re.compile(r"\r\n|\r|\n")


def hoist_statement(ctx, line: cst.SimpleStatementLine, loop: cst.CSTNode) -> Optional[SourceText]:
    """The text that replaces `loop` when the one-line statement `line`, a direct statement
    of the loop's body, moves above the loop: `line` (with its trailing comment), then the
    loop without it. None where the text cannot be cut by whole lines: a multi-line
    statement, a comment above it, a one-line loop body, or a body left empty."""
    body = getattr(loop, "body", None)
    if not isinstance(body, cst.IndentedBlock) or len(body.body) < 2 or line not in body.body:
        return None
    if any(empty.comment is not None for empty in line.leading_lines):
        return None
    try:
        first, column, last, last_column = ctx.position(loop)
        start, _, end, _ = ctx.position(line)
    except (KeyError, RecursionError):
        return None
    if start != end:
        return None
    if end == last and line.trailing_whitespace.comment is not None:
        return None  # the comment lies after the replaced span: it would stay behind
    lines = _NEWLINE.split(ctx.source)
    indent = lines[first - 1][: column - 1]
    if indent.strip():
        return None  # something else precedes the loop on its line
    statement = lines[start - 1].strip()
    cut_from = start - len(line.leading_lines)
    kept = []
    for number in range(first, last + 1):
        if cut_from <= number <= end:
            continue
        text = lines[number - 1]
        if number == last:
            text = text[: last_column - 1]
        if number == first:
            text = text[column - 1:]
        kept.append(text)
    while len(kept) > 1 and not kept[-1].strip():
        kept.pop()
    return SourceText(statement + "\n" + indent + "\n".join(kept))
