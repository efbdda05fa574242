"""Per-file state shared by all rules: the parse, the traversal, and lazy analyses.

Everything a rule may ask about a file lives here and is computed at most once, and only
when a rule asks: positions (only for nodes that produce findings), scope bindings, loops.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Optional

import libcst as cst

from devicelint.names import ImportTable, dotted_name

if TYPE_CHECKING:
    from devicelint.rule import Rule

LOOP_NODES = (cst.For, cst.While)
COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)
SCOPE_NODES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)

# Fields that only hold tokens and whitespace: never visited, so rules see fewer nodes.
_SKIPPED_FIELD_PREFIXES = (
    "whitespace", "lpar", "rpar", "comma", "leading_lines", "lines_after_decorators",
    "header", "footer", "semicolon", "trailing_whitespace", "lbracket", "rbracket",
    "lbrace", "rbrace", "equal", "colon", "dot", "star", "newline", "indent",
    "operator", "asynchronous", "default_indent", "default_newline", "encoding",
    "has_trailing_newline", "first_line", "evaluated_value", "prefix",
)
_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = tuple(
            f.name for f in dataclasses.fields(cls)
            if not f.name.startswith(_SKIPPED_FIELD_PREFIXES)
        )
        _FIELDS[cls] = fields
    return fields


@dataclass
class Binding:
    """One place where a scope binds `name`."""

    name: str
    kind: str  # assign | augassign | annassign | for | with | param | import | walrus | def | comp
    value: Optional[cst.CSTNode]  # the assigned expression (for `for`: the iterable)
    node: cst.CSTNode  # the statement or construct that binds
    order: int  # traversal order: smaller means earlier in the source


@dataclass
class Report:
    rule: "Rule"
    node: cst.CSTNode
    message: str
    fix: Optional[cst.CSTNode]
    fix_node: Optional[cst.CSTNode]
    fix_safe: bool
    fix_description: str


class FileContext:
    def __init__(self, path: str, source: str, module: cst.Module) -> None:
        self.path = path
        self.source = source
        self.module = module
        self.imports = ImportTable()
        self.reports: list[Report] = []
        self._info: dict[int, tuple[Optional[cst.CSTNode], int]] = {}
        self._positions = None
        self._bindings: dict[int, dict[str, list[Binding]]] = {}
        self._lines: Optional[list[str]] = None

    # -- traversal -------------------------------------------------------------------
    def walk(self, visitors: dict[str, list[Callable]], leavers: dict[str, list[Callable]]) -> None:
        info = self._info
        counter = 0
        imports = self.imports
        stack: list[tuple[cst.CSTNode, Optional[cst.CSTNode], bool]] = [(self.module, None, False)]
        # An explicit stack: deep expressions must not hit Python's recursion limit.
        while stack:
            node, parent, leaving = stack.pop()
            name = type(node).__name__
            if leaving:
                for leave in leavers.get(name, ()):
                    leave(node)
                continue
            info[id(node)] = (parent, counter)
            counter += 1
            if name == "Import":
                imports.add_import(node)
            elif name == "ImportFrom":
                imports.add_import_from(node)
            for visit in visitors.get(name, ()):
                visit(node)
            if name in leavers:
                stack.append((node, parent, True))
            children = []
            for field in _child_fields(type(node)):
                value = getattr(node, field)
                if isinstance(value, cst.CSTNode):
                    children.append(value)
                elif isinstance(value, (tuple, list)):
                    children.extend(v for v in value if isinstance(v, cst.CSTNode))
            for child in reversed(children):
                stack.append((child, node, False))

    # -- tree queries ----------------------------------------------------------------
    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        entry = self._info.get(id(node))
        return entry[0] if entry else None

    def order(self, node: cst.CSTNode) -> int:
        entry = self._info.get(id(node))
        return entry[1] if entry else -1

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        parent = self.parent(node)
        while parent is not None:
            yield parent
            parent = self.parent(parent)

    def scope(self, node: cst.CSTNode) -> cst.CSTNode:
        """The innermost function, lambda or class around `node`, else the module."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, SCOPE_NODES):
                return ancestor
        return self.module

    def function(self, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef):
                return ancestor
        return None

    def loops(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """Loops (For, While, comprehensions) that re-run `node` on each iteration,
        innermost first. A loop's iterable is evaluated once and does not count; the
        search stops at the enclosing function, lambda or class."""
        found = []
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, SCOPE_NODES):
                break
            if isinstance(ancestor, cst.For):
                if child is ancestor.body:
                    found.append(ancestor)
            elif isinstance(ancestor, cst.While):
                if child is ancestor.body or child is ancestor.test:
                    found.append(ancestor)
            elif isinstance(ancestor, cst.CompFor):
                if child is not ancestor.iter and child is not ancestor.target:
                    # An `if` of this clause, or a nested clause: runs per element.
                    found.append(self._comprehension_of(ancestor) or ancestor)
                elif child is ancestor.iter and self._is_inner_for(ancestor):
                    found.append(self._comprehension_of(ancestor) or ancestor)
            elif isinstance(ancestor, COMPREHENSIONS):
                if child is not ancestor.for_in:
                    found.append(ancestor)
            child = ancestor
        # A comprehension reached both through an inner clause and its element once.
        unique = []
        for loop in found:
            if not unique or unique[-1] is not loop:
                unique.append(loop)
        return unique

    def _is_inner_for(self, comp_for: cst.CompFor) -> bool:
        return isinstance(self.parent(comp_for), cst.CompFor)

    def _comprehension_of(self, comp_for: cst.CompFor) -> Optional[cst.CSTNode]:
        for ancestor in self.ancestors(comp_for):
            if isinstance(ancestor, COMPREHENSIONS):
                return ancestor
        return None

    @staticmethod
    def loop_iter(loop: cst.CSTNode) -> Optional[cst.BaseExpression]:
        """What a loop walks over: For.iter, the first clause of a comprehension."""
        if isinstance(loop, cst.For):
            return loop.iter
        if isinstance(loop, COMPREHENSIONS):
            return loop.for_in.iter
        return None

    @staticmethod
    def loop_targets(loop: cst.CSTNode) -> list[str]:
        """Names bound by a loop's target(s) (all clauses of a comprehension)."""
        targets: list[cst.CSTNode] = []
        if isinstance(loop, cst.For):
            targets.append(loop.target)
        elif isinstance(loop, COMPREHENSIONS):
            clause: Optional[cst.CompFor] = loop.for_in
            while clause is not None:
                targets.append(clause.target)
                clause = clause.inner_for_in
        names = []
        for target in targets:
            names.extend(bound_names(target))
        return names

    # -- names -----------------------------------------------------------------------
    def qualname(self, node: cst.CSTNode) -> Optional[str]:
        """`torch.nn.DataParallel` for `nn.DataParallel`, `DP`, ...; None if not imported."""
        return self.imports.resolve(node)

    def bindings(self, scope: cst.CSTNode) -> dict[str, list[Binding]]:
        """Every binding made directly in `scope` (not in nested functions/classes)."""
        key = id(scope)
        table = self._bindings.get(key)
        if table is None:
            table = _collect_bindings(self, scope)
            self._bindings[key] = table
        return table

    def bindings_of(self, name: str, at: cst.CSTNode) -> list[Binding]:
        """Bindings of `name` visible at `at`: its own scope's, else the module's."""
        scope = self.scope(at)
        while True:
            found = self.bindings(scope).get(name)
            if found:
                return found
            if scope is self.module:
                return []
            scope = self.scope(scope)

    # -- positions and reporting -----------------------------------------------------
    def position(self, node: cst.CSTNode) -> tuple[int, int, int, int]:
        """(line, column, end_line, end_column), 1-based, end exclusive."""
        if self._positions is None:
            from libcst.metadata import MetadataWrapper, PositionProvider

            wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
            self._positions = wrapper.resolve(PositionProvider)
        rng = self._positions[node]
        return rng.start.line, rng.start.column + 1, rng.end.line, rng.end.column + 1

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = self.source.splitlines()
        return self._lines

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def report(self, report: Report) -> None:
        self.reports.append(report)


