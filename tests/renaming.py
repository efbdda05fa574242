"""Rename every identifier a file binds itself to an opaque name (`v1`, `v2`, ...), keeping what
the code does (issue 12, point 9): the findings of a linter that judges code by what it does must
not change.

Renamed: the names of assignment, augmented and annotated assignment targets, `for`/`with`/
comprehension targets, walrus targets, function and lambda parameters, functions and classes,
`global`/`nonlocal` names, `except ... as e`, match captures; and, at the call sites of the file's
own functions and classes, the keyword arguments that name a renamed parameter.

Kept: imported names, attributes (`self.model` keeps `model`), names bound directly in a class
body (they are attributes too: `def forward`, dataclass fields), dunder names, names the file uses
but never binds (builtins, star imports), keyword names at calls of anything not defined in the
file. Kept as well, to stay correct where the file can reach a name in ways the renamer cannot
follow: a parameter name passed as a keyword to a call the renamer cannot resolve (`obj.f(lr=1)`
may reach the file's `def f(self, lr)`), a name used in a string annotation, and, in a file that
reflects on names (`getattr`, `globals()`, `eval`, `**mapping` into its own code, ...), every name
that also appears as a string, and in a file that reaches itself through `sys.modules`, every
name that also appears as an attribute (`lib.f`).

One mapping per distinct name across the file: every binding of a renamed name gets the same new
name, and a use is renamed exactly when Python resolves it to one of the file's own bindings
(libcst's scope analysis), so no two names ever merge and builtins stay builtins. New names skip
every identifier the file keeps, and are numbered in order of first binding, so renaming a renamed
file changes nothing."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional, Union

import libcst as cst
from libcst.metadata import (
    Access,
    Assignment,
    BuiltinAssignment,
    ClassScope,
    ComprehensionScope,
    ImportAssignment,
    MetadataWrapper,
    PositionProvider,
    Scope,
    ScopeProvider,
)

NEW_NAME = "v{}"
DUNDER = re.compile(r"^__\w*__$")
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")
# Calls through which a file can reach its own names by string.
REFLECTION = frozenset({
    "getattr", "setattr", "hasattr", "delattr", "globals", "locals", "vars", "eval", "exec",
    "__import__",
})

FunctionLike = Union[cst.FunctionDef, cst.Lambda]


@dataclass
class Renaming:
    """The result of renaming one source text."""

    source: str
    renamed: str
    mapping: dict[str, str]  # old name -> new name
    kept: dict[str, str] = field(default_factory=dict)  # a name the file binds but keeps -> why
    # line -> sorted (new_start, new_end, old_start, old_end) of renamed identifiers (0-based cols)
    spans: dict[int, list[tuple[int, int, int, int]]] = field(default_factory=dict)

    def original_column(self, line: int, column: int) -> int:
        """Map a 1-based column of the renamed text (a finding's) back to the original text's
        column on the same line. A column inside a renamed identifier maps to the same offset
        inside the original identifier, clipped to its length."""
        spans = self.spans.get(line)
        if not spans:
            return column
        col = column - 1
        index = bisect.bisect_right([span[0] for span in spans], col) - 1
        if index < 0:
            return column
        new_start, new_end, old_start, old_end = spans[index]
        if col < new_end:
            return old_start + min(col - new_start, old_end - old_start - 1) + 1
        return col - new_end + old_end + 1


class _Facts:
    """What the renamer needs to know about a parsed module."""

    def __init__(self, wrapper: MetadataWrapper) -> None:
        self.module = wrapper.module
        self.scopes: dict[cst.CSTNode, Optional[Scope]] = wrapper.resolve(ScopeProvider)
        self.positions = wrapper.resolve(PositionProvider)
        self.all_scopes: list[Scope] = []
        seen: set[int] = set()
        for scope in self.scopes.values():
            if scope is not None and id(scope) not in seen:
                seen.add(id(scope))
                self.all_scopes.append(scope)
        self.access_of: dict[int, Access] = {}  # id(Name node) -> its access
        for scope in self.all_scopes:
            for access in scope.accesses:
                self.access_of[id(access.node)] = access


def _binding_names(assignment: Assignment) -> list[cst.Name]:
    """The Name node(s) spelling a binding, or [] when the binding has no renamable spelling."""
    node = assignment.node
    if isinstance(node, cst.Name):
        return [node]
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return [node.name]
    if isinstance(node, cst.Param):
        return [node.name]
    return []


def _access_names(access: Access) -> set[str]:
    """The name a use spells (for a string annotation: the names it resolves to)."""
    if isinstance(access.node, cst.Name):
        return {access.node.value}
    return {referent.name for referent in access.referents}


def _keyword_params(function: FunctionLike) -> set[str]:
    """Parameter names a call can pass by keyword."""
    params = function.params
    names = [p.name.value for p in list(params.params) + list(params.kwonly_params)]
    return set(names)


class _Collector(cst.CSTVisitor):
    """Pre-order list of nodes the renamer looks at (the walk order numbers the new names)."""

    def __init__(self) -> None:
        self.calls: list[cst.Call] = []
        self.attributes: list[cst.Attribute] = []
        self.walrus_targets: set[int] = set()
        self.attribute_names: set[int] = set()  # ids of Names that are not variables
        self.functions: list[FunctionLike] = []
        self.name_items: list[cst.NameItem] = []
        self.captures: list[cst.Name] = []  # match captures
        self.strings: set[str] = set()
        self.identifiers: set[str] = set()
        self.names_in_order: list[cst.Name] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.identifiers.add(node.value)
        self.names_in_order.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.attributes.append(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.functions.append(node)

    def visit_Global(self, node: cst.Global) -> None:
        self.name_items.extend(node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.name_items.extend(node.names)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self.captures.append(node.name)

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        if node.name is not None:
            self.captures.append(node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        if isinstance(node.target, cst.Name):
            self.walrus_targets.add(id(node.target))

    def visit_MatchKeywordElement(self, node: cst.MatchKeywordElement) -> None:
        self.attribute_names.add(id(node.key))  # `case Point(x=px)`: x is an attribute

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
        if node.rest is not None:
            self.captures.append(node.rest)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        try:
            value = node.evaluated_value
        except Exception:  # noqa: BLE001 - odd literals are not names
            return
        if isinstance(value, str) and IDENTIFIER.match(value):
            self.strings.add(value)


def _callee_root(node: cst.BaseExpression) -> Optional[cst.Name]:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node if isinstance(node, cst.Name) else None


class _Planner:
    """Decides which names to rename and which Name nodes spell them."""

    def __init__(self, facts: _Facts, collected: _Collector) -> None:
        self.facts = facts
        self.collected = collected
        self.kept: dict[str, str] = {}
        self.candidates: dict[str, list[cst.Name]] = {}  # name -> its bindings' spellings
        self.param_names: set[str] = set()
        self.renamed_keywords: list[cst.Name] = []  # keywords naming an own parameter
        self.star_into_own = False  # a `**mapping` may reach the file's own parameters

    def keep(self, name: str, why: str) -> None:
        self.kept.setdefault(name, why)

    def plan(self) -> tuple[dict[str, list[cst.Name]], dict[int, str], list[str]]:
        facts = self.facts
        # Bindings libcst's scopes miss (match captures, walrus targets in comprehensions):
        # name -> the scopes they bind in.
        extra_scopes: dict[str, list[Scope]] = {}
        for scope in facts.all_scopes:
            for assignment in scope.assignments:
                name = assignment.name
                if isinstance(assignment, BuiltinAssignment):
                    continue
                if isinstance(assignment, ImportAssignment):
                    self.keep(name, "imported")
                    continue
                if DUNDER.match(name):
                    self.keep(name, "dunder")
                    continue
                if isinstance(scope, ClassScope):
                    self.keep(name, "bound in a class body (an attribute)")
                    continue
                spellings = _binding_names(assignment)
                if not spellings:
                    self.keep(name, f"bound by {type(assignment.node).__name__}")
                    continue
                for spelling in spellings:
                    if spelling.value != name:
                        self.keep(name, "binding spelled differently")
                        continue
                    self.candidates.setdefault(name, []).append(spelling)
                    if id(spelling) in self.collected.walrus_targets and isinstance(
                        scope, ComprehensionScope
                    ):
                        # `[... if (k := j)]` binds k in the enclosing function (PEP 572);
                        # libcst's scopes keep it in the comprehension.
                        outer = scope
                        while isinstance(outer, ComprehensionScope) and outer.parent is not outer:
                            outer = outer.parent
                        extra_scopes.setdefault(name, []).append(outer)
                if isinstance(assignment.node, cst.Param):
                    self.param_names.add(name)
        for capture in self.collected.captures:
            name = capture.value
            if DUNDER.match(name):
                self.keep(name, "dunder")
                continue
            scope = facts.scopes.get(capture)
            if isinstance(scope, ClassScope):
                self.keep(name, "bound in a class body (an attribute)")
                continue
            self.candidates.setdefault(name, []).append(capture)
            if scope is not None:
                extra_scopes.setdefault(name, []).append(scope)

        uses: dict[str, list[cst.Name]] = {}
        for scope in facts.all_scopes:
            for access in scope.accesses:
                names = _access_names(access) & set(self.candidates)
                if not names or id(access.node) in self.collected.attribute_names:
                    continue
                if not isinstance(access.node, cst.Name):
                    for name in names:
                        self.keep(name, "used inside a string annotation")
                    continue
                name = names.pop()
                referents = list(access.referents)
                own = [r for r in referents
                       if not isinstance(r, (BuiltinAssignment, ImportAssignment))]
                if not own:
                    # A builtin or an unbound name, unless a binding libcst misses is here.
                    if not self._bound_here(access, name, extra_scopes.get(name, ())):
                        continue
                elif len(own) != len(referents):
                    self.keep(name, "a use resolves both to the file and elsewhere")
                    continue
                uses.setdefault(name, []).append(access.node)

        self._keywords()
        self._reflection()

        renamed = {name: spellings for name, spellings in self.candidates.items()
                   if name not in self.kept}
        spelled: dict[int, str] = {}
        for name, spellings in renamed.items():
            for node in spellings + uses.get(name, []):
                spelled[id(node)] = name
        for item in self.collected.name_items:
            if item.name.value in renamed:
                spelled[id(item.name)] = item.name.value
        for keyword in self.renamed_keywords:
            if keyword.value in renamed:
                spelled[id(keyword)] = keyword.value
        # Order of first spelling in a pre-order walk: positions-free, so stable under renaming.
        order: list[str] = []
        seen: set[str] = set()
        for node in self.collected.names_in_order:
            name = spelled.get(id(node))
            if name is not None and name not in seen:
                seen.add(name)
                order.append(name)
        return renamed, spelled, order

    def _bound_here(self, access: Access, name: str, scopes: Iterable[Scope]) -> bool:
        """Whether a use libcst left unresolved is one of the file's bindings after all: a
        binding libcst misses (`scopes`), or one it records in a scope of the use's lexical
        chain but did not link (uses inside a walrus in a nested comprehension)."""
        scope = access.scope
        targets = {id(s) for s in scopes}
        first = True
        while scope is not None:
            if first or not isinstance(scope, ClassScope):  # class bodies do not enclose
                if id(scope) in targets:
                    return True
                if name in scope.assignments:
                    found = list(scope.assignments[name])
                    if any(isinstance(a, (BuiltinAssignment, ImportAssignment)) for a in found):
                        return False
                    if found:
                        return True
            first = False
            parent = scope.parent
            if parent is scope:
                break
            scope = parent
        return False

    # -- keyword arguments -------------------------------------------------------------

    def _resolve_callee(self, func: cst.BaseExpression):
        """("own", [functions]) for the file's own functions, and classes with an __init__;
        ("external", None) for imports and builtins and attributes of them; ("class", None) for
        an own class without its own __init__; ("unknown", None) otherwise."""
        facts = self.facts
        if isinstance(func, cst.Name):
            access = facts.access_of.get(id(func))
            if access is None or not access.referents:
                return "unknown", None
            referents = list(access.referents)
            if all(isinstance(r, (BuiltinAssignment, ImportAssignment)) for r in referents):
                return "external", None
            functions: list[FunctionLike] = []
            for referent in referents:
                node = referent.node
                if isinstance(referent, (BuiltinAssignment, ImportAssignment)):
                    return "unknown", None
                if isinstance(node, cst.FunctionDef):
                    functions.append(node)
                elif isinstance(node, cst.ClassDef):
                    init = _own_init(node)
                    if init is None:
                        return "class", None
                    functions.append(init)
                else:
                    return "unknown", None
            return "own", functions
        if isinstance(func, cst.Attribute):
            root = _callee_root(func)
            if root is not None:
                access = facts.access_of.get(id(root))
                if access is not None and access.referents and all(
                    isinstance(r, ImportAssignment) for r in access.referents
                ):
                    return "external", None
        return "unknown", None

    def _escaped(self) -> tuple[list[FunctionLike], dict[str, list[cst.FunctionDef]]]:
        """The file's functions a call the renamer cannot resolve may reach: lambdas, functions
        and classes used as values (not only called by name), methods read as attributes
        without a call; and the file's methods by name."""
        facts, collected = self.facts, self.collected
        callees = {id(call.func) for call in collected.calls}
        methods: dict[str, list[cst.FunctionDef]] = {}
        for function in collected.functions:
            if isinstance(function, cst.FunctionDef) and isinstance(
                facts.scopes.get(function), ClassScope
            ):
                methods.setdefault(function.name.value, []).append(function)
        escaped: list[FunctionLike] = [f for f in collected.functions if isinstance(f, cst.Lambda)]
        for scope in facts.all_scopes:
            for access in scope.accesses:
                if id(access.node) in callees:
                    continue
                for referent in access.referents:
                    if isinstance(referent, (BuiltinAssignment, ImportAssignment)):
                        continue
                    if isinstance(referent.node, cst.FunctionDef):
                        escaped.append(referent.node)
                    elif isinstance(referent.node, cst.ClassDef):
                        escaped.extend(_class_methods(referent.node))
        for attribute in collected.attributes:
            if id(attribute) not in callees:
                escaped.extend(methods.get(attribute.attr.value, ()))
        return escaped, methods

    def _keywords(self) -> None:
        escaped, methods = self._escaped()
        inits = methods.get("__init__", [])
        instance_calls = methods.get("__call__", []) + methods.get("forward", [])
        for call in self.collected.calls:
            keywords = [arg.keyword for arg in call.args if arg.keyword is not None]
            double_star = any(arg.star == "**" for arg in call.args)
            kind, functions = self._resolve_callee(call.func)
            if kind == "external":
                if not any(isinstance(arg.value, cst.Name) and self._is_own_value(arg.value)
                           for arg in call.args):
                    continue
                # The file's value may be a function: partial(own, k=1), checkpoint(own, x, k=1).
                kind = "unknown"
            if kind == "own":
                self.star_into_own |= double_star
                accepted = [_keyword_params(f) for f in functions]
                for keyword in keywords:
                    takes = [keyword.value in names for names in accepted]
                    if all(takes):
                        self.renamed_keywords.append(keyword)
                    elif any(takes):
                        self.keep(keyword.value, "keyword at a call of several definitions")
                continue
            if kind == "class":
                reach = escaped + inits
            elif isinstance(call.func, cst.Attribute):
                reach = escaped + methods.get(call.func.attr.value, [])
            else:
                reach = escaped + instance_calls
            if not reach:
                continue
            self.star_into_own |= double_star
            accepted_anywhere = set().union(*(_keyword_params(f) for f in reach))
            for keyword in keywords:
                if keyword.value in accepted_anywhere:
                    self.keep(keyword.value, "keyword at a call the renamer cannot resolve")

    def _is_own_value(self, name: cst.Name) -> bool:
        access = self.facts.access_of.get(id(name))
        return access is not None and any(
            not isinstance(r, (BuiltinAssignment, ImportAssignment)) for r in access.referents
        )

    def _reflection(self) -> None:
        reflective = self.star_into_own
        for call in self.collected.calls:
            if isinstance(call.func, cst.Name) and call.func.value in REFLECTION:
                reflective = True
        self_module = any(  # `lib = sys.modules[__name__]`: `lib.f` reaches the file's own `f`
            isinstance(a.value, cst.Name) and a.value.value == "sys" and a.attr.value == "modules"
            for a in self.collected.attributes)
        if self_module:
            for attribute in self.collected.attributes:
                if attribute.attr.value in self.candidates:
                    self.keep(attribute.attr.value, "also an attribute in a file that reaches itself")
        if not reflective:
            return
        for name in self.collected.strings:
            if name in self.candidates:
                self.keep(name, "also a string in a file that reflects on names")
        for call in self.collected.calls:  # dict(lr=...) builds string keys as well
            if isinstance(call.func, cst.Name) and call.func.value == "dict":
                for arg in call.args:
                    if arg.keyword is not None and arg.keyword.value in self.candidates:
                        self.keep(arg.keyword.value, "a dict key in a file that reflects on names")


def _class_methods(node: cst.ClassDef) -> list[cst.FunctionDef]:
    body = node.body
    statements = body.body if isinstance(body, cst.IndentedBlock) else ()
    return [statement for statement in statements if isinstance(statement, cst.FunctionDef)]


def _own_init(node: cst.ClassDef) -> Optional[cst.FunctionDef]:
    for method in _class_methods(node):
        if method.name.value == "__init__":
            return method
    return None


class _Renamer(cst.CSTTransformer):
    def __init__(self, spelled: dict[int, str], mapping: dict[str, str]) -> None:
        self.spelled = spelled
        self.mapping = mapping

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        name = self.spelled.get(id(original_node))
        if name is None:
            return updated_node
        return updated_node.with_changes(value=self.mapping[name])


def rename_module(module: cst.Module, source: Optional[str] = None,
                  keep: Iterable[str] = ()) -> Renaming:
    """Rename `module`; names in `keep` are never renamed (bench/rename.py --keep self)."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    facts = _Facts(wrapper)
    collected = _Collector()
    module.visit(collected)
    planner = _Planner(facts, collected)
    for name in keep:
        planner.keep(name, "asked to keep it")
    renamed, spelled, order = planner.plan()

    # Strings too: `globals()["v1"]` must not start finding a renamed variable.
    taken = (set(collected.identifiers) | collected.strings) - set(renamed)
    for scope in facts.all_scopes:  # names the file binds but keeps (imports, attributes)
        for assignment in scope.assignments:
            if assignment.name not in renamed:
                taken.add(assignment.name)
    mapping: dict[str, str] = {}
    number = 0
    for name in order:
        number += 1
        while NEW_NAME.format(number) in taken:
            number += 1
        mapping[name] = NEW_NAME.format(number)

    new_module = module.visit(_Renamer(spelled, mapping))
    spans: dict[int, list[tuple[int, int, int, int]]] = {}
    by_line: dict[int, list[tuple[int, int, int]]] = {}
    for node in collected.names_in_order:
        name = spelled.get(id(node))
        if name is None:
            continue
        position = facts.positions[node].start
        by_line.setdefault(position.line, []).append(
            (position.column, len(name), len(mapping[name])))
    for line, items in by_line.items():
        shift = 0
        rows = []
        for old_start, old_len, new_len in sorted(items):
            new_start = old_start + shift
            rows.append((new_start, new_start + new_len, old_start, old_start + old_len))
            shift += new_len - old_len
        spans[line] = rows
    kept = {name: why for name, why in planner.kept.items() if name in planner.candidates}
    return Renaming(
        source=source if source is not None else module.code,
        renamed=new_module.code,
        mapping=mapping,
        kept=kept,
        spans=spans,
    )


def rename_source(source: str, keep: Iterable[str] = ()) -> Renaming:
    return rename_module(cst.parse_module(source), source, keep)


# -- findings before and after (tests/test_rename.py, bench/rename.py) ---------------------------

Key = tuple[str, int, int]  # (code, line, column) in the original file's coordinates


def findings_before_after(path: str, source: str, rules,
                          keep: Iterable[str] = ()) -> tuple[set[Key], set[Key], Renaming]:
    """Lint `source` and its renaming with `rules`; the renamed file's findings are mapped back
    to the original's columns (renaming changes identifier lengths, never lines)."""
    from devicelint.engine import lint_source

    renaming = rename_source(source, keep)
    before = {(f.code, f.line, f.column) for f in lint_source(path, source, rules).findings}
    after = {
        (f.code, f.line, renaming.original_column(f.line, f.column))
        for f in lint_source(path, renaming.renamed, rules).findings
    }
    return before, after, renaming


def default_rules():
    from devicelint.engine import enabled_rules
    from devicelint.rule import all_rules

    return enabled_rules([code for code, rule in all_rules().items() if rule.default_enabled])
