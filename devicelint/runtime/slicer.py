"""The backward slice behind snippet mode (runtime/snippets.py): which statements of a block
produce the values one target statement uses. Works on libcst statements by what they read,
bind and change in place; torch-free, and it runs nothing.

`Slicer(target, contains).block(statements, needed)` walks a block backwards from the target
and keeps a statement when it binds or changes a name still needed, or holds the target. Loops
are sliced to a fixed point (an iteration may need what the one before computed); the `if` and
`try` arms that hold the target are taken unconditionally (their statements replace them); a
`with` stays with its context managers. `substitute(statement, needed)` may replace a kept
statement (snippets.py puts synthesized values in place of data read from outside), `keep`
keeps statements for their effect alone (starting the CUDA driver).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.context import bound_names
from devicelint.names import dotted_name


# -- names a statement reads, binds and changes -----------------------------------------------

def walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _target_names(node: cst.CSTNode) -> set[str]:
    """Names bound anywhere inside `node` (assignment, loop, with and comprehension targets,
    walrus, parameters, defs, imports)."""
    names: set[str] = set()
    for sub in walk(node):
        if isinstance(sub, cst.Assign):
            for target in sub.targets:
                names.update(bound_names(target.target))
        elif isinstance(sub, (cst.AnnAssign, cst.AugAssign)):
            names.update(bound_names(sub.target))
        elif isinstance(sub, (cst.For, cst.CompFor)):
            names.update(bound_names(sub.target))
        elif isinstance(sub, cst.WithItem) and sub.asname is not None:
            names.update(bound_names(sub.asname.name))
        elif isinstance(sub, cst.NamedExpr):
            names.update(bound_names(sub.target))
        elif isinstance(sub, cst.Param):
            names.add(sub.name.value)
        elif isinstance(sub, (cst.FunctionDef, cst.ClassDef)):
            names.add(sub.name.value)
        elif isinstance(sub, (cst.Import, cst.ImportFrom)):
            names.update(import_names(sub))
    return names


def import_names(node) -> set[str]:
    if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
        return set()
    names = set()
    for alias in node.names:
        if alias.asname is not None:
            names.update(bound_names(alias.asname.name))
        else:
            names.add((dotted_name(alias.name) or "").split(".")[0])
    return names


def names_in(node: cst.CSTNode) -> set[str]:
    """Every plain name read in `node`: not attribute names nor keyword argument names."""
    skip: set[int] = set()
    names: set[str] = set()
    for sub in walk(node):
        if isinstance(sub, cst.Attribute):
            skip.add(id(sub.attr))
        elif isinstance(sub, cst.Arg) and sub.keyword is not None:
            skip.add(id(sub.keyword))
        elif isinstance(sub, (cst.Import, cst.ImportFrom)):
            for inner in walk(sub):  # an import binds names; it reads none
                skip.add(id(inner))
        elif isinstance(sub, cst.Name) and id(sub) not in skip:
            names.add(sub.value)
    # Names that comprehensions and lambdas bind for themselves are not read from outside.
    local = set()
    for sub in walk(node):
        if isinstance(sub, cst.CompFor):
            local.update(bound_names(sub.target))
        elif isinstance(sub, cst.Lambda):
            local.update(p.name.value for p in params_of(sub.params))
    return names - local


def params_of(params: cst.Parameters) -> list:
    found = [*params.posonly_params, *params.params, *params.kwonly_params]
    for extra in (params.star_arg, params.star_kwarg):
        if isinstance(extra, cst.Param):
            found.append(extra)
    return found


def reads(statement: cst.CSTNode) -> set[str]:
    """The names a statement needs from before it. A `def`/`class` needs its free names
    (read when it is called: over-approximated as every name it does not bind itself)."""
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        return names_in(statement) - _target_names(statement) | {
            name for d in statement.decorators for name in names_in(d)}
    if isinstance(statement, (cst.Import, cst.ImportFrom)):
        return set()
    names = names_in(statement)
    # A plain name that is only assigned is not read (`x = f(y)` reads y, not x).
    pure_targets: set[str] = set()
    for small in _small_statements(statement):
        if isinstance(small, cst.Assign):
            for target in small.targets:
                pure_targets.update(bound_names(target.target))
        elif isinstance(small, cst.AnnAssign):
            pure_targets.update(bound_names(small.target))
    if isinstance(statement, cst.For):
        pure_targets.update(bound_names(statement.target))
    still_read = set()
    for small in _small_statements(statement):
        if isinstance(small, cst.Assign):
            still_read |= names_in(small.value)
            for target in small.targets:
                if not isinstance(target.target, (cst.Name, cst.Tuple, cst.List)):
                    still_read |= names_in(target.target)
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            still_read |= names_in(small.value)
    if isinstance(statement, cst.For):
        still_read |= names_in(statement.iter)
    return (names - pure_targets) | (names & still_read) if pure_targets else names


def _small_statements(statement):
    if isinstance(statement, cst.SimpleStatementLine):
        return list(statement.body)
    return [statement]


def binds(statement: cst.CSTNode) -> set[str]:
    """Names this statement (re)binds in its own scope."""
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        return {statement.name.value}
    if isinstance(statement, (cst.Import, cst.ImportFrom)):
        return import_names(statement)
    names: set[str] = set()
    for small in _small_statements(statement):
        if isinstance(small, (cst.Import, cst.ImportFrom)):
            names |= import_names(small)
        elif isinstance(small, cst.Assign):
            for target in small.targets:
                names.update(bound_names(target.target))
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            names.update(bound_names(small.target))
    if isinstance(statement, cst.For):
        names.update(bound_names(statement.target))
    if isinstance(statement, cst.With):
        for item in statement.items:
            if item.asname is not None:
                names.update(bound_names(item.asname.name))
    return names


def _root(node: cst.CSTNode) -> Optional[str]:
    """`model` of `model.fc.weight`, `xs` of `xs[0]`, `obj` of `obj.f(...)`."""
    while True:
        if isinstance(node, cst.Name):
            return node.value
        if isinstance(node, cst.Attribute):
            node = node.value
        elif isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call):
            node = node.func
        else:
            return None


def changes(statement: cst.CSTNode) -> set[str]:
    """Names whose object this statement changes in place: `model.to(d)`, `xs.append(v)`,
    `x[i] = v`, `self.w = v`, `x += 1` on a subscript."""
    names: set[str] = set()
    for small in _small_statements(statement):
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                and isinstance(small.value.func, cst.Attribute):
            root = _root(small.value.func.value)
            if root:
                names.add(root)
        elif isinstance(small, cst.Assign):
            for target in small.targets:
                if isinstance(target.target, (cst.Attribute, cst.Subscript)):
                    root = _root(target.target)
                    if root:
                        names.add(root)
        elif isinstance(small, (cst.AugAssign, cst.AnnAssign)) \
                and isinstance(small.target, (cst.Attribute, cst.Subscript)):
            root = _root(small.target)
            if root:
                names.add(root)
    return names


def _exits(statement: cst.CSTNode) -> bool:
    """A `break` or `return` that ends the loop this statement sits in (not one of a nested
    loop or function)."""
    stack = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Break, cst.Return)):
            return True
        if node is not statement and isinstance(
                node, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(node.children)
    return False


def _backward(statement: cst.CSTNode) -> bool:
    """`loss.backward()` (or `scaler.scale(loss).backward()`): it writes every `.grad`."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    return any(isinstance(s, cst.Expr) and isinstance(s.value, cst.Call)
               and isinstance(s.value.func, cst.Attribute)
               and s.value.func.attr.value == "backward" for s in statement.body)