def bound_names(target: cst.CSTNode) -> list[str]:
    """Names bound by an assignment/loop target (`a`, `a, b`, `(a, [b, *c])`)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        names = []
        for element in target.elements:
            names.extend(bound_names(element.value))
        return names
    if isinstance(target, cst.StarredElement):
        return bound_names(target.value)
    return []


def target_key(target: cst.CSTNode) -> Optional[str]:
    """A binding key: `x` for a Name, `self.model` for an attribute chain."""
    return dotted_name(target)


class _BindingCollector(cst.CSTVisitor):
    def __init__(self, ctx: FileContext, scope: cst.CSTNode) -> None:
        self.ctx = ctx
        self.scope = scope
        self.table: dict[str, list[Binding]] = {}

    def _add(self, target: cst.CSTNode, kind: str, value, node) -> None:
        keys = bound_names(target)
        if not keys:
            key = target_key(target)
            keys = [key] if key else []
        for key in keys:
            self.table.setdefault(key, []).append(
                Binding(key, kind, value, node, self.ctx.order(node))
            )

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is not self.scope and isinstance(node, SCOPE_NODES):
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                self._add(node.name, "def", node, node)
            return False
        if isinstance(node, cst.Assign):
            for target in node.targets:
                self._add(target.target, "assign", node.value, node)
        elif isinstance(node, cst.AnnAssign):
            self._add(node.target, "annassign", node.value, node)
        elif isinstance(node, cst.AugAssign):
            self._add(node.target, "augassign", node.value, node)
        elif isinstance(node, cst.For):
            self._add(node.target, "for", node.iter, node)
        elif isinstance(node, cst.CompFor):
            self._add(node.target, "comp", node.iter, node)
        elif isinstance(node, cst.WithItem) and node.asname is not None:
            self._add(node.asname.name, "with", node.item, node)
        elif isinstance(node, cst.NamedExpr):
            self._add(node.target, "walrus", node.value, node)
        elif isinstance(node, cst.Param) and self.scope is not None:
            self._add(node.name, "param", node.default, node)
        return True


def _collect_bindings(ctx: FileContext, scope: cst.CSTNode) -> dict[str, list[Binding]]:
    collector = _BindingCollector(ctx, scope)
    if isinstance(scope, (cst.FunctionDef, cst.Lambda)):
        scope.params.visit(collector)
        scope.body.visit(collector)
    elif isinstance(scope, cst.ClassDef):
        scope.body.visit(collector)
    else:
        scope.visit(collector)
    for bindings in collector.table.values():
        bindings.sort(key=lambda b: b.order)
    return collector.table
