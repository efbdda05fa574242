"""The syntax tree as the engine walks it: a node's child nodes, without the whitespace and
token nodes libcst keeps (no rule looks at them). Shared by the traversal
(devicelint/context.py) and the semantic model; imports nothing of devicelint."""

from __future__ import annotations

import dataclasses

import libcst as cst

# Fields that only hold tokens and whitespace: never visited, so rules see fewer nodes.
SKIPPED_FIELD_PREFIXES = (
    "whitespace", "lpar", "rpar", "comma", "leading_lines", "lines_after_decorators",
    "header", "footer", "semicolon", "trailing_whitespace", "lbracket", "rbracket",
    "lbrace", "rbrace", "equal", "colon", "dot", "star", "newline", "indent",
    "operator", "asynchronous", "default_indent", "default_newline", "encoding",
    "has_trailing_newline", "first_line", "evaluated_value", "prefix",
)
FIELDS: dict[type, tuple[str, ...]] = {}
# isinstance() against libcst's abstract base is slow on the hot path: remember the answer
# per concrete type.
NODE_TYPE: dict[type, bool] = {}


def is_node(value: object) -> bool:
    kind = type(value)
    known = NODE_TYPE.get(kind)
    if known is None:
        known = NODE_TYPE[kind] = isinstance(value, cst.CSTNode)
    return known


def child_fields(cls: type) -> tuple[str, ...]:
    fields = FIELDS.get(cls)
    if fields is None:
        fields = tuple(
            f.name for f in dataclasses.fields(cls)
            if not f.name.startswith(SKIPPED_FIELD_PREFIXES)
        )
        FIELDS[cls] = fields
    return fields


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """A node's child nodes in source order, without whitespace and token nodes (the
    engine's traversal; much cheaper than libcst's `node.children`)."""
    found: list[cst.CSTNode] = []
    for field in child_fields(type(node)):
        value = getattr(node, field)
        kind = type(value)
        if kind is tuple or kind is list:
            found.extend(v for v in value if is_node(v))
        elif is_node(value):
            found.append(value)
    return found
