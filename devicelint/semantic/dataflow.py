"""Data flow inside a region of code (usually a loop): what a value is computed from, whether
an expression computes the same thing on every iteration, and what changes a variable in place.

    from devicelint.semantic import dataflow
    for node, d in dataflow.data_nodes(sem, expr, loop):   # expr's data, through bindings in loop
        ...
    dataflow.invariant(sem, expr, loop)                    # same value on every iteration?
    dataflow.changes(sem, name, loop)                      # in-place changes of that variable

A value's *data* is what its elements are computed from, not its metadata: `x.shape`,
`len(x)`, `x.size(0)`, `x.dtype` and the size arguments of factories (`torch.zeros(n)`) read
no element of `x`. Reads are followed through the bindings that reach them from inside the
region (assignments, loop and comprehension targets), to a bounded depth.
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterator, Optional

import libcst as cst

from devicelint.gate import MAY_COPY_WORDS, lines_matching, on_lines
from devicelint.names import call_arg, dotted_name, int_value, keyword_arg
from devicelint.semantic.flow import COMPREHENSIONS, Def
from devicelint.semantic.values import Kind, Place
from devicelint.source import line_starts

# Attributes that describe a tensor without reading its elements.
METADATA_ATTRS = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout",
                            "requires_grad", "is_leaf", "names"})
# Builtins that read only an object's identity, type or length.
METADATA_BUILTINS = frozenset({"len", "isinstance", "type", "id", "hasattr", "callable"})
# Factories whose arguments are sizes, not data (`torch.zeros(n, d)`; `*_like` read the shape).
_DATA_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray", "torch.from_numpy",
                             "torch.normal", "torch.bernoulli"})
# Calls that give a different value on every call, however constant their arguments.
RANDOM = frozenset({"torch.rand", "torch.randn", "torch.randint", "torch.randperm", "torch.normal",
                    "torch.bernoulli", "torch.multinomial", "torch.rand_like", "torch.randn_like",
                    "torch.randint_like", "torch.empty", "torch.empty_like", "torch.empty_strided"})
# Methods that change their receiver (besides in-place tensor methods ending in `_`).
_MUTATING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault",
                               "remove", "pop", "clear", "discard", "popitem", "sort", "reverse",
                               "put", "fill", "resize", "setflags", "itemset"})
# NumPy functions that write into an argument.
_NUMPY_WRITERS = frozenset({"numpy.copyto", "numpy.random.shuffle", "numpy.put", "numpy.place",
                            "numpy.putmask", "numpy.fill_diagonal", "numpy.put_along_axis"})
# Values whose in-place changes put data into them.
_CONTAINERS = frozenset({Kind.SEQUENCE, Kind.MAPPING, Kind.ARRAY, Kind.TENSOR})
# Values nothing can change in place.
_IMMUTABLE = frozenset({Kind.NUMBER, Kind.BOOL, Kind.STRING, Kind.NONE, Kind.DEVICE, Kind.DTYPE})
# Methods that return a moved or converted copy and leave their arguments alone.
_MOVES = frozenset({"to", "cuda", "cpu", "type", "type_as"})
# Builtins that build a value from their arguments without changing them.
_PURE_BUILTINS = frozenset({"float", "int", "bool", "complex", "str", "list", "tuple", "dict",
                            "set", "frozenset", "len", "range", "abs", "min", "max", "sum",
                            "round", "sorted", "reversed", "enumerate", "zip", "isinstance", "ord"})

Follow = Callable[[cst.Name, Def], bool]


def within(sem, node: cst.CSTNode, region: cst.CSTNode) -> bool:
    """`node` is `region` or inside it."""
    current: Optional[cst.CSTNode] = node
    while current is not None:
        if current is region:
            return True
        current = sem.parent(current)
    return False


def _builtin(sem, func: cst.BaseExpression, names: frozenset) -> Optional[str]:
    """The builtin a call names (`len`), unless the file binds that name."""
    if isinstance(func, cst.Name) and func.value in names and not sem.defs(func):
        return func.value
    return None


def is_metadata_read(sem, node: cst.CSTNode) -> bool:
    """`x.shape`, `x.dtype`, `len(x)`, `x.size(0)`, `x.dim()`: reads no element of `x`."""
    if isinstance(node, cst.Attribute):
        return node.attr.value in METADATA_ATTRS
    if isinstance(node, cst.Call):
        if _builtin(sem, node.func, METADATA_BUILTINS):
            return True
        if isinstance(node.func, cst.Attribute):
            spec = sem.api.method(node.func.attr.value)
            return spec is not None and spec.result == "number" and spec.place == "cpu" and not spec.syncs
    return False


def reads_only_metadata(sem, use: cst.Name) -> bool:
    """The read `use` looks at no element of the value: `x.shape`, `len(x)`, `x.size(0)`,
    or an identity test (`x is None`, `x is not None`)."""
    parent = sem.parent(use)
    if isinstance(parent, cst.Attribute) and parent.value is use:
        outer = sem.parent(parent)
        if isinstance(outer, cst.Call) and outer.func is parent:
            return is_metadata_read(sem, outer)
        return is_metadata_read(sem, parent)
    if isinstance(parent, cst.Arg) and parent.keyword is None:
        call = sem.parent(parent)
        return isinstance(call, cst.Call) and bool(_builtin(sem, call.func, METADATA_BUILTINS))
    if isinstance(parent, cst.ComparisonTarget):
        parent = sem.parent(parent)
    if isinstance(parent, cst.Comparison):
        return all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in parent.comparisons)
    return False


def unpacked_keyword(sem, mapping: cst.BaseExpression, key: str) -> tuple[bool, Optional[cst.BaseExpression]]:
    """What `**mapping` passes as `key=`: (True, the value) or (True, None) when it passes
    none, if `mapping` is a name whose every binding is a dict display with string keys and
    no `**`, read nowhere but in `**` arguments (nothing adds a key later); (False, None)
    when the code does not say (`DataLoader(ds, **train_params)` with `train_params =
    {'batch_size': 8, 'shuffle': True}` passes no `pin_memory`)."""
    if not isinstance(mapping, cst.Name):
        return False, None
    defs = sem.defs(mapping)
    found: Optional[cst.BaseExpression] = None
    if not defs:
        return False, None
    for d in defs:
        if d.kind != "assign" or d.path or not isinstance(d.value, cst.Dict):
            return False, None
        for element in d.value.elements:
            if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
                return False, None
            if element.key.evaluated_value == key:
                if len(defs) > 1:
                    return False, None
                found = element.value
        for use in uses(sem, d):
            arg = sem.parent(use)
            if not (isinstance(arg, cst.Arg) and arg.star == "**" and arg.value is use):
                return False, None
    return True, found


def size_factory(sem, call: cst.Call) -> Optional[str]:
    """The qualified name of a factory whose arguments are sizes (`torch.zeros(n)`,
    `torch.arange(n)`, `torch.ones_like(x)`), else None."""
    qual = sem.qualname(call.func)
    if qual is None or qual in _DATA_FACTORIES or qual.rsplit(".", 1)[-1].endswith("Tensor"):
        return None
    spec = sem.api.function(qual)
    if spec is None:
        return None
    if spec.place == "factory" or spec.rank == "like":
        return qual
    return None


@dataclass(frozen=True)
class DataToDevice:
    """`torch.tensor(data, device=d)`: `data` copied to the device `d` by the factory
    `qualname` (a `[copies] data_to_device` entry of the API table); `named` when `d` is
    taken for a device from its name only (a parameter called `device`)."""

    data: cst.BaseExpression
    device: cst.BaseExpression
    qualname: str
    named: bool


def data_to_device(sem, call: cst.Call) -> Optional[DataToDevice]:
    """The host data a factory call copies to the device in one go (`torch.tensor(rows,
    device=dev)`, `torch.as_tensor(x, device="cuda")`), else None: not such a factory, no
    data argument, or a `device=` that is not the accelerator (the CPU, unknown)."""
    found = _factory_copy(sem, call)
    if found is None:
        return None
    data, device, qual = found
    place, named = sem.device_place(device)
    if place is not Place.DEVICE:
        return None
    return DataToDevice(data, device, qual, named)


def _factory_copy(sem, call: cst.Call) -> Optional[tuple[cst.BaseExpression, cst.BaseExpression, str]]:
    """(data, the `device=` argument, the factory) of a `[copies] data_to_device` factory call
    given data and a device, wherever the device is; else None."""
    func = call.func
    if not isinstance(func, (cst.Name, cst.Attribute)) or any(arg.star for arg in call.args):
        return None
    device = keyword_arg(call, "device")
    if device is None:
        return None
    # Not shadowed; through the file's aliases (`tensor = torch.tensor`) and, with the project
    # index, a module's own (d2l's `d2l.tensor`, `d2l = sys.modules[__name__]`).
    qual = sem.qualname(func) or sem.resolved_qualname(func)
    if qual not in sem.api.data_to_device:
        return None
    data = call_arg(call, 0, "data")
    return (data, device, qual) if data is not None else None


def data_nodes(sem, expr: cst.CSTNode, region: cst.CSTNode, depth: int = 4,
               follow: Optional[Follow] = None,
               through_changes: bool = False) -> Iterator[tuple[cst.CSTNode, Optional[Def]]]:
    """Every expression `expr`'s data is computed from, and the bindings inside `region`
    that its reads reach: yields `(node, None)` for the nodes of `expr` (and of the bound
    values followed), and `(name, def)` for each binding of a read name made inside
    `region`. Bindings made in `region` are followed into their values (an assignment's
    right-hand side, a loop's iterable) up to `depth` bindings deep, unless
    `follow(name, def)` says no. With `through_changes`, what `region` puts into a list,
    dict, array or tensor in place is followed too (`xs.append(v)`, `xs[i] = v`: `v`; not
    the arguments of methods of objects of unknown kind). Metadata reads,
    size arguments, lambdas and nested functions are not entered."""
    seen: set[int] = set()
    stack: list[tuple[cst.CSTNode, int]] = [(expr, 0)]
    while stack:
        node, level = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if type(node) in (cst.Lambda, cst.FunctionDef, cst.ClassDef):
            continue
        if is_metadata_read(sem, node):
            continue
        yield node, None
        if isinstance(node, cst.Name):
            for d in sem.defs(node):
                if d.node is None or not within(sem, d.node, region):
                    continue
                yield node, d
                if level >= depth or d.value is None or d.kind in ("param", "import", "def", "class"):
                    continue
                if follow is not None and not follow(node, d):
                    continue
                stack.append((_zipped_part(sem, d), level + 1))
            if through_changes and level < depth and _fillable(sem, node, region):
                for kind, change in changes(sem, node, region):
                    if kind == "method" and isinstance(change, cst.Call):
                        stack.extend((arg.value, level + 1) for arg in change.args)
                    elif kind == "store":
                        owner = sem.parent(change)
                        while owner is not None and not isinstance(owner, (cst.Assign, cst.AugAssign)):
                            owner = sem.parent(owner)
                        if owner is not None:
                            stack.append((owner.value, level + 1))
            continue
        if isinstance(node, cst.Attribute):
            stack.append((node.value, level))
            continue
        if isinstance(node, cst.Call):
            if size_factory(sem, node) is not None:
                continue
            if isinstance(node.func, cst.Attribute):
                stack.append((node.func.value, level))
            for arg in node.args:
                stack.append((arg.value, level))
            continue
        if isinstance(node, COMPREHENSIONS):
            clause = node.for_in
            while clause is not None:
                stack.append((clause.iter, level))
                for condition in clause.ifs:
                    stack.append((condition.test, level))
                clause = clause.inner_for_in
            if isinstance(node, cst.DictComp):
                stack.append((node.key, level))
                stack.append((node.value, level))
            else:
                stack.append((node.elt, level))
            continue
        for child in reversed(sem.children(node)):
            stack.append((child, level))


def _zipped_part(sem, d: Def) -> cst.BaseExpression:
    """What a loop target's part is computed from: for `for a, b in zip(xs, ys)` the `a`
    of it comes from `xs` alone (the argument at its position); else the binding's value."""
    value = d.value
    if d.kind in ("for", "comp") and d.path and isinstance(value, cst.Call) \
            and _builtin(sem, value.func, frozenset({"zip"})) and 0 <= d.path[0] < len(value.args) \
            and not any(arg.star or arg.keyword is not None for arg in value.args):
        return value.args[d.path[0]].value
    return value  # type: ignore[return-value]


# List methods that add their arguments to the list (`xs.append(v)`).
_LIST_ADDS = frozenset({"append", "extend", "insert"})


def _fillable(sem, name: cst.Name, region: cst.CSTNode) -> bool:
    """What `region` puts into `name` in place is its data: a list, dict, array or tensor,
    or an object of unknown kind that `region` only grows with list methods (`inputs =
    vocab.lookup_indices(...)` then `inputs.append(token)`: a list by what is done to it)."""
    kind = sem.value(name).kind
    if kind in _CONTAINERS:
        return True
    if kind is not Kind.UNKNOWN:
        return False
    grown = False
    for other in _names_in(sem, region, name.value):
        if not _same_variable(sem, name, other):
            continue
        parent = sem.parent(other)
        if isinstance(parent, cst.Attribute) and parent.value is other:
            if parent.attr.value not in _LIST_ADDS:
                return False  # any other method may change it in ways not followed
            grown = True
        elif isinstance(parent, cst.Arg) and parent.value is other:
            call = sem.parent(parent)
            if not isinstance(call, cst.Call) or not _pure_call(sem, call):
                return False  # handed to a call that may change it
    return grown


# List methods that reorder or remove what the list holds, adding nothing.
_LIST_KEEPS = frozenset({"pop", "remove", "clear", "sort", "reverse", "index", "count", "copy"})


def list_additions(sem, d: Def) -> Optional[tuple[list, list]]:
    """What the code puts into the list that `d` binds empty (`res = []`, `res = list()`):
    `(values, iterables)`, the values it appends or inserts and the iterables it extends it
    with, wherever the variable bound by `d` is read. None when nothing is added, or the list
    is written another way (`res[i] = v`), aliased (`other = res`) or handed to a call that
    may change it (a function of the file that only reads the parameter it is passed as
    leaves it as it was): then what it holds is not shown."""
    if d.kind != "assign" or d.path or not _empty_list(sem, d.value):
        return None
    values: list = []
    iterables: list = []
    for other in _names_in(sem, d.scope if d.scope is not None else sem.ctx.module, d.name):
        if not any(reaching is d for reaching in sem.defs(other)):
            continue
        parent = sem.parent(other)
        if type(parent) is cst.Attribute and parent.value is other:
            call = sem.parent(parent)
            method = parent.attr.value
            given = [a.value for a in call.args if a.keyword is None and not a.star] \
                if isinstance(call, cst.Call) and call.func is parent else None
            if given is None or method not in _LIST_ADDS | _LIST_KEEPS:
                return None
            if method in ("append", "insert") and len(given) == (1 if method == "append" else 2):
                values.append(given[-1])
            elif method == "extend" and len(given) == 1:
                iterables.append(given[0])
            elif method in _LIST_ADDS:
                return None
        elif type(parent) is cst.Subscript and parent.value is other:
            if _is_store(sem, parent):
                return None
        elif isinstance(parent, cst.Arg) and parent.value is other:
            call = sem.parent(parent)
            if not isinstance(call, cst.Call) or not (_pure_call(sem, call) or _callee_leaves(sem, call, other)):
                return None
        elif type(parent) in (cst.Assign, cst.AnnAssign, cst.NamedExpr) and parent.value is other:
            return None
    return (values, iterables) if values or iterables else None


def _empty_list(sem, value: Optional[cst.BaseExpression]) -> bool:
    if isinstance(value, cst.List):
        return not value.elements
    return isinstance(value, cst.Call) and not value.args and _builtin(sem, value.func, frozenset({"list"})) is not None


def reads(sem, expr: cst.CSTNode) -> list[cst.Name]:
    """The names `expr` reads (nested lambdas and functions excluded; comprehension
    targets are bindings, not reads)."""
    found: list[cst.Name] = []
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(node, cst.Name):
            found.append(node)
            continue
        if isinstance(node, cst.Attribute):
            stack.append(node.value)
            continue
        if isinstance(node, cst.Arg):
            stack.append(node.value)
            continue
        if isinstance(node, cst.CompFor):
            stack.append(node.iter)
            stack.extend(c.test for c in node.ifs)
            if node.inner_for_in is not None:
                stack.append(node.inner_for_in)
            continue
        stack.extend(sem.children(node))
    return found


def _same_variable(sem, a: cst.Name, b: cst.Name) -> bool:
    if a.value != b.value:
        return False
    da, db = sem.defs(a), sem.defs(b)
    if not da and not db:
        return sem.scope_of(a) is sem.scope_of(b)
    return bool({id(d) for d in da} & {id(d) for d in db})


def changes(sem, name: cst.Name, region: cst.CSTNode) -> list[tuple[str, cst.CSTNode]]:
    """In-place changes, inside `region`, of the variable `name` reads: `(kind, node)` with
    kind `method` (`x.add_(1)`, `xs.append(v)`: node is the call), `store` (`x[i] = v`,
    `x.attr = v`, `del x[i]`: node is the target), `out` (`f(..., out=x)`: the call), or
    `escape` (passed to a call that may change it: the call). Rebinding the name is not a
    change of the value (see `sem.defs`)."""
    found: list[tuple[str, cst.CSTNode]] = []
    if sem.value(name).kind in _IMMUTABLE:
        return found
    for other in _names_in(sem, region, name.value):
        if not _same_variable(sem, name, other):
            continue
        parent = sem.parent(other)
        if type(parent) is cst.Attribute and parent.value is other:
            owner = sem.parent(parent)
            if isinstance(owner, cst.Call) and owner.func is parent:
                method = parent.attr.value
                if method in _VIEWS and sem.value(other).kind is Kind.TENSOR:
                    # `x.view(-1).index_add_(0, i, v)`: an in-place change of a view of `x`
                    # changes `x` (the view shares its storage)
                    method, owner = _through_views(sem, owner)
                    if method.endswith("_") and not method.startswith("_"):
                        found.append(("method", owner))
                    continue
                in_place = method.endswith("_") and not method.startswith("_")
                if in_place or (method in _MUTATING_METHODS
                                and sem.value(other).kind not in (Kind.TENSOR, Kind.MODULE)):
                    found.append(("method", owner))
                continue
            if _is_store(sem, parent):
                found.append(("store", parent))
            continue
        if type(parent) is cst.Subscript and parent.value is other:
            if _is_store(sem, parent):
                found.append(("store", parent))
            continue
        if isinstance(parent, cst.Arg) and parent.value is other:
            call = sem.parent(parent)
            if not isinstance(call, cst.Call):
                continue
            if parent.keyword is not None and parent.keyword.value == "out":
                found.append(("out", call))
            elif not _pure_call(sem, call) and not _callee_leaves(sem, call, other):
                found.append(("escape", call))
    return found


# Tensor methods whose result is a view of their receiver (shares its storage).
_VIEWS = frozenset({"view", "view_as", "t", "transpose", "permute", "narrow", "select",
                    "unsqueeze", "squeeze", "expand", "expand_as", "unfold", "diagonal",
                    "as_strided", "detach", "unflatten"})


def _through_views(sem, call: cst.Call) -> tuple[str, cst.Call]:
    """(the method, the call) of the first call in the chain `x.view(-1).t().add_(v)` (from
    the view `call` outwards) that is not itself a view method: `add_` and its call."""
    while True:
        up = sem.parent(call)
        if not isinstance(up, cst.Attribute) or up.value is not call:
            return "", call
        outer = sem.parent(up)
        if not isinstance(outer, cst.Call) or outer.func is not up:
            return "", call
        call = outer
        if up.attr.value not in _VIEWS:
            return up.attr.value, call


def _callee_leaves(sem, call: cst.Call, arg: cst.BaseExpression) -> bool:
    """`call` runs a function of this file that does not change in place the parameter
    `arg` is passed as (it only reads it, or hands it to calls that only read it)."""
    found = sem.syncs.callee(call)
    if found is None:
        return False
    function, bound = found
    name = next((n for n, args in bound.items() if any(a is arg for a in args)), None)
    if name is None:
        return False
    memo = sem.__dict__.setdefault("_callee_leaves", {})
    key = (id(function), name)
    if key not in memo:
        memo[key] = False  # a recursive call: taken to change it
        reads = [n for n in _names_in(sem, function.body, name)
                 if not _is_store(sem, n) and any(d.kind == "param" for d in sem.defs(n))]
        memo[key] = not reads or not changes(sem, reads[0], function)
    return memo[key]


def _names_in(sem, region: cst.CSTNode, text: str) -> list[cst.Name]:
    """The Names reading or binding `text` in `region` (itself included), in the order of a
    walk that takes a node's last child first: for Names, which hold no nodes, the reverse
    of source order. From the file's index where it holds `region` (one table of each
    name's nodes by order, cut by bisection), else by that walk."""
    if type(region) is cst.Name:
        return [region] if region.value == text else []
    ctx = sem.ctx
    span = ctx.span(region)
    if span is not None:
        table = ctx.names_by_text()
        entry = table.get(text)
        if entry is None:
            return []
        orders, named = entry
        first, stop = span
        found = named[bisect.bisect_left(orders, first):bisect.bisect_left(orders, stop)]
        found.reverse()
        return found
    found = []
    stack = [region]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            if node.value == text:
                found.append(node)
            continue
        stack.extend(sem.children(node))
    return found


def _is_store(sem, target: cst.CSTNode) -> bool:
    """`target` is written: an assignment or `del` target (or part of one)."""
    child = target
    parent = sem.parent(target)
    while type(parent) in (cst.Tuple, cst.List, cst.Element, cst.StarredElement):
        child, parent = parent, sem.parent(parent)
    if type(parent) is cst.AssignTarget:
        return True
    if type(parent) in (cst.AugAssign, cst.AnnAssign) and parent.target is child:
        return True
    if type(parent) is cst.Del:
        return True
    if type(parent) in (cst.For, cst.CompFor) and parent.target is child:
        return True
    return False


def _pure_call(sem, call: cst.Call) -> bool:
    """A call that leaves its arguments as they were: a builtin that only reads them, a
    PyTorch function or method from the API table (not an in-place one), a module, print."""
    if _builtin(sem, call.func, _PURE_BUILTINS | METADATA_BUILTINS | frozenset({"print"})):
        return True
    if type(call.func) is cst.Attribute:
        method = call.func.attr.value
        if method.endswith("_"):
            return False
        receiver = sem.value(call.func.value)
        if receiver.kind in (Kind.TENSOR, Kind.ARRAY, Kind.UNKNOWN) and method in _MOVES:
            return True
        if receiver.kind in (Kind.TENSOR, Kind.ARRAY) and sem.api.method(method) is not None:
            return True
        if receiver.kind is Kind.MODULE and method in _MOVES:
            return True
    qual = sem.qualname(call.func)
    if qual is not None and (sem.api.function(qual) is not None or qual in _DATA_FACTORIES
                             or qual.startswith("numpy.")) and qual not in _NUMPY_WRITERS:
        return True
    callee = sem.value(call.func)
    return callee.kind in (Kind.MODULE, Kind.MODULE_CLASS)


def invariant(sem, expr: cst.CSTNode, region: cst.CSTNode) -> bool:
    """`expr` computes the same value on every iteration of `region`: every name it reads is
    bound only outside `region` and not changed in place inside it (nor handed to a call
    that might change it), and it calls nothing but deterministic, side-effect-free
    functions (PyTorch's, from the API table, not random; builtins that only read). A
    read of an attribute (`self.table`) is invariant when nothing in `region` stores to
    it or calls a method on its owner that is not a module or a pure PyTorch method."""
    return _same_data(sem, expr, region, attribute_ok=lambda node: _attribute_invariant(sem, node, region))


def same_every_call(sem, expr: cst.CSTNode, function: cst.FunctionDef) -> bool:
    """`expr`, inside the method `function`, computes the same data on every call of it
    (as `invariant` does for a loop's iterations): it reads no parameter's data and no
    name bound in `function`; `self.x` only where the class binds `x` in `__init__` alone
    and no other method changes it in place; module-level names nothing in `function`
    changes; deterministic calls only. Index bounds may read sizes (`self.table[:, :x.shape[1]]`:
    a part of the same host table)."""
    owner = sem.parent(sem.parent(function))
    if not isinstance(owner, cst.ClassDef):
        return False
    params = function.params.posonly_params or function.params.params
    if not params:
        return False
    this = params[0].name.value

    def own_attribute(node: cst.Attribute) -> Optional[bool]:
        if isinstance(node.value, cst.Name) and node.value.value == this \
                and sem.defs(node.value) and all(d.kind == "param" for d in sem.defs(node.value)):
            return _set_once(sem, owner, node.attr.value)
        return None

    return _same_data(sem, expr, function, unbound_ok=False, own_attribute=own_attribute,
                      index_part=lambda part: not _size_only(sem, part))


def _same_data(sem, expr: cst.CSTNode, region: cst.CSTNode, *, unbound_ok: bool = True,
               own_attribute: Optional[Callable[[cst.Attribute], Optional[bool]]] = None,
               attribute_ok: Optional[Callable[[cst.Attribute], bool]] = None,
               index_part: Optional[Callable[[cst.CSTNode], bool]] = None) -> bool:
    """The walk `invariant` and `same_every_call` share: whether `expr` computes the same
    data each time `region` runs (names bound outside it and not changed in it,
    deterministic calls, no gradients or module state). They differ in the decisions
    passed in: `unbound_ok`, whether a name bound nowhere in the file (a builtin) is the
    same each time; `own_attribute(node)`, a verdict on an attribute read taken before the
    shared tests (None: none, go on); `attribute_ok(node)`, whether an attribute read stays
    the same, after them; `index_part(part)`, whether a part of an index is followed."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Lambda, cst.NamedExpr, cst.Yield, cst.Await) + COMPREHENSIONS):
            return False
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                continue
            defs = sem.defs(node)
            if not defs and not unbound_ok:
                return False  # (a parameter's data: `same_every_call`)
            if any(d.node is not None and within(sem, d.node, region) for d in defs):
                return False
            if defs and all(d.kind == "import" for d in defs):
                continue  # a module: `torch` in `torch.tensor(...)`
            if changes(sem, node, region):
                return False
            continue
        if isinstance(node, cst.Attribute):
            verdict = own_attribute(node) if own_attribute is not None else None
            if verdict is not None:
                if not verdict:
                    return False
                continue
            if node.attr.value in ("grad", "data") or sem.value(node.value).kind is Kind.MODULE:
                return False  # gradients, and parameters and buffers, change as a model trains
            if attribute_ok is not None and not attribute_ok(node):
                return False
            stack.append(node.value)
            continue
        if isinstance(node, cst.Call):
            if not _deterministic(sem, node):
                return False
            if isinstance(node.func, cst.Attribute):
                stack.append(node.func.value)
            stack.extend(arg.value for arg in node.args)
            continue
        if isinstance(node, cst.Subscript):
            stack.append(node.value)
            for element in node.slice:
                parts = sem.children(element.slice)
                stack.extend(parts if index_part is None else filter(index_part, parts))
            continue
        stack.extend(sem.children(node))
    return True


def _size_only(sem, node: cst.CSTNode) -> bool:
    """An index bound computed from sizes alone (`x.shape[1]`, `len(x)`, `n - 1`)."""
    if isinstance(node, (cst.Integer, cst.Colon, cst.Comma)) or is_metadata_read(sem, node):
        return True
    if isinstance(node, cst.Subscript):
        return _size_only(sem, node.value)
    if isinstance(node, (cst.BinaryOperation, cst.UnaryOperation)):
        return all(_size_only(sem, part) for part in sem.children(node)
                   if not isinstance(part, cst.BaseBinaryOp) and not isinstance(part, cst.BaseUnaryOp))
    return False


def _set_once(sem, owner: cst.ClassDef, attr: str) -> bool:
    """The class binds `self.<attr>` in `__init__` only, and no other method changes it in
    place (`self.t.add_()`, `self.t[i] = v`, `self.xs.append(v)`) or hands it to a call
    that may."""
    from devicelint.semantic import modules

    entries = modules.attribute_assignments(sem, owner).get(attr)
    if not entries:
        return False
    for target, _ in entries:
        method = sem.function_of(target)
        if method is None or method.name.value != "__init__":
            return False
    body = owner.body
    if not isinstance(body, cst.IndentedBlock):
        return False
    for method in body.body:
        if not isinstance(method, cst.FunctionDef) or method.name.value == "__init__":
            continue
        stack: list[cst.CSTNode] = [method.body]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Attribute) and current.attr.value == attr \
                    and isinstance(current.value, cst.Name) and _changed_here(sem, current):
                return False
            stack.extend(sem.children(current))
    return True


def _changed_here(sem, target: cst.Attribute) -> bool:
    """`target` (`self.x`) is written, changed in place, or handed to a call that may
    change it, at this read."""
    if _is_store(sem, target):
        return True
    parent = sem.parent(target)
    if isinstance(parent, cst.Subscript) and parent.value is target:
        return _is_store(sem, parent)
    if isinstance(parent, cst.Attribute) and parent.value is target:
        owner = sem.parent(parent)
        if isinstance(owner, cst.Call) and owner.func is parent:
            method = parent.attr.value
            return (method.endswith("_") and not method.startswith("_")) or (
                method in _MUTATING_METHODS and sem.value(target).kind not in (Kind.TENSOR, Kind.MODULE))
        return False
    if isinstance(parent, cst.Arg) and parent.value is target:
        call = sem.parent(parent)
        return isinstance(call, cst.Call) and (
            (parent.keyword is not None and parent.keyword.value == "out")
            or not _pure_call(sem, call) and not _callee_leaves(sem, call, target))
    return False


def _deterministic(sem, call: cst.Call) -> bool:
    if _builtin(sem, call.func, _PURE_BUILTINS | METADATA_BUILTINS):
        return True
    qual = sem.qualname(call.func)
    if qual is not None:
        if qual in RANDOM or qual.startswith(("numpy.random.", "random.")):
            return False
        return sem.api.function(qual) is not None or qual in _DATA_FACTORIES or qual.startswith("math.")
    if isinstance(call.func, cst.Attribute):
        method = call.func.attr.value
        if method.endswith("_") or sem.api.method(method) is None:
            return False
        if method in ("normal", "bernoulli", "multinomial", "uniform", "random", "exponential"):
            return False
        return sem.value(call.func.value).kind in (Kind.TENSOR, Kind.ARRAY)
    return False


def _attribute_invariant(sem, node: cst.Attribute, region: cst.CSTNode) -> bool:
    """No store to this attribute chain in `region`, and no call there of a method of its
    owner that could reassign it."""
    chain = dotted_name(node)
    if chain is None:
        return True  # `f().x`: the call decides
    stored, calls = _region_attributes(sem, region)
    if chain in stored:
        return False
    owner = dotted_name(node.value)
    memo = sem.__dict__.setdefault("_owner_changed", {})
    key = (id(region), owner)
    if key not in memo:
        memo[key] = any(sem.value(call.func).kind is not Kind.MODULE and not _pure_call(sem, call)
                        for call in calls.get(owner, ()))
    return not memo[key]


def _region_attributes(sem, region: cst.CSTNode) -> tuple[set[str], dict[str, list[cst.Call]]]:
    """The attribute chains `region` stores to, and its method calls by the chain of their
    receiver (`self.opt.step()`: `self.opt`), read once from the node index: a loop's
    invariance asks about each attribute it reads (a walk per attribute was quadratic in the
    loop's size: RepDistiller's train loop, a third of its lint)."""
    memo = sem.__dict__.setdefault("_region_attributes", {})
    found = memo.get(id(region))
    if found is None:
        stored: set[str] = set()
        calls: dict[str, list[cst.Call]] = {}
        for current in (region, *sem.ctx.descendants(region)):
            if type(current) is cst.Attribute:
                text = dotted_name(current)
                if text is not None and _is_store(sem, current):
                    stored.add(text)
            elif type(current) is cst.Call and type(current.func) is cst.Attribute:
                receiver = dotted_name(current.func.value)
                if receiver is not None:
                    calls.setdefault(receiver, []).append(current)
        found = memo[id(region)] = (region, stored, calls)  # (the region kept: its id stays its own)
    return found[1], found[2]


def uses(sem, d: Def) -> list[cst.Name]:
    """The reads of a name that binding `d` may reach (in its scope and in scopes nested in
    it), in source order; `d` itself excluded."""
    if d.node is None:
        return []
    scope = d.scope if d.scope is not None else sem.scope_of(d.node)
    found = []
    for name in _names_in(sem, scope, d.name):
        if _is_store(sem, name) or name is d.node or not _is_variable(sem, name):
            continue
        if any(other is d for other in sem.defs(name)):
            found.append(name)
    return sorted(found, key=sem.ctx.order)


def _is_variable(sem, name: cst.Name) -> bool:
    """`name` stands for a variable: not the attribute of `torch.zeros` (a variable `zeros`
    is not read there), a parameter's or a keyword argument's name."""
    parent = sem.parent(name)
    if isinstance(parent, cst.Attribute) and parent.attr is name:
        return False
    if isinstance(parent, cst.Param) and parent.name is name:
        return False
    return not (isinstance(parent, cst.Arg) and parent.keyword is name)


def number_store(sem, use: cst.Name) -> bool:
    """`use[index] = 1`: the read is the tensor an index assignment writes a number into.
    That writes the fill in place with no other data (the index picks positions: the same
    statement runs on a device tensor, `label2onehot`'s `out[rows, labels] = 1`), so a fill
    written that way is still one (DL007)."""
    subscript = sem.parent(use)
    if not (isinstance(subscript, cst.Subscript) and subscript.value is use):
        return False
    element = sem.parent(subscript)
    assign = sem.parent(element) if isinstance(element, cst.AssignTarget) else None
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1):
        return False
    value = assign.value
    while isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        value = value.expression
    return isinstance(value, (cst.Integer, cst.Float)) or sem.value(value).kind in (Kind.NUMBER, Kind.BOOL)


# Tensor methods whose result holds the receiver's data, converted, reshaped or refilled,
# and whose arguments are sizes, dtypes or scalars, never other tensors' data.
_FILL_KEEPING_METHODS = frozenset({
    "float", "half", "double", "bfloat16", "long", "int", "short", "bool", "byte", "char",
    "type", "view", "reshape", "unsqueeze", "squeeze", "repeat", "expand", "t", "transpose",
    "permute", "flatten", "contiguous", "clone", "detach", "narrow", "tril", "triu", "flip",
    "fill_", "zero_", "normal_", "uniform_", "random_", "exponential_", "bernoulli_",
    "requires_grad_", "unsqueeze_", "squeeze_", "t_", "transpose_", "fill_diagonal_",
})
# Elementwise math whose tensor arguments are data: fresh when every one of them is.
_FILL_MATH = frozenset({"exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "neg",
                        "abs", "sign", "outer", "ger", "pow", "mul", "add", "sub", "div", "mul_", "add_", "sub_", "div_",
                        "clamp", "clamp_", "clip", "floor", "ceil", "round", "cumsum", "cumprod",
                        "masked_fill", "masked_fill_", "where", "softmax", "log_softmax"})
_FILL_FUNCTIONS = frozenset({"torch.cat", "torch.stack", "torch.concat", "torch.hstack",
                             "torch.vstack", "torch.tril", "torch.triu", "torch.outer",
                             "torch.meshgrid", "torch.cartesian_prod"})
_LEGACY_FACTORIES = frozenset({"torch.Tensor", "torch.FloatTensor", "torch.LongTensor",
                               "torch.IntTensor", "torch.DoubleTensor", "torch.HalfTensor",
                               "torch.BoolTensor", "torch.ByteTensor"})
_SCALARS = frozenset({Kind.NUMBER, Kind.BOOL, Kind.DTYPE, Kind.STRING, Kind.NONE, Kind.SIZE})
# Methods whose one tensor argument gives the result's shape only (`a.expand_as(b)`).
_SHAPED_LIKE_ARGUMENT = frozenset({"expand_as", "view_as", "reshape_as"})
# In-place fills that write every element of their receiver.
_OVERWRITING_METHODS = frozenset({"fill_", "zero_", "normal_", "uniform_", "random_",
                                  "exponential_", "bernoulli_"})


@dataclass(frozen=True)
class Fill:
    """A tensor filled on the host by factories alone: `factories` are the calls that
    allocate it (`torch.zeros(n)`), `ops` the methods and functions applied on the way
    (`long`, `exp`, `torch.cat`), `through` the names followed to their bindings."""

    factories: tuple[cst.Call, ...]
    ops: tuple[str, ...] = ()
    through: tuple[tuple[cst.Name, Def], ...] = ()
    calls: tuple[cst.Call, ...] = ()   # calls of the file's functions whose returns were followed
    # `self.x` reads followed to the store that reaches them: (the read, the store's target)
    attributes: tuple[tuple[cst.Attribute, cst.Attribute], ...] = ()


# Bindings of one name followed into a fill at most (the arms of an if/elif chain).
_MAX_JOINED_FILLS = 4


def fresh_fill(sem, expr: cst.BaseExpression, depth: int = 4, attributes: bool = False) -> Optional[Fill]:
    """How `expr` is a host tensor computed from factories that fill it themselves (sizes and
    scalars in, no other data): `torch.zeros(n).long()`, `torch.ones(1, 1).fill_(v)`,
    `torch.exp(-k * torch.arange(n) / n)`, `torch.stack([torch.zeros(n) for _ in ...])`,
    `torch.Tensor(b, b).fill_(v)`. A name is followed when every binding of it that reaches
    the read (one, or the arms of an if/else) is an assignment made in the same scope and a
    fill itself (up to `depth` names), and a call of
    a function of the file into what it returns (one function deep; `Fill.calls`). None
    when any part may carry other data, lives on the device, or is unknown. With
    `attributes`, a read of `self.x` in a method is followed too, to the store of the same
    method that reaches it (`attribute_binding`; `Fill.attributes`)."""
    parts: list[cst.Call] = []
    ops: list[str] = []
    through: list[tuple[cst.Name, Def]] = []
    attrs: Optional[list] = [] if attributes else None
    if not _fill(sem, expr, parts, ops, through, depth, attrs) or not parts:
        return None
    calls = tuple(op for op in ops if isinstance(op, cst.Call))
    names = tuple(op for op in ops if isinstance(op, str))
    return Fill(tuple(parts), names, tuple(through), calls, tuple(attrs or ()))


def attribute_binding(sem, read: cst.Attribute) -> Optional[tuple[cst.Attribute, cst.BaseExpression]]:
    """For `self.x` read in a method of a class of the file: (the store's target, the
    expression it stores) of the store of `self.x` that reaches the read, the last one
    before it in the same method, where that store always runs before the read (its
    statement is in a block around the read) and nothing between them may store `self.x`
    again (a call of a method of the class, or of anything given `self`). An unpacking
    store takes its part of a display of as many elements (`self.a, self.b = torch.ones(n),
    torch.zeros(n)`). None otherwise, also for a store that is not a plain assignment."""
    from devicelint.semantic import modules

    if not isinstance(read.value, cst.Name):
        return None
    owner = modules.self_class(sem, read.value)
    function = sem.scope_of(read)
    if owner is None or not isinstance(function, cst.FunctionDef):
        return None
    order = sem.ctx.order
    at = order(read)
    best = None
    for target, d in modules.attribute_assignments(sem, owner).get(read.attr.value, ()):
        if d.scope is not function or order(target) >= at:
            continue
        assign = _enclosing(sem, target, cst.Assign)
        if assign is None or within(sem, read, assign):
            continue  # `self.x = self.x.cuda()`: the read is the store's own value
        if best is None or order(target) > order(best[0]):
            best = (target, d, assign)
    if best is None:
        return None
    target, d, assign = best
    line = sem.parent(assign)
    if d.kind != "assign" or d.value is None or len(assign.targets) != 1 \
            or not isinstance(line, cst.SimpleStatementLine) or not within(sem, read, sem.parent(line)):
        return None
    value = d.value
    if d.path:
        shape = assign.targets[0].target
        if len(d.path) != 1 or not isinstance(value, (cst.Tuple, cst.List)) \
                or not isinstance(shape, (cst.Tuple, cst.List)) or len(value.elements) != len(shape.elements) \
                or any(isinstance(e, cst.StarredElement) for e in (*value.elements, *shape.elements)):
            return None
        value = value.elements[d.path[0]].value
    start = order(assign)
    self_defs = sem.defs(read.value)
    methods = {s.name.value for s in owner.body.body if isinstance(s, cst.FunctionDef)} \
        if isinstance(owner.body, cst.IndentedBlock) else set()
    for call in sem.ctx.descendants(function, cst.Call, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if not start < order(call) < at:
            continue
        func = call.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) \
                and func.value.value == read.value.value and func.attr.value in methods:
            return None
        if any(isinstance(arg.value, cst.Name) and arg.value.value == read.value.value
               and sem.defs(arg.value) == self_defs for arg in call.args):
            return None
    return target, value


def _enclosing(sem, node: cst.CSTNode, kind):
    current = sem.parent(node)
    while current is not None and not isinstance(current, kind):
        if isinstance(current, (cst.BaseSuite, cst.BaseCompoundStatement)):
            return None
        current = sem.parent(current)
    return current


def _scalar(sem, node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary)):
        return True
    if isinstance(node, cst.UnaryOperation):
        return _scalar(sem, node.expression)
    kind = sem.value(node).kind
    if kind is Kind.UNKNOWN and isinstance(node, cst.Name):
        return given_as_size(sem, node)
    return kind in _SCALARS


# The arguments of the table's factories that are sizes or bounds (numbers), by keyword.
_SIZE_KEYWORDS = frozenset({"size", "start", "end", "step", "steps", "n", "m", "low", "high"})


def given_as_size(sem, name: cst.Name) -> bool:
    """`name`'s value (every binding reaching this read) is also given to a factory as a size
    or bound (`half = dim // 2` read by `torch.arange(0, half)`): a number, whatever the
    value model knows of it."""
    defs = sem.defs(name)
    if not defs or any(d.node is None for d in defs):
        return False
    for use in uses(sem, defs[0]):
        arg = sem.parent(use)
        call = sem.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(call, cst.Call) or arg.value is not use or arg.star:
            continue
        if arg.keyword is not None and arg.keyword.value not in _SIZE_KEYWORDS:
            continue
        qual = sem.qualname(call.func)
        spec = sem.api.function(qual) if qual is not None else None
        if spec is not None and spec.place == "factory" and spec.rank != "like" \
                and qual not in _DATA_FACTORIES and {id(d) for d in sem.defs(use)} == {id(d) for d in defs}:
            return True
    return False


def _fill(sem, node, parts, ops, through, depth, attrs) -> bool:
    while isinstance(node, cst.UnaryOperation) and not isinstance(node.operator, cst.Not):
        node = node.expression
    if isinstance(node, cst.Name):
        # Every binding that reaches the read must be a fill: both arms of
        # `if smooth: t = torch.ones(n) * 0.9` / `else: t = torch.ones(n)`.
        defs = sem.defs(node)
        if depth <= 0 or not defs or len(defs) > _MAX_JOINED_FILLS:
            return False
        scope = sem.scope_of(node)
        for d in defs:
            # A part of an unpacked fill is one (`yv, xv = torch.meshgrid(...)`), unless the
            # value is a display whose other elements may hold other data.
            if d.kind != "assign" or d.value is None or d.scope is not scope \
                    or d.path and isinstance(d.value, (cst.Tuple, cst.List)):
                return False
            through.append((node, d))
            if not _fill(sem, d.value, parts, ops, through, depth - 1, attrs):
                return False
        return True
    if isinstance(node, cst.Attribute) and attrs is not None:
        found = attribute_binding(sem, node) if depth > 0 else None
        if found is None:
            return False
        target, value = found
        attrs.append((node, target))
        return _fill(sem, value, parts, ops, through, depth - 1, attrs)
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.MatrixMultiply):
            return False
        sides = [side for side in (node.left, node.right) if not _scalar(sem, side)]
        ops.append("arith")
        return bool(sides) and all(_fill(sem, side, parts, ops, through, depth, attrs) for side in sides)
    if isinstance(node, cst.Comparison):
        # Against numbers, or against fills themselves (`ids.unsqueeze(0) == ids.unsqueeze(1)`:
        # a mask computed from the fill alone, as elementwise arithmetic between fills is).
        if not all(_scalar(sem, c.comparator) or _fill(sem, c.comparator, parts, ops, through, depth, attrs)
                   for c in node.comparisons):
            return False
        ops.append("compare")
        return _fill(sem, node.left, parts, ops, through, depth, attrs)
    if isinstance(node, cst.Subscript):
        for element in node.slice:
            index = element.slice
            bounds = [index.value] if isinstance(index, cst.Index) else \
                [b for b in (index.lower, index.upper, index.step) if b is not None]
            if not all(_scalar(sem, b) for b in bounds):
                return False
        return _fill(sem, node.value, parts, ops, through, depth, attrs)
    if isinstance(node, (cst.List, cst.Tuple)):
        return bool(node.elements) and all(
            not isinstance(e, cst.StarredElement) and _fill(sem, e.value, parts, ops, through, depth, attrs)
            for e in node.elements)
    if isinstance(node, (cst.ListComp, cst.GeneratorExp)):
        return _fill(sem, node.elt, parts, ops, through, depth, attrs)
    if not isinstance(node, cst.Call) or any(arg.star for arg in node.args):
        return False
    qual = sem.qualname(node.func)
    if qual is not None:
        return _fill_function(sem, node, qual, parts, ops, through, depth, attrs)
    function = sem.resolve_function(node.func)
    if function is not None:
        # A function of the file that returns a fresh fill (its parameters can only be
        # sizes or scalars there: a parameter read as data is not followed).
        flow = sem.flow(function)
        if depth <= 0 or _inside_followed(sem, node, ops):
            return False  # one function deep (and no recursion); siblings each followed
        if flow.yields or not flow.returns or any(r.value is None for r in flow.returns):
            return False
        ops.append(node)
        return all(_fill(sem, r.value, parts, ops, through, depth, attrs) for r in flow.returns)
    if not isinstance(node.func, cst.Attribute):
        return False
    method = node.func.attr.value
    if method in _SHAPED_LIKE_ARGUMENT:
        if len(node.args) != 1 or node.args[0].keyword is not None:
            return False  # the argument gives a shape only, never data
    elif method in _FILL_KEEPING_METHODS:
        if method == "type" and node.args and sem.value(node.args[0].value).kind is not Kind.DTYPE \
                and sem.tensor_type_place(node.args[0].value)[0] is not Place.CPU:
            return False  # `.type(torch.cuda.FloatTensor)` moves; `.type(torch.ByteTensor)` converts
        if any(_may_be_data(sem, arg.value) for arg in node.args):
            return False
        if method in _OVERWRITING_METHODS and _legacy_constructor(sem, node.func.value):
            # `torch.LongTensor(b).fill_(0)`: whatever the one argument is (a size or data),
            # every element is written again by the fill.
            ops.append(method)
            parts.append(node.func.value)
            return True
    elif method in _FILL_MATH:
        if not all(_scalar(sem, arg.value) or _fill(sem, arg.value, parts, ops, through, depth, attrs)
                   for arg in node.args):
            return False
    elif method == "to":
        if not node.args or any(sem.value(arg.value).kind is not Kind.DTYPE for arg in node.args
                                if arg.keyword is None or arg.keyword.value == "dtype"):
            return False
        if any(arg.keyword is not None and arg.keyword.value not in ("dtype", "copy") for arg in node.args):
            return False
    else:
        return False
    ops.append(method)
    return _fill(sem, node.func.value, parts, ops, through, depth, attrs)


def foreign_fill(sem, call: cst.BaseExpression) -> Optional[tuple[str, int, int, str]]:
    """A call of a top-level function of another local module (through the project index)
    that returns a fresh host fill (`fresh_fill` in that file's model, on every `return`;
    nothing there reads the fill but the way to its `return`, nor writes it element by
    element in a Python loop): (that file's path, the factory's line and column, the
    factory's name), else None. `causal_mask(n)` of `dataset.py` doing `mask =
    torch.triu(torch.ones((1, n, n)), diagonal=1).type(torch.int)`, `return mask == 0`. The
    parameters can only be sizes or scalars there (a parameter read as data is no fill)."""
    if not isinstance(call, cst.Call) or any(arg.star for arg in call.args) \
            or sem.project is None or not sem.syncs.runs_foreign_function(call):
        return None
    # A cheap look first (the index's facts): that function calls a factory itself, else
    # its file's model is not built for this.
    view = sem.project
    symbol = view.resolve(sem.syncs._foreign_dotted(call))
    if symbol is None or not any(_factory_name(sem, q) for q in view.calls_of(symbol)):
        return None
    foreign = sem.syncs.foreign_function(call)
    if foreign is None:
        return None
    other, function = foreign
    memo = other.__dict__.setdefault("_returned_fills", {})
    if id(function) not in memo:
        memo[id(function)] = _returned_fill(other, function)
    return memo[id(function)]


def _factory_name(sem, qual: str) -> bool:
    spec = sem.api.function(qual)
    return spec is not None and spec.place == "factory" or qual.startswith("torch.") and qual.endswith("Tensor")


def _returned_fill(sem, function: cst.FunctionDef) -> Optional[tuple[str, int, int, str]]:
    flow = sem.flow(function)
    if flow.yields or not flow.returns or any(r.value is None for r in flow.returns):
        return None
    fills = [fresh_fill(sem, r.value) for r in flow.returns]
    if any(fill is None for fill in fills):
        return None
    followed = {id(name) for fill in fills for name, _ in fill.through}
    for fill in fills:
        for _name, d in fill.through:
            for use in uses(sem, d):
                if number_store(sem, use):
                    if any(not within(sem, d.node, loop) for loop in sem.loops.enclosing_loops(use)):
                        return None  # written element by element: the host fill is meant
                elif id(use) not in followed:
                    return None
    factory = fills[0].factories[0]
    line, column = sem.ctx.position(factory)[:2]
    return sem.ctx.path, line, column, sem.ctx.qualname(factory.func) or sem.ctx.code(factory.func)


def _inside_followed(sem, node: cst.Call, ops) -> bool:
    """`node` is in the body of a function `_fill` already follows (a call in `ops`):
    following it would go two deep. Two calls side by side (`f(n).outer(f(m))`) are each
    one deep."""
    enclosing = sem.function_of(node)
    return enclosing is not None and any(
        isinstance(op, cst.Call) and sem.resolve_function(op.func) is enclosing for op in ops)


def _fill_function(sem, node: cst.Call, qual: str, parts, ops, through, depth, attrs) -> bool:
    spec = sem.api.function(qual)
    if spec is not None and spec.result == "same":
        # An identity wrapper (`Variable(torch.zeros(n))`): the fill itself, no op on the way.
        inner = call_arg(node, 0, "data")
        return inner is not None and len(node.args) == 1 and _fill(sem, inner, parts, ops, through, depth, attrs)
    if qual in _LEGACY_FACTORIES:
        # `torch.Tensor(b, b)` allocates by sizes; `torch.Tensor(data)` copies data: one
        # argument must be a number to be a size.
        if not node.args or any(arg.keyword is not None for arg in node.args):
            return False
        if len(node.args) == 1 and sem.value(node.args[0].value).kind is not Kind.NUMBER \
                and not _number_range(sem, node.args[0].value):
            return False
        parts.append(node)
        return True
    if size_factory(sem, node) is not None and sem.api.function(qual).rank != "like":
        if any(arg.keyword is not None and arg.keyword.value in ("device", "out") for arg in node.args):
            return False
        parts.append(node)
        return True
    short = qual.rsplit(".", 1)[-1]
    if qual in _FILL_FUNCTIONS or (qual.startswith("torch.") and short in _FILL_MATH
                                   and sem.api.function(qual) is not None):
        data = [arg.value for arg in node.args
                if arg.keyword is None or arg.keyword.value in ("input", "other", "tensors")]
        if any(arg.keyword is not None and arg.keyword.value in ("out", "device") for arg in node.args):
            return False
        if not data or not all(_scalar(sem, v) or _fill(sem, v, parts, ops, through, depth, attrs) for v in data):
            return False
        ops.append(qual)
        return True
    return False


def _number_range(sem, node: cst.BaseExpression) -> bool:
    """`range(...)` (also in `list(...)`): the data is an arange the constructor fills itself
    (`torch.LongTensor(range(y.size(0)))`), no other data (`range` takes integers only)."""
    if isinstance(node, cst.Call) and _builtin(sem, node.func, frozenset({"list"})) and len(node.args) == 1:
        node = node.args[0].value
    return isinstance(node, cst.Call) and _builtin(sem, node.func, frozenset({"range"})) is not None \
        and bool(node.args) and all(a.keyword is None and not a.star for a in node.args)


def _may_be_data(sem, node: cst.BaseExpression) -> bool:
    """An argument that may carry elements of other data: a tensor, an array, a sequence
    other than a display of numbers (`.view((1, n, 2))` gives a shape)."""
    if isinstance(node, (cst.Tuple, cst.List)):
        return not all(not isinstance(e, cst.StarredElement) and _scalar(sem, e.value) for e in node.elements)
    return sem.value(node).kind in (Kind.TENSOR, Kind.ARRAY, Kind.SEQUENCE)


def _legacy_constructor(sem, node: cst.BaseExpression) -> bool:
    """`torch.LongTensor(x)`: a CPU legacy typed constructor with one positional argument."""
    return isinstance(node, cst.Call) and sem.qualname(node.func) in _LEGACY_FACTORIES \
        and len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star


def _unwrapped(sem, node: cst.BaseExpression) -> cst.BaseExpression:
    """`x` for `Variable(x)` (an identity wrapper: `result = "same"` in the table)."""
    while type(node) is cst.Call and len(node.args) == 1 and node.args[0].keyword is None \
            and not node.args[0].star:
        qual = sem.qualname(node.func)
        spec = sem.api.function(qual) if qual is not None else None
        if spec is None or spec.result != "same":
            break
        node = node.args[0].value
    return node


def returned_move(sem, function: cst.FunctionDef) -> Optional[tuple[str, cst.Call]]:
    """(parameter, the copy) when `function` gives back what it is handed, copied to the
    device: every `return` is one parameter's own tensor, wrapped at most in identity
    wrappers, moved with `.cuda(...)` or `.to(<device>)` in at least one of them on the GPU
    path (`return Variable(t.cuda())` under `if torch.cuda.is_available():`, `return
    Variable(t)` otherwise), and nothing else in the function reads that parameter
    (`cuda_variable(torch.zeros(n))`, `self.get_torch_variable(z)`). None otherwise (DL007)."""
    returns = sem.flow(function).returns
    if not returns or sem.flow(function).yields:
        return None
    param: Optional[cst.Name] = None
    move: Optional[cst.Call] = None
    for ret in returns:
        if ret.value is None:
            return None
        node = _unwrapped(sem, ret.value)
        if type(node) is cst.Call and type(node.func) is cst.Attribute \
                and node.func.attr.value in ("cuda", "to") and not any(a.star for a in node.args):
            if node.func.attr.value == "to":
                target = keyword_arg(node, "device") or call_arg(node, 0, "\0")
                if target is None or sem.value(target).kind is Kind.TENSOR \
                        or sem.device_place(target)[0] is not Place.DEVICE:
                    return None
            elif any(arg.keyword is not None and arg.keyword.value not in ("device", "non_blocking")
                     for arg in node.args):
                return None
            if sem.on_gpu_path(node) and move is None:
                move = node
            node = _unwrapped(sem, node.func.value)
        if type(node) is not cst.Name or param is not None and node.value != param.value:
            return None
        defs = sem.defs(node)
        if len(defs) != 1 or defs[0].kind != "param":
            return None
        param = node
    if param is None or move is None:
        return None
    d = sem.defs(param)[0]
    values = [ret.value for ret in returns]
    if not all(any(within(sem, use, value) for value in values) for use in uses(sem, d)):
        return None
    return param.value, move


def wrapper_move(sem, call: cst.Call) -> Optional[tuple[cst.BaseExpression, cst.Call]]:
    """(the data copied, the copy) for a call of a function of the file that gives back its
    first argument copied to the device (`returned_move`: `cuda_variable(t)`), or of a
    lambda bound once that does (`Variable = lambda *args, **kwargs:
    autograd.Variable(*args, **kwargs).cuda() if USE_CUDA else autograd.Variable(*args,
    **kwargs)`, the RL notebooks' idiom): `Variable(proj_dist)` copies `proj_dist` to the
    device as `proj_dist.cuda()` would. None otherwise, and when the call passes its data by
    `*`/keyword."""
    if type(call.func) is not cst.Name or not call.args \
            or call.args[0].star or call.args[0].keyword is not None:
        return None
    defs = sem.defs(call.func)
    if len(defs) != 1:
        return None
    d = defs[0]
    if d.kind == "def" and type(d.node) is cst.FunctionDef:
        positional = [*d.node.params.posonly_params, *d.node.params.params]
        if not positional:
            return None
        moved = returned_move(sem, d.node)
        if moved is None or moved[0] != positional[0].name.value:
            return None
        return call.args[0].value, moved[1]
    if d.kind == "assign" and type(d.value) is cst.Lambda:
        move = _lambda_move(sem, d.value)
        return (call.args[0].value, move) if move is not None else None
    return None


def _lambda_move(sem, function: cst.Lambda) -> Optional[cst.Call]:
    """The copy when the lambda's body is its first argument (its first parameter, or all of
    `*args` handed on to an identity wrapper: `autograd.Variable(*args, **kwargs)`), copied
    with `.cuda()` / `.to(<device>)` in the arm a GPU run takes (`... .cuda() if USE_CUDA
    else ...`, `sem.gpu_truth`), and given back as it is in the other arm."""
    params = function.params
    first = params.params[0].name.value if params.params else None
    star = params.star_arg.name.value if type(params.star_arg) is cst.Param else None
    if first is None and star is None or first is not None and params.posonly_params:
        return None

    def handed_on(node: cst.BaseExpression) -> bool:
        node = _unwrapped(sem, node)
        if type(node) is cst.Name:
            return first is not None and node.value == first
        if first is None and type(node) is cst.Call and node.args and node.args[0].star == "*" \
                and type(node.args[0].value) is cst.Name and node.args[0].value.value == star \
                and all(arg.star == "**" for arg in node.args[1:]):
            qual = sem.qualname(node.func)
            spec = sem.api.function(qual) if qual is not None else None
            return spec is not None and spec.result == "same"   # `autograd.Variable(*args, **kwargs)`
        return False

    def moved(node: cst.BaseExpression) -> Optional[cst.Call]:
        node = _unwrapped(sem, node)
        if type(node) is not cst.Call or type(node.func) is not cst.Attribute \
                or any(arg.star for arg in node.args):
            return None
        if node.func.attr.value == "cuda":
            if any(arg.keyword is None and int_value(arg.value) is None
                   or arg.keyword is not None and arg.keyword.value not in ("device", "non_blocking")
                   for arg in node.args):
                return None
        elif node.func.attr.value == "to":
            target = keyword_arg(node, "device") or call_arg(node, 0, "\0")
            if target is None or sem.value(target).kind is Kind.TENSOR \
                    or sem.device_place(target)[0] is not Place.DEVICE:
                return None
        else:
            return None
        return node if handed_on(node.func.value) else None

    body = function.body
    if type(body) is cst.IfExp:
        truth = sem.gpu_truth(body.test)
        if truth is None:
            return None
        taken, other = (body.body, body.orelse) if truth else (body.orelse, body.body)
        move = moved(taken)
        return move if move is not None and (handed_on(other) or moved(other) is not None) else None
    return moved(body)


# -- what one call of a function copies to the device ----------------------------------------
@dataclass(frozen=True)
class CallUpload:
    """A host→device copy a function makes, once, on every call: of data that is the same
    on every call (literals, module-level constants), to the device of the parameters
    `follows` (`p.new_tensor([...])`, `.to(p.device)`), or to the accelerator whatever the
    arguments (`follows` empty)."""

    node: cst.Call
    follows: frozenset


def per_call_uploads(sem, function: cst.FunctionDef) -> tuple[CallUpload, ...]:
    """The copies of constant host data that `function` makes on every call, in its own
    straight-line body (not under a condition, loop, `try` or `with`, nor in nested
    functions): `mean = batch.new_tensor([0.485, 0.456, 0.406])`,
    `torch.tensor([1.0, 2.0]).to(x.device)`, `torch.tensor(TABLE, device="cuda")`. A caller
    that runs the function on every iteration of a loop makes the same copy every time."""
    memo = sem.__dict__.setdefault("_per_call_uploads", {})
    key = id(function)
    if key not in memo:
        memo[key] = tuple(_per_call_uploads(sem, function))
    return memo[key]


def foreign_call_uploads(sem, call: cst.Call):
    """(the other file's model, its function, `per_call_uploads` of it) for a call of a
    top-level function of another local module (`sem.syncs.foreign_function`); None when
    the call runs no such function, or when no function of that name in that module makes
    a call that could copy (`.new_tensor(...)`, `.to(...)`, `device=`): read with `ast`
    first, that module's model is then not built."""
    if not sem.syncs.runs_foreign_function(call):
        return None
    found = sem.project.function_module(dotted_name(call.func))
    if found is None:
        return None
    module, name = found
    copying = _copying_functions(sem.project.index, module)
    if copying is not None and name not in copying and "__init__" not in copying:
        return None  # (an `__init__` that may copy: the function may build such an object)
    foreign = sem.syncs.foreign_function(call)
    if foreign is None:
        return None
    other, function = foreign
    return other, function, per_call_uploads(other, function)


_COPYING_LOOK_MAX_CHARS = 1_000_000  # over this, no first look: the model is built as before


def _copying_functions(index, module) -> Optional[frozenset]:
    """The names of the functions (at any depth) of another module's text whose bodies make
    a call `_constant_upload` could accept (its cases each need `.new_tensor`, `.to`,
    `.cuda` or a `device=` keyword); None when the text is not looked at. Kept by the index."""
    look = _module_look(index, module)
    return look.copying if look is not None else None


def may_move_to_device(index, module, name: str) -> bool:
    """Whether a function `name` of another local module may copy, with `.to(...)` or
    `.cuda(...)`, data it is handed (DL016's `_param_copies` of it): a function of that name
    (at any depth) makes such a call itself, or may call a function of its module that gives
    back such a call's result (`reaches_moved_return`). True when the text is not looked at.
    Read with `ast` (one look per module and process, shared with `_copying_functions`): when
    False, that module's model need not be built to know."""
    look = _module_look(index, module)
    return look is None or name in look.moving or reaches_moved_return(index, module, name)


def reaches_moved_return(index, module, name: str) -> bool:
    """Whether a call that a function `name` of another local module makes may run a
    function of that module that gives back a `.to(...)` / `.cuda(...)` call's result (a
    helper `dataflow.returned_move` could accept: `syncs.callee` finds only the module's own
    functions). Such a helper reaches `name` only through a call naming it (`h(x)`,
    `self.h(x)`) in `name`'s body, or, once its name is used any other way (an alias, an
    argument, a default, a decorator, a string), under any name: then every function of
    the module may. True when the text is not looked at; when False, `_param_copies` of the
    function need not ask what its calls run. (Session 13 answered for the whole module:
    some function gives back a copy.)"""
    look = _module_look(index, module)
    return look is None or look.returns_moved and (look.helper_escapes or name in look.helper_callers)


def may_upload_param(index, module, name: str) -> bool:
    """Whether a function `name` of another local module may make a copy `param_uploads`
    accepts: a `.to(...)` / `.cuda(...)` call or a factory given `device=` of its own (both
    in `copying`), or a call of a wrapper giving back its argument copied (`wrapper_move`: a
    function of the module, `reaches_moved_return`, or a lambda: any lambda of the module
    that makes such a call). True when the text is not looked at; when False, that module's
    model need not be built to know."""
    look = _module_look(index, module)
    return look is None or name in look.copying or look.lambda_moves \
        or reaches_moved_return(index, module, name)


def may_reach_copy(index, module, name: str, calls: int) -> bool:
    """Whether a function `name` of another local module may make a call `_may_copy`
    accepts, itself or in a function of its module it reaches within `calls` calls of the
    module's own functions (`syncs.callee`, which finds a function by the name a call is
    written with, or by a value of the module once the function's name is used any other
    way: then any function may). True when the text is not looked at; when False, a
    question following `name`'s calls that deep for a copy need not build that module's
    model."""
    look = _module_look(index, module)
    if look is None:
        return True
    if name in look.copying:
        return True
    reach = _copy_reach(index, module, look, calls)
    return reach is None or name in reach


def _copy_reach(index, module, look: _Look, calls: int) -> Optional[frozenset]:
    """The functions of `module` whose calls reach, within `calls` calls written with a
    function's name (`_helper_uses`), one in `look.copying`; None when some name on the way
    is used other than as a call's callee, or the text is not looked at. Kept by the index."""
    key = ("copy reach", module.path, index.identity(module), calls)
    if key in index.derived:
        return index.derived[key]  # type: ignore[return-value]
    from devicelint.project_index import module_ast

    reach: Optional[frozenset] = frozenset(look.copying)
    frontier = set(look.copying)
    tree = module_ast(index, module, _COPYING_LOOK_MAX_CHARS) if frontier else None
    for _ in range(calls if frontier else 0):
        if tree is None:
            reach = None
            break
        callers, escapes = _helper_uses(tree, module.text or "", frontier)
        if escapes:
            reach = None
            break
        frontier = callers - reach
        reach = reach | callers
        if not frontier:
            break
    index.derived[key] = reach
    return reach


def foreign_function_module(sem, call: cst.Call):
    """(the other local module, the function's name) of the top-level function that
    `sem.syncs.foreign_function(call)` finds, that module's model not built; else None."""
    dotted = sem.syncs._foreign_dotted(call) if sem.project is not None else None
    return sem.project.function_module(dotted) if dotted is not None else None


@dataclass(frozen=True)
class _Look:
    copying: frozenset      # functions making a call `_may_copy` accepts
    moving: frozenset       # functions making a `.to(...)` / `.cuda(...)` call
    returns_moved: bool     # some `return` gives back a `.to(...)` / `.cuda(...)` call's result
    helper_callers: frozenset = frozenset()  # functions calling one such function by its name
    helper_escapes: bool = False  # such a function's name is used other than as a call's callee
    lambda_moves: bool = False  # some lambda makes a `.to(...)` / `.cuda(...)` call


def _module_look(index, module) -> Optional[_Look]:
    key = ("copying functions", module.path, index.identity(module))
    if key in index.derived:
        return index.derived[key]  # type: ignore[return-value]
    from devicelint.project_index import module_ast

    text = module.text or ""
    found: Optional[_Look] = None
    # A file of the run: its gate's `ast` may be kept. (Named `key` until session 13, which
    # rebound the memo's key: the look was kept under the file's path and never found again,
    # one `ast` walk per question: torchvision 100 looks for 33 modules.)
    tree = module_ast(index, module, _COPYING_LOOK_MAX_CHARS)
    if tree is not None:
        # One pass, each node with the functions around it (a walk per function would
        # walk nested ones again): a call that may copy names all of them. Only into
        # the nodes whose lines hold one of the words such a call is written with.
        lines = _word_lines(text)
        bound = _ModuleNames(tree)
        names: set[str] = set()
        moving: set[str] = set()
        helpers: set[str] = set()  # the functions whose `return` gives back such a call
        lambda_moves = False
        stack: list[tuple[ast.AST, tuple[str, ...], bool]] = [(tree, (), False)]
        while stack:
            node, owners, returned = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                owners = owners + (node.name,)
            elif isinstance(node, ast.Return):
                returned = True
            elif isinstance(node, ast.Lambda) and not lambda_moves:
                lambda_moves = any(isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
                                   and inner.func.attr in ("to", "cuda") for inner in ast.walk(node))
            elif owners and _may_copy(node, bound):
                names.update(owners)
                if isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda"):
                    moving.update(owners)
                    if returned:
                        helpers.add(owners[-1])
            stack.extend((child, owners, returned) for child in ast.iter_child_nodes(node)
                         if on_lines(child, lines))
        callers, escapes = _helper_uses(tree, text, helpers) if helpers else (set(), False)
        found = _Look(frozenset(names), frozenset(moving), bool(helpers), frozenset(callers), escapes,
                      lambda_moves)
    index.derived[key] = found
    return found


def _helper_uses(tree: ast.AST, text: str, helpers: set[str]) -> tuple[set[str], bool]:
    """(the functions, at any depth, with a call whose callee is written with one of the
    names `helpers` (`h(...)`, `x.h(...)`), whether such a name is used any other way: read,
    stored, handed on, as an attribute, a decorator, a string, an import). Only into the
    nodes whose lines hold one of the names."""
    starts = line_starts(text)
    lines = _lines_naming(text, starts, helpers)
    callers: set[str] = set()
    imported: dict[str, bool] = {}  # a function's name -> whether the module only imports it
    stack: list[tuple[ast.AST, tuple[str, ...]]] = [(tree, ())]
    while stack:
        node, owners = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            owners = owners + (node.name,)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Name) and node.value.func.id not in helpers \
                and any(isinstance(arg, ast.Name) and arg.id in helpers
                        for arg in (*node.value.args, *(k.value for k in node.value.keywords))):
            # `_log_api_usage_once(to_tensor)`, a statement: the function handed to a function
            # the module only imports, the result dropped, comes back to no call of the module
            # (`syncs.callee` follows values of this module only)
            call = node.value
            only = imported.get(call.func.id)
            if only is None:
                name = call.func.id
                only = imported[name] = name in _imported_only(tree, _lines_naming(text, starts, {name}))
            if only:
                stack.extend((arg, owners) for arg in (*call.args, *(k.value for k in call.keywords))
                             if not (isinstance(arg, ast.Name) and arg.id in helpers) and on_lines(arg, lines))
                continue
        elif isinstance(node, ast.Call):
            func = node.func
            written = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if written in helpers:
                callers.update(owners)
                # the callee's own parts (`x` of `x.h`) and the arguments are still looked at
                stack.extend((child, owners) for child in ast.iter_child_nodes(func) if on_lines(child, lines))
                stack.extend((child, owners) for child in ast.iter_child_nodes(node)
                             if child is not func and on_lines(child, lines))
                continue
        elif isinstance(node, ast.Name) and node.id in helpers \
                or isinstance(node, ast.Attribute) and node.attr in helpers \
                or isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in helpers \
                or isinstance(node, (ast.Global, ast.Nonlocal)) and helpers.intersection(node.names) \
                or isinstance(node, ast.alias) and (node.asname or node.name) in helpers:
            return callers, True
        stack.extend((child, owners) for child in ast.iter_child_nodes(node) if on_lines(child, lines))
    return callers, False


def _lines_naming(text: str, starts: list[int], names: set[str]) -> list[int]:
    """The lines (sorted, 1-based; `starts`: `line_starts(text)`) holding one of `names` as
    a word."""
    return lines_matching(text, re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, names))) + r")\b"), starts)


def _imported_only(tree: ast.AST, lines: list[int]) -> frozenset:
    """The names the module binds by an import and in no other way (no assignment, `def`,
    class, parameter, loop or `with` target, ...: an `ast.Name` that stores or deletes it,
    or any other node that binds a name), answered for the names every line holding which
    is in `lines`. Only into the nodes on those lines (a node binding a name is on a line
    holding it): a walk of the whole tree cost torchvision's looks at the modules a round
    trip may reach 0.04 s of 0.07 s (cProfile, one process)."""
    imported: set[str] = set()
    bound: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        stack.extend(child for child in ast.iter_child_nodes(node) if on_lines(child, lines))
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imported.update((alias.asname or alias.name).partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif type(node).__name__ in ("MatchAs", "MatchStar", "MatchMapping"):
            bound.update(n for n in (getattr(node, "name", None), getattr(node, "rest", None)) if n)
    return frozenset(imported - bound)


def _word_lines(text: str) -> list[int]:
    """The numbers of the lines (as `ast` numbers them) where a call `_may_copy` accepts
    may be written (`gate.MAY_COPY_WORDS`: keep it in step with `_may_copy`'s attributes)."""
    return lines_matching(text, MAY_COPY_WORDS)


def _may_copy(node: ast.AST, bound: Optional["_ModuleNames"] = None) -> bool:
    """Whether a call, read with `ast`, may be one the copy questions accept: `.new_tensor`,
    `.cuda`, a `.to(...)` that may name a device, or a call given `device=` that may be a
    `[copies] data_to_device` factory (`_factory_copy`, `data_to_device`). `bound`: what the
    module binds (`_ModuleNames`); None: not known, every such call may."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in ("new_tensor", "cuda"):
        return True
    if isinstance(func, ast.Attribute) and func.attr == "to":
        return _may_name_a_device(node, bound)
    return any(keyword.arg == "device" for keyword in node.keywords) \
        and _may_be_data_factory(func, bound)


def _may_name_a_device(call: ast.Call, bound: Optional["_ModuleNames"]) -> bool:
    """Whether `x.to(...)` may be given a device, read as the file gate reads a target
    (devicelint/gate.py `_device_target`, `_may_be_device_target`: the `device=` keyword or
    the first positional argument; `.to(dtype=d)` alone has none, `.to(torch.float32)` and a
    literal give none), and `.to(x.dtype)` a dtype unless the module may store a `dtype`
    attribute (as the gate's `placing_calls` reads it)."""
    from devicelint.gate import _device_target, _may_be_device_target

    target = _device_target(call)
    if target is None or not _may_be_device_target(target):
        return False
    if isinstance(target, ast.Attribute) and target.attr == "dtype":
        return bound is None or bound.dtype_may_place
    return True


def _may_be_data_factory(func: ast.AST, bound: Optional["_ModuleNames"]) -> bool:
    """Whether a callee given `device=` may stand for a `[copies] data_to_device` factory.
    A callee written `h.….name` stands for a qualified name ending in `.name` (an import of
    `h` and the attributes after it, `qualname` / `resolved_qualname`), or for none, unless
    `h` is bound by a top-level assignment (then the project index's aliases may rename it):
    not such a factory when `name` is not one's last name. A bare name may be an import's
    rename (`from torch import tensor as T`): it may, unless the module binds it only with
    `def` or `class` (`defined_only`: the semantic model gives such a name no qualified name)."""
    if isinstance(func, ast.Name):
        return bound is None or func.id not in bound.defined_only
    if not isinstance(func, ast.Attribute):
        return True
    head = func.value
    while isinstance(head, ast.Attribute):
        head = head.value
    if bound is None or isinstance(head, ast.Name) and head.id in bound.assigned:
        return True
    from devicelint.gate import _data_to_device_names

    return func.attr in _data_to_device_names()


class _ModuleNames:
    """What a module read with `ast` binds, each worked out when first asked (most looks meet
    no call that asks: `_may_be_data_factory`)."""

    def __init__(self, tree: ast.Module) -> None:
        self._tree = tree

    @cached_property
    def assigned(self) -> frozenset:
        """The names the module binds by a top-level assignment (also in top-level `if`/`try`)."""
        names: set[str] = set()
        stack = list(self._tree.body)
        while stack:
            statement = stack.pop()
            if isinstance(statement, (ast.If, ast.Try)):
                stack.extend(statement.body)
                stack.extend(statement.orelse)
                stack.extend(getattr(statement, "finalbody", ()))
                for handler in getattr(statement, "handlers", ()):
                    stack.extend(handler.body)
            elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                for target in targets:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        return frozenset(names)

    @cached_property
    def dtype_may_place(self) -> bool:
        """Whether `x.dtype` may be a device here: the module stores an attribute named
        `dtype` or names one in a string (`setattr(m, "dtype", ...)`), as the file gate asks."""
        for node in ast.walk(self._tree):
            if type(node) is ast.Attribute and node.attr == "dtype" and type(node.ctx) is not ast.Load:
                return True
            if type(node) is ast.Constant and node.value == "dtype":
                return True
        return False

    @cached_property
    def defined_only(self) -> frozenset:
        """The names the module binds only with `def` or `class`, at any depth: no import,
        assignment, parameter, loop or `with` target, `except ... as`, `global` anywhere."""
        defined: set[str] = set()
        other: set[str] = set()
        for node in ast.walk(self._tree):
            kind = type(node)
            if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
                defined.add(node.name)
            elif kind is ast.Name:
                if type(node.ctx) is not ast.Load:
                    other.add(node.id)
            elif kind is ast.arg:
                other.add(node.arg)
            elif kind is ast.alias:
                other.add(node.asname or node.name.partition(".")[0])
            elif kind is ast.ExceptHandler:
                if node.name:
                    other.add(node.name)
            elif kind in (ast.Global, ast.Nonlocal):
                other.update(node.names)
            elif kind.__name__ in ("MatchAs", "MatchStar", "MatchMapping"):
                other.update(n for n in (getattr(node, "name", None), getattr(node, "rest", None)) if n)
        return frozenset(defined - other)


def _per_call_uploads(sem, function: cst.FunctionDef) -> Iterator[CallUpload]:
    params = {p.name.value for p in (*function.params.posonly_params, *function.params.params,
                                     *function.params.kwonly_params)}
    for line in _every_call_lines(sem, function):
        stack: list[cst.CSTNode] = list(line.body)
        while stack:
            node = stack.pop()
            if type(node) in ((cst.Lambda,) + COMPREHENSIONS):
                continue
            if type(node) is cst.Call:
                found = _constant_upload(sem, node, function, params)
                if found is not None:
                    yield found
                    continue
            stack.extend(sem.children(node))


def _every_call_lines(sem, function: cst.FunctionDef) -> Iterator[cst.SimpleStatementLine]:
    """The simple statements of `function` that run once on every call with a GPU: its
    straight-line body, and the body of an `if` taken whenever there is a GPU (`if
    USE_CUDA:`, `if torch.cuda.is_available():`: `sem.gpu_truth` True), not its `else`.
    Other compound statements may not run, or run many times, per call."""
    blocks = [function.body]
    while blocks:
        body = blocks.pop()
        if not isinstance(body, cst.IndentedBlock):
            continue
        for line in body.body:
            if isinstance(line, cst.SimpleStatementLine):
                yield line
            elif isinstance(line, cst.If) and sem.gpu_truth(line.test) is True:
                blocks.append(line.body)


def _constant_upload(sem, call: cst.Call, function, params) -> Optional[CallUpload]:
    func = call.func
    data: Optional[cst.BaseExpression] = None
    follows: set[str] = set()
    if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
        # `x.cuda()`: to the accelerator whatever the arguments (not `.cuda(i)` of a variable)
        if any(arg.star or arg.keyword is None and int_value(arg.value) is None for arg in call.args):
            return None
        data = _alias_of(sem, func.value, function)
    elif isinstance(func, cst.Attribute) and func.attr.value == "new_tensor":
        # `p.new_tensor(data)`: `data` copied to `p`'s device
        if not isinstance(func.value, cst.Name) or func.value.value not in params:
            return None
        data = call_arg(call, 0, "data")
        follows.add(func.value.value)
    elif isinstance(func, cst.Attribute) and func.attr.value == "to":
        target = keyword_arg(call, "device") or call_arg(call, 0, "\0")
        if target is None:
            return None
        followed = _device_of_param(_alias_of(sem, target, function), params)
        if followed is not None:
            follows.add(followed)
        elif sem.device_place(target)[0] is not Place.DEVICE:
            return None
        data = _alias_of(sem, func.value, function)
    else:
        made = data_to_device(sem, call)
        device = keyword_arg(call, "device")
        followed = _device_of_param(_alias_of(sem, device, function), params) if device is not None else None
        if made is None and followed is None:
            return None
        if made is None and sem.qualname(func) not in sem.api.data_to_device:
            return None
        data = made.data if made is not None else call_arg(call, 0, "data")
        if followed is not None:
            follows.add(followed)
    if data is None or type(data) in (cst.List, cst.Tuple) and not data.elements:
        return None  # (an empty literal, `torch.tensor([], device=d)`: no data is copied)
    if not _constant_host_data(sem, data, function):
        return None
    return CallUpload(call, frozenset(follows))


def _device_of_param(node: cst.BaseExpression, params) -> Optional[str]:
    """`p` for `p.device` (or `p.get_device()`), a parameter's device."""
    if isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Attribute) \
            and node.func.attr.value == "get_device":
        node = node.func
    if isinstance(node, cst.Attribute) and node.attr.value in ("device", "get_device") \
            and isinstance(node.value, cst.Name) and node.value.value in params:
        return node.value.value
    return None


def _constant_host_data(sem, data: cst.BaseExpression, function: cst.FunctionDef) -> bool:
    """Host data that is the same on every call: literal lists of numbers, module-level
    constants, deterministic factories of them (not a fresh fill: DL007's)."""
    if not invariant(sem, data, function):
        return False
    value = sem.value(data)
    if value.place is Place.DEVICE:
        return False
    if value.kind is Kind.TENSOR:
        return value.place is Place.CPU and fresh_fill(sem, data, depth=0) is None
    return value.kind in (Kind.SEQUENCE, Kind.ARRAY, Kind.NUMBER)


def bind_arguments(function: cst.FunctionDef, call: cst.Call) -> dict[str, cst.BaseExpression]:
    """{parameter name: argument} for a call of a top-level `function` (of another file, say);
    `*args`/`**kwargs` are not followed."""
    params = [*function.params.posonly_params, *function.params.params]
    names = {p.name.value for p in (*params, *function.params.kwonly_params)}
    bound: dict[str, cst.BaseExpression] = {}
    for index, arg in enumerate(call.args):
        if arg.star:
            break
        if arg.keyword is not None:
            if arg.keyword.value in names:
                bound[arg.keyword.value] = arg.value
        elif index < len(params):
            bound[params[index].name.value] = arg.value
    return bound


# -- copies of data a function's callers pass -----------------------------------------------
def param_data(sem, expr: cst.BaseExpression, function: cst.FunctionDef,
               depth: int = 3) -> Optional[frozenset]:
    """The parameters of `function` whose data `expr` is computed from, when it is computed
    from nothing else: constants, deterministic calls (PyTorch's, `math`'s, builtins, and
    the file's own functions that return such a value of their arguments), locals bound once
    from such values, comprehensions over them, and `self.x` bound in `__init__` alone. None
    when it reads anything else (a global that changes, random numbers, a loop variable)."""
    params = {p.name.value for p in (*function.params.posonly_params, *function.params.params,
                                     *function.params.kwonly_params)}
    owner = sem.parent(sem.parent(function))
    first = (function.params.posonly_params or function.params.params or [None])[0]
    this = first.name.value if isinstance(owner, cst.ClassDef) and first is not None else None
    found: set[str] = set()
    seen: set[int] = set()
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, (cst.Lambda, cst.NamedExpr, cst.Yield, cst.Await)):
            return None
        if is_metadata_read(sem, node):
            continue  # `x.size(1)`, `x.shape`: sizes, the same while the batches keep their shape
        if isinstance(node, cst.CompFor):
            stack.append(node.iter)  # its target is the comprehension's own variable
            stack.extend(test.test for test in node.ifs)
            if node.inner_for_in is not None:
                stack.append(node.inner_for_in)
            continue
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                continue
            defs = sem.defs(node)
            if not defs:
                return None
            if all(d.kind == "import" for d in defs):
                continue
            if not any(d.node is not None and within(sem, d.node, function) for d in defs):
                if changes(sem, node, function):
                    return None
                continue  # a module-level name the function does not change
            if len(defs) != 1:
                return None
            d = defs[0]
            if d.kind == "param" and node.value in params and node.value != this:
                found.add(node.value)
            elif d.kind in ("assign", "annassign") and d.value is not None and not d.path:
                stack.append(d.value)
            elif d.kind == "assign" and d.path and d.value is not None and is_metadata_read(sem, d.value):
                continue  # `(_, channel, _, _) = img1.size()`: a size
            elif d.kind != "comp":
                return None
            continue
        if isinstance(node, cst.Attribute):
            if node.attr.value in ("grad", "data"):
                return None
            if this is not None and isinstance(node.value, cst.Name) and node.value.value == this:
                if not _set_once(sem, owner, node.attr.value):
                    return None
                continue
            stack.append(node.value)
            continue
        if isinstance(node, cst.Call):
            if _deterministic(sem, node):
                if isinstance(node.func, cst.Attribute):
                    stack.append(node.func.value)
                stack.extend(arg.value for arg in node.args)
                continue
            inner = _helper_result(sem, node, depth)
            if inner is None:
                return None
            stack.extend(inner)
            continue
        if isinstance(node, cst.Subscript):
            stack.append(node.value)
            for element in node.slice:
                stack.extend(sem.children(element.slice))
            continue
        stack.extend(sem.children(node))
    return frozenset(found)


def _helper_result(sem, call: cst.Call, depth: int) -> Optional[list]:
    """For a call of the file's own function whose straight-line body returns a value of its
    parameters alone (`param_data`), the arguments that value is computed from; else None."""
    if depth <= 0:
        return None
    found = sem.syncs.callee(call)
    if found is None:
        return None
    helper, bound = found
    body = helper.body
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return None
    if not all(isinstance(line, cst.SimpleStatementLine) for line in body.body):
        return None  # branches or loops: what it returns may differ
    last = body.body[-1].body[-1]
    if not isinstance(last, cst.Return) or last.value is None:
        return None
    used = param_data(sem, last.value, helper, depth - 1)
    if used is None:
        return None
    defaults = {p.name.value: p.default for p in (*helper.params.posonly_params, *helper.params.params,
                                                  *helper.params.kwonly_params)}
    arguments = []
    for name in used:
        given = bound.get(name)
        if given is not None and len(given) == 1:
            arguments.append(given[0])
        elif given is None and defaults.get(name) is not None:
            continue  # its default: evaluated once, when the function is defined
        else:
            return None
    return arguments


@dataclass(frozen=True)
class ParamUpload:
    """A host→device copy a function makes on every call, in its straight-line body, of data
    computed from its parameters `data` alone (`param_data`), to the device of the
    parameters `follows` (`.to(p.device)`) or to the accelerator."""

    node: cst.Call
    data: frozenset
    follows: frozenset
    passed: frozenset = frozenset()  # parameters copied as they are, of a place the callers decide


def param_uploads(sem, function: cst.FunctionDef) -> tuple[ParamUpload, ...]:
    """The copies of `function` whose data its callers decide (`ParamUpload`): a caller
    that passes the same data on every call makes the same copy every time
    (`_extract_into_tensor(self.alphas, t, shape)`, `th.from_numpy(arr).to(t.device)`)."""
    memo = sem.__dict__.setdefault("_param_uploads", {})
    key = id(function)
    if key not in memo:
        memo[key] = tuple(_param_uploads(sem, function))
    return memo[key]


def _param_uploads(sem, function: cst.FunctionDef) -> Iterator[ParamUpload]:
    params = {p.name.value for p in (*function.params.posonly_params, *function.params.params,
                                     *function.params.kwonly_params)}
    for call, guard in _guarded_calls(sem, function, params):
        func = call.func
        wrapped = wrapper_move(sem, call) if type(func) is cst.Name else None
        if wrapped is not None:
            # `cuda_variable(torch.LongTensor(codes))`: a wrapper of the file that gives back
            # its argument copied to the device (`wrapper_move`)
            moved = wrapped[0]
            value = sem.value(moved)
            if value.kind is not Kind.TENSOR or value.place is not Place.CPU \
                    or fresh_fill(sem, moved, depth=0) is not None:
                continue
            data = param_data(sem, moved, function)
            if data:
                yield ParamUpload(call, data, frozenset({guard} if guard is not None else ()))
            continue
        if any(arg.star for arg in call.args):
            continue
        if not (isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda")):
            made = _param_factory_upload(sem, call, function, params, guard)
            if made is not None:
                yield made
            continue
        follows: set[str] = {guard} if guard is not None else set()
        if func.attr.value == "cuda" and call.args:
            # `.cuda(p.get_device())`, `.cuda(p.device)`: to the device of the parameter `p`
            target = keyword_arg(call, "device") or call_arg(call, 0, "\0")
            followed = _device_of_param(_alias_of(sem, target, function), params) if target is not None else None
            if followed is not None:
                follows.add(followed)
            elif target is None or int_value(target) is None:
                continue
        if func.attr.value == "to":
            target = keyword_arg(call, "device") or call_arg(call, 0, "\0")
            if target is None or not _to_param_device_or_accelerator(sem, target, function, params, follows):
                continue
        value = sem.value(func.value)
        passed: frozenset = frozenset()
        if value.kind is Kind.TENSOR and value.place is Place.UNKNOWN and isinstance(func.value, cst.Name) \
                and sem.defs(func.value) and all(d.kind == "param" for d in sem.defs(func.value)):
            # a tensor parameter copied as it is (`window.to(x.device)`): on the host or not
            # as each caller passes it (the caller's argument decides)
            passed = frozenset((func.value.value,))
        elif value.place is Place.DEVICE or value.kind not in (Kind.TENSOR, Kind.ARRAY, Kind.SEQUENCE):
            continue
        elif value.kind is Kind.TENSOR and value.place is not Place.CPU:
            continue
        if fresh_fill(sem, func.value, depth=0) is not None:
            continue  # a fresh fill: DL007 (create it on the device)
        data = param_data(sem, func.value, function)
        if data:
            yield ParamUpload(call, data, frozenset(follows), passed)


def _to_param_device_or_accelerator(sem, target: cst.BaseExpression, function: cst.FunctionDef,
                                    params, follows: set) -> bool:
    """Whether a copy to `target` goes to a parameter's device (`x.device`, through a local
    bound once: the parameter is added to `follows`) or to the accelerator."""
    followed = _device_of_param(_alias_of(sem, target, function), params)
    if followed is not None:
        follows.add(followed)
        return True
    return sem.device_place(target)[0] is Place.DEVICE


def _param_factory_upload(sem, call: cst.Call, function: cst.FunctionDef, params,
                          guard: Optional[str]) -> Optional[ParamUpload]:
    """`torch.tensor(weights, device=batch.device)` (a `[copies] data_to_device` factory) of
    data computed from parameters alone, to the device of a parameter or to the accelerator:
    a caller passing the same host data every time makes the same copy every time. A bare
    parameter as the data is `passed` (the caller's argument must be on the host: a factory
    given a tensor already on the device copies on the device)."""
    found = _factory_copy(sem, call)
    if found is None:
        return None
    data, device, _qual = found
    follows: set[str] = {guard} if guard is not None else set()
    if not _to_param_device_or_accelerator(sem, device, function, params, follows):
        return None
    value = sem.value(data)
    passed: frozenset = frozenset()
    if type(data) is cst.Name and sem.defs(data) and all(d.kind == "param" for d in sem.defs(data)):
        passed = frozenset((data.value,))
    elif value.place is Place.DEVICE or value.kind not in (Kind.TENSOR, Kind.ARRAY, Kind.SEQUENCE, Kind.NUMBER) \
            or value.kind is Kind.TENSOR and value.place is not Place.CPU:
        return None
    found = param_data(sem, data, function)
    return ParamUpload(call, found, frozenset(follows), passed) if found else None


_NOT_STRAIGHT_LINE = frozenset((cst.Lambda, cst.IfExp, cst.BooleanOperation) + COMPREHENSIONS)


def _straight_line_calls(sem, function: cst.FunctionDef) -> Iterator[cst.Call]:
    """Calls that run once on every call of `function`: in its straight-line statements
    (not under a condition, loop, `try` or `with`), not in nested functions or lambdas."""
    body = function.body
    if type(body) is not cst.IndentedBlock:
        return
    for line in body.body:
        if type(line) is not cst.SimpleStatementLine:
            continue
        stack: list[cst.CSTNode] = list(line.body)
        while stack:
            node = stack.pop()
            if type(node) in _NOT_STRAIGHT_LINE:  # exact types: isinstance() misses cost an ABC check
                continue
            if type(node) is cst.Call:
                yield node
            stack.extend(sem.children(node))


@dataclass(frozen=True)
class InnerCopy:
    """A call `function` makes once on every call of its own (`site`), of a function of the
    file or of another local module (`function` in the model `other`) that copies to the
    device data computed from its parameters (`upload`), given the same data every time."""

    site: cst.Call
    other: object
    function: cst.FunctionDef
    upload: ParamUpload


def inner_copies(sem, function: cst.FunctionDef) -> tuple[InnerCopy, ...]:
    """The calls `function` makes once per call of its own (its straight-line body, an `if`
    taken whenever there is a GPU, and the first pass of a top-level `for c in range(n)`:
    `token = prev if c else str2tensor(SOS_token)`) of functions (this file's or another local
    module's, `param_uploads`) that copy to the accelerator data computed from their
    parameters, each given the same data on every call of `function` (constants, names
    bound outside it that it does not change, or nothing for a parameter with a default):
    a seq2seq `train()` copying its start token through `str2tensor(SOS_token)`."""
    memo = sem.__dict__.setdefault("_inner_copies", {})
    key = id(function)
    if key not in memo:
        memo[key] = tuple(_inner_copies(sem, function))
    return memo[key]


def _inner_copies(sem, function: cst.FunctionDef) -> Iterator[InnerCopy]:
    for call in _once_per_call_calls(sem, function):
        if not isinstance(call.func, (cst.Name, cst.Attribute)):
            continue
        found = sem.syncs.callee(call)
        if found is not None:
            other, callee = sem, found[0]
            bound = found[1]
        else:
            if not sem.syncs.runs_foreign_function(call):
                made = _constructor_copy(sem, call)
                if made is not None:
                    yield made
                continue
            where = foreign_function_module(sem, call)
            if where is not None and not may_upload_param(sem.project.index, *where):
                continue  # its text makes no copy `param_uploads` accepts: its model is not built
            foreign = sem.syncs.foreign_function(call)
            if foreign is None:
                made = _constructor_copy(sem, call)  # a class of another local module
                if made is not None:
                    yield made
                continue
            other, callee = foreign
            bound = other.syncs._bind(callee, call, False)
        if callee is function:
            continue
        defaults = {p.name.value for p in (*callee.params.posonly_params, *callee.params.params,
                                           *callee.params.kwonly_params) if p.default is not None}
        for upload in param_uploads(other, callee):
            if upload.follows or upload.passed:
                continue
            if all(name in defaults if name not in bound else
                   len(bound[name]) == 1 and isinstance(bound[name][0], cst.BaseExpression)
                   and _constant_argument(sem, bound[name][0], function)
                   for name in upload.data):
                yield InnerCopy(call, other, callee, upload)
                break


def _constructor_copy(sem, call: cst.Call) -> Optional[InnerCopy]:
    """`LPIPS()`, with `LPIPS` a class of this file or of another local module whose
    `__init__` copies the same constants to the accelerator on every call
    (`self.mu = torch.tensor([-0.03, -0.088, -0.188]).view(1, 3, 1, 1).cuda()`:
    `per_call_uploads`, to the device whatever the arguments): building the object copies
    them again each time."""
    if not isinstance(call.func, cst.Name) or sem.value(call.func).kind is not Kind.MODULE_CLASS \
            and not any(d.kind == "class" for d in sem.defs(call.func)):
        return None
    found = sem.syncs._class_method(call.func, "__init__")
    if found is None:
        return None
    other, init = found
    for upload in per_call_uploads(other, init):
        if not upload.follows:
            return InnerCopy(call, other, init, upload)  # type: ignore[arg-type]
    return None


def element_uploads(sem, function: cst.FunctionDef) -> tuple[tuple[str, cst.Call], ...]:
    """(parameter, copy) for each `[s.cuda() for s in segs]` (or `.to(device)` to a device)
    that `function` runs on every call (`_every_call_lines`), walking a parameter `segs` as
    its callers pass it: every element of the list a caller passes is copied to the device
    on each call (dino's `label_propagation` copying the reference segmentations)."""
    memo = sem.__dict__.setdefault("_element_uploads", {})
    key = id(function)
    if key not in memo:
        memo[key] = tuple(_element_uploads(sem, function))
    return memo[key]


def _element_uploads(sem, function: cst.FunctionDef) -> Iterator[tuple[str, cst.Call]]:
    params = {p.name.value for p in (*function.params.posonly_params, *function.params.params,
                                     *function.params.kwonly_params)}
    for line in _every_call_lines(sem, function):
        stack: list[cst.CSTNode] = list(line.body)
        while stack:
            node = stack.pop()
            if type(node) in (cst.Lambda, cst.IfExp, cst.BooleanOperation):
                continue
            if type(node) in (cst.ListComp, cst.GeneratorExp):
                found = _element_copy(sem, node, params)
                if found is not None:
                    yield found
                continue
            stack.extend(sem.children(node))


def _element_copy(sem, comp, params) -> Optional[tuple[str, cst.Call]]:
    """`[s.cuda() for s in segs]`, `segs` a parameter (not rebound before): (`segs`, the copy)."""
    for_in = comp.for_in
    if for_in.inner_for_in is not None or for_in.ifs or not isinstance(for_in.target, cst.Name) \
            or not isinstance(for_in.iter, cst.Name) or for_in.iter.value not in params:
        return None
    defs = sem.defs(for_in.iter)
    if not defs or any(d.kind != "param" for d in defs):
        return None
    element = comp.elt
    if not isinstance(element, cst.Call) or not isinstance(element.func, cst.Attribute) \
            or not isinstance(element.func.value, cst.Name) or element.func.value.value != for_in.target.value:
        return None
    method = element.func.attr.value
    if method == "cuda":
        if any(arg.star or arg.keyword is None and int_value(arg.value) is None for arg in element.args):
            return None
    elif method == "to":
        target = keyword_arg(element, "device") or call_arg(element, 0, "\0")
        if target is None or sem.device_place(target)[0] is not Place.DEVICE:
            return None
    else:
        return None
    return for_in.iter.value, element


def listed_elements(sem, arg: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The elements a list passed as `arg` is written with: a list display, or `[a] + [...]`
    (the displays' own elements), directly or through a local bound once to one."""
    if isinstance(arg, cst.Name):
        defs = sem.defs(arg)
        if len(defs) != 1 or defs[0].kind != "assign" or defs[0].path or defs[0].value is None:
            return []
        arg = defs[0].value
    out: list[cst.BaseExpression] = []
    stack = [arg]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            stack.extend((node.left, node.right))
        elif isinstance(node, cst.List):
            out.extend(e.value for e in node.elements if isinstance(e, cst.Element))
    return out


def _constant_argument(sem, arg: cst.BaseExpression, function: cst.FunctionDef) -> bool:
    """`arg` is the same on every call of `function`: it reads no name bound in it (nor a
    parameter), changes nothing, calls only deterministic functions."""
    return invariant(sem, arg, function) and not any(
        d.kind == "param" for name in reads(sem, arg) for d in sem.defs(name))


def _once_per_call_calls(sem, function: cst.FunctionDef) -> Iterator[cst.Call]:
    """Calls that run once on every call of `function` with a GPU: in `_every_call_lines`,
    and in the arm of an `if`/`a if c else b` in a top-level `for c in range(...)` taken on
    its first pass only (`_first_pass_arms`)."""
    lines = list(_every_call_lines(sem, function))
    body = function.body
    first_pass: list[cst.CSTNode] = []
    if isinstance(body, cst.IndentedBlock):
        for statement in body.body:
            if isinstance(statement, cst.For):
                first_pass.extend(_first_pass_arms(sem, statement))
    for root in [*lines, *first_pass]:
        stack: list[cst.CSTNode] = [root] if not isinstance(root, cst.SimpleStatementLine) else list(root.body)
        while stack:
            node = stack.pop()
            if type(node) in _NOT_STRAIGHT_LINE:
                continue
            if type(node) is cst.Call:
                yield node
            stack.extend(sem.children(node))


def first_pass_only(sem, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
    """`node` runs on the first pass of `loop` only: an `if`/`a if t else b` between them,
    outside nested loops and functions, whose arm holding `node` is taken just for the
    counter's first value (as `_first_pass_arms` lists them; walked up from `node`)."""
    if type(loop) is not cst.For or type(loop.target) is not cst.Name:
        return False
    start = _range_start(sem, loop.iter)
    if start is None:
        return False
    counter = loop.target.value
    child, parent = node, sem.parent(node)
    while parent is not None and parent is not loop:
        if type(parent) in _FIRST_PASS_STOPS:
            return False
        if type(parent) in (cst.IfExp, cst.If) and child is not parent.test:
            first = _first_value_test(parent.test, counter, start)
            if first is not None and (child is parent.body) == first:
                return True
        child, parent = parent, sem.parent(parent)
    return False


_FIRST_PASS_STOPS = frozenset((cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda))


def _range_start(sem, iterable: cst.BaseExpression) -> Optional[int]:
    """The counter's value on the first pass of a loop over `range(n)` (0) or `range(k, n)`
    (`k` a literal integer); None for anything else."""
    if not isinstance(iterable, cst.Call) or not _builtin(sem, iterable.func, frozenset({"range"})):
        return None
    args = iterable.args
    if any(arg.star or arg.keyword is not None for arg in args):
        return None
    if len(args) == 1:
        return 0
    return int_value(args[0].value) if len(args) == 2 else None


def _first_pass_arms(sem, loop: cst.For) -> Iterator[cst.CSTNode]:
    """The expressions and statements of the body of `loop` (`for c in range(...)`, outside
    nested loops and functions) that run on its first pass only: the arm of a test on the
    counter that holds just for its first value (`prev if c else start` over `range(n)`,
    `if c == 1:` over `range(1, n)`)."""
    start = _range_start(sem, loop.iter)
    if start is None or not isinstance(loop.target, cst.Name):
        return
    counter = loop.target.value
    stack: list[cst.CSTNode] = [loop.body]
    while stack:
        node = stack.pop()
        if type(node) in (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda):
            continue
        if isinstance(node, (cst.IfExp, cst.If)):
            first = _first_value_test(node.test, counter, start)
            if first is not None:
                if isinstance(node, cst.IfExp):
                    yield node.body if first else node.orelse
                elif first:
                    yield node.body
                elif isinstance(node.orelse, cst.Else):
                    yield node.orelse.body
                continue
        stack.extend(sem.children(node))


def _first_value_test(test: cst.BaseExpression, counter: str, start: int) -> Optional[bool]:
    """True when `test` holds exactly when the counter has its first value `start` (`c ==
    start`; `not c` for 0), False when it holds exactly when it has another (`c != start`;
    `c` for 0), else None."""
    if isinstance(test, cst.Name) and test.value == counter and start == 0:
        return False
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _first_value_test(test.expression, counter, start)
        return None if inner is None else not inner
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
            and isinstance(test.left, cst.Name) and test.left.value == counter \
            and int_value(test.comparisons[0].comparator) == start:
        operator = test.comparisons[0].operator
        if isinstance(operator, cst.Equal):
            return True
        if isinstance(operator, cst.NotEqual):
            return False
    return None


def _guarded_calls(sem, function: cst.FunctionDef, params) -> Iterator[tuple[cst.Call, Optional[str]]]:
    """(call, None) for `_straight_line_calls`, and (call, `p`) for the calls in the
    straight-line statements of an `if p.is_cuda:` of the body (`p` a parameter): they run on
    every call that passes `p` on the device."""
    for call in _straight_line_calls(sem, function):
        yield call, None
    body = function.body
    if not isinstance(body, cst.IndentedBlock):
        return
    for line in body.body:
        if type(line) is not cst.If or type(line.body) is not cst.IndentedBlock:
            continue
        test = line.test
        if not (isinstance(test, cst.Attribute) and test.attr.value == "is_cuda"
                and isinstance(test.value, cst.Name) and test.value.value in params
                and sem.defs(test.value) and all(d.kind == "param" for d in sem.defs(test.value))):
            continue
        for inner in line.body.body:
            if not isinstance(inner, cst.SimpleStatementLine):
                continue
            stack: list[cst.CSTNode] = list(inner.body)
            while stack:
                node = stack.pop()
                if type(node) in _NOT_STRAIGHT_LINE:
                    continue
                if type(node) is cst.Call:
                    yield node, test.value.value
                stack.extend(sem.children(node))


def _alias_of(sem, node: cst.BaseExpression, function: cst.FunctionDef) -> cst.BaseExpression:
    """What a local bound once in `function` stands for (`device = x.device`), else `node`."""
    if isinstance(node, cst.Name):
        defs = sem.defs(node)
        if len(defs) == 1 and defs[0].kind == "assign" and defs[0].value is not None \
                and not defs[0].path and within(sem, defs[0].node, function):
            return defs[0].value
    return node


def constant_at(sem, arg: cst.BaseExpression, call: cst.Call) -> bool:
    """`arg`, passed at `call`, is the same data every time the call runs: invariant in the
    loop around the call, or in a method, read from what the object keeps unchanged."""
    loops = sem.ctx.loops(call)
    if loops and invariant(sem, arg, loops[0]):
        return True
    caller = sem.function_of(call)
    return caller is not None and same_every_call(sem, arg, caller)


def call_sites(sem, function: cst.FunctionDef) -> list[tuple[cst.Call, dict]]:
    """The calls of `function` in the file, each with its arguments by parameter name."""
    found = []
    for call in sem.calls_by_name().get(function.name.value, ()):
        resolved = sem.syncs.callee(call)
        if resolved is not None and resolved[0] is function:
            found.append((call, resolved[1]))
    return found


def repeats(sem, function: cst.FunctionDef, depth: int = 4) -> Optional[cst.CSTNode]:
    """What runs `function` again and again, seen in the file: the loop (not one that runs
    once) around a call of it, or around a call of a function that calls it (`depth` calls
    up), or the `forward` of a module class / `__call__` it is; None when nothing shows it."""
    memo = sem.__dict__.setdefault("_repeats", {})
    key = (id(function), depth)
    if key in memo:
        return memo[key]
    memo[key] = None  # a recursion adds nothing
    found = _repeats(sem, function, depth)
    memo[key] = found
    return found


def _repeats(sem, function: cst.FunctionDef, depth: int) -> Optional[cst.CSTNode]:
    owner = sem.parent(sem.parent(function))
    if isinstance(owner, cst.ClassDef) and (
            function.name.value == "__call__"
            or function.name.value == "forward" and owner in sem.module_classes().values()):
        return function
    callers = call_sites(sem, function)
    for call, _bound in callers:
        loops = sem.ctx.loops(call)
        if loops and not (isinstance(loops[0], (cst.For, cst.While)) and sem.loops.facts(loops[0]).runs_once):
            return loops[0]
    if depth <= 0:
        return None
    for call, _bound in callers:
        caller = sem.function_of(call)
        if caller is not None and caller is not function:
            found = repeats(sem, caller, depth - 1)
            if found is not None:
                return found
    return None


def may_name_collate_fn(sem) -> bool:
    """A loader of the file may take a `collate_fn=` (its text says so): else
    `collate_loader` is None for every function, and what it would be asked after
    need not be worked out."""
    return sem.names_collate_fn


def collate_loader(sem, function: cst.FunctionDef, depth: int = 2) -> Optional[cst.Call]:
    """The loader construction of the file (`DataLoader(..., collate_fn=f)`, the API table's
    loaders) that runs `function` once per batch: it takes `function` as its `collate_fn=`
    (by a name bound to that function alone), or a function that calls it does (`depth`
    calls up: `collate_fn(batch)` returning `collate_batch(batch, ..., device)`); else None."""
    if not may_name_collate_fn(sem):
        return None
    for call in sem.calls_by_name().get("DataLoader", ()):
        if not sem.api.is_loader(sem.qualname(call.func) or ""):
            continue
        given = keyword_arg(call, "collate_fn")
        if isinstance(given, cst.Name) and sem.resolve_function(given) is function:
            return call
    if depth <= 0:
        return None
    for site, _bound in call_sites(sem, function):
        caller = sem.function_of(site)
        if caller is not None and caller is not function and not sem.ctx.loops(site):
            found = collate_loader(sem, caller, depth - 1)
            if found is not None:
                return found
    return None


def exclusive_arms(sem, a: cst.CSTNode, b: cst.CSTNode, region: cst.CSTNode) -> bool:
    """`a` and `b` sit in opposite arms of conditions that have one value wherever `region`
    runs, so one never runs when the other does: the body and the `else` of one `if`, or of
    two `if`s that test the same flag (`if use_cuda: x = x.cuda()` ... `if use_cuda: ...
    else: y.cpu()`; `not flag` flips the arm). A flag is a name, or an attribute of one
    (`args.use_cuda`), that no binding inside `region` rebinds and no store inside it writes."""
    arms_b = list(_condition_arms(sem, b, region))
    for owner_a, test_a, taken_a in _condition_arms(sem, a, region):
        for owner_b, test_b, taken_b in arms_b:
            if owner_a is owner_b:
                if taken_a != taken_b:
                    return True
                continue
            flag_a, negated_a = _flag(test_a)
            flag_b, negated_b = _flag(test_b)
            if flag_a is None or flag_b is None or (taken_a != negated_a) == (taken_b != negated_b):
                continue
            if _same_flag(sem, flag_a, flag_b, region):
                return True
    return False


def _condition_arms(sem, node: cst.CSTNode, region: cst.CSTNode) -> Iterator[tuple[cst.If, cst.BaseExpression, bool]]:
    """The `if`s inside `region` that decide whether `node` runs: (the if, its test, True for
    its body / False for its `else` or `elif`)."""
    child = node
    parent = sem.parent(node)
    while parent is not None and child is not region:
        if isinstance(parent, cst.If):
            if child is parent.body:
                yield parent, parent.test, True
            elif child is parent.orelse:
                yield parent, parent.test, False
        elif isinstance(parent, cst.Else):
            owner = sem.parent(parent)
            if isinstance(owner, cst.If) and owner.orelse is parent:
                yield owner, owner.test, False
            child = owner
            parent = sem.parent(owner)
            continue
        if isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return
        child = parent
        parent = sem.parent(parent)


def _flag(test: cst.BaseExpression) -> tuple[Optional[cst.BaseExpression], bool]:
    """`use_cuda` / `args.use_cuda` of a test, and whether the test negates it."""
    negated = False
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        negated = not negated
        test = test.expression
    if dotted_name(test) is None:
        return None, negated
    return test, negated


def _same_flag(sem, a: cst.BaseExpression, b: cst.BaseExpression, region: cst.CSTNode) -> bool:
    text = dotted_name(a)
    if text is None or text != dotted_name(b):
        return False
    base_a, base_b = _base_name(a), _base_name(b)
    defs_a, defs_b = sem.defs(base_a), sem.defs(base_b)
    if not defs_a or {id(d) for d in defs_a} != {id(d) for d in defs_b}:
        return False
    if any(d.node is None or within(sem, d.node, region) for d in defs_a):
        return False  # rebound inside the region: the two tests may differ
    if isinstance(a, cst.Attribute):
        for other in _names_in(sem, region, base_a.value):
            node: cst.CSTNode = other
            while isinstance(sem.parent(node), cst.Attribute) and sem.parent(node).value is node:
                node = sem.parent(node)
                if dotted_name(node) == text and _is_store(sem, node):
                    return False
    return True


def _base_name(node: cst.BaseExpression) -> cst.Name:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node  # type: ignore[return-value]


def conditional_move(sem, name: cst.Name) -> Optional[Def]:
    """The binding `x = x.cuda(...)` / `x = x.to(...)` that moves the variable `name` reads
    under a condition (`if args.gpu is not None: input = input.cuda(args.gpu)`), when the
    bindings that reach `name` (with a GPU) are that move and the bindings its receiver
    reads (the value before the move); else None. Whether the target is the device is the
    caller's question."""
    defs = sem.gpu_path_defs(sem.defs(name))
    if len(defs) < 2:
        return None
    for d in defs:
        value = d.value
        if d.kind != "assign" or d.path or not isinstance(value, cst.Call) \
                or not isinstance(value.func, cst.Attribute) or value.func.attr.value not in ("cuda", "to") \
                or type(value.func.value) is not cst.Name or value.func.value.value != name.value:
            continue
        before = {id(b) for b in sem.defs(value.func.value)}
        if before and all(other is d or id(other) in before for other in defs):
            return d
    return None


# Methods NumPy arrays and tensors both have that give back the kind they are called on (an
# array's `.reshape` an array, a tensor's a tensor): a value computed from another through
# them, or by indexing, is a tensor exactly when the other is.
_KIND_KEEPING_METHODS = frozenset(("reshape", "transpose", "squeeze", "flatten", "swapaxes", "copy"))
_MAX_REBINDINGS = 4


def used_as_tensor(sem, d: Def, depth: int = 0) -> bool:
    """The value binding `d` gives is shown to be a tensor by what the code does with it: a
    read is the input of a `torch.*` operation that computes where its input is (`torch.max(
    prob, dim=1)`, `torch.topk(prob, k)`: NumPy arrays and Python objects raise there), or the
    receiver of a method only tensors have (`prob.softmax(-1)`, `logits.topk(k)`). Factories
    that copy data (`torch.tensor(x)`, `torch.as_tensor(x)`) accept arrays: not counted. Used
    where the binding's own expression does not show the kind (a method of a model's own,
    `model.project(h)`: DL004). Also through what the code computes from it by indexing and
    the methods arrays share (`.reshape`, `.transpose`, ...), which keep the kind, and binds
    to one name: `att = model.attention(x)`, `att = att[0, :, 0].reshape(n, -1)`, then
    `torch.sort(att)` (a few such bindings deep)."""
    for use in uses(sem, d):
        top = use
        while True:
            parent = sem.parent(top)
            if isinstance(parent, cst.Subscript) and parent.value is top:
                top = parent
                continue
            if isinstance(parent, cst.Attribute) and parent.value is top \
                    and parent.attr.value in _KIND_KEEPING_METHODS:
                call = sem.parent(parent)
                if isinstance(call, cst.Call) and call.func is parent:
                    top = call
                    continue
            break
        if _tensor_use(sem, top):
            return True
        if depth < _MAX_REBINDINGS:
            rebound = _single_binding(sem, top)
            if rebound is not None and used_as_tensor(sem, rebound, depth + 1):
                return True
    return False


def _single_binding(sem, expr: cst.CSTNode) -> Optional[Def]:
    """The binding `name = expr` gives (one plain name target), else None."""
    assign = sem.parent(expr)
    if not (isinstance(assign, cst.Assign) and assign.value is expr and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name)):
        return None
    name = assign.targets[0].target.value
    scope = sem.scope_of(assign)
    for d in sem.flow(scope).all_defs.get(name, ()):
        if d.node is assign and d.kind == "assign" and not d.path:
            return d
    return None


def _tensor_use(sem, use: cst.CSTNode) -> bool:
    """`use` is the receiver of a tensor-only method or the input of a `torch.*` operation
    that computes where its input is (see `used_as_tensor`)."""
    parent = sem.parent(use)
    if isinstance(parent, cst.Attribute) and parent.value is use:
        call = sem.parent(parent)
        return isinstance(call, cst.Call) and call.func is parent \
            and parent.attr.value in sem.api.tensor_only_methods
    if not isinstance(parent, cst.Arg) or parent.star:
        return False
    call = sem.parent(parent)
    if not isinstance(call, cst.Call):
        return False
    given = [a for a in call.args if a.keyword is None and not a.star]
    first = given[0] is parent if given else False
    if not first and not (parent.keyword is not None and parent.keyword.value == "input"):
        return False
    qual = sem.qualname(call.func)
    spec = sem.api.function(qual) if qual and qual.startswith("torch.") else None
    return spec is not None and spec.place == "input" and spec.result == "tensor" \
        and qual not in sem.api.data_to_device
