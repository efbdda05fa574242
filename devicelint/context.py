"""Per-file state shared by all rules: the parse, the traversal, and lazy analyses.

Everything a rule may ask about a file lives here and is computed at most once, and only
when a rule asks: positions (only for nodes that produce findings), scope bindings, loops.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import Any, Callable, Iterator, Mapping, Optional

import libcst as cst
from libcst._nodes.internal import CodegenState

from devicelint.names import ImportTable, dotted_name
from devicelint.notebook import line_reference, lines_reference
from devicelint.source import line_starts, split_lines
from devicelint.tree import (  # noqa: F401 - children: for rules
    FIELDS, NODE_TYPE, child_fields, children, field_reader, is_node, walk_descendants,
)

COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)
SCOPE_NODES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
_SCOPE_TYPES = frozenset(SCOPE_NODES)
_LOOP_PARTS = frozenset(SCOPE_NODES + (cst.For, cst.While, cst.CompFor) + COMPREHENSIONS)
_COMPREHENSION_TYPES = frozenset(COMPREHENSIONS)

_SCOPE_NAMES = frozenset({"FunctionDef", "Lambda", "ClassDef"})
_BINDER_NAMES = frozenset({
    "Assign", "AnnAssign", "AugAssign", "For", "CompFor", "WithItem", "NamedExpr", "Param",
    "FunctionDef", "ClassDef", "Import", "ImportFrom",
})
# What the traversal needs of a node class, worked out once per class (_shape): its name,
# a function that reads its child fields (last first), and its role as bits.
_SCOPE, _BINDS, _IMPORT, _IMPORT_FROM, _CLASS = 1, 2, 4, 8, 16
_SHAPES: dict[type, tuple] = {}
_LEAVING = object()  # a stack entry that leaves its node
_first = itemgetter(0)


def _shape(cls: type) -> tuple[str, Optional[Callable[[cst.CSTNode], Any]], bool, int]:
    """(name, reader, single, role): `reader` gives the values of the child fields that may
    hold nodes, last first (a tuple; the one value itself when `single`), None when there is
    none: a field annotated `str` (the text of a Name, an Integer, a string) holds no node."""
    name = cls.__name__
    role = (_SCOPE if name in _SCOPE_NAMES else 0) | (_BINDS if name in _BINDER_NAMES else 0)
    role |= {"Import": _IMPORT, "ImportFrom": _IMPORT_FROM, "ClassDef": _CLASS}.get(name, 0)
    types = {f.name: f.type for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
    fields = tuple(f for f in reversed(child_fields(cls)) if types.get(f) is not str)
    if not fields:
        shape = (name, None, False, role)
    elif len(fields) == 1:
        shape = (name, attrgetter(fields[0]), True, role)
    else:
        shape = (name, field_reader(fields), False, role)
    _SHAPES[cls] = shape
    return shape


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
    rule: Any  # the devicelint.rule.Rule instance that reported it
    node: cst.CSTNode
    message: str
    fix: Optional[cst.CSTNode]
    fix_node: Optional[cst.CSTNode]
    fix_safe: bool
    fix_description: str
    # (node of this file, message) pairs the finding also points at (SARIF relatedLocations).
    related: tuple = ()


class FileContext:
    def __init__(self, path: str, source: str, module: cst.Module,
                 disk_path: Optional[str] = None,
                 starts: Optional[list[tuple[int, int]]] = None,
                 locate: Optional[Callable[[int], Optional[tuple[int, int]]]] = None) -> None:
        self.path = path  # what findings name: relative to the project root in a run
        self.disk_path = path if disk_path is None else disk_path  # where the file is read
        self.source = source
        self.module = module
        self.imports = ImportTable()
        self._star_names: dict[str, Optional[str]] = {}
        self.reports: list[Report] = []
        self._info: dict[int, tuple[Optional[cst.CSTNode], int, cst.CSTNode]] = {}
        self._positions = None
        # Where top-level statements (the header's lines, then the body's) begin, as far as
        # known (_positions); a caller that knows them all may give them (the server's
        # incremental parse), which spares the code generation that finds them.
        self._starts: list[tuple[int, int]] = list(starts) if starts else []
        # Whether _starts came from `statement_starts` (checked as each statement's code is
        # generated: _positions' `source`), and whether that has been tried.
        self._starts_read = False
        self._starts_tried = bool(starts)
        # Top-level statements whose code position() generated only up to the nodes then
        # wanted: asked again, they are generated whole (a line asked for each of many
        # findings in one long function would otherwise generate its start again each time).
        self._cut_short: set[int] = set()
        self._binders: list[tuple[cst.CSTNode, cst.CSTNode]] = []
        self._bindings: Optional[dict[int, dict[str, list[Binding]]]] = None
        self.class_defs: list[cst.ClassDef] = []
        self._lines: Optional[list[str]] = None
        self._nodes: list[cst.CSTNode] = []  # every node, in source order (the traversal's)
        # The order of each node's parent (-1 for the module), by the node's order: a
        # node's sub-tree is the slice of _nodes from it to the end of its last child's.
        self._parents: list[int] = []
        self._last_child: Optional[dict[int, int]] = None  # order -> its last child's order
        # Per node type: the orders of its nodes (ascending; the index's), and the nodes
        # (made when first asked: iter_nodes, descendants).
        self._orders_by_type: dict[type, list[int]] = {}
        self._by_type: dict[type, list[cst.CSTNode]] = {}
        self._semantic = None
        self._loops_of: dict[int, list[cst.CSTNode]] = {}  # id(node) -> loops(node), indexed nodes
        self._names_by_text: Optional[dict] = None  # names_by_text()
        # A notebook's cell map (devicelint.notebook.Notebook.locate): line of `source` ->
        # (cell, line within the cell); None for a Python file. Messages name lines by it.
        self.locate = locate

    def release(self) -> None:
        """Once the findings are made: drop what ties the file's objects into reference
        cycles (reports -> rules -> this context; the semantic model and its parts, which
        refer to each other), so that the tree is freed by reference counting as the lint
        returns, not left for the cyclic collector, which the engine pauses while it lints
        (devicelint/collector.py)."""
        self.reports = []
        self._positions = None
        self._loops_of = {}
        self._names_by_text = None
        if self._semantic is not None:
            vars(self._semantic).clear()
            self._semantic = None

    # -- traversal -------------------------------------------------------------------
    def walk(self, visitors: dict[str, list[Callable]], leavers: dict[str, list[Callable]]) -> None:
        """Index the tree, then run the rules' handlers in source order.

        The index (each node's parent, order and scope; imports; the nodes that bind names)
        is complete before the first handler runs, so a rule may ask about names bound later
        in the file. Both passes are plain loops over an explicit stack / a list: deep
        expressions must not hit Python's recursion limit."""
        for handlers, node in self._index(visitors, leavers):
            for handler in handlers:
                handler(node)

    def _index(self, visitors: Mapping[str, list[Callable]],
               leavers: Mapping[str, list[Callable]]) -> list[tuple[list[Callable], cst.CSTNode]]:
        """Index every node (pre-order) and list the handler calls of the walk: (handlers,
        node) for each visit or leave that some rule handles, in source order."""
        info = self._info
        nodes = self._nodes
        parents = self._parents
        orders_by_type = self._orders_by_type
        binders = self._binders
        calls: list[tuple[list[Callable], cst.CSTNode]] = []
        append_call = calls.append
        append_node = nodes.append
        append_parent = parents.append
        node_type = NODE_TYPE
        # Per node class, for this walk: (fields, role, visit handlers or None, leave
        # handlers or None, the class's list of orders), so that a node costs no lookups
        # by name.
        known_classes: dict[type, tuple] = {}
        counter = 0
        # (node, parent, scope, the parent's order)
        stack: list[tuple] = [(self.module, None, self.module, -1)]
        push = stack.append
        pop = stack.pop
        while stack:
            node, parent, scope, parent_order = pop()
            if scope is _LEAVING:
                append_call((parent, node))  # parent: the node type's leave handlers
                continue
            cls = type(node)
            entry = known_classes.get(cls)
            if entry is None:
                name, reader, one, kind_role = _SHAPES.get(cls) or _shape(cls)
                of_type = orders_by_type.get(cls)
                if of_type is None:
                    of_type = orders_by_type[cls] = []
                entry = known_classes[cls] = (reader, one, kind_role, visitors.get(name), leavers.get(name),
                                              of_type)
            fields, single, role, visit, leave, of_type = entry
            info[id(node)] = (parent, counter, scope)
            append_parent(parent_order)
            of_type.append(counter)
            order = counter
            counter += 1
            append_node(node)
            if visit is not None:
                append_call((visit, node))
            if leave is not None:
                push((node, leave, _LEAVING, -1))
            if role:
                if role & _BINDS:
                    binders.append((node, scope))
                    if role & _IMPORT:
                        self.imports.add_import(node)
                    elif role & _IMPORT_FROM:
                        self.imports.add_import_from(node)
                    elif role & _CLASS:
                        self.class_defs.append(node)
                inner = node if role & _SCOPE else scope
            else:
                inner = scope
            # The children, last first (a stack): children(node), inlined, as this loop
            # runs once per node of every parsed file.
            if fields is None:
                continue  # a leaf: a Name, a number, a string
            if single:
                value = fields(node)
                kind = type(value)
                if kind is tuple or kind is list:
                    for item in reversed(value):
                        known = node_type.get(type(item))
                        if known or (known is None and is_node(item)):
                            push((item, node, inner, order))
                else:
                    known = node_type.get(kind)
                    if known or (known is None and is_node(value)):
                        push((value, node, inner, order))
                continue
            for value in fields(node):
                kind = type(value)
                if kind is tuple or kind is list:
                    for item in reversed(value):
                        known = node_type.get(type(item))
                        if known or (known is None and is_node(item)):
                            push((item, node, inner, order))
                else:
                    known = node_type.get(kind)
                    if known or (known is None and is_node(value)):
                        push((value, node, inner, order))
        return calls

    @property
    def semantic(self):
        """The file's semantic model (devicelint.semantic), built on first use."""
        if self._semantic is None:
            from devicelint.semantic import SemanticModel

            self._semantic = SemanticModel(self)
        return self._semantic

    @property
    def nodes(self) -> list[cst.CSTNode]:
        """Every node of the tree (no whitespace or token nodes), in source order."""
        return self._nodes

    def iter_nodes(self, node_type: type) -> Iterator[cst.CSTNode]:
        """Every node of a type, in source order (from the traversal's index)."""
        return iter(self._of_type(node_type))

    def _of_type(self, node_type: type) -> list[cst.CSTNode]:
        found = self._by_type.get(node_type)
        if found is None:
            nodes = self._nodes
            found = self._by_type[node_type] = [nodes[i] for i in self._orders_of(node_type)]
        return found

    def names_by_text(self) -> dict[str, tuple[list[int], list[cst.Name]]]:
        """The file's Names by their text: (their orders, the Names), in source order. Made
        once per file, not per semantic model (another file's question builds a model of
        this one for each call it follows: SemanticModel.returned_for)."""
        table = self._names_by_text
        if table is None:
            table = self._names_by_text = {}
            get = table.get
            for order, name in zip(self._orders_of(cst.Name), self._of_type(cst.Name)):
                entry = get(name.value)
                if entry is None:
                    entry = table[name.value] = ([], [])
                entry[0].append(order)
                entry[1].append(name)
        return table

    def _orders_of(self, node_type: type) -> list[int]:
        """The orders of the nodes of a type (exactly that type), ascending."""
        return self._orders_by_type.get(node_type, [])

    # -- sub-trees: slices of the pre-order node list --------------------------------
    def span(self, node: cst.CSTNode) -> Optional[tuple[int, int]]:
        """(start, end): `node` is nodes[start] and its sub-tree is nodes[start:end]. None
        for a node the index does not hold (one a rule made, or of another tree)."""
        entry = self._info.get(id(node))
        if entry is None:
            return None
        start = entry[1]
        return start, self.end(start)

    def end(self, order: int) -> int:
        """Where the sub-tree of the node at `order` ends in the node list: after its last
        child's sub-tree (pre-order), found by descending through last children."""
        last = self._last_child
        if last is None:
            # dict() keeps the last value given for a key: each parent's last child.
            parents = self._parents
            last = self._last_child = dict(zip(parents, range(len(parents))))
        child = last.get(order)
        while child is not None:
            order = child
            child = last.get(order)
        return order + 1

    def contains(self, outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
        """`inner` is `outer` or lies inside it (an integer comparison for indexed nodes)."""
        if inner is outer:
            return True
        info = self._info
        outer_entry = info.get(id(outer))
        inner_entry = info.get(id(inner))
        if outer_entry is None or inner_entry is None:
            return False  # the parents of an indexed node are indexed; others have none
        start = outer_entry[1]
        return start < inner_entry[1] < self.end(start)

    def descendants(self, node: cst.CSTNode, types: Optional[type | tuple[type, ...]] = None,
                    skip: tuple[type, ...] = (), last_first: bool = False) -> list[cst.CSTNode]:
        """The nodes under `node` (not itself) in source order, as the walk
        `devicelint.tree.walk_descendants` lists them: only those of `types` (exact
        types: a class or a tuple of classes) when given; the nodes of a `skip` type are
        listed but their sub-trees not entered. A slice of the index's node list (per-type
        lists cut by bisection for `types`); a walk for a node the index does not hold.
        `last_first`: in the order of a walk that takes a node's last child first (a stack
        of children), for code whose results were first found in that order."""
        entry = self._info.get(id(node))
        if entry is None:
            return walk_descendants(node, types, skip, last_first)
        if last_first:
            # That walk's order is the reverse of a post-order: by sub-tree end, last
            # first, then by start (ends and starts together are unique: no node compared).
            order, end = self.order, self.end
            keyed = []
            for found in self.descendants(node, types, skip):
                start = order(found)
                keyed.append((-end(start), start, found))
            keyed.sort()
            return [found for _end, _start, found in keyed]
        start = entry[1]
        end = self.end(start)
        pieces = self._pieces(start + 1, end, skip) if skip else ((start + 1, end),)
        if types is None:
            nodes = self._nodes
            if len(pieces) == 1:
                first, stop = pieces[0]
                return nodes[first:stop]
            found = []
            for first, stop in pieces:
                found.extend(nodes[first:stop])
            return found
        if type(types) is not tuple:
            return self._typed(types, pieces)
        if len(types) == 1:
            return self._typed(types[0], pieces)
        # Several types: merge their lists by order (orders are unique: no node compared).
        pairs = []
        for kind in types:
            orders = self._orders_of(kind)
            if not orders:
                continue
            of_kind = self._of_type(kind)
            for first, stop in pieces:
                low, high = bisect_left(orders, first), bisect_left(orders, stop)
                pairs.extend(zip(orders[low:high], of_kind[low:high]))
        pairs.sort(key=_first)
        return [node for _order, node in pairs]

    def _typed(self, kind: type, pieces) -> list[cst.CSTNode]:
        orders = self._orders_of(kind)
        if not orders:
            return []
        of_kind = self._of_type(kind)
        if len(pieces) == 1:
            first, stop = pieces[0]
            return of_kind[bisect_left(orders, first):bisect_left(orders, stop)]
        found = []
        for first, stop in pieces:
            found.extend(of_kind[bisect_left(orders, first):bisect_left(orders, stop)])
        return found

    def _pieces(self, first: int, stop: int, skip: tuple[type, ...]) -> list[tuple[int, int]]:
        """The ranges of nodes[first:stop] outside the sub-trees of nodes of a `skip` type
        (each such node stays, at the end of the range before it)."""
        inner: list[int] = []
        for kind in skip:
            orders = self._orders_of(kind)
            inner.extend(orders[bisect_left(orders, first):bisect_left(orders, stop)])
        if not inner:
            return [(first, stop)]
        inner.sort()
        pieces = []
        for order in inner:
            if order < first:
                continue  # inside a skipped sub-tree
            pieces.append((first, order + 1))
            first = self.end(order)
        if first < stop:
            pieces.append((first, stop))
        return pieces

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
        entry = self._info.get(id(node))
        if entry is not None:
            return entry[2]
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
        search stops at the enclosing function, lambda or class.

        Kept per node of the index (rules ask it of the same call several times: DL016's
        checks each ask it); callers must not change the list."""
        key = id(node)
        loops_of = self._loops_of
        known = loops_of.get(key)
        if known is not None:
            return known
        info = self._info
        if key not in info:
            return []  # not a node of the tree: no climb (and no memo: its id is not its own)
        # loops(x) is [] where x's parent is a scope (or x is the module), else what x's
        # parent adds for x (the loop, when x is in its repeated part) before loops(parent):
        # climb to the first ancestor whose list is known, then fill the lists back down.
        # Every list on the way is kept, so the next climb from a sibling stops early.
        pairs = []
        child = node
        while True:
            parent = info[id(child)][0]
            if parent is None or type(parent) in _SCOPE_TYPES:
                current: list = []
                loops_of[id(child)] = current
                break
            pairs.append((child, parent))
            known = loops_of.get(id(parent))
            if known is not None:
                current = known
                break
            child = parent
        for child, parent in reversed(pairs):
            if type(parent) in _LOOP_PARTS:
                loop = self._loop_repeating(parent, child)
                if loop is not None and not (current and current[0] is loop):
                    current = [loop, *current]
            loops_of[id(child)] = current
        return current

    def _loop_repeating(self, ancestor: cst.CSTNode, child: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The loop that `ancestor` (the parent of `child`, a loop or scope node) makes re-run
        `child`, else None."""
        kind = type(ancestor)  # exact types: isinstance() on libcst's ABCs is slow here
        if kind is cst.For:
            return ancestor if child is ancestor.body else None
        if kind is cst.While:
            return ancestor if child is ancestor.body or child is ancestor.test else None
        if kind is cst.CompFor:
            if child is not ancestor.iter and child is not ancestor.target:
                # An `if` of this clause, or a nested clause: runs per element.
                return self._comprehension_of(ancestor) or ancestor
            if child is ancestor.iter and self._is_inner_for(ancestor):
                return self._comprehension_of(ancestor) or ancestor
            return None
        if kind in _COMPREHENSION_TYPES:
            return ancestor if child is not ancestor.for_in else None
        return None

    def _is_inner_for(self, comp_for: cst.CompFor) -> bool:
        return isinstance(self.parent(comp_for), cst.CompFor)

    def _comprehension_of(self, comp_for: cst.CompFor) -> Optional[cst.CSTNode]:
        for ancestor in self.ancestors(comp_for):
            if isinstance(ancestor, COMPREHENSIONS):
                return ancestor
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
    def _star_name(self, name: str) -> Optional[str]:
        """What `name`, bound only by `from m import *` of a local module m, stands for
        outside the project (`torch` through utils.py's `import torch`), from the run's
        project index (devicelint/project_index.py, FileView.star_name); None without one."""
        if name not in self._star_names:
            from devicelint import project_index

            view = project_index.view_for(self.path, type(self), self)
            self._star_names[name] = view.star_name(name) if view is not None else None
        return self._star_names[name]

    def qualname(self, node: cst.CSTNode) -> Optional[str]:
        """`torch.nn.DataParallel` for `nn.DataParallel`, `DP`, ...; None if not imported."""
        return self.imports.resolve(node, self._star_name)  # a bound method per call: no cycle kept

    def bindings(self, scope: cst.CSTNode) -> dict[str, list[Binding]]:
        """Every binding made directly in `scope` (not in nested functions/classes), in
        source order. Built once per file from the nodes the traversal recorded."""
        if self._bindings is None:
            self._bindings = _collect_bindings(self)
        return self._bindings.get(id(scope), {})

    def bindings_of(self, name: str, at: cst.CSTNode) -> list[Binding]:
        """Bindings of `name` visible at `at`: its own scope's, else an enclosing
        function's or the module's (class bodies are not visible from methods)."""
        scope = self.scope(at)
        first = True
        while True:
            if first or not isinstance(scope, cst.ClassDef):
                found = self.bindings(scope).get(name)
                if found:
                    return found
            if scope is self.module:
                return []
            first = False
            scope = self.scope(scope)

    # -- positions and reporting -----------------------------------------------------
    def position(self, node: cst.CSTNode) -> tuple[int, int, int, int]:
        """(line, column, end_line, end_column), 1-based, end exclusive."""
        if self._positions is None:
            self._positions = PositionTable()
        found = self._positions.range_of(node)
        if found is None:
            # Positions of the top-level statements that hold this node and every reported
            # one (a finding's node and its fix's), computed together.
            wanted = [node, *(r.node for r in self.reports), *(r.fix_node for r in self.reports)]
            tops = [self._top_statement(n) for n in wanted]
            awaited: dict[int, set[int]] = {}
            for top, want in zip(tops, wanted):
                if id(top) not in self._cut_short:
                    awaited.setdefault(id(top), set()).add(id(want))
            self._cut_short.update(awaited)
            if not self._starts_tried and len(self.module.body) > _STARTS_READ_AFTER:
                self._starts_tried = True
                found_starts = statement_starts(self.module, self.source)
                if found_starts is not None:
                    self._starts, self._starts_read = found_starts, True
            try:
                table = _positions(self.module, tops, self._starts, awaited,
                                   self.source if self._starts_read else None)
            except _StartMismatch:  # (never seen: statement_starts' checks held, the code did not)
                self._starts, self._starts_read = [], False
                table = _positions(self.module, tops, self._starts, awaited)
            self._positions.update_from(table)
            found = self._positions.range_of(node)
            if found is None:
                raise KeyError(node)
        line, column, end_line, end_column = found
        return line, column + 1, end_line, end_column + 1

    def _top_statement(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The statement of the module's body that holds `node` (None: the module itself, or
        a node outside the tree)."""
        top = None
        while node is not None and node is not self.module:
            top, node = node, self.parent(node)
        return top if node is self.module else None

    def line_ref(self, where: cst.CSTNode | int) -> str:
        """How a message names a line of this file (a node's first line, or a line number):
        `line 12`; in a notebook `cell 4:2`, the cell and the line within it, as the
        reporters print a finding's own position (the virtual source's line numbers mean
        nothing to a reader of the notebook)."""
        return line_reference(self._line_of(where), self.locate)

    def site(self, node: cst.CSTNode) -> "LazySite":
        """Where `node` is, as a message of another file's finding names it: a
        devicelint.notebook.Site (path, line, column; its cell in a notebook), worked out
        when first read (LazySite)."""
        return LazySite(self, node)

    def site_now(self, node: cst.CSTNode):
        from devicelint.notebook import Site

        line, column = self.position(node)[:2]
        return Site(self.path, line, column, self.locate(line) if self.locate is not None else None)

    def lines_ref(self, wheres, word: str = "lines") -> str:
        """`lines 3, 5` (in the order given, after `word`); in a notebook `cells 2:1, 3:4`."""
        return lines_reference([self._line_of(where) for where in wheres], self.locate, word)

    def _line_of(self, where: cst.CSTNode | int) -> int:
        return where if isinstance(where, int) else self.position(where)[0]

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = split_lines(self.source)
        return self._lines

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def report(self, report: Report) -> None:
        self.reports.append(report)


class LazySite:
    """FileContext.site's answer: a devicelint.notebook.Site (a `(path, line, column)`
    tuple with a `cell`), found when first read. The semantic model notes where another
    file's copy or host read is (`Move.where`, `SummaryRead.where`) for every one it
    follows, and most never reach a message; finding a node's line generates the code of
    its statement up to it (FileContext.position): practitioner repositories, one run,
    about 0.9 of the 12 s (cProfile) the project index added."""

    __slots__ = ("_ctx", "_node", "_site")

    def __init__(self, ctx: "FileContext", node: cst.CSTNode) -> None:
        self._ctx, self._node, self._site = ctx, node, None

    def resolve(self):
        if self._site is None:
            self._site = self._ctx.site_now(self._node)
            self._ctx = self._node = None
        return self._site

    @property
    def path(self) -> str:
        return self.resolve().path

    @property
    def line(self) -> int:
        return self.resolve().line

    @property
    def column(self) -> int:
        return self.resolve().column

    @property
    def cell(self):
        return self.resolve().cell

    def where(self) -> str:
        return self.resolve().where()

    def ref(self) -> str:
        return self.resolve().ref()

    def short(self) -> str:
        return self.resolve().short()

    def __iter__(self):
        return iter(self.resolve())

    def __len__(self) -> int:
        return 3

    def __getitem__(self, index):
        return self.resolve()[index]

    def __eq__(self, other) -> bool:
        return self.resolve() == (other.resolve() if isinstance(other, LazySite) else other)

    def __hash__(self) -> int:
        return hash(self.resolve())

    def __repr__(self) -> str:
        return repr(self.resolve())


_NEWLINE_RE = re.compile(r"\r\n?|\n")  # as libcst's position provider splits tokens


class _Spans(CodegenState):
    """libcst's plain code generation that also notes, for every node it generates, where
    the node's code starts and ends: character offsets into the generated text, taken
    where PositionProvidingCodegenState takes its lines and columns (before and after the
    node's code, or the syntactic bounds its codegen records), so that the same bounds
    follow (`PositionTable`). A character count per token instead of a line-and-column
    update (a regular-expression split and two objects per token): a class of 2,500 nodes
    (torchvision's transforms.py) 6.6 ms -> 2.4 ms, plain generation 2.1 ms."""

    def __init__(self, module: cst.Module, awaited: Optional[set[int]] = None) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.offset = 0
        self.spans: dict = {}  # node -> (start, end)
        self.opened: list[int] = []
        self.popped = ""  # the trailing newline a module's codegen takes back (counted still)
        # ids of the nodes wanted: once all have their spans, the generation stops (_Done)
        self.awaited = awaited

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self.offset += len(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def pop_trailing_newline(self) -> None:
        # The offset stays, as a positioned generation's line and column do.
        if self.tokens:
            self.popped = self.tokens.pop()

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.opened.append(self.offset)

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.opened.pop()
        if node not in self.spans:  # a syntactic span recorded inside comes first
            self.spans[node] = (start, self.offset)
        awaited = self.awaited
        if awaited is not None and id(node) in awaited:
            awaited.discard(id(node))
            if not awaited:
                raise _Done

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: Optional[cst.CSTNode] = None,
                                  end_node: Optional[cst.CSTNode] = None) -> "_Syntactic":
        return _Syntactic(self, node, start_node, end_node)

    def text(self) -> str:
        return "".join(self.tokens) + self.popped


class _Done(Exception):
    """Raised by _Spans once every awaited node has its span: the rest is not generated."""


class _Syntactic:
    """PositionProvidingCodegenState.record_syntactic_position, by offsets (a plain context
    manager: libcst's is a generator's, twice the cost per node)."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: _Spans, node, start_node, end_node) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = self.state.offset

    def __exit__(self, kind, *exc) -> bool:
        if kind is not None:  # stopped (_Done) or failed: the node's code is not all there
            return False
        spans = self.state.spans
        start = spans[self.start_node][0] if self.start_node is not None else self.start
        end = spans[self.end_node][1] if self.end_node is not None else self.state.offset
        spans[self.node] = (start, end)
        return False


class PositionTable(Mapping):
    """Positions of nodes (libcst's PositionProvider's, as CodeRange on lookup): for each
    node, its code's start and end offsets within the generated code of the statement that
    holds it, and where that statement starts. Lines and columns are worked out only for the
    nodes asked about (`range_of`), from the newlines of the statement's own code."""

    def __init__(self) -> None:
        self._spans: dict = {}  # node -> (start, end, origin)

    def add(self, state: _Spans, line: int, column: int) -> tuple[int, int, list[int]]:
        """The nodes `state` generated, its code starting at (line, column); returns that
        origin: (line, column, where each newline of the code ends)."""
        origin = (line, column, [m.end() for m in _NEWLINE_RE.finditer(state.text())])
        for node, (start, end) in state.spans.items():
            self._spans[node] = (start, end, origin)
        return origin

    def update_from(self, other: "PositionTable") -> None:
        self._spans.update(other._spans)

    def range_of(self, node: cst.CSTNode) -> Optional[tuple[int, int, int, int]]:
        """(line, column, end line, end column), 0-based columns, or None for a node not here."""
        found = self._spans.get(node)
        if found is None:
            return None
        start, end, (line, column, ends) = found
        return (*_line_column(start, line, column, ends), *_line_column(end, line, column, ends))

    def __getitem__(self, node):
        found = self.range_of(node)
        if found is None:
            raise KeyError(node)
        from libcst._position import CodePosition, CodeRange

        return CodeRange(CodePosition(found[0], found[1]), CodePosition(found[2], found[3]))

    def __iter__(self):
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)

    def __contains__(self, node) -> bool:
        return node in self._spans


def _line_column(offset: int, line: int, column: int, ends: list[int]) -> tuple[int, int]:
    """The line and column of `offset` in code that starts at (line, column) and whose
    newlines end at `ends`."""
    before = bisect_right(ends, offset)
    if not before:
        return line, column + offset
    return line + before, offset - ends[before - 1]


# Past this many top-level statements, where they start is read from CPython's `ast` (line
# numbers) rather than found by generating the code of those before the one wanted.
_STARTS_READ_AFTER = 8
_COMPOUND_STATEMENTS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor,
                        ast.While, ast.With, ast.AsyncWith, ast.Try, getattr(ast, "TryStar", ast.Try),
                        getattr(ast, "Match", ast.If))


class _StartMismatch(Exception):
    """A statement's generated code is not the source text where it was said to start."""


def statement_starts(module: cst.Module, source: str) -> Optional[list[tuple[int, int]]]:
    """Where each top-level statement of `module` (the header's lines, then the body's
    statements) starts, as _positions' `starts`, read from the line numbers CPython's `ast`
    gives the same text's statements, without generating any code: a statement's first
    line, less the comment and blank lines libcst holds before it (its `leading_lines`, a
    decorated definition's first decorator's). None when the two parses do not line up
    statement for statement, or a line is not what that says it is (a comment or blank
    line before each statement, the statement's first character at column 0, `@` on a
    decorator's line): the caller then generates code to find them, as before. Each
    statement's code is still checked against the text as it is generated (_positions'
    `source`). A finding at the end of a 1,000-line script no longer generates the
    script's code before it."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
    lines = _NEWLINE_RE.split(source)
    starts = [(number + 1, 0) for number in range(len(module.header))]
    after = len(module.header)  # the last line taken so far
    statements = iter(tree.body)
    for node in module.body:
        first = next(statements, None)
        if first is None or (type(node) is cst.SimpleStatementLine) == isinstance(first, _COMPOUND_STATEMENTS):
            return None
        if type(node) is cst.SimpleStatementLine:
            for _ in range(len(node.body) - 1):  # `a = 1; b = 2`: one libcst line, two statements
                following = next(statements, None)
                if following is None or isinstance(following, _COMPOUND_STATEMENTS):
                    return None
        line = first.lineno
        leading = len(node.leading_lines)
        decorators = getattr(node, "decorators", ())
        if decorators:
            decorated = getattr(first, "decorator_list", None)
            if not decorated or len(decorated) != len(decorators):
                return None
            line = decorated[0].lineno
            leading += len(decorators[0].leading_lines)
            if not lines[line - 1].startswith("@"):
                return None
        start = line - leading
        code = lines[line - 1] if line <= len(lines) else ""
        if start <= after or not code or code[0] in " \t\f#":
            return None
        for number in range(start, line):
            text = lines[number - 1].lstrip(" \t\f")
            if text and not text.startswith("#"):
                return None
        starts.append((start, 0))
        after = line
    if next(statements, None) is not None:
        return None
    return starts


def _positions(module: cst.Module, statements: Optional[list] = None,
               starts: Optional[list] = None, awaited: Optional[dict[int, set[int]]] = None,
               source: Optional[str] = None) -> PositionTable:
    """The positions libcst's PositionProvider gives every node of the given top-level
    `statements` (None, or a None among them: of the whole module), as a PositionTable.

    Computed by the code generation of each wanted statement (_Spans), started at the line
    and column where the statements before it end, which plain code generation gives; not
    what MetadataWrapper.resolve(PositionProvider) does (a positioned generation of the whole
    module after an extra walk of the whole tree): on a 1,000-line training script 150-200
    ms of CPU became ~50, then less with _Spans (tests check the tables are equal).
    `starts`: the (line, column) where each statement of the module begins, as far as found
    so far; kept by the caller across calls and extended here. `awaited`: per statement (by
    id), the ids of the nodes whose positions are wanted there: its code is generated only
    up to the last of them (a finding in the first lines of a 500-line function does not
    generate the other 490), where no later statement's start depends on its end; the
    table then holds the nodes generated so far. `source`: the module's text, given when
    `starts` were read rather than found (statement_starts): each statement's code must be
    the text at its start, else _StartMismatch."""
    table = PositionTable()
    awaited = awaited or {}
    offsets = line_starts(source) if source is not None else None

    def check(state: "_Spans", line: int, column: int) -> None:
        if offsets is None:
            return
        code = state.text()
        at = offsets[line - 1] + column if line <= len(offsets) else len(source)
        if not source.startswith(code, at):
            # (the module's last statement: its code ends in a newline the text may lack)
            rest = source[at:]
            if not (code.startswith(rest) and code[len(rest):] in ("\n", "\r\n", "\r")):
                raise _StartMismatch

    def positioned(node: cst.CSTNode, line: int, column: int, stop: bool = False) -> Optional[tuple[int, int]]:
        """Where the statement's code ends; None when it stopped at its awaited nodes."""
        nodes_wanted = awaited.get(id(node)) if stop else None
        state = _Spans(module, set(nodes_wanted) if nodes_wanted else None)
        try:
            node._codegen(state)
        except _Done:
            check(state, line, column)
            table.add(state, line, column)
            return None
        except KeyError as error:
            # A RecursionError in code generation (an expression nested deeper than the
            # recursion limit) surfaces as KeyErrors from the syntactic bookkeeping, one per
            # frame it unwinds.
            cause: Optional[BaseException] = error
            while isinstance(cause, KeyError):
                cause = cause.__context__
            if isinstance(cause, RecursionError):
                raise RecursionError("code generation nested too deeply") from None
            raise
        check(state, line, column)
        return _line_column(state.offset, *table.add(state, line, column))

    if statements is None or any(statement is None for statement in statements):
        positioned(module, 1, 0)
        return table
    wanted = {id(statement) for statement in statements}
    if starts is None:
        starts = []
    nodes = (*module.header, *module.body)
    # Resume after the last statement whose start an earlier call found: every call would
    # otherwise generate the code of all statements before the ones it wants.
    skip = max(len(starts) - 1, 0)
    for index in range(skip):  # statements before that one: positioned from their starts
        if id(nodes[index]) in wanted:
            wanted.discard(id(nodes[index]))
            positioned(nodes[index], *starts[index], stop=True)
    line, column = starts[skip] if starts else (1, 0)
    for index in range(skip, len(nodes)):
        if not wanted:
            break
        node = nodes[index]
        if index == len(starts):
            starts.append((line, column))
        if id(node) in wanted:
            wanted.discard(id(node))
            end = positioned(node, line, column, stop=not wanted)
            if end is None:
                break
            line, column = end
            continue
        segments = _NEWLINE_RE.split(module.code_for_node(node))
        if len(segments) == 1:
            column += len(segments[0])
        else:
            line += len(segments) - 1
            column = len(segments[-1])
    return table


def bound_names(target: cst.CSTNode) -> list[str]:
    """Names bound by an assignment/loop target (`a`, `a, b`, `(a, [b, *c])`)."""
    if type(target) is cst.Name:
        return [target.value]
    if type(target) in (cst.Tuple, cst.List):
        names = []
        for element in target.elements:
            names.extend(bound_names(element.value))
        return names
    if type(target) is cst.StarredElement:
        return bound_names(target.value)
    return []


def target_key(target: cst.CSTNode) -> Optional[str]:
    """A binding key: `x` for a Name, `self.model` for an attribute chain."""
    return dotted_name(target)


def _collect_bindings(ctx: FileContext) -> dict[int, dict[str, list[Binding]]]:
    tables: dict[int, dict[str, list[Binding]]] = {}

    def add(scope: cst.CSTNode, target: cst.CSTNode, kind: str, value, node) -> None:
        keys = bound_names(target)
        if not keys:
            key = target_key(target)
            keys = [key] if key else []
        table = tables.setdefault(id(scope), {})
        order = ctx.order(node)
        for key in keys:
            table.setdefault(key, []).append(Binding(key, kind, value, node, order))

    for node, scope in ctx._binders:
        if type(node) is cst.Assign:
            for target in node.targets:
                add(scope, target.target, "assign", node.value, node)
        elif type(node) is cst.AnnAssign:
            add(scope, node.target, "annassign", node.value, node)
        elif type(node) is cst.AugAssign:
            add(scope, node.target, "augassign", node.value, node)
        elif type(node) is cst.For:
            add(scope, node.target, "for", node.iter, node)
        elif type(node) is cst.CompFor:
            add(scope, node.target, "comp", node.iter, node)
        elif type(node) is cst.WithItem:
            if node.asname is not None:
                add(scope, node.asname.name, "with", node.item, node)
        elif type(node) is cst.NamedExpr:
            # `(x := ...)` in a comprehension binds in the enclosing function: close enough.
            add(scope, node.target, "walrus", node.value, node)
        elif type(node) is cst.Param:
            add(scope, node.name, "param", node.default, node)
        elif type(node) in (cst.FunctionDef, cst.ClassDef):
            add(scope, node.name, "def", node, node)
        elif type(node) in (cst.Import, cst.ImportFrom):
            if type(node.names) is cst.ImportStar:
                continue
            for alias in node.names:
                bound = alias.asname.name if alias.asname is not None else alias.name
                if type(bound) is cst.Attribute:  # `import a.b` binds `a`
                    while type(bound) is cst.Attribute:
                        bound = bound.value
                add(scope, bound, "import", None, node)
    return tables
