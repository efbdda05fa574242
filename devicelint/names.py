"""Cheap name resolution: an import-alias table instead of libcst's scope analysis.

The table maps each name bound by an import to the dotted path it stands for, so that
`T.nn.DataParallel`, `nn.DataParallel` and `DP` all resolve to `torch.nn.DataParallel`.
It ignores shadowing by later assignments: a module that rebinds `nn` to something else
is rare enough that the speed (no scope metadata) is worth it.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst


def dotted_name(node: cst.CSTNode) -> Optional[str]:
    """`a.b.c` for a Name/Attribute chain, else None (calls, subscripts, ...)."""
    parts = []
    # Exact type tests: isinstance() on libcst's ABC-based classes costs a Python-level
    # check for every miss, and rules ask this of nearly every call.
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def _module_path(node: Optional[cst.BaseExpression]) -> str:
    return dotted_name(node) if node is not None else ""


class ImportTable:
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.star_modules: list[str] = []

    def add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.aliases[alias.asname.name.value] = full
            else:
                head = full.split(".", 1)[0]
                self.aliases[head] = head

    def add_import_from(self, node: cst.ImportFrom) -> None:
        module = "." * len(node.relative) + _module_path(node.module)
        if isinstance(node.names, cst.ImportStar):
            self.star_modules.append(module)
            return
        for alias in node.names:
            name = dotted_name(alias.name)
            if name is None:
                continue
            bound = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                bound = alias.asname.name.value
            self.aliases[bound] = f"{module}.{name}" if module else name

    def resolve(self, node: cst.CSTNode, star_lookup=None) -> Optional[str]:
        """Qualified name of an expression built from imported names, else None.
        `star_lookup(name)`: what a star import of a local module binds `name` to outside
        the project, or None (FileContext passes the project index's answer)."""
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        target = self.aliases.get(head)
        if target is None and self.star_modules and star_lookup is not None:
            target = star_lookup(head)
        if target is None:
            if self.star_modules and head[:1].isupper():
                target = f"{self.star_modules[-1]}.{head}"
            else:
                return None
        return f"{target}.{rest}" if rest else target


# -- call arguments -----------------------------------------------------------------------

def int_value(node: cst.CSTNode) -> Optional[int]:
    if isinstance(node, cst.Integer):
        try:
            return int(node.value.replace("_", ""), 0)
        except ValueError:
            return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = int_value(node.expression)
        return -inner if inner is not None else None
    return None


def positional_args(call: cst.Call) -> list[cst.BaseExpression]:
    out = []
    for arg in call.args:
        if arg.keyword is not None or arg.star:
            break
        out.append(arg.value)
    return out


def call_arg(call: cst.Call, index: int, keyword: str) -> Optional[cst.BaseExpression]:
    """The argument at position `index` or named `keyword`, if given."""
    positional = 0
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == keyword:
                return arg.value
            continue
        if arg.star:
            return None
        if positional == index:
            return arg.value
        positional += 1
    return None


def keyword_arg(call: cst.Call, keyword: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    return None


def and_operands(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of an `a and b and c` chain (nested `and`s flattened); `[expr]` otherwise."""
    operands, stack = [], [expr]
    while stack:
        part = stack.pop()
        if isinstance(part, cst.BooleanOperation) and isinstance(part.operator, cst.And):
            stack += [part.left, part.right]
        else:
            operands.append(part)
    return operands