def _super_init(statement: cst.CSTNode) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            func = small.value.func
            if isinstance(func, cst.Attribute) and func.attr.value == "__init__":
                return True
    return False


# -- the slicer -------------------------------------------------------------------------------

class Slicer:
    """Backward slice of a block of statements towards one target statement."""

    def __init__(self, target: cst.CSTNode, contains, substitute=None, keep=None,
                 timing: bool = False) -> None:
        self.target = target
        self.contains = contains          # node -> whether the target is inside it
        self.substitute = substitute or (lambda statement, needed: None)
        self.keep = keep or (lambda statement: False)  # kept for its effect on the device
        # The line takes a timestamp: what it measures is all the work queued before it.
        self.timing = timing
        # The line reads gradients: the `.backward()` calls before it produce them.
        self.grads = any(isinstance(n, cst.Attribute) and n.attr.value == "grad"
                         for n in walk(target))

    def block(self, statements, needed: set[str], in_loop: bool = False):
        """(kept statements, names needed before the block)."""
        kept = []
        needed = set(needed)
        after = any(s is self.target or self.contains(s) for s in statements)
        for statement in reversed(list(statements)):
            if statement is self.target or self.contains(statement):
                after = False
            if statement is self.target:
                new, needed = self.statement_itself(statement, needed)
                kept[:0] = new
                continue
            if self.contains(statement):
                new, needed = self.around(statement, needed)
                kept[:0] = new
                continue
            relevant = (_deep(statement, binds) & needed) or (
                _deep(statement, changes) & needed) or (
                in_loop and _exits(statement)) or _super_init(statement) or (
                (self.keep(statement) or self.timing) and (in_loop or not after)) or (
                self.grads and _backward(statement))
            if not relevant:
                continue
            replaced = self.substitute(statement, needed)
            if replaced is not None:
                new_statements, used = replaced
                needed = (needed - binds(statement)) | used
                kept[:0] = new_statements if isinstance(new_statements, list) else [new_statements]
                continue
            new, needed = self.relevant(statement, needed, in_loop)
            kept[:0] = new
        return kept, needed

    def statement_itself(self, statement, needed):
        if isinstance(statement, (cst.For, cst.While)):
            # a flagged loop header: the loop and what its test depends on
            return self.loop(statement, needed, whole_body=True)
        if isinstance(statement, cst.BaseCompoundStatement) and not isinstance(
                statement, (cst.FunctionDef, cst.ClassDef)):
            return [statement], needed | _exposed([statement])
        return [statement], (needed - binds(statement)) | reads(statement)

    def relevant(self, statement, needed, in_loop):
        if isinstance(statement, (cst.For, cst.While)):
            return self.loop(statement, needed)
        if isinstance(statement, cst.If):
            body, need_body = self.block(block_of(statement.body), needed, in_loop)
            orelse = statement.orelse
            new_orelse, need_else = None, set(needed)
            if isinstance(orelse, cst.If):
                parts, need_else = self.relevant(orelse, needed, in_loop)
                new_orelse = parts[0] if parts else None
            elif isinstance(orelse, cst.Else):
                else_body, need_else = self.block(block_of(orelse.body), needed, in_loop)
                if else_body:
                    new_orelse = orelse.with_changes(body=_suite(orelse.body, else_body))
            if not body and new_orelse is None:
                return [], needed
            new = statement.with_changes(body=_suite(statement.body, body or [pass_statement()]),
                                         orelse=new_orelse)
            return [new], need_body | need_else | names_in(statement.test)
        if isinstance(statement, cst.With):
            body, need = self.block(block_of(statement.body), needed, in_loop)
            if not body:
                return [], needed
            items = set().union(*(names_in(item.item) for item in statement.items))
            return [statement.with_changes(body=_suite(statement.body, body))], \
                (need - binds(statement)) | items
        if isinstance(statement, cst.Try):
            body, need = self.block(block_of(statement.body), needed, in_loop)
            return body, need
        # simple statements, defs, classes: whole
        return [statement], (needed - binds(statement)) | reads(statement)

    def loop(self, statement, needed, whole_body=False):
        """A loop kept for what its body computes: sliced to a fixed point (what one
        iteration needs may be computed by the one before)."""
        header = names_in(statement.iter) if isinstance(statement, cst.For) else \
            names_in(statement.test)
        carried = set(needed) | header
        body: list = []
        for _ in range(10):
            body, need_body = self.block(block_of(statement.body), carried, in_loop=True)
            if need_body <= carried:
                break
            carried |= need_body
        if not body and not whole_body and not self.contains(statement):
            return [], needed
        new = statement.with_changes(body=_suite(statement.body, body or [pass_statement()]),
                                     orelse=None)
        loop_binds = binds(statement) if isinstance(statement, cst.For) else set()
        return [new], needed | (carried - loop_binds) | header

    def around(self, statement, needed):
        """A compound statement that holds the target."""
        if isinstance(statement, (cst.For, cst.While)):
            return self.loop(statement, needed)
        if isinstance(statement, cst.If):
            # the arm that holds the target, taken unconditionally
            arm = statement
            while True:
                if self.contains(arm.body):
                    return self.block(block_of(arm.body), needed)
                orelse = arm.orelse
                if isinstance(orelse, cst.If):
                    arm = orelse
                    continue
                return self.block(block_of(orelse.body), needed)
        if isinstance(statement, cst.Try):
            for part in [statement.body, *(h.body for h in statement.handlers),
                         *([statement.orelse.body] if statement.orelse else []),
                         *([statement.finalbody.body] if statement.finalbody else [])]:
                if self.contains(part):
                    return self.block(block_of(part), needed)
        if isinstance(statement, cst.With):
            body, need = self.block(block_of(statement.body), needed)
            items = set().union(*(names_in(item.item) for item in statement.items))
            return [statement.with_changes(body=_suite(statement.body, body or [pass_statement()]))], \
                (need - binds(statement)) | items
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            return [statement], (needed - binds(statement)) | reads(statement)
        body = getattr(statement, "body", None)
        if body is not None:
            return self.block(block_of(body), needed)
        return [statement], needed | reads(statement)


