"""Bindings and reaching definitions, per scope, as Python runs the code.

For every name a scope reads, the model knows which bindings may reach that read: both arms
of an if/else are joined, a loop's body sees the bindings from before the loop and those
made later in the loop body (loop-carried), `return`/`raise`/`break`/`continue` end a path,
`try` handlers see every binding of the try body. Comprehensions are scopes of their own;
`global`/`nonlocal` send a name to the module / the enclosing function.

The walk is structured (no explicit control-flow graph): one pass per statement list, two
passes per loop body, which is enough for reaching definitions (a binding set only grows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

import libcst as cst

COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)
# Methods that change a module in place (and return it), so that a statement of them rebinds
# the receiver for what follows.
IN_PLACE_MODULE_METHODS = ("to", "cuda", "cpu", "half", "float", "double", "bfloat16", "eval",
                            "train", "requires_grad_")
FUNCTIONS = (cst.FunctionDef, cst.Lambda)


def _concrete_subclasses(base: type) -> frozenset:
    """The classes under `base` that no class derives from: those the parser makes (and
    the classes libcst's slots decorator replaced), all defined when libcst is imported.
    For exact type tests instead of isinstance(), which costs a Python-level ABC check for
    every miss."""
    found, stack = set(), [base]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if not cls.__subclasses__():
            found.add(cls)
    return frozenset(found)


_SMALL_STATEMENTS = _concrete_subclasses(cst.BaseSmallStatement)
# Expressions _expr does more with than reading the names inside.
_SPECIAL_EXPRESSIONS = frozenset((cst.NamedExpr, cst.Lambda, cst.Yield, cst.Await) + COMPREHENSIONS)
_NESTED_SCOPES = frozenset((cst.FunctionDef, cst.ClassDef, cst.Lambda) + COMPREHENSIONS)


@dataclass(frozen=True, eq=False)
class Def:
    """One binding of `name`.

    `value` is the expression the binding takes its value from (the right-hand side, a loop's
    iterable, a with-item, a parameter's default); `path` says which part of it when the
    target unpacks (`a, (b, c) = ...` binds `c` with path (1, 1)); `-1` marks a starred
    target's part."""

    name: str
    kind: str  # assign annassign augassign for comp with walrus param import def class except effect del global
    node: cst.CSTNode
    value: Optional[cst.BaseExpression] = None
    path: tuple[int, ...] = ()
    scope: Optional[cst.CSTNode] = None
    prior: frozenset = field(default=frozenset())  # for `effect`/`augassign`: what reached before

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Def({self.name!r}, {self.kind}, path={self.path})"


State = dict  # name -> frozenset[Def]; None means "this path does not continue"


def _join(a: Optional[State], b: Optional[State]) -> Optional[State]:
    if a is None:
        return None if b is None else dict(b)
    if b is None:
        return dict(a)
    out = dict(a)
    for name, defs in b.items():
        mine = out.get(name)
        # The same set on both paths (most names): kept, not copied by a union.
        out[name] = defs if mine is None or mine is defs else (mine | defs)
    return out


def target_parts(target: cst.CSTNode, path: tuple[int, ...] = ()) -> Iterable[tuple[cst.CSTNode, tuple[int, ...]]]:
    """(target node, unpacking path) for every part of an assignment target."""
    if type(target) in (cst.Tuple, cst.List):
        for index, element in enumerate(target.elements):
            if type(element) is cst.StarredElement:
                yield from target_parts(element.value, path + (-1,))
            else:
                yield from target_parts(element.value, path + (index,))
    elif type(target) is cst.StarredElement:
        yield from target_parts(target.value, path + (-1,))
    else:
        yield target, path


class ScopeFlow:
    """Reaching definitions for the reads of one scope (module, function, lambda, class body
    or comprehension)."""

    def __init__(self, model, scope: cst.CSTNode) -> None:
        self.model = model
        self.scope = scope
        self.reaching = model.reaching             # id(Name read) -> defs (shared by all scopes)
        self.all_defs: dict[str, list[Def]] = {}   # every binding in this scope, by name
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()
        self.end_state: Optional[State] = None
        self.returns: list[cst.Return] = []
        self.yields = False
        self._loop_exits: list[list] = []
        self._memo: dict[tuple, Def] = {}   # per enclosing loop: [break states, continue states]
        self._declarations(scope)
        self._run()

    # -- setup -------------------------------------------------------------------------
    def _declarations(self, scope: cst.CSTNode) -> None:
        # The file's `global`/`nonlocal` statements, found once by the model (a walk of
        # every scope's body for them cost more than the flow itself on model code).
        for node in self.model.declarations(scope):
            names = {n.name.value for n in node.names}
            (self.globals if type(node) is cst.Global else self.nonlocals).update(names)

    def _define(self, state: State, d: Def) -> None:
        # A loop body is walked twice: the same binding must be the same Def both times.
        key = (id(d.node), d.name, d.path, d.kind)
        known = self._memo.get(key)
        if known is not None:
            if d.prior and not known.prior >= d.prior:
                old = known
                known = Def(d.name, d.kind, d.node, d.value, d.path, d.scope, old.prior | d.prior)
                self._memo[key] = known
                self.all_defs[d.name] = [known if x is old else x for x in self.all_defs[d.name]]
            state[d.name] = frozenset((known,))
            return
        self._memo[key] = d
        if d.name in self.globals or d.name in self.nonlocals:
            # The binding lands in another scope; reads here still see it in order.
            self.model.foreign_defs.setdefault(d.name, []).append(d)
        self.all_defs.setdefault(d.name, []).append(d)
        state[d.name] = frozenset((d,))

    def _run(self) -> None:
        scope = self.scope
        state: State = {}
        if type(scope) in FUNCTIONS:
            params = scope.params
            for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                self._define(state, Def(param.name.value, "param", param, param.default, scope=scope))
            for star in (params.star_arg, params.star_kwarg):
                if type(star) is cst.Param:
                    self._define(state, Def(star.name.value, "param", star, None, scope=scope))
            if type(scope) is cst.Lambda:
                state = {**self.model.function_entry_state.get(id(scope), {}), **state}
                self._expr(scope.body, state)
                self.end_state = state
                return
            body = scope.body
            statements = body.body if type(body) is cst.IndentedBlock else [body]
            self.end_state = self._block(statements, state)
        elif type(scope) in COMPREHENSIONS:
            state = dict(self.model.comprehension_entry_state.get(id(scope), {}))
            self.end_state = self._comprehension(scope, state)
        else:  # Module / ClassDef
            body = scope.body
            statements = body.body if type(body) is cst.IndentedBlock else (
                body if isinstance(body, (list, tuple)) else [body])
            self.end_state = self._block(statements, state)

    # -- statements --------------------------------------------------------------------
    def _block(self, statements, state: Optional[State]) -> Optional[State]:
        for statement in statements:
            if state is None:
                break  # unreachable code after return/raise/break/continue
            state = self._statement(statement, state)
        return state

    def _suite(self, suite, state: Optional[State]) -> Optional[State]:
        if state is None:
            return None
        if type(suite) is cst.IndentedBlock:
            return self._block(suite.body, state)
        if type(suite) is cst.SimpleStatementSuite:
            return self._block(suite.body, state)
        return self._block([suite], state)

    def _statement(self, node: cst.CSTNode, state: State) -> Optional[State]:
        if type(node) is cst.SimpleStatementLine:
            for small in node.body:
                if state is None:
                    return None
                state = self._small(small, state)
            return state
        if type(node) in _SMALL_STATEMENTS:
            return self._small(node, state)
        if type(node) is cst.If:
            self._expr(node.test, state)
            taken = self._suite(node.body, dict(state))
            if node.orelse is None:
                other = state
            elif type(node.orelse) is cst.If:
                other = self._statement(node.orelse, dict(state))
            else:
                other = self._suite(node.orelse.body, dict(state))
            return _join(taken, other)
        if type(node) is cst.For:
            self._expr(node.iter, state)
            return self._loop(node, state)
        if type(node) is cst.While:
            self._expr(node.test, state)
            return self._loop(node, state)
        if type(node) is cst.With:
            for item in node.items:
                self._expr(item.item, state)
                if item.asname is not None:
                    for target, path in target_parts(item.asname.name):
                        self._bind_target(target, state, Def("", "with", node, item.item, path, self.scope))
            return self._suite(node.body, state)
        if type(node) in (cst.Try, cst.TryStar):
            entry = dict(state)
            before = {name: len(defs) for name, defs in self.all_defs.items()}
            after_body = self._suite(node.body, dict(state))
            # A handler may start after any statement of the body: every binding the body
            # made may reach it, as may the state at entry.
            made: State = {}
            for name, defs in self.all_defs.items():
                new = defs[before.get(name, 0):]
                if new:
                    made[name] = frozenset(new)
            handler_entry = _join(entry, made)
            if node.orelse is not None:
                after_body = self._suite(node.orelse.body, after_body)
            result = after_body
            for handler in node.handlers:
                hstate = dict(handler_entry)
                if handler.type is not None:
                    self._expr(handler.type, hstate)
                if handler.name is not None and type(handler.name.name) is cst.Name:
                    self._define(hstate, Def(handler.name.name.value, "except", handler, handler.type, (), self.scope))
                result = _join(result, self._suite(handler.body, hstate))
            if node.finalbody is not None:
                fin_in = _join(result, handler_entry)
                fin_out = self._suite(node.finalbody.body, fin_in)
                return fin_out if result is not None else None
            return result
        if type(node) is cst.Match:
            self._expr(node.subject, state)
            result = None
            for case in node.cases:
                cstate = dict(state)
                for capture in self._captures(case.pattern):
                    self._define(cstate, Def(capture.value, "match", case, node.subject, (), self.scope))
                if case.guard is not None:
                    self._expr(case.guard, cstate)
                result = _join(result, self._suite(case.body, cstate))
            return _join(result, state)
        if type(node) is cst.FunctionDef:
            for decorator in node.decorators:
                self._expr(decorator.decorator, state)
            self._params_defaults(node.params, state)
            self._define(state, Def(node.name.value, "def", node, node, (), self.scope))
            return state
        if type(node) is cst.ClassDef:
            for decorator in node.decorators:
                self._expr(decorator.decorator, state)
            for arg in (*node.bases, *node.keywords):
                self._expr(arg.value, state)
            self.model.class_entry_state[id(node)] = dict(state)
            self._define(state, Def(node.name.value, "class", node, node, (), self.scope))
            return state
        return state

    def _params_defaults(self, params: cst.Parameters, state: State) -> None:
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.default is not None:
                self._expr(param.default, state)

    def _captures(self, pattern) -> list[cst.Name]:
        found = []
        stack = [pattern]
        while stack:
            node = stack.pop()
            if type(node) is cst.MatchAs and node.name is not None:
                found.append(node.name)
            if type(node) is cst.MatchStar and node.name is not None:
                found.append(node.name)
            if type(node) is cst.MatchMapping and node.rest is not None:
                found.append(node.rest)
            if type(node) is cst.MatchValue:
                continue
            stack.extend(self.model.children(node))
        return found

    def _loop(self, node, state: State) -> Optional[State]:
        entry = dict(state)
        exits: list = [[], []]
        self._loop_exits.append(exits)
        head = dict(entry)
        body_end: Optional[State] = None
        for _ in range(2):  # the second pass sees loop-carried bindings
            exits[0].clear()
            exits[1].clear()
            start = dict(head)
            if type(node) is cst.For:
                for target, path in target_parts(node.target):
                    self._bind_target(target, start, Def("", "for", node, node.iter, path, self.scope))
            else:
                self._expr(node.test, start)
            body_end = self._suite(node.body, start)
            back = body_end
            for cont in exits[1]:
                back = _join(back, cont)
            if back is None:
                break
            new_head = _join(head, back)
            if new_head == head:
                break
            head = new_head
        self._loop_exits.pop()
        # After the loop: the loop may run zero times, or end normally, or break.
        after = _join(head, body_end)
        if node.orelse is not None:
            after = self._suite(node.orelse.body, after)
        for broken in exits[0]:
            after = _join(after, broken)
        return after

    def _small(self, node: cst.CSTNode, state: State) -> Optional[State]:
        if type(node) is cst.Assign:
            self._expr(node.value, state)
            self._effect(node.value, state, assigned=node)
            for target in node.targets:
                for part, path in target_parts(target.target):
                    self._bind_target(part, state, Def("", "assign", node, node.value, path, self.scope))
            return state
        if type(node) is cst.AnnAssign:
            if node.value is not None:
                self._expr(node.value, state)
            self._expr(node.annotation.annotation, state)
            self._bind_target(node.target, state, Def("", "annassign", node, node.value, (), self.scope))
            return state
        if type(node) is cst.AugAssign:
            self._expr(node.value, state)
            self._expr(node.target, state)
            if type(node.target) is cst.Name:
                prior = state.get(node.target.value, frozenset())
                self._define(state, Def(node.target.value, "augassign", node, node.value, (), self.scope, prior))
            else:
                self._bind_target(node.target, state, Def("", "augassign", node, node.value, (), self.scope))
            return state
        if type(node) is cst.Expr:
            self._expr(node.value, state)
            self._effect(node.value, state)
            return state
        if type(node) is cst.Return:
            if node.value is not None:
                self._expr(node.value, state)
            self.returns.append(node)
            return None
        if type(node) is cst.Raise:
            if node.exc is not None:
                self._expr(node.exc, state)
            return None
        if type(node) is cst.Break:
            if self._loop_exits:
                self._loop_exits[-1][0].append(dict(state))
            return None
        if type(node) is cst.Continue:
            if self._loop_exits:
                self._loop_exits[-1][1].append(dict(state))
            return None
        if type(node) in (cst.Import, cst.ImportFrom):
            if type(node.names) is cst.ImportStar:
                return state
            for alias in node.names:
                bound = alias.asname.name if alias.asname is not None else alias.name
                while type(bound) is cst.Attribute:
                    bound = bound.value
                if type(bound) is cst.Name:
                    self._define(state, Def(bound.value, "import", node, None, (), self.scope))
            return state
        if type(node) is cst.Del:
            return state
        if type(node) is cst.Assert:
            self._expr(node.test, state)
            return state
        for child in self.model.children(node):
            self._expr(child, state)
        return state

    def _effect(self, value: cst.BaseExpression, state: State, assigned: Optional[cst.Assign] = None) -> None:
        """`model.to(device)` / `model.cuda()` as a statement moves a module in place: record
        it as a binding that refines the receiver's previous value. So does `m =
        model.to(device)` (`assigned`: nn.Module.to returns the module itself, so `model`
        is moved too); as a tensor's `.to` returns a copy, the model keeps such a binding only
        where the receiver was a module (`SemanticModel.defs`)."""
        if not (type(value) is cst.Call and type(value.func) is cst.Attribute):
            return
        receiver = value.func.value
        while type(receiver) is cst.Call and type(receiver.func) is cst.Attribute \
                and receiver.func.attr.value in IN_PLACE_MODULE_METHODS:
            receiver = receiver.func.value  # `model.eval().to(device)`, `model.to(device).half()`
        if type(receiver) is cst.Name and value.func.attr.value in IN_PLACE_MODULE_METHODS:
            prior = state.get(receiver.value, frozenset())
            if assigned is not None and any(isinstance(part, cst.Name) and part.value == receiver.value
                                            for target in assigned.targets
                                            for part, _path in target_parts(target.target)):
                return  # `model = model.to(device)`: the assignment itself rebinds the name
            if prior:
                at = assigned if assigned is not None else value
                self._define(state, Def(receiver.value, "effect", at, value, (), self.scope, prior))
        elif assigned is not None:
            return
        elif type(receiver) is cst.Attribute and value.func.attr.value in IN_PLACE_MODULE_METHODS:
            # `self.D.to(self.device)` in a method: the object `self.D` holds changes place
            # for the class's other methods (devicelint.semantic.modules.attribute_moves).
            self.model.record_attribute_move(self.scope, receiver, value)

    def _bind_target(self, target: cst.CSTNode, state: State, template: Def) -> None:
        if type(target) is cst.Name:
            self._define(state, Def(target.value, template.kind, template.node, template.value,
                                    template.path, self.scope))
        elif type(target) is cst.Attribute:
            self._expr(target.value, state)
            self.model.record_attribute_binding(self.scope, target, template)
        elif type(target) is cst.Subscript:
            self._expr(target, state)
        else:
            self._expr(target, state)

    # -- expressions -------------------------------------------------------------------
    def _expr(self, node: cst.CSTNode, state: State) -> None:
        """Record the reaching bindings of every name read in `node`, evaluating walrus
        targets in order; nested scopes are analysed on their own.

        The nodes are read in source order from the slice of the file's node list that
        holds `node`'s sub-tree (FileContext.span), jumping over the sub-trees analysed
        apart; `_expr_walk` does the same by a walk, for a node outside the index."""
        kind = type(node)
        if kind is cst.Name:
            defs = state.get(node.value)
            if defs is not None:
                self.reaching[id(node)] = defs
            return
        ctx = self.model.ctx
        span = ctx.span(node)
        if span is None:
            self._expr_walk(node, state)
            return
        index, end = span
        nodes = ctx.nodes
        reaching = self.reaching
        not_read: set[int] = set()  # attribute names and keywords: no reads of a name
        while index < end:
            current = nodes[index]
            kind = type(current)
            # Exact type tests: isinstance() against libcst's ABC-based classes costs a
            # Python-level __instancecheck__ for every miss, and this loop sees every node.
            if kind is cst.Name:
                if id(current) not in not_read:
                    defs = state.get(current.value)
                    if defs is not None:
                        reaching[id(current)] = defs
            elif kind is cst.Attribute:
                not_read.add(id(current.attr))
            elif kind is cst.Arg:
                if current.keyword is not None:
                    not_read.add(id(current.keyword))
            elif kind in _SPECIAL_EXPRESSIONS and self._special(current, state):
                index = ctx.end(index)  # analysed apart: its sub-tree is not read here
                continue
            index += 1

    def _special(self, current: cst.CSTNode, state: State) -> bool:
        """What _expr does at a walrus, comprehension, lambda, yield or await; True when
        the names inside are not read in the current scope (or are read by this call)."""
        if type(current) is cst.NamedExpr:
            self._expr(current.value, state)
            if type(current.target) is cst.Name:
                self._define(state, Def(current.target.value, "walrus", current, current.value, (), self.scope))
            return True
        if isinstance(current, COMPREHENSIONS):
            # The first iterable is evaluated here; the rest in the comprehension's scope.
            self._expr(current.for_in.iter, state)
            self.model.comprehension_entry_state[id(current)] = dict(state)
            return True
        if type(current) is cst.Lambda:
            self._params_defaults(current.params, state)
            self.model.function_entry_state[id(current)] = dict(state)
            return True
        if type(current) is cst.Yield:
            self.yields = True
        return False

    def _expr_walk(self, node: cst.CSTNode, state: State) -> None:
        """_expr by a walk of the tree, for a node the file's index does not hold."""
        stack = [node]
        while stack:
            current = stack.pop()
            # Exact type tests: isinstance() against libcst's ABC-based classes costs a
            # Python-level __instancecheck__ for every miss, and this loop sees every node.
            kind = type(current)
            if kind is cst.Name:
                defs = state.get(current.value)
                if defs is not None:
                    self.reaching[id(current)] = defs
                continue
            if kind is cst.Attribute:
                stack.append(current.value)  # the attribute name itself is not a read
                continue
            if kind is cst.Arg:
                stack.append(current.value)  # keyword names are not reads
                continue
            if kind in _SPECIAL_EXPRESSIONS and self._special(current, state):
                continue
            stack.extend(reversed(self.model.children(current)))

    def _comprehension(self, comp, state: State) -> State:
        clause = comp.for_in
        first = True
        while clause is not None:
            if not first:
                self._expr(clause.iter, state)
            first = False
            for target, path in target_parts(clause.target):
                self._bind_target(target, state, Def("", "comp", clause, clause.iter, path, self.scope))
            for condition in clause.ifs:
                self._expr(condition.test, state)
            clause = clause.inner_for_in
        if type(comp) is cst.DictComp:
            self._expr(comp.key, state)
            self._expr(comp.value, state)
        else:
            self._expr(comp.elt, state)
        return state
