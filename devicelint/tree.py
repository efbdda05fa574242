"""The syntax tree as the engine walks it: a node's child nodes, without the whitespace and
token nodes libcst keeps (no rule looks at them). Shared by the traversal
(devicelint/context.py) and the semantic model; imports nothing of devicelint."""

from __future__ import annotations

import dataclasses
from operator import attrgetter
from typing import Callable, Optional

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


def field_reader(fields: tuple[str, ...]) -> Callable[[cst.CSTNode], tuple]:
    """A function giving the values of a node's `fields`, as a tuple (operator.attrgetter:
    one C call instead of a getattr() per field)."""
    if len(fields) > 1:
        return attrgetter(*fields)
    if fields:
        one = attrgetter(fields[0])
        return lambda node: (one(node),)
    return lambda node: ()


# Per node class: field_reader(child_fields(cls)).
READERS: dict[type, Callable[[cst.CSTNode], tuple]] = {}


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """A node's child nodes in source order, without whitespace and token nodes (the
    engine's traversal; much cheaper than libcst's `node.children`)."""
    cls = type(node)
    reader = READERS.get(cls)
    if reader is None:
        reader = READERS[cls] = field_reader(child_fields(cls))
    found: list[cst.CSTNode] = []
    node_type = NODE_TYPE
    for value in reader(node):
        kind = type(value)
        if kind is tuple or kind is list:
            for item in value:
                known = node_type.get(type(item))
                if known or (known is None and is_node(item)):
                    found.append(item)
        else:
            known = node_type.get(kind)
            if known or (known is None and is_node(value)):
                found.append(value)
    return found


def walk_descendants(node: cst.CSTNode, types: Optional[type | tuple[type, ...]] = None,
                     skip: tuple[type, ...] = (), last_first: bool = False) -> list[cst.CSTNode]:
    """The nodes under `node` (not itself) in source order, by a walk: only those of
    `types` (exact types) when given; the nodes of a `skip` type are listed but their
    sub-trees not entered; `last_first`: a node's last child (and what it holds) before
    its first. FileContext.descendants gives the same list as a slice of its index; this
    walk is for nodes outside the index (made by a rule, or of another tree)."""
    wanted = None if types is None else (types if type(types) is tuple else (types,))
    found: list[cst.CSTNode] = []
    stack = children(node)
    if not last_first:
        stack.reverse()
    while stack:
        current = stack.pop()
        kind = type(current)
        if wanted is None or kind in wanted:
            found.append(current)
        if kind in skip:
            continue
        below = children(current)
        if not last_first:
            below.reverse()
        stack.extend(below)
    return found