def is_compound(statement) -> bool:
    return isinstance(statement, cst.BaseCompoundStatement) and not isinstance(
        statement, (cst.FunctionDef, cst.ClassDef))


def _header(statement) -> set[str]:
    """Names a compound statement's header reads (test, iterable, context managers)."""
    if isinstance(statement, (cst.If, cst.While)):
        return names_in(statement.test)
    if isinstance(statement, cst.For):
        return names_in(statement.iter)
    if isinstance(statement, cst.With):
        return set().union(*(names_in(item.item) for item in statement.items))
    return set()


def _deep(statement, facts) -> set[str]:
    """`facts` (binds or changes) of a statement and, for a compound one, of every statement
    in its blocks (not in nested functions or classes)."""
    found = set(facts(statement))
    if is_compound(statement):
        for part in blocks_of(statement):
            for inner in block_of(part):
                found |= _deep(inner, facts)
    return found


def _exposed(statements) -> set[str]:
    """Names the statements read before binding them, all statements kept."""
    needed: set[str] = set()
    for statement in reversed(list(statements)):
        if is_compound(statement):
            inner = set()
            for part in blocks_of(statement):
                inner |= _exposed(block_of(part))
            needed |= inner | _header(statement)
            if isinstance(statement, cst.For):
                needed -= set(bound_names(statement.target)) - names_in(statement.iter)
        else:
            needed = (needed - binds(statement)) | reads(statement)
    return needed


def block_of(suite) -> list:
    return list(suite.body) if isinstance(suite, cst.IndentedBlock) else [
        cst.SimpleStatementLine(body=list(suite.body))]


def _suite(original, statements):
    if isinstance(original, cst.IndentedBlock):
        return original.with_changes(body=statements)
    return cst.IndentedBlock(body=statements)


def pass_statement():
    return cst.SimpleStatementLine(body=[cst.Pass()])


def blocks_of(node) -> list:
    parts = []
    body = getattr(node, "body", None)
    if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)):
        parts.append(body)
    orelse = getattr(node, "orelse", None)
    if isinstance(orelse, cst.If):
        parts.extend(blocks_of(orelse))
    elif orelse is not None and hasattr(orelse, "body"):
        parts.append(orelse.body)
    for handler in getattr(node, "handlers", ()) or ():
        parts.append(handler.body)
    final = getattr(node, "finalbody", None)
    if final is not None:
        parts.append(final.body)
    return parts
