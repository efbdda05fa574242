"""The semantic model of one file: what each expression's value is.

Built lazily: nothing is computed until a rule asks, then each scope's reaching definitions
once, and each expression's value once (memoised by node). Rules ask; they never re-derive.

    sem = self.ctx.semantic
    value = sem.value(node)             # a Value: kind, place, shape, layout, origin
    sem.defs(name_node)                 # the bindings that may reach this read
    sem.loops.step_loop(node)           # the step loop that runs `node` once per step
    sem.on_gpu_path(node)               # False when `node` runs only without a GPU
    sem.syncs.reads(node)               # host reads at `node`; sem.syncs.call_reads(call):
                                        # those a call of the file's own function makes

Answers are facts the code shows (data flow, PyTorch's behaviour from torch_api.toml, call
sites in the file). Identifier names are consulted only as a last resort, and a value that
rests on a name carries `hint=True` so that a rule can say so or stay silent.
"""

from __future__ import annotations

import functools
import re
from itertools import chain
from typing import Callable, Optional

import libcst as cst

from devicelint.names import call_arg, dotted_name, int_value, keyword_arg, positional_args  # noqa: F401 - also model's API
from devicelint.semantic import dataflow, shapes
from devicelint.semantic.api import OpSpec, torch_api
from devicelint.tree import children
from devicelint.semantic.flags import (
    flag_truth, module_attribute_value, passed_attribute_value, passed_switch_truth)
from devicelint.semantic.modules import attribute_moves, holds_state
from devicelint.semantic.flow import COMPREHENSIONS, FUNCTIONS, IN_PLACE_MODULE_METHODS, Def, ScopeFlow, target_parts
from devicelint.semantic.values import (
    BOOL, CONTIGUOUS, LAYOUT_EXPANDED, LAYOUT_NARROWED, LAYOUT_PERMUTED, NONE, NUMBER, STRING,
    UNKNOWN, UNKNOWN_LAYOUT, Kind, Layout, Origin, Place, Value, join, join_all, tensor,
)

SCOPES = (cst.Module, cst.FunctionDef, cst.Lambda, cst.ClassDef) + COMPREHENSIONS
_MAX_DEPTH = 40
_SCOPES = frozenset(FUNCTIONS + (cst.ClassDef,) + COMPREHENSIONS)
_NESTED_EXPRESSION_SCOPES = frozenset(COMPREHENSIONS + (cst.Lambda,))
_NOT_INDEXED = (None, -1, None)  # FileContext's index entry of a node it does not hold
# The nodes _non_import_names reads besides the engine's binders (read per type, not by a
# pass over every node).
_NAME_BINDING_NODES = (cst.Parameters, cst.ExceptHandler, cst.ExceptStarHandler, cst.MatchAs,
                       cst.MatchStar, cst.MatchMapping, cst.Call)
_NO_CYCLE = 1 << 30
_STATEMENT_CONTAINERS = frozenset((cst.SimpleStatementLine, cst.SimpleStatementSuite, cst.IndentedBlock,
                                   cst.Module))
_DEVICE_NAME = re.compile(r"(^|_)(device|dev|gpu|cuda_device|target_device)$", re.I)
# Legacy typed tensor classes (`torch.FloatTensor`, `torch.cuda.LongTensor`), not `torch.Tensor`.
_TENSOR_TYPE = re.compile(r"^torch\.(cuda\.)?[A-Z][A-Za-z0-9]*[a-z0-9]Tensor$")
_OTHER_ACCELERATORS = ("mps", "xpu", "hpu", "npu", "xla", "meta", "mtia", "privateuseone")
_PASS_THROUGH = {"enumerate", "iter", "list", "tuple", "sorted", "reversed", "tqdm", "tqdm.tqdm",
                 "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.rich.tqdm", "rich.progress.track",
                 "tqdm.autonotebook.tqdm", "itertools.islice", "islice", "cycle", "itertools.cycle",
                 "random.sample", "random.choices"}


# torch.Tensor's attributes that are not methods (torch 2.13)
_TENSOR_ATTRIBUTES = frozenset((
    "T", "mT", "H", "mH", "data", "grad", "real", "imag", "shape", "device", "dtype", "ndim",
    "is_cuda", "requires_grad", "is_leaf", "layout", "names", "grad_fn", "is_sparse",
    "is_quantized", "is_meta", "is_mkldnn", "is_nested", "is_cpu", "is_xpu", "is_mps",
    "itemsize", "nbytes", "output_nr", "retains_grad", "is_sparse_csr", "is_complex",
))


# Expressions whose value `_value` never makes a tensor, whatever the file binds: literals,
# displays and comprehensions (sequences, mappings), lambdas, `...`.
_NEVER_TENSOR_TYPES = frozenset((
    cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
    cst.FormattedString, cst.Tuple, cst.List, cst.Set, cst.Dict, cst.ListComp, cst.GeneratorExp,
    cst.SetComp, cst.DictComp, cst.Lambda, cst.Ellipsis,
))
_IDENTITY_TESTS = (cst.In, cst.NotIn, cst.Is, cst.IsNot)


# How many calls of other files' functions deep `returned_for` follows (a helper calling a
# helper of a third file is two).
_MAX_BOUND_DEPTH = 3
_bound_depth = 0
_bound_cuts = 0  # how many times a chain was not followed further (returned_for)


@functools.lru_cache(maxsize=1024)
def _attribute_written(attr: str) -> "re.Pattern[str]":
    """An attribute named `attr` in a text (`.attr`, `. attr`, `.\\` then `attr` on the next line)."""
    return re.compile(r"\.[\s\\]*" + re.escape(attr) + r"\b")


def _device_data(value: Value) -> bool:
    """A tensor on the device (by a name's hint too: the value keeps it), a list or dict of
    them, or a tuple one part of which is one (its other parts keep what is known of them)."""
    if value.kind in (Kind.SEQUENCE, Kind.MAPPING):
        element = value.element
        if value.items and (element is None or element.kind is Kind.UNKNOWN):
            return any(_device_data(v) for v in value.items)  # a tuple: one part is enough
        return element is not None and element.kind is Kind.TENSOR and _device_data(element)
    return value.kind is Kind.TENSOR and value.place is Place.DEVICE


def _host_data(value: Value) -> bool:
    """Data on the host: a host kind (a number, an array, None, ...), a CPU value, or a list
    or dict whose known parts all are."""
    if value.place is Place.CPU or value.kind in (Kind.NUMBER, Kind.BOOL, Kind.STRING, Kind.SIZE, Kind.DTYPE,
                                                  Kind.DEVICE, Kind.NONE, Kind.ARRAY):
        return True
    if value.kind in (Kind.SEQUENCE, Kind.MAPPING):
        parts = [value.element] if value.element is not None and value.element.kind is not Kind.UNKNOWN \
            else list(value.items or ())
        return bool(parts) and all(_host_data(p) for p in parts)
    return False


def _foreign(value: Value) -> Value:
    """`value` as another file may hold it: its kind, place, rank and elements, without
    the nodes of the file it was made in (layouts and origins are left unknown)."""
    return Value(value.kind, value.place, pinned=value.pinned, shape=value.shape,
                 element=_foreign(value.element) if value.element is not None else None,
                 items=tuple(_foreign(v) for v in value.items) if value.items is not None else None,
                 cls=value.cls if isinstance(value.cls, str) else None, hint=value.hint,
                 literal=value.literal)


def _signature(value: Value):
    return (value.kind, value.place, value.hint, value.shape,
            _signature(value.element) if value.element is not None else None,
            tuple(_signature(v) for v in value.items) if value.items is not None else None)


def _bind_arguments(function: cst.FunctionDef, args, passed: list) -> Optional[dict]:
    """Parameter name -> the value a call passes it (positional then keyword arguments);
    None when the call cannot be matched (too many positionals, an unknown keyword)."""
    params = function.params
    positional = [*params.posonly_params, *params.params]
    names = {p.name.value for p in (*positional, *params.kwonly_params)}
    bound: dict = {}
    for index, (arg, value) in enumerate(zip(args, passed)):
        if arg.keyword is None:
            if index >= len(positional):
                return None
            bound[positional[index].name.value] = value
        elif arg.keyword.value in names:
            bound[arg.keyword.value] = value
        else:
            return None
    return bound


def never_tensor(node: cst.CSTNode) -> bool:
    """Whether `node`'s value is never a tensor, seen from its syntax alone: a first look
    that spares asking `value` (and building flows) where a rule needs a tensor. Mirrors
    `SemanticModel._value`: literals, `True`/`False`/`None`, displays, comprehensions,
    lambdas, `...`, `not x`, `-1`, `in`/`is` tests."""
    kind = type(node)
    if kind in _NEVER_TENSOR_TYPES:
        return True
    if kind is cst.Name:
        return node.value in ("True", "False", "None")
    if kind is cst.UnaryOperation:
        return type(node.operator) is cst.Not or never_tensor(node.expression)
    if kind is cst.Comparison:
        return any(isinstance(c.operator, _IDENTITY_TESTS) for c in node.comparisons)
    return False


# never_tensor's node types whose value may still hold a tensor (a list of tensors).
_DISPLAY_TYPES = frozenset((
    cst.Tuple, cst.List, cst.Set, cst.Dict, cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp,
))


def never_holds_tensor(node: cst.CSTNode) -> bool:
    """Whether `node`'s value is neither a tensor nor a container that may hold one (a
    tuple, list, set or dict display or comprehension), from its syntax alone: a number,
    a string, `True`/`False`/`None`, `not x`, `-1`, `in`/`is` tests, a lambda, `...`.
    `SemanticModel.value` gives such a node a kind other than TENSOR, SEQUENCE and
    MAPPING (never_tensor, less the displays)."""
    return type(node) not in _DISPLAY_TYPES and never_tensor(node)


def string_value(node: cst.CSTNode) -> Optional[str]:
    if type(node) is cst.SimpleString:
        try:
            value = node.evaluated_value
        except Exception:  # noqa: BLE001 - odd literals are just "unknown"
            return None
        return value if isinstance(value, str) else None
    if type(node) is cst.ConcatenatedString:
        left, right = string_value(node.left), string_value(node.right)
        return left + right if left is not None and right is not None else None
    return None


def device_string_place(text: str) -> Optional[Place]:
    head = text.split(":", 1)[0].strip().lower()
    if head == "cpu":
        return Place.CPU
    if head == "cuda" or head in _OTHER_ACCELERATORS:
        return Place.DEVICE
    return None


_NOT_KNOWN = object()  # a memo table's "not asked yet" where None is an answer
_ALIAS, _OTHER = "<alias>", "<other>"  # not qualified names: they hold "<"
_NOT_IMPORTS = frozenset({_ALIAS, _OTHER})


class SemanticModel:
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.api = torch_api()
        self.reaching: dict[int, frozenset] = {}
        self.foreign_defs: dict[str, list[Def]] = {}
        self.class_entry_state: dict[int, dict] = {}
        self.comprehension_entry_state: dict[int, dict] = {}
        self.function_entry_state: dict[int, dict] = {}
        self.attribute_defs: dict[tuple[int, str], list[tuple[cst.CSTNode, Def]]] = {}
        # `self.x.to(device)` statements: (id(class), "x") -> [(the `self.x` node, the call)]
        self.attribute_moves: dict[tuple[int, str], list[tuple[cst.Attribute, cst.Call]]] = {}
        self._flows: dict[int, ScopeFlow] = {}
        self._values: dict[int, Value] = {}
        self._active: dict = {}              # values being computed -> their depth
        self._placing: set = set()           # names whose bindings' places are being read
        self._low = _NO_CYCLE                # the shallowest of them a cycle reached
        self._cuts = 0                       # values cut short at _MAX_DEPTH so far
        self._short: dict = {}               # values computed from one -> their depth
        self._depth = 0
        self._module_classes: Optional[dict[str, cst.ClassDef]] = None
        self._dataset_classes: Optional[dict[str, cst.ClassDef]] = None
        self._functions: Optional[dict[str, list[cst.FunctionDef]]] = None
        self._calls_by_name: Optional[dict[str, list[cst.Call]]] = None
        self._bound_names: Optional[dict[str, set[str]]] = None
        self._sites: dict[int, tuple[tuple, tuple]] = {}  # id(function) -> _call_sites
        self._gpu_exits: dict[int, int] = {}   # block -> index of an `if gpu: return` in it, or -1
        self._gpu_truths: dict[int, Optional[bool]] = {}  # id(test) -> gpu_truth (kept as values are)
        self._summaries: dict = {}
        # Parameters bound to what one call of another file passes (a model made by
        # `returned_for`), and the returns worked out that way, by function and arguments.
        self._bound_params: Optional[dict[int, Value]] = None
        self._returned_for: dict = {}
        self._loops = None
        self._syncs = None
        self._batches = None
        # ScopeFlow looks for `global`/`nonlocal` statements only where the text has them.
        self.declares_names = "global" in ctx.source or "nonlocal" in ctx.source
        # A loader of the file may take a `collate_fn=` (its text says so): looked up once,
        # not per parameter asked (`_collate_input`, dataflow.may_name_collate_fn).
        self.names_collate_fn = "collate_fn" in ctx.source
        self._declarations: Optional[dict[int, list]] = None
        self._scopes: dict[int, cst.CSTNode] = {}  # id(node) -> scope_of(node)
        self._defs_of: dict[int, tuple] = {}  # id(Name read) -> defs(), where final (_reaching_defs)
        self._qualnames: dict[int, Optional[str]] = {}  # id(node) -> qualname(node), where final
        self._method_owners: dict[int, Optional[cst.ClassDef]] = {}  # id(function) -> _self_class's owner
        self._class_flows_built: set[int] = set()  # classes whose methods' flows are built
        self._free: dict[tuple[str, int], list] = {}  # (name, id(scope)) -> _free_defs, where final
        self._module_aliases: Optional[frozenset] = None
        self._item_stores: Optional[dict] = None  # (id(function), name) -> [(key, value)]
        self._non_imports: Optional[frozenset] = None
        self._bound_anywhere: Optional[frozenset] = None
        self.children = children  # a node's child nodes in source order (devicelint.tree)
        self._project = False  # not looked up yet
        self._project_classes: dict[str, bool] = {}
        # The engine's parent table, asked without a call through this model (hot: the
        # scope and loop queries climb the tree on every value asked).
        self.parent = ctx.parent
        info = ctx._info
        # A sort key: the order of a Def's node in the file (ctx.order without a method call).
        self._source_order: Callable[[Def], int] = lambda d: (info.get(id(d.node)) or _NOT_INDEXED)[1]

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self.ctx.parent(node)

    def scope_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """The innermost scope (module, function, lambda, class body, comprehension) whose
        code evaluates `node`. A function's defaults and decorators belong to the enclosing
        scope, as does a comprehension's first iterable."""
        found = self._scopes.get(id(node))
        if found is None:
            found = self._scopes[id(node)] = self._scope_of(node)
        return found

    def _scope_of(self, node: cst.CSTNode) -> cst.CSTNode:
        info = self.ctx._info  # the index's (parent, order, scope) by id: read directly (hot)
        child = node
        entry = info.get(id(node))
        parent = entry[0] if entry else None
        while parent is not None:
            if type(parent) not in _SCOPES:  # exact type: isinstance() on libcst's ABCs is slow
                child = parent
                entry = info.get(id(parent))
                parent = entry[0] if entry else None
                continue
            if type(parent) in FUNCTIONS:
                if child is parent.body or (type(parent) is cst.FunctionDef and child is parent.params) \
                        or (type(parent) is cst.Lambda and child is parent.params):
                    if child is parent.params and self._in_defaults(node, parent):
                        pass
                    else:
                        return parent
            elif type(parent) is cst.ClassDef:
                if child is parent.body:
                    return parent
            elif type(parent) in COMPREHENSIONS:
                if child is not parent.for_in:
                    return parent
                # Inside the first clause: its iterable belongs outside, the rest inside.
                if not self._within(node, parent.for_in.iter):
                    return parent
            child = parent
            parent = self.parent(parent)
        return self.ctx.module

    def _within(self, node: cst.CSTNode, container: cst.CSTNode) -> bool:
        return self.ctx.contains(container, node)  # an integer comparison in the index

    def _in_expression(self, node: cst.CSTNode, expression: cst.CSTNode) -> bool:
        """`_within(node, expression)` for an expression of a simple statement: the climb
        stops at the first statement line or block, which an expression never holds."""
        info = self.ctx._info  # the index's (parent, order, scope) by id: read directly (hot)
        current: Optional[cst.CSTNode] = node
        while current is not None:
            if current is expression:
                return True
            if type(current) in _STATEMENT_CONTAINERS:
                return False
            entry = info.get(id(current))
            current = entry[0] if entry else None
        return False

    def _in_defaults(self, node: cst.CSTNode, function) -> bool:
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.default is not None and self._within(node, param.default):
                return True
            if param.annotation is not None and self._within(node, param.annotation):
                return True
        return False

    def flow(self, scope: cst.CSTNode) -> ScopeFlow:
        found = self._flows.get(id(scope))
        if found is None:
            if scope is not self.ctx.module:
                self.flow(self.scope_of(scope))  # the enclosing scope first: entry states
            found = self._flows.get(id(scope))
            if found is None:
                found = ScopeFlow(self, scope)
                self._flows[id(scope)] = found
        return found

    def declarations(self, scope: cst.CSTNode) -> list:
        """The `global`/`nonlocal` statements whose scope is `scope`."""
        if not self.declares_names:
            return []
        if self._declarations is None:
            table: dict[int, list] = {}
            for kind in (cst.Global, cst.Nonlocal):
                for node in self.ctx.iter_nodes(kind):
                    table.setdefault(id(self.scope_of(node)), []).append(node)
            self._declarations = table
        return self._declarations.get(id(scope), [])

    def record_attribute_binding(self, scope: cst.CSTNode, target: cst.Attribute, template: Def) -> None:
        """`self.x = ...` in a method: remembered per class and attribute name."""
        owner = self._self_class(target.value, scope)
        if owner is None:
            return
        d = Def(target.attr.value, template.kind, template.node, template.value, template.path, scope)
        self.attribute_defs.setdefault((id(owner), target.attr.value), []).append((target, d))

    def record_attribute_move(self, scope: cst.CSTNode, target: cst.Attribute, call: cst.Call) -> None:
        """`self.x.to(device)` as a statement in a method: remembered per class and attribute."""
        owner = self._self_class(target.value, scope)
        if owner is not None:
            self.attribute_moves.setdefault((id(owner), target.attr.value), []).append((target, call))

    def _self_class(self, node: cst.CSTNode, scope: cst.CSTNode) -> Optional[cst.ClassDef]:
        """The class whose instance `node` is, when `node` is a method's first parameter."""
        if type(node) is not cst.Name or type(scope) is not cst.FunctionDef:
            return None
        params = scope.params.posonly_params or scope.params.params
        if not params or params[0].name.value != node.value:
            return None
        owner = self._method_owners.get(id(scope), _NOT_KNOWN)
        if owner is _NOT_KNOWN:
            # The class of a method (not a staticmethod), once per function.
            owner = self.parent(self.parent(scope)) if self.parent(scope) is not None else None
            if type(owner) is not cst.ClassDef or any(
                    dotted_name(decorator.decorator) == "staticmethod" for decorator in scope.decorators):
                owner = None
            if id(scope) in self.ctx._info:
                self._method_owners[id(scope)] = owner
        return owner

    # -- names -------------------------------------------------------------------------
    def defs(self, name: cst.Name) -> list[Def]:
        """Bindings that may reach this read of a name, in source order; empty for names
        bound nowhere in the file (imports are bindings too)."""
        bound = self._bound_anywhere
        if bound is None:
            bound = self._bound_names_anywhere()
        if name.value not in bound:
            return []  # a builtin, a star import's name: no flow to build to learn that
        known = self._defs_of.get(id(name))
        if known is not None:
            return list(known)  # a list of its own: callers may change theirs
        return self._reaching_defs(name)

    def _moved_by_assignment(self, defs: list[Def]) -> list[Def]:
        """`m = model.to(device)` moves `model` too when it holds a module (nn.Module.to,
        `.cuda()`, `.half()`, ... change the module in place and return it); anything else
        (a tensor's `.to` returns a copy) keeps the bindings that reached before."""
        found: dict[int, Def] = {}
        for d in defs:
            if d.kind == "effect" and type(d.node) is cst.Assign:
                before = self._moved_by_assignment(list(d.prior))
                if join_all(self.def_value(p) for p in before).kind is not Kind.MODULE:
                    found.update((id(p), p) for p in before)
                    continue
            found[id(d)] = d
        return sorted(found.values(), key=lambda d: self.ctx.order(d.node))

    def _reaching_defs(self, name: cst.Name) -> list[Def]:
        key = id(name)
        # scope_of and flow, their memo tables read first (hot: every read of a name)
        scope = self._scopes.get(key)
        if scope is None:
            scope = self.scope_of(name)
        if id(scope) not in self._flows:
            self.flow(scope)
        found = self.reaching.get(key)
        if found is None:
            found = self._free_defs(name.value, scope)
            # Kept unless `global`/`nonlocal` may add bindings as other scopes' flows are
            # built (foreign_defs): without them the enclosing flows' answer is final.
            keep = not self.declares_names
        elif len(found) == 1:
            found = list(found)
            keep = True  # the scope's flow is built: what reaches this read is final
        else:
            found = sorted(found, key=self._source_order)
            keep = True
        for d in found:
            if d.kind == "effect" and type(d.node) is cst.Assign:
                # Decided by a value (`_moved_by_assignment`): computed again when asked,
                # as a value met in a cycle is.
                return self._moved_by_assignment(found)
        if keep and key in self.ctx._info:  # (a node of the tree: its id stays its own)
            self._defs_of[key] = tuple(found)
        return found

    def _free_defs(self, name: str, scope: cst.CSTNode) -> list[Def]:
        """A name read but not bound on any path of its own scope: a global, a closure
        variable, or a name bound only later (e.g. in a loop of the enclosing function).
        Kept per name and scope where final: without `global`/`nonlocal` in the file, the
        flows it reads answer the same whenever asked."""
        if self.declares_names:
            return self._free_defs_of(name, scope)
        key = (name, id(scope))
        found = self._free.get(key)
        if found is None:
            found = self._free_defs_of(name, scope)
            if id(scope) in self.ctx._info:
                self._free[key] = found
        return list(found)  # a list of its own: callers may change theirs

    def _free_defs_of(self, name: str, scope: cst.CSTNode) -> list[Def]:
        flow = self.flow(scope)
        if name in flow.all_defs and type(scope) is not cst.Module:
            return list(flow.all_defs[name])
        current = scope
        while current is not self.ctx.module:
            current = self.scope_of(current)
            if type(current) is cst.ClassDef or current is self.ctx.module:
                continue
            outer = self.flow(current)
            if name in outer.globals:
                break
            end = outer.end_state if outer.end_state is not None else {}
            if name in end and type(current) is not cst.Module:
                return sorted(end[name], key=self._source_order)
            if name in outer.all_defs:
                if type(current) is cst.Module and name in end:
                    return sorted(end[name], key=self._source_order)
                return list(outer.all_defs[name])
        module = self.flow(self.ctx.module)
        self._run_global_writers()
        if name in module.all_defs:
            end = module.end_state or {}
            found = end.get(name) or frozenset(module.all_defs[name])
            found = set(found) | set(self.foreign_defs.get(name, ()))
            return sorted(found, key=self._source_order)
        return list(self.foreign_defs.get(name, ()))

    def _run_global_writers(self) -> None:
        """Functions that bind module names through `global` add to what the module's
        names may hold: analyse them before answering for a module name."""
        if getattr(self, "_globals_done", False):
            return
        self._globals_done = True
        for statement in self.ctx.iter_nodes(cst.Global):
            function = self.function_of(statement)
            if function is not None:
                self.flow(function)

    def qualname(self, node: cst.CSTNode) -> Optional[str]:
        """`torch.nn.Linear` for `nn.Linear` when `nn` is an import not rebound since;
        through module-level aliases the project index knows (`zeros = torch.zeros`,
        `d2l = sys.modules[__name__]` then `d2l.zeros`)."""
        key = id(node)
        known = self._qualnames.get(key, _NOT_KNOWN)
        if known is not _NOT_KNOWN:
            return known
        head = node
        while type(head) is cst.Attribute:
            head = head.value
        non_imports = self._non_imports
        if non_imports is None:
            non_imports = self._non_import_names()
        if type(head) is cst.Name and head.value in non_imports:
            defs = self.defs(head)
            final = id(head) in self._defs_of  # else asked again: defs() may change
            if defs and any(d.kind != "import" for d in defs):
                module = self.ctx.module
                if not final or all(d.kind == "assign" and self.scope_of(d.node) is module for d in defs):
                    return self._alias_qualname(node, defs)  # the project index's alias: asked again
                found = None  # a local variable, a parameter (`self.fc`): not an import's
            else:
                found = self.ctx.qualname(node)
        else:
            final = True
            found = self.ctx.qualname(node)
        # Kept per node of the tree (rules ask it of the same callee again and again),
        # where what it rests on is final: the import table, and the bindings of the name.
        if final and key in self.ctx._info:
            self._qualnames[key] = found
        return found

    def _non_import_names(self) -> frozenset:
        """Every name something other than an import binds somewhere in the file (a superset:
        targets, parameters, defs, classes, `except ... as`, match captures, the receiver of
        a statement `x.to(...)` that refines it). A name outside it is bound only by imports
        or not at all, so `qualname` needs no flow for it."""
        if self._non_imports is None:
            names: set[str] = set()

            def add(target) -> None:
                for part, _path in target_parts(target):
                    if type(part) is cst.Name:
                        names.add(part.value)

            for node, _scope in self.ctx._binders:
                kind = type(node)
                if kind is cst.Assign:
                    for target in node.targets:
                        add(target.target)
                elif kind is cst.AnnAssign or kind is cst.AugAssign or kind is cst.NamedExpr:
                    add(node.target)
                elif kind is cst.For or kind is cst.CompFor:
                    add(node.target)
                elif kind is cst.WithItem:
                    if node.asname is not None:
                        add(node.asname.name)
                elif kind is cst.Param or kind is cst.FunctionDef or kind is cst.ClassDef:
                    names.add(node.name.value)
            for node in chain.from_iterable(map(self.ctx.iter_nodes, _NAME_BINDING_NODES)):
                kind = type(node)
                if kind is cst.Parameters:
                    # `*args`, `**kwargs`: the engine's walk skips these fields (`star...`)
                    for star in (node.star_arg, node.star_kwarg):
                        if type(star) is cst.Param:
                            names.add(star.name.value)
                elif kind is cst.ExceptHandler or kind is cst.ExceptStarHandler:
                    if node.name is not None:
                        add(node.name.name)
                elif kind is cst.MatchAs or kind is cst.MatchStar:
                    if node.name is not None:
                        names.add(node.name.value)
                elif kind is cst.MatchMapping:
                    if node.rest is not None:
                        names.add(node.rest.value)
                elif kind is cst.Call and type(node.func) is cst.Attribute \
                        and node.func.attr.value in IN_PLACE_MODULE_METHODS:
                    receiver = node.func.value  # as ScopeFlow._effect unwraps it
                    while type(receiver) is cst.Call and type(receiver.func) is cst.Attribute \
                            and receiver.func.attr.value in IN_PLACE_MODULE_METHODS:
                        receiver = receiver.func.value
                    if type(receiver) is cst.Name:
                        names.add(receiver.value)
            self._non_imports = frozenset(names)
        return self._non_imports

    def _bound_names_anywhere(self) -> frozenset:
        """Every name some binding of the file binds (`_non_import_names` and the names
        imports bind): a Def of any scope has one of these names, so a read of another name
        reaches none."""
        if self._bound_anywhere is None:
            names = set(self._non_import_names())
            for node, _scope in self.ctx._binders:
                kind = type(node)
                if (kind is cst.Import or kind is cst.ImportFrom) and type(node.names) is not cst.ImportStar:
                    for alias in node.names:
                        bound = alias.asname.name if alias.asname is not None else alias.name
                        while type(bound) is cst.Attribute:
                            bound = bound.value
                        if type(bound) is cst.Name:
                            names.add(bound.value)
            self._bound_anywhere = frozenset(names)
        return self._bound_anywhere

    @staticmethod
    def never_tensor(node: cst.CSTNode) -> bool:
        return never_tensor(node)

    @staticmethod
    def never_holds_tensor(node: cst.CSTNode) -> bool:
        return never_holds_tensor(node)

    def resolved_qualname(self, node: cst.CSTNode, depth: int = 0) -> Optional[str]:
        """The qualified name an expression stands for, through imports (as `qualname`) and
        through the plain aliases the file binds: `DP = nn.DataParallel`, `amp = torch.cuda.amp`
        then `amp.autocast`. Every binding that reaches a name must stand for the same
        qualified name (a `try:` import with an `except ImportError:` fallback to another
        module stands for neither); None otherwise."""
        if depth > 6:
            return None
        if isinstance(node, cst.Attribute):
            base = self.resolved_qualname(node.value, depth + 1)
            return f"{base}.{node.attr.value}" if base is not None else None
        if not isinstance(node, cst.Name):
            return None
        bound = self._name_bindings().get(node.value)
        if bound is None:
            return self.ctx.qualname(node)  # bound nowhere: a star import's name, or None
        if len(bound) == 1 and next(iter(bound)) not in _NOT_IMPORTS:
            return next(iter(bound))  # bound only by imports of one target: no flow needed
        if _ALIAS not in bound and not bound - _NOT_IMPORTS:
            return None  # bound only by what cannot stand for an import
        defs = self.defs(node)
        if not defs:
            return self.ctx.qualname(node)
        names = set()
        for d in defs:
            if d.kind == "import":
                names.add(self._import_qualname(d.node, d.name))
            elif d.kind in ("assign", "annassign", "walrus") and d.value is not None and not d.path:
                names.add(self.resolved_qualname(d.value, depth + 1))
            else:
                return None
            if None in names or len(names) > 1:
                return None
        return names.pop()

    def _name_bindings(self) -> dict[str, set[str]]:
        """For each name the file binds anywhere: the qualified names its imports stand
        for, `_ALIAS` for an assignment of a name or attribute, `_OTHER` for any other
        binding. A cheap first look that spares building flows for most names."""
        if self._bound_names is None:
            self.ctx.bindings(self.ctx.module)  # builds the file's binding tables
            table: dict[str, set[str]] = {}
            for scope_table in (self.ctx._bindings or {}).values():
                for name, bindings in scope_table.items():
                    found = table.setdefault(name, set())
                    for b in bindings:
                        if b.kind == "import":
                            found.add(self._import_qualname(b.node, name) or _OTHER)
                        elif b.kind in ("assign", "annassign", "walrus") \
                                and type(b.value) in (cst.Name, cst.Attribute):
                            found.add(_ALIAS)
                        else:
                            found.add(_OTHER)
            self._bound_names = table
        return self._bound_names

    @staticmethod
    def _import_qualname(node: cst.CSTNode, name: str) -> Optional[str]:
        """What `name`, bound by one import statement, stands for (`import torch.nn as nn`
        binds `nn` to `torch.nn`, `import torch.nn` binds `torch`)."""
        if type(node) not in (cst.Import, cst.ImportFrom) or type(node.names) is cst.ImportStar:
            return None
        module = ""
        if type(node) is cst.ImportFrom:
            if node.relative:
                return None
            module = dotted_name(node.module) if node.module is not None else None
            if module is None:
                return None
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and type(alias.asname.name) is cst.Name:
                bound, target = alias.asname.name.value, full
            elif module:
                bound, target = full, full
            else:
                bound = target = full.split(".", 1)[0]
            if bound == name:
                return f"{module}.{target}" if module else target
        return None

    @property
    def project(self):
        """This file's view of the project index (devicelint.semantic.project), or None
        when the run has none or the file is not in it."""
        if self._project is False:
            from devicelint import project_index

            self._project = project_index.view_for(self.ctx.path, type(self.ctx), self.ctx)
        return self._project

    def _alias_qualname(self, node: cst.CSTNode, defs: list[Def]) -> Optional[str]:
        view = self.project
        if view is None or not all(d.kind == "assign" and self.scope_of(d.node) is self.ctx.module
                                   for d in defs):
            return None  # a local variable, or no index: shadowed
        dotted = dotted_name(node)
        return view.alias(dotted) if dotted is not None else None

    def _project_loader(self, call: cst.Call) -> Optional[Value]:
        """What a call of a function of another local module returns when that function
        builds a DataLoader (its pin_memory included) or a device (`dist_util.dev()`:
        `torch.device("cuda")` where a GPU is), from that file's own model; None for any
        other call (the other file is read only when its function calls one of those)."""
        view = self.project
        dotted = dotted_name(call.func) if view is not None else None
        symbol = view.resolve(dotted) if dotted is not None else None
        if symbol is None or symbol.kind != "function" or symbol.module is view.module:
            return None
        if not any(self.api.is_loader(q) or q == "torch.device" for q in view.calls_of(symbol)):
            return None
        found = view.function(dotted)
        if found is None:
            return None
        other, function = found
        value = other.returned_value(function)
        return value.with_(node=None) if value.kind in (Kind.LOADER, Kind.DEVICE) else None

    def _project_returned(self, call: cst.Call) -> Optional[Value]:
        """What a call of a top-level function of another local module returns when the
        call hands it device data (a tensor on the device, or a list/tuple/dict of them):
        that function's returns as its own file's model works them out with its parameters
        bound to this call's arguments (`acc1, acc5 = utils.accuracy(output, target)` with
        `accuracy` returning `[correct[:k].sum(0) for k in topk]` of `output.topk(...)`:
        device tensors). Only a device tensor, or a container of them, is taken from it;
        None otherwise, and the other file is read only when an argument holds device data."""
        if self.project is None or not call.args or any(a.star for a in call.args) \
                or not self.syncs.runs_foreign_function(call):
            return None  # (not a name a local binding shadows: syncs._foreign_dotted)
        passed = [self.value(a.value) for a in call.args]
        if not any(_device_data(v) for v in passed):
            return None
        found = self.syncs.foreign_function(call)
        if found is None:
            return None
        other, function = found
        bound = _bind_arguments(function, call.args, passed)
        if bound is None:
            return None
        return other.returned_for(function, bound)

    def returned_for(self, function: cst.FunctionDef, bound: dict) -> Optional[Value]:
        """What `function` of this file returns when its parameters hold `bound` (name ->
        Value, from a call in another file): worked out by a second model of this file whose
        parameters take those values (this model's own answers do not change); a device
        tensor or a container of them, else None. Kept per function and arguments."""
        key = (id(function), tuple(sorted((name, _signature(v)) for name, v in bound.items())))
        if key in self._returned_for:
            return self._returned_for[key]
        global _bound_depth, _bound_cuts
        if _bound_depth >= _MAX_BOUND_DEPTH:
            _bound_cuts += 1
            return None  # a chain of such calls through files: not followed further
        cuts = _bound_cuts
        self._returned_for[key] = None  # a call back into itself while it is worked out
        params = {p.name.value: p for p in (*function.params.posonly_params, *function.params.params,
                                            *function.params.kwonly_params)}
        bound_model = SemanticModel(self.ctx)
        bound_model._project = self._project
        bound_model._bound_params = {id(params[name]): _foreign(value) for name, value in bound.items()}
        _bound_depth += 1
        try:
            result = _foreign(bound_model.returned_value(function))
            if not _device_data(result):
                result = self._handed_back(function, bound, bound_model) or result
        finally:
            _bound_depth -= 1
        found = result if _device_data(result) else None
        if _bound_cuts == cuts:
            self._returned_for[key] = found
        else:
            # Worked out with a chain cut short below it: asked again from a shallower call
            # (another file, or this one later), it is worked out again, with more room.
            del self._returned_for[key]
        return found

    def _handed_back(self, function: cst.FunctionDef, bound: dict, bound_model) -> Optional[Value]:
        """What a function that returns a parameter itself on one path hands back (`if
        world_size < 2: return input_dict`, then a distributed reduce): that argument, when it
        is device data and no other return (on the GPU path) is shown to be host data (`return
        {k: v.cpu() ...}`); else None."""
        handed, others = [], []
        for r in self.flow(function).returns:
            if not self.on_gpu_path(r):
                continue
            if type(r.value) is cst.Name and r.value.value in bound:
                defs = self.defs(r.value)
                if len(defs) == 1 and defs[0].kind == "param" and defs[0].scope is function:
                    handed.append(bound[r.value.value])
                    continue
            others.append(r)
        if not handed or not all(_device_data(v) for v in handed):
            return None
        for r in others:
            if r.value is None or _host_data(bound_model.value(r.value)):
                return None
        return _foreign(join_all(handed))

    def project_module_class(self, node: cst.CSTNode) -> bool:
        """`node` (a name as the file writes it) is a class of a local module that derives
        from nn.Module, through bases in other files (the project index)."""
        view = self.project
        dotted = dotted_name(node) if view is not None else None
        if dotted is None:
            return False
        found = self._project_classes.get(dotted)
        if found is None:
            found = self._project_classes[dotted] = view.is_module_class(dotted, self._module_root)
        return found

    # -- classes and functions of the file -----------------------------------------------
    def module_classes(self) -> dict[str, cst.ClassDef]:
        """Classes of this file that derive, through bases here, from an nn.Module class."""
        if self._module_classes is None:
            self._module_classes = self._subclasses(self._module_root, self.project_module_class)
        return self._module_classes

    def _module_root(self, qual: str) -> bool:
        return self.api.is_module_class(qual) \
            or qual.startswith(("pytorch_lightning.", "lightning.")) and qual.endswith("Module")

    def dataset_classes(self) -> dict[str, cst.ClassDef]:
        """Classes of this file that derive, through bases here, from a torch dataset class
        (`torch.utils.data.Dataset`, `IterableDataset`, ...): their instances yield samples."""
        if self._dataset_classes is None:
            self._dataset_classes = self._subclasses(self.api.is_dataset_class)
        return self._dataset_classes

    def _subclasses(self, is_root, is_foreign=None) -> dict[str, cst.ClassDef]:
        """Classes of this file with a base `is_root` accepts, directly or through other
        classes of this file, or (`is_foreign`) through classes of other local modules."""
        classes: dict[str, cst.ClassDef] = {c.name.value: c for c in self.ctx.class_defs}
        found: dict[str, cst.ClassDef] = {}
        changed = True
        while changed:
            changed = False
            for name, node in classes.items():
                if name in found:
                    continue
                for base in node.bases:
                    qual = self.ctx.qualname(base.value) or ""
                    if is_root(qual) or dotted_name(base.value) in found \
                            or is_foreign is not None and is_foreign(base.value):
                        found[name] = node
                        changed = True
                        break
        return found

    def functions(self) -> dict[str, list[cst.FunctionDef]]:
        if self._functions is None:
            found: dict[str, list[cst.FunctionDef]] = {}
            for node, _scope in self.ctx._binders:
                if type(node) is cst.FunctionDef:
                    found.setdefault(node.name.value, []).append(node)
            self._functions = found
        return self._functions

    def calls_by_name(self) -> dict[str, list[cst.Call]]:
        """Calls in the file by the called name's last part (`f(...)`, `self.f(...)`)."""
        if self._calls_by_name is None:
            table: dict[str, list[cst.Call]] = {}
            for node in self.ctx.iter_nodes(cst.Call):
                func = node.func
                if type(func) is cst.Name:
                    table.setdefault(func.value, []).append(node)
                elif type(func) is cst.Attribute:
                    table.setdefault(func.attr.value, []).append(node)
            self._calls_by_name = table
        return self._calls_by_name

    def function_of(self, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
        current = self.parent(node)
        while current is not None:
            if type(current) is cst.FunctionDef:
                return current
            current = self.parent(current)
        return None

    def resolve_function(self, func: cst.BaseExpression) -> Optional[cst.FunctionDef]:
        """The file's own function a call target names: `f` bound by a `def`, or
        `self.f` for a method of the enclosing class."""
        if type(func) is cst.Name:
            defs = self.defs(func)
            fns = [d.node for d in defs if d.kind == "def"]
            if len(fns) == 1 and len(defs) == 1:
                return fns[0]
            return None
        members = self.module_member_defs(func)
        if members is not None:
            fns = [d.node for d in members if d.kind == "def"]
            return fns[0] if len(fns) == 1 and len(members) == 1 else None
        if type(func) is cst.Attribute and type(func.value) is cst.Name:
            scope = self.scope_of(func)
            owner = self._self_class(func.value, self._function_scope(scope))
            if owner is not None:
                return self._method(owner, func.attr.value)
        return None

    def module_member_defs(self, node: cst.CSTNode) -> Optional[list[Def]]:
        """`m.f` where every binding of `m` is this very module (`m = sys.modules[__name__]`,
        as d2l does): the module-level bindings of `f`; None otherwise."""
        if type(node) is not cst.Attribute or type(node.value) is not cst.Name \
                or node.value.value not in self._this_module_names():
            return None
        defs = self.defs(node.value)
        if not defs or not all(self._is_this_module(d) for d in defs):
            return None
        return self._free_defs(node.attr.value, self.ctx.module)

    def _this_module_names(self) -> frozenset:
        """Names some assignment binds to a subscript by `__name__` (`m = sys.modules[__name__]`):
        the only names `module_member_defs` can answer for, found without any flow."""
        if self._module_aliases is None:
            found = set()
            if "__name__" in self.ctx.source:
                for node, _scope in self.ctx._binders:
                    if type(node) is cst.Assign and type(node.value) is cst.Subscript \
                            and any(type(e.slice) is cst.Index and type(e.slice.value) is cst.Name
                                    and e.slice.value.value == "__name__" for e in node.value.slice):
                        for target in node.targets:
                            found.update(part.value for part, _path in target_parts(target.target)
                                         if type(part) is cst.Name)
            self._module_aliases = frozenset(found)
        return self._module_aliases

    def _is_this_module(self, d: Def) -> bool:
        value = d.value
        if d.kind != "assign" or d.path or type(value) is not cst.Subscript \
                or self.qualname(value.value) != "sys.modules" or len(value.slice) != 1:
            return False
        index = value.slice[0].slice
        return type(index) is cst.Index and type(index.value) is cst.Name \
            and index.value.value == "__name__" and not self.defs(index.value)

    def _function_scope(self, scope: cst.CSTNode) -> cst.CSTNode:
        while type(scope) in _NESTED_EXPRESSION_SCOPES:
            scope = self.scope_of(scope)
        return scope

    def _method(self, owner: cst.ClassDef, name: str) -> Optional[cst.FunctionDef]:
        body = owner.body
        if type(body) is cst.IndentedBlock:
            for statement in body.body:
                if type(statement) is cst.FunctionDef and statement.name.value == name:
                    return statement
        # Inherited from a base class in this file.
        for base in owner.bases:
            base_name = dotted_name(base.value)
            for other in self.ctx.class_defs:
                if other.name.value == base_name and other is not owner:
                    found = self._method(other, name)
                    if found is not None:
                        return found
        return None

    # -- values ------------------------------------------------------------------------
    def value(self, node: cst.CSTNode) -> Value:
        key = id(node)
        found = self._values.get(key)
        if found is not None:
            if not self._short:
                return found  # (_known, inlined for the common case: nothing cut short)
            found = self._known(key)
            if found is not None:
                return found
        if self._depth > _MAX_DEPTH:
            return self._cut()
        return self._memoised(key, self._value, node)

    def container(self, node: cst.CSTNode) -> Value:
        """The value of `node` as the container an item assignment (`node[i] = v`) writes
        into. A loader batch's field is a tensor only by default_collate's usual result (it
        is a list of batches where the dataset's sample field is a list, as two crops of
        one image are), so where the tensor kind rests on that alone, the kind is unknown:
        `images[0] = images[0].cuda()` may rebind a list's item, not copy into a tensor."""
        value = self.value(node)
        if value.kind is Kind.TENSOR and value.collated:
            return value.with_(kind=Kind.UNKNOWN, collated=False)
        return value

    def _cut(self) -> Value:
        """"Unknown", for a value asked deeper than _MAX_DEPTH. What is computed from it is
        kept with the depth it was computed at (`_short`), and computed again when asked
        from a shallower depth, where the search has more room: a value must not depend on
        which expression a rule happened to ask about first."""
        self._cuts += 1
        return UNKNOWN

    def _known(self, key) -> Optional[Value]:
        """The memoised value of `key`, unless it was cut short deeper than it is asked now."""
        found = self._values.get(key)
        if found is not None and self._short:
            depth = self._short.get(key)
            if depth is not None:
                if self._depth < depth:
                    return None
                self._cuts += 1  # what uses it is cut short too
        return found

    def remembered(self, key: tuple, compute: Callable[[], object], cycle: object) -> object:
        """An answer other than an expression's value (whether a flag guards a move to the
        device, a function's summary), computed once and remembered as values are
        (`_memoised`): asked again while it is being computed, it answers `cycle`, and what
        was computed from that provisional answer (values included) is not remembered, but
        computed again when asked again. A memo of its own that answered a provisional
        `False` during its computation kept the values computed from that answer, and so
        made them depend on which question a rule happened to ask first (`USE_GPU = True`
        with `if USE_GPU: net = net.cuda()`: `net` read under another `if USE_GPU:` was
        placed nowhere if the flag was asked first, on the device if `net` was).
        `key`: a tuple naming the question first (values are keyed by node ids)."""
        found = self._known(key)
        if found is not None:
            return found[0]
        if self._depth > _MAX_DEPTH:
            self._cuts += 1
            return cycle
        return self._memoised(key, lambda _arg: (compute(),), None, (cycle,))[0]

    def _memoised(self, key, compute, arg, cycle=UNKNOWN):
        """Compute once and remember, except what was computed while a value it depends on
        was itself still being computed (a cycle through a loop-carried binding answers
        "unknown" inside the cycle): that is recomputed when asked again, so an answer does
        not depend on which expression a rule happened to ask about first. `_low` is the
        shallowest value being computed that a cycle reached within this computation only:
        a sibling's cycle does not keep a value that never met one from being remembered.
        `cycle`: the answer inside a cycle (`remembered`)."""
        active = self._active.get(key)
        if active is not None:
            self._low = min(self._low, active)
            return cycle
        depth = self._depth
        self._active[key] = depth
        self._depth += 1
        cuts = self._cuts
        outer_low, self._low = self._low, _NO_CYCLE
        try:
            result = compute(arg)
        finally:
            self._depth -= 1
            del self._active[key]
            low = self._low
            self._low = outer_low if outer_low < low else low
        if low >= depth:
            self._low = outer_low
            self._values[key] = result
            if self._cuts != cuts:
                self._short[key] = depth
            else:
                self._short.pop(key, None)
        return result

    def _value(self, node: cst.CSTNode) -> Value:
        # Exact type tests (the parser makes only these concrete classes): isinstance()
        # against libcst's ABC-based classes costs a Python-level check per miss.
        kind = type(node)
        if kind is cst.Name:
            if node.value in ("True", "False"):
                return BOOL.with_(literal=node.value == "True")
            if node.value == "None":
                return NONE
            return self._name_value(node)
        if kind is cst.Attribute:
            return self._attribute_value(node)
        if kind is cst.Call:
            return self._call_value(node)
        if kind is cst.Integer:
            return NUMBER.with_(literal=int_value(node))
        if kind is cst.Float or kind is cst.Imaginary:
            return NUMBER
        if kind is cst.SimpleString or kind is cst.ConcatenatedString:
            return STRING.with_(literal=string_value(node))
        if kind is cst.FormattedString:
            return STRING
        if kind is cst.Subscript:
            return self._item_read(self.index(self.value(node.value), node), node)
        if kind is cst.BinaryOperation:
            return self._binary(node)
        if kind is cst.UnaryOperation:
            if type(node.operator) is cst.Not:
                return BOOL
            inner = self.value(node.expression)
            if type(node.operator) is cst.Minus and inner.kind is Kind.NUMBER:
                literal = inner.literal
                return NUMBER.with_(literal=-literal if isinstance(literal, int) else None)
            if inner.kind is Kind.TENSOR:
                return inner.with_(layout=CONTIGUOUS, node=node, origin=Origin.NONE)
            return inner if inner.kind in (Kind.NUMBER, Kind.ARRAY) else UNKNOWN
        if kind is cst.Comparison:
            if any(type(c.operator) in (cst.In, cst.NotIn, cst.Is, cst.IsNot) for c in node.comparisons):
                return BOOL
            sides = [self.value(node.left)] + [self.value(c.comparator) for c in node.comparisons]
            for side in sides:
                if side.kind is Kind.TENSOR:
                    layout = shapes.elementwise_layout([v for v in sides if v.kind is Kind.TENSOR]) \
                        if len(node.comparisons) == 1 else CONTIGUOUS
                    return tensor(side.place, side.shape, layout, node=node, hint=side.hint)
            for side in sides:
                if side.kind is Kind.ARRAY:
                    return Value(Kind.ARRAY, Place.CPU)
            if all(s.kind in (Kind.NUMBER, Kind.BOOL, Kind.STRING) for s in sides):
                return BOOL
            return UNKNOWN
        if kind is cst.BooleanOperation:
            return join(self.value(node.left), self.value(node.right))
        if kind is cst.IfExp:
            body_ok = self.branch_possible(node, node.body)
            else_ok = self.branch_possible(node, node.orelse)
            if body_ok and not else_ok:
                return self.value(node.body)
            if else_ok and not body_ok:
                return self.value(node.orelse)
            return join(self.value(node.body), self.value(node.orelse))
        if kind is cst.Tuple or kind is cst.List:
            return self._sequence(node)
        if kind is cst.Set:
            return Value(Kind.SEQUENCE, element=join_all(self.value(e.value) for e in node.elements))
        if kind is cst.Dict:
            values = (self.value(e.value) for e in node.elements if type(e) is cst.DictElement)
            return Value(Kind.MAPPING, element=join_all(values), node=node)  # UNKNOWN when empty
        if kind is cst.ListComp or kind is cst.GeneratorExp or kind is cst.SetComp:
            element = self.value(node.elt)
            walked = self.value(node.for_in.iter)
            host = self._host_rows(walked) or self._host_sample(element)
            return Value(Kind.SEQUENCE, element=element, node=node,
                         place=Place.CPU if host else Place.UNKNOWN)
        if kind is cst.DictComp:
            return Value(Kind.MAPPING, element=self.value(node.value), node=node)
        if kind is cst.NamedExpr:
            return self.value(node.value)
        if kind is cst.Lambda:
            return Value(Kind.CALLABLE, node=node)
        return UNKNOWN

    def _sequence(self, node) -> Value:
        items = []
        for element in node.elements:
            if type(element) is cst.StarredElement:
                inner = self.value(element.value)
                return Value(Kind.SEQUENCE, element=inner.element or UNKNOWN, node=node)
            items.append(self.value(element.value))
        element = join_all(items) if items else UNKNOWN
        numeric_rows = items and all(
            v.kind in (Kind.NUMBER, Kind.BOOL) or (v.kind is Kind.SEQUENCE and v.place is Place.CPU)
            for v in items)
        return Value(Kind.SEQUENCE, place=Place.CPU if numeric_rows else Place.UNKNOWN,
                     element=element, items=tuple(items), node=node)

    @staticmethod
    def _host_sample(value: Value) -> bool:
        """One sample of host data: a CPU tensor, an array, a number, a host list. A list
        built of such samples (`[torch.randn(8) for _ in range(n)]`) is a list of samples."""
        return value.kind in (Kind.ARRAY, Kind.NUMBER, Kind.BOOL) or (
            value.kind in (Kind.TENSOR, Kind.SEQUENCE) and value.place is Place.CPU)

    @staticmethod
    def _host_rows(value: Value) -> bool:
        return value.kind in (Kind.ARRAY, Kind.DATASET) or (
            value.kind is Kind.TENSOR and value.place is Place.CPU) or (
            value.kind is Kind.SEQUENCE and value.place is Place.CPU)

    # names
    def _name_value(self, node: cst.Name) -> Value:
        defs = self.defs(node)
        if not defs:
            return self._builtin_or_import(node)
        # A loop-carried binding read inside its own right-hand side (`x = torch.tanh(x @ w)`),
        # or being computed, adds nothing the other bindings do not bring: leave it out. One
        # left out for being computed is a cycle (`_memoised`): what is computed without it
        # is not remembered above that binding (asked first, `alpha` in `alpha += alpha`
        # was a number; asked from within the binding's own value, it was kept unknown).
        ready = []
        for d in defs:
            active = self._active.get(("def", id(d)))
            if active is not None:
                self._low = min(self._low, active)
            elif not (d.kind in ("assign", "annassign") and d.value is not None
                      and self._in_expression(node, d.value)):
                ready.append(d)
        return join_all(self.def_value(d) for d in self.gpu_path_defs(ready or defs))

    def gpu_path_defs(self, defs: list[Def]) -> list[Def]:
        """The bindings that reach a read when the program runs with a GPU: one that a
        binding in the body of an `if` taken with a GPU replaces (`model = Net()` then
        `if use_cuda: model.cuda()`) is left out."""
        if len(defs) < 2:
            return defs
        taken = [(d, owner) for d in defs for owner in (self._gpu_taken_branch(d.node),) if owner is not None]
        if not taken:
            return defs
        # A binding in the arm taken only without a GPU (`else: x = torch.LongTensor(x)`
        # after `if use_cuda: x = torch.LongTensor(x).cuda()`) does not run with one.
        defs = [d for d in defs if self.on_gpu_path(d.node)] or defs
        kept = []
        for d in defs:
            replaced = any(
                other is not d and d.scope is other.scope and not self._within(d.node, owner)
                and self.ctx.order(d.node) < self.ctx.order(owner)
                for other, owner in taken)
            if not replaced:
                kept.append(d)
        return kept or defs

    def _gpu_taken_branch(self, node: cst.CSTNode) -> Optional[cst.If]:
        """The `if` whose branch runs `node` unconditionally and is the branch taken with a GPU."""
        child = node
        parent = self.parent(node)
        while parent is not None:
            if type(parent) in (cst.SimpleStatementLine, cst.Expr, cst.Assign, cst.AnnAssign,
                                   cst.AugAssign, cst.IndentedBlock, cst.SimpleStatementSuite,
                                   cst.Call, cst.Attribute):
                child = parent
                parent = self.parent(parent)
                continue
            if type(parent) is cst.If and child is parent.body:
                return parent if self.gpu_truth(parent.test) is True else None
            if type(parent) is cst.Else:
                owner = self.parent(parent)
                if type(owner) is cst.If and owner.orelse is parent and self.gpu_truth(owner.test) is False:
                    return owner
            return None
        return None

    def _builtin_or_import(self, node: cst.CSTNode) -> Value:
        qual = self.ctx.qualname(node)
        if qual is not None:
            found = self._qualified_value(qual)
            if found.kind is Kind.UNKNOWN and self.project_module_class(node):
                return Value(Kind.MODULE_CLASS, cls=qual)
            return found
        if self.project_module_class(node):  # a name from `from models import *`
            return Value(Kind.MODULE_CLASS, cls=dotted_name(node))
        return UNKNOWN

    def _qualified_value(self, qual: str) -> Value:
        if qual in self.api.dtypes:
            return Value(Kind.DTYPE)
        if self.api.is_module_class(qual):
            return Value(Kind.MODULE_CLASS, cls=qual)
        if qual in ("math.pi", "math.e", "math.inf", "numpy.pi", "numpy.e"):
            return NUMBER
        if _TENSOR_TYPE.match(qual):
            return Value(Kind.TENSOR_TYPE, Place.DEVICE if qual.startswith("torch.cuda.") else Place.CPU)
        return UNKNOWN

    def def_value(self, d: Def) -> Value:
        key = ("def", id(d))
        found = self._values.get(key)
        if found is not None:
            if not self._short:
                return found  # (_known, inlined for the common case: nothing cut short)
            found = self._known(key)
            if found is not None:
                return found
        if self._depth >= _MAX_DEPTH:
            return self._cut()
        return self._memoised(key, self._def_value, d)

    def _def_value(self, d: Def) -> Value:
        kind = d.kind
        if kind in ("assign", "annassign", "walrus"):
            if d.value is None:
                return self.annotation_value(getattr(d.node, "annotation", None))
            value = self._unpacked(d.value, d.path)
            if kind == "annassign" and value.kind is Kind.UNKNOWN:
                return self.annotation_value(d.node.annotation)
            if kind == "assign" and value.kind is Kind.SEQUENCE and value.element in (None, UNKNOWN):
                return self._grown_list(d, value)
            if kind == "assign" and value.kind is Kind.MAPPING and type(d.value) is cst.Dict \
                    and not d.value.elements and not d.path:
                return self._grown_mapping(d, value)
            return value
        if kind == "augassign":
            prior = join_all(self.def_value(p) for p in d.prior) if d.prior else UNKNOWN
            return self._arith(prior, self.value(d.value), d.node.operator, d.node)
        if kind in ("for", "comp"):
            return self.part(self.iteration_element(d.value), d.path, d.value)
        if kind == "with":
            return self.part(self.value(d.value), d.path)
        if kind == "param":
            return self.param_value(d.node)
        if kind == "import":
            return self._import_value(d)
        if kind == "def":
            return Value(Kind.CALLABLE, node=d.node)
        if kind == "class":
            if d.name in self.module_classes():
                return Value(Kind.MODULE_CLASS, cls=d.name, node=d.node)
            return Value(Kind.CALLABLE, node=d.node)
        if kind == "effect":
            prior = join_all(self.def_value(p) for p in d.prior)
            if type(d.node) is cst.Assign and prior.kind is not Kind.MODULE:
                return prior  # `y = x.to(device)`: only a module moves in place
            return self.in_place_effect(prior, d.value)
        return UNKNOWN

    def _grown_list(self, d: Def, value: Value) -> Value:
        """A list bound empty (`res = []`) holds what the code then appends, inserts or
        extends it with (`dataflow.list_additions`): `res.append(correct_k.mul_(100 / n))`
        makes a list of device tensors, `losses.append(loss.item())` one of numbers (the
        list's own place is left unknown)."""
        added = dataflow.list_additions(self, d)
        if added is None:
            return value
        values, iterables = added
        element = join_all([*(self.value(v) for v in values),
                            *(self.iteration_element(i) for i in iterables)])
        return Value(Kind.SEQUENCE, element=element, node=value.node)

    def _grown_mapping(self, d: Def, value: Value) -> Value:
        """A dict bound empty (`losses = {}`) holds what the function then stores into it
        (`losses["d"] = d_loss`, `losses[k] = v`): a mapping of their joined value (unknown
        when one store is; the mapping's own place is left unknown)."""
        self._stores_into(None)
        stores = (self._item_stores or {}).get((id(self._function_scope(d.scope)), d.name), [])
        if not stores:
            return value
        return Value(Kind.MAPPING, element=join_all(self.value(v) for _key, v in stores), node=value.node)

    def in_place_effect(self, prior: Value, call: cst.Call) -> Value:
        """The value of the receiver after a statement `x.to(device)` / `x.cuda()` (a chain of
        module methods): a module moves in place (`to` returns `self`); a tensor does not."""
        if prior.kind is Kind.MODULE:
            return self._module_methods(prior, call)
        if prior.kind is Kind.UNKNOWN and prior.origin is Origin.NONE \
                and call.func.attr.value in ("to", "cuda"):
            # `model.to(device)` as a statement on something of unknown kind (a class from
            # another module): only a module moves in place, so it is on the device now.
            moved = self._moved(tensor(prior.place), call)
            if moved.place is Place.DEVICE:
                return Value(place=Place.DEVICE, hint=moved.hint)
        return prior

    def _import_value(self, d: Def) -> Value:
        node = d.node
        if type(node) in (cst.Import, cst.ImportFrom) and type(node.names) is not cst.ImportStar:
            for alias in node.names:
                bound = alias.asname.name if alias.asname is not None else alias.name
                while type(bound) is cst.Attribute:
                    bound = bound.value
                if type(bound) is cst.Name and bound.value == d.name:
                    qual = self.ctx.imports.aliases.get(d.name)
                    if qual:
                        found = self._qualified_value(qual)
                        if found.kind is Kind.UNKNOWN and self.project_module_class(bound):
                            return Value(Kind.MODULE_CLASS, cls=qual)
                        return found
        return UNKNOWN

    def _unpacked(self, value_node: cst.BaseExpression, path: tuple[int, ...]) -> Value:
        node = value_node
        rest = list(path)
        while rest and type(node) in (cst.Tuple, cst.List) and rest[0] >= 0 \
                and not any(type(e) is cst.StarredElement for e in node.elements) \
                and rest[0] < len(node.elements):
            node = node.elements[rest.pop(0)].value
        return self.part(self.value(node), tuple(rest))

    def part(self, value: Value, path: tuple[int, ...], iterable: Optional[cst.CSTNode] = None) -> Value:
        """The part of `value` an unpacking target at `path` receives."""
        for index in path:
            if value.items is not None and 0 <= index < len(value.items):
                value = value.items[index]
            elif value.kind in (Kind.SEQUENCE, Kind.MAPPING, Kind.SIZE) and value.element is not None:
                value = value.element if index >= 0 else value
            elif value.kind is Kind.TENSOR:
                value = self._row(value)
            elif value.origin is not Origin.NONE:
                # One field of a batch or sample: still that batch/sample's data.
                inner = value.element if value.element is not None else UNKNOWN
                value = inner if inner.kind is not Kind.UNKNOWN else Value(place=value.place, origin=value.origin)
            else:
                return UNKNOWN
        return value

    def annotation_value(self, annotation) -> Value:
        if annotation is None:
            return UNKNOWN
        node = annotation.annotation if type(annotation) is cst.Annotation else annotation
        if type(node) is cst.Subscript:
            head = self.ctx.qualname(node.value) or dotted_name(node.value) or ""
            if head.rsplit(".", 1)[-1] in ("Optional",) and node.slice:
                inner = node.slice[0].slice
                if type(inner) is cst.Index:
                    return self.annotation_value(inner.value)
            if head.rsplit(".", 1)[-1] in ("List", "list", "Sequence", "Tuple", "tuple", "Iterable"):
                return Value(Kind.SEQUENCE)
            return UNKNOWN
        if type(node) is cst.BinaryOperation and type(node.operator) is cst.BitOr:
            left, right = self.annotation_value(node.left), self.annotation_value(node.right)
            return right if left.kind is Kind.NONE else left if right.kind is Kind.NONE else join(left, right)
        if type(node) in (cst.SimpleString, cst.ConcatenatedString):
            text = string_value(node) or ""
            try:
                return self.annotation_value(cst.parse_expression(text))
            except Exception:  # noqa: BLE001 - an odd string annotation says nothing
                return UNKNOWN
        if type(node) is cst.Name and node.value == "None":
            return NONE
        qual = self.ctx.qualname(node) or dotted_name(node) or ""
        last = qual.rsplit(".", 1)[-1]
        if qual in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor") or last == "Tensor":
            return Value(Kind.TENSOR, layout=CONTIGUOUS)
        if qual in ("torch.nn.Module",) or self.api.is_module_class(qual) or last in self.module_classes():
            return Value(Kind.MODULE, cls=qual or last)
        if self.api.is_loader(qual) or last == "DataLoader":
            return Value(Kind.LOADER, element=Value(place=Place.CPU, origin=Origin.BATCH))
        if qual.startswith("torch.optim.") and last == "Optimizer":
            return Value(Kind.OPTIMIZER)
        if qual in ("numpy.ndarray",) or last == "ndarray":
            return Value(Kind.ARRAY, Place.CPU)
        if qual == "torch.device":
            return Value(Kind.DEVICE)
        if qual == "torch.dtype":
            return Value(Kind.DTYPE)
        if last in ("int", "float", "complex"):
            return NUMBER
        if last == "bool":
            return BOOL
        if last == "str":
            return STRING
        return UNKNOWN

    # parameters: annotation, then what every call site in the file agrees on
    def param_value(self, param: cst.Param) -> Value:
        # Memoised as values are: a cycle through call sites answers "unknown" inside it,
        # and what was computed from that is not kept (the answer would depend on which
        # expression a rule asked about first).
        key = ("param", id(param))
        found = self._known(key)
        if found is not None:
            return found
        return self._memoised(key, self._param_value, param)

    def _param_value(self, param: cst.Param) -> Value:
        if self._bound_params is not None:
            bound = self._bound_params.get(id(param))
            if bound is not None:
                return bound
        annotated = self.annotation_value(param.annotation)
        function = self._function_of_param(param)
        from_calls = self._call_site_value(function, param) if function is not None else None
        if from_calls is not None and from_calls.kind is not Kind.UNKNOWN:
            if annotated.kind is Kind.UNKNOWN or annotated.kind is from_calls.kind:
                return from_calls
        if annotated.kind is not Kind.UNKNOWN:
            return annotated
        if from_calls is not None:
            return from_calls
        if function is not None and self._collate_input(function, param):
            # A loader's `collate_fn` is handed the list of the dataset's samples of one batch.
            return Value(Kind.SEQUENCE, Place.CPU)
        if param.default is not None:
            # No call site in the file: the default is what a call without it runs with
            # (`device="cuda"`, `device=torch.device("cpu")`, `devices=try_all_gpus()`).
            placed = self._default_device(param.default)
            if placed is not None:
                return placed
        if _DEVICE_NAME.search(param.name.value):
            return Value(Kind.DEVICE, Place.DEVICE, hint=True)
        return UNKNOWN

    def _collate_input(self, function, param: cst.Param) -> bool:
        """`param` is the first parameter of a function of the file that a loader
        construction of the file takes as its `collate_fn=` (by name, the name bound to that
        function alone): the loader calls it with a list of samples, on the host (the
        samples a dataset returns)."""
        if type(function) is not cst.FunctionDef or not self.names_collate_fn:
            return False
        params = [*function.params.posonly_params, *function.params.params]
        if not params or params[0] is not param \
                or isinstance(self.parent(self.parent(function)), cst.ClassDef):
            return False
        for call in self.calls_by_name().get("DataLoader", ()):
            if not self.api.is_loader(self.qualname(call.func) or ""):
                continue
            given = keyword_arg(call, "collate_fn")
            if isinstance(given, cst.Name) and self.resolve_function(given) is function:
                return True
        return False

    def _default_device(self, default: cst.BaseExpression) -> Optional[Value]:
        """A parameter default that names a device or a list of devices, else None (a
        number is a device only where a device goes, not as a default)."""
        text = string_value(default)
        if text is not None:
            place = device_string_place(text)
            return Value(Kind.DEVICE, place) if place is not None else None
        value = self.value(default)
        if value.kind is Kind.DEVICE and value.place is not Place.UNKNOWN and not value.hint:
            return value
        element = value.element
        if value.kind is Kind.SEQUENCE and element is not None and element.kind is Kind.DEVICE \
                and element.place is not Place.UNKNOWN and not element.hint:
            return value
        return None

    def _function_of_param(self, param: cst.Param) -> Optional[cst.CSTNode]:
        current = self.parent(param)
        while current is not None and type(current) not in FUNCTIONS:
            current = self.parent(current)
        return current

    def _call_site_value(self, function, param: cst.Param) -> Optional[Value]:
        """The value every call of `function` in this file passes for `param` (None when
        there is no call site or one cannot be matched)."""
        passed = self._passed_arguments(function, param)
        if passed is None:
            return None
        args, spawns, index = passed
        spawned = self._spawned_value(spawns, index)
        if spawned is not None:
            return spawned if not args else None
        if not args or any(arg is None for arg in args):
            return None
        return join_all(self.value(arg) for arg in args)  # stops at the first "unknown"

    def passed_arguments(self, param: cst.Param) -> Optional[tuple[list, bool]]:
        """(what each call of `param`'s function in this file passes for it — its default
        where a call passes nothing, None where it has none either —, whether a
        `torch.multiprocessing.spawn` call starts the function with `param` as the process
        index); the `args` a spawn hands the other parameters count as calls. None for
        `self`, a call with `*args`, a spawn whose `args` is no tuple display, or when nothing
        in the file calls or spawns the function."""
        function = self._function_of_param(param)
        passed = self._passed_arguments(function, param) if function is not None else None
        if passed is None:
            return None
        args, spawns, index = passed
        if spawns and index != 0:
            for call in spawns:
                extra = keyword_arg(call, "args")
                if extra is None:
                    extra = call_arg(call, 1, "args")
                if index is None or not isinstance(extra, cst.Tuple) or index - 1 >= len(extra.elements):
                    return None
                args.append(extra.elements[index - 1].value)
        if not args and not spawns:
            return None
        return args, bool(spawns) and index == 0

    def _passed_arguments(self, function, param: cst.Param) -> Optional[tuple[list, tuple, Optional[int]]]:
        """What each call of `function` in this file passes for `param` (its default where a
        call passes nothing, None where it has none either), the `spawn` calls that start
        `function`, and `param`'s position among the positional parameters; None for `self`,
        for a call with `*args`/`**kwargs`, or when `function` is no function definition."""
        if type(function) is not cst.FunctionDef:
            return None
        params = function.params
        positional = [*params.posonly_params, *params.params]
        is_method = type(self.parent(self.parent(function))) is cst.ClassDef
        if is_method and positional and positional[0] is param:
            return None  # `self`
        calls, spawns = self._call_sites(function, is_method)
        index = positional.index(param) if param in positional else None
        # A method's call passes `self` implicitly: its first argument is the second parameter.
        at = index - 1 if is_method and index is not None else index
        args = []
        for call in calls:
            if any(a.star for a in call.args):
                return None
            arg = call_arg(call, at, param.name.value) if at is not None else keyword_arg(call, param.name.value)
            args.append(arg if arg is not None else param.default)
        return args, spawns, index

    def _call_sites(self, function: cst.FunctionDef, is_method: bool) -> tuple[tuple, tuple]:
        """(the calls of `function` in this file, the `torch.multiprocessing.spawn` calls
        that start it): matched once per function, whichever of its parameters is asked."""
        found = self._sites.get(id(function))
        if found is not None:
            return found
        name = function.name.value
        owner = self.parent(self.parent(function))
        calls = [c for c in self.calls_by_name().get(name, ())
                 if self.resolve_function(c.func) is function or (
                     is_method and isinstance(c.func, cst.Attribute)
                     and self.syncs._instance_class(c.func.value) is owner)]
        if name == "__init__" and isinstance(owner, cst.ClassDef):
            # `Seq2Seq(encoder, decoder, device)` calls `Seq2Seq.__init__`.
            calls += [c for c in self.calls_by_name().get(owner.name.value, ())
                      if isinstance(c.func, cst.Name)
                      and [d.node for d in self.defs(c.func)] == [owner]]
        spawns = [call for call in self.calls_by_name().get("spawn", ())
                  if self.qualname(call.func) in ("torch.multiprocessing.spawn",
                                                  "torch.multiprocessing.spawn.spawn")
                  and call.args and self.resolve_function(call.args[0].value) is function]
        found = self._sites[id(function)] = (tuple(calls), tuple(spawns))
        return found

    def _spawned_value(self, spawns: tuple, index: Optional[int]) -> Optional[Value]:
        """What the `torch.multiprocessing.spawn(function, args=(a, b))` calls `spawns` pass
        for the function's positional parameter at `index`: the process index (a number:
        `rank`, the GPU it drives), then the `args`; None when there is no such call."""
        values = []
        for call in spawns:
            if index == 0:
                values.append(NUMBER)
                continue
            extra = keyword_arg(call, "args")
            if extra is None:
                extra = call_arg(call, 1, "args")
            if index is None or not isinstance(extra, cst.Tuple) or index - 1 >= len(extra.elements):
                return UNKNOWN
            values.append(self.value(extra.elements[index - 1].value))
        return join_all(values) if values else None

    # attributes
    def _attribute_value(self, node: cst.Attribute) -> Value:
        attr = node.attr.value
        members = self.module_member_defs(node)
        if members is not None:
            return join_all(self.def_value(d) for d in members) if members else UNKNOWN
        qual = self.qualname(node)
        if qual is not None:
            known = self._qualified_value(qual)
            if known.kind is not Kind.UNKNOWN:
                return known
            if self.project_module_class(node):  # `models.Net` of `import models`
                return Value(Kind.MODULE_CLASS, cls=qual)
        base = self.value(node.value)
        if base.kind is Kind.TENSOR:
            if attr in ("T", "mT", "mH", "H"):
                return self._transposed(base, node, label=f".{attr}")
            if attr in ("data", "grad", "real", "imag"):
                return base.with_(node=node, origin=base.origin if attr == "data" else Origin.NONE)
            if attr == "shape":
                return self._size_of(base)
            if attr == "device":
                return Value(Kind.DEVICE, base.place)
            if attr == "dtype":
                return Value(Kind.DTYPE)
            if attr in ("ndim", "is_cuda", "requires_grad", "is_leaf"):
                return NUMBER
            if attr in ("values", "indices") and type(base.node) is cst.Call \
                    and type(base.node.func) is cst.Attribute \
                    and base.node.func.attr.value in shapes.TUPLE_RESULTS:
                # `x.topk(k).indices`: a field of the (values, indices) result, where `x` is
                return tensor(base.place, layout=CONTIGUOUS, node=node)
            if type(base.node) is cst.Call and attr not in _TENSOR_ATTRIBUTES \
                    and self.api.method(attr) is None and self._module_called(base.node):
                # A field a tensor does not have, of what a call returned: the call gave a
                # structure of tensors (a namedtuple of features, a `ModelOutput`'s
                # `.logits`), and its fields live where the output does.
                return tensor(base.place, node=node)
        if base.kind is Kind.MODULE:
            if attr in ("weight", "bias"):
                return tensor(base.place, node=node)
            if attr == "training":
                return BOOL
            owner = self.module_classes().get(base.cls) if base.cls else None
            if owner is not None:
                # `model.fc1` of this file's module class: a submodule moves with its parent.
                sub = self.self_attribute(owner, attr)
                if sub.kind is Kind.MODULE:
                    return sub.with_(place=base.place, node=node)
            elif base.cls and self._project_class_may_assign(base.cls, attr):
                # `model.ff` of a module class of another local module (`self.ff =
                # nn.Linear(...)` in its `__init__`): a submodule there too.
                found = self._project_class(base.cls)
                if found is not None:
                    other, owner = found
                    sub = other.self_attribute(owner, attr)
                    if sub.kind is Kind.MODULE:
                        return Value(Kind.MODULE, base.place, node=node)
        if base.kind is Kind.ARRAY:
            if attr == "T":
                return base
            if attr in ("shape", "ndim", "size", "dtype"):
                return NUMBER if attr != "shape" else Value(Kind.SIZE, Place.CPU, element=NUMBER)
        if base.kind is Kind.MAPPING and base.cls in self.api.attribute_mappings and not hasattr(dict, attr) \
                and base.element is not None and base.element.kind is Kind.TENSOR:
            # `inputs.x_src` of `inputs = Munch({...})` holding tensors only: one of them (the
            # join of every item: any other kind of item, a callable, a number, says nothing).
            return base.element
        # `self.x` inside a method: every value the class assigns to `self.x`.
        scope = self._function_scope(self.scope_of(node))
        owner = self._self_class(node.value, scope)
        if owner is not None:
            return self.self_attribute(owner, attr, at=node)
        if base.kind is Kind.UNKNOWN and attr == "shape":
            return Value(Kind.SIZE, Place.CPU, element=NUMBER)  # a tensor's, an array's: sizes
        if base.kind is Kind.UNKNOWN and attr == "device" and base.origin is Origin.NONE:
            return Value(Kind.DEVICE, Place.UNKNOWN, node=node)  # a tensor's or a module's device
        return UNKNOWN

    @staticmethod
    def _size_of(base: Value) -> Value:
        """`x.shape` / `x.size()`: a torch.Size with one number per dimension, when known."""
        items = None
        if base.shape is not None:
            items = tuple(NUMBER.with_(literal=s if isinstance(s, int) else None) for s in base.shape)
        return Value(Kind.SIZE, Place.CPU, items=items, element=NUMBER)

    def self_attribute(self, owner: cst.ClassDef, attr: str, at: Optional[cst.CSTNode] = None) -> Value:
        """Every value the class assigns to `self.<attr>`, as read at `at` (a `self.x.to(device)`
        statement moves the module it holds: devicelint.semantic.modules.attribute_moves)."""
        self._ensure_class_flows(owner)
        entries = self.attribute_defs.get((id(owner), attr))
        if not entries:
            for base in owner.bases:
                base_name = dotted_name(base.value)
                for other in self.ctx.class_defs:
                    if other.name.value == base_name and other is not owner:
                        inherited = self.self_attribute(other, attr)
                        if inherited.kind is not Kind.UNKNOWN:
                            return inherited
            method = self._method(owner, attr)
            if method is not None:
                return Value(Kind.CALLABLE, node=method)
            return UNKNOWN
        module_class = self.may_be_module_class(owner)
        values = []
        for _target, d in entries:
            value = self.def_value(d)
            if module_class and value.kind is Kind.TENSOR and isinstance(d.value, cst.Call) \
                    and self.qualname(d.value.func) in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
                value = value.with_(place=Place.UNKNOWN)  # a parameter moves with its module
            values.append(value)
        moves = self.attribute_moves.get((id(owner), attr))
        if moves:
            values = attribute_moves(self, entries, values, moves, at)
        value = join_all(values)
        if value.kind is Kind.MODULE and module_class:
            # A submodule moves with its parent module: its place is the parent's.
            value = value.with_(place=Place.UNKNOWN)
        return value

    def _project_class(self, qualified: str):
        """(that file's model, its ClassDef) for a class of another local module, else None."""
        symbol = self.project_class_symbol(qualified)
        if symbol is None:
            return None
        other = self.project.model_of(symbol.module)
        if other is None:
            return None
        for owner in other.ctx.class_defs:
            if owner.name.value == symbol.name and other.parent(owner) is other.ctx.module:
                return other, owner
        return None

    def _project_class_may_assign(self, qualified: str, attr: str) -> bool:
        """Whether the class `qualified` of another local module (`project_class_symbol`)
        may assign `self.<attr>`, as `self_attribute` reads it there: that module's text
        writes an attribute of that name (`self_attribute` reads assignments to
        `self.<attr>` only). Asked before the module's model is built: `model.postprocess(x)`
        of a method, not an attribute, builds none (torchvision: detection/transform.py,
        built again in the second worker of `-j 2`)."""
        symbol = self.project_class_symbol(qualified)
        return symbol is not None and self.project.text_has(symbol.module, _attribute_written(attr))

    def project_class_symbol(self, qualified: str):
        """The project index's Symbol of the class of another local module that
        `_project_class` reads (the module whose model it builds), found without building
        it; else None."""
        view = self.project
        if view is None:
            return None
        symbol = view.resolve(qualified)   # `models.Net` of `import models`
        if symbol is None:
            # `from src.model import Translator`: the name the file binds, when it stands
            # for that module's class.
            module, _, name = qualified.rpartition(".")
            symbol = view.resolve(name) if module else None
            path = symbol.module.key.rsplit(".", 1)[0] \
                if symbol is not None and symbol.module is not None else ""
            dotted = symbol.module.name if symbol is not None and symbol.module is not None else ""
            if symbol is None or symbol.name != name or not (
                    path.endswith(module.replace(".", "/")) or path.endswith(module.replace(".", "/") + "/__init__")
                    or dotted == module or dotted.endswith("." + module)):
                return None
        if symbol.kind != "class" or symbol.module is None or symbol.module is view.module:
            return None
        return symbol

    def may_be_module_class(self, owner: cst.ClassDef, depth: int = 0) -> bool:
        """A class of the file that derives from nn.Module, or may: a base the file does not
        define (`class VAE(BaseVAE)` with `BaseVAE` from another file)."""
        if owner.name.value in self.module_classes():
            return True
        for base in owner.bases:
            if base.keyword is not None or dotted_name(base.value) == "object":
                continue
            local = [c for c in self.ctx.class_defs if c.name.value == dotted_name(base.value)]
            if not local or depth > 8 or any(self.may_be_module_class(c, depth + 1) for c in local):
                return True
        return False

    def _ensure_class_flows(self, owner: cst.ClassDef) -> None:
        if id(owner) in self._class_flows_built:
            return  # (asked for every `self.x` read: its methods' flows are built already)
        body = owner.body
        if type(body) is cst.IndentedBlock:
            for statement in body.body:
                if type(statement) is cst.FunctionDef:
                    self.flow(statement)
        if id(owner) in self.ctx._info:
            self._class_flows_built.add(id(owner))

    # subscripts and iteration
    def _item_read(self, read: Value, node: cst.Subscript) -> Value:
        """`c[key]` where the function also assigns an item of `c` (`c[k] = v`) that may be
        this one: what the read gives may be the stored value, so a place that the stores
        do not share is unknown (a dict batch whose tensors a loop moved to the device,
        `batch["x"]` read back after). A store under another literal key does not count."""
        if read.place is Place.UNKNOWN or type(node.value) is not cst.Name or len(node.slice) != 1 \
                or type(node.slice[0].slice) is not cst.Index:
            return read
        stores = self._stores_into(node.value)
        if not stores:
            return read
        key = self._literal_key(node.slice[0].slice.value)
        for stored_key, stored in stores:
            if key is not None and stored_key is not None and stored_key != key:
                continue
            if self._within(node, stored):
                continue  # `c[k] = c[k].float()`: the read on the right comes before the store
            if self.value(stored).place is not read.place:
                return read.with_(place=Place.UNKNOWN, hint=False)
        return read

    @staticmethod
    def _literal_key(node: cst.CSTNode):
        text = string_value(node)
        if text is not None:
            return ("str", text)
        number = int_value(node)
        return ("int", number) if number is not None else None

    def _stores_into(self, name: cst.Name) -> list:
        """The item assignments `name[key] = value` of the function that reads `name`:
        (literal key or None, value node) pairs."""
        if self._item_stores is None:
            found: dict = {}
            for binder, scope in self.ctx._binders:
                if type(binder) is not cst.Assign:
                    continue
                for target in binder.targets:
                    store = target.target
                    if type(store) is cst.Subscript and type(store.value) is cst.Name:
                        one = len(store.slice) == 1 and type(store.slice[0].slice) is cst.Index
                        key = self._literal_key(store.slice[0].slice.value) if one else None
                        where = (id(self._function_scope(scope)), store.value.value)
                        found.setdefault(where, []).append((key, binder.value))
            self._item_stores = found
        if not self._item_stores or name is None:
            return []
        return self._item_stores.get((id(self._function_scope(self.scope_of(name))), name.value), [])

    def index(self, base: Value, node: cst.Subscript) -> Value:
        elements = node.slice
        if base.kind is Kind.TENSOR or base.kind is Kind.ARRAY:
            return self._tensor_index(base, elements, node)
        if base.kind is Kind.SIZE:
            if base.items is not None and len(elements) == 1 and type(elements[0].slice) is cst.Index:
                i = int_value(elements[0].slice.value)
                if i is not None and -len(base.items) <= i < len(base.items):
                    return base.items[i]
            return NUMBER
        if base.kind in (Kind.SEQUENCE, Kind.MAPPING):
            if len(elements) == 1 and type(elements[0].slice) is cst.Index:
                i = int_value(elements[0].slice.value)
                if base.items is not None and i is not None and -len(base.items) <= i < len(base.items):
                    return base.items[i]
                element = base.element or UNKNOWN
                if base.kind is Kind.SEQUENCE and base.place is Place.CPU:
                    return self._sample(element)
                return element
            return base  # a slice of a list is a list
        if base.kind is Kind.DATASET:
            return base.element or Value(place=Place.CPU, origin=Origin.ROW)
        if base.origin in (Origin.BATCH, Origin.ROW):
            inner = base.element if base.element is not None else UNKNOWN
            return inner if inner.kind is not Kind.UNKNOWN else Value(place=base.place, origin=base.origin)
        return UNKNOWN

    def _tensor_index(self, base: Value, elements, node) -> Value:
        rank = base.rank
        dropped = 0
        added = 0
        stepped = False
        unknown = False
        whole_slices = 0
        for element in elements:
            inner = element.slice
            if isinstance(inner, cst.Slice):
                whole_slices += 1
                if inner.step is not None and int_value(inner.step) != 1:
                    stepped = True
                continue
            value = inner.value
            if isinstance(value, cst.Name) and value.value == "None":
                added += 1
                continue
            if isinstance(value, cst.Ellipsis):
                unknown = True
                continue
            v = self.value(value)
            if v.kind in (Kind.NUMBER, Kind.BOOL) or isinstance(value, cst.Integer):
                dropped += 1
            else:
                unknown = True  # advanced indexing
        shape = None
        if rank is not None and not unknown:
            new_rank = rank - dropped + added
            if new_rank >= 0:
                if dropped == 0 and added == 0 and base.shape is not None and not stepped:
                    shape = tuple(None for _ in base.shape)
                else:
                    shape = (None,) * new_rank
        layout = Layout(LAYOUT_NARROWED, label="a step slice", source=node) if stepped else (
            UNKNOWN_LAYOUT if not base.layout.contiguous else (
                CONTIGUOUS if (whole_slices == 0 and not unknown) else UNKNOWN_LAYOUT))
        if stepped is False and base.layout.state in (LAYOUT_PERMUTED, LAYOUT_EXPANDED, LAYOUT_NARROWED):
            layout = base.layout
        origin = Origin.ROW if (dropped and not unknown and whole_slices == 0 and added == 0) else base.origin
        if base.origin is Origin.BATCH:
            origin = Origin.BATCH
        return base.with_(shape=shape, layout=layout, origin=origin, node=node)

    def _row(self, value: Value) -> Value:
        shape = value.shape[1:] if value.shape else None
        layout = CONTIGUOUS if value.layout.contiguous else UNKNOWN_LAYOUT
        return value.with_(shape=shape, layout=layout, origin=Origin.ROW if value.origin is not Origin.BATCH else Origin.BATCH)

    def iteration_element(self, iterable: cst.BaseExpression) -> Value:
        """What one iteration over `iterable` binds (before unpacking)."""
        if type(iterable) is cst.Call:
            name = self.qualname(iterable.func) or dotted_name(iterable.func) or ""
            args = positional_args(iterable)
            if name in ("range",):
                return NUMBER
            if name == "enumerate" and args:
                return Value(Kind.SEQUENCE, items=(NUMBER, self.iteration_element(args[0])))
            if name == "zip" and args:
                return Value(Kind.SEQUENCE, items=tuple(self.iteration_element(a) for a in args))
            if name in _PASS_THROUGH and args:
                return self.iteration_element(args[0])
            if type(iterable.func) is cst.Attribute:
                method = iterable.func.attr.value
                receiver = self.value(iterable.func.value)
                if method == "items" and receiver.kind is Kind.MAPPING:
                    return Value(Kind.SEQUENCE, items=(STRING, receiver.element or UNKNOWN))
                if method == "values" and receiver.kind is Kind.MAPPING:
                    return receiver.element or UNKNOWN
                if method in ("items", "values") and receiver.kind is Kind.TENSOR \
                        and self.api.method(method) is None and not iterable.args:
                    # A module's output the code walks as a dict (`loss_dict = criterion(out,
                    # targets)` then `loss_dict.items()`): a tensor has no such method; its
                    # values are what the module computed, where it computed them.
                    part = tensor(receiver.place, hint=receiver.hint)
                    return Value(Kind.SEQUENCE, items=(STRING, part)) if method == "items" else part
                if method in ("parameters", "buffers") and receiver.kind is Kind.MODULE:
                    return tensor(receiver.place)
                if method in ("named_parameters", "named_buffers") and receiver.kind is Kind.MODULE:
                    return Value(Kind.SEQUENCE, items=(STRING, tensor(receiver.place)))
                if method in ("children", "modules") and receiver.kind is Kind.MODULE:
                    return Value(Kind.MODULE, place=receiver.place)
        return self.element(self.value(iterable))

    def element(self, value: Value) -> Value:
        """One element of an iteration over a value."""
        if value.kind is Kind.TENSOR or value.kind is Kind.ARRAY:
            return self._row(value)
        if value.kind is Kind.LOADER:
            inner = value.element or Value(place=Place.CPU, origin=Origin.BATCH)
            return inner
        if value.kind is Kind.DATASET:
            return value.element or Value(place=Place.CPU, origin=Origin.ROW)
        if value.kind is Kind.SEQUENCE:
            element = value.element or UNKNOWN
            if value.place is Place.CPU:
                return self._sample(element)
            return element
        if value.kind is Kind.MAPPING:
            return STRING
        if value.kind is Kind.NUMBER:
            return UNKNOWN
        if value.origin in (Origin.BATCH, Origin.ROW):
            return value.element or Value(place=value.place, origin=value.origin)
        return UNKNOWN

    @staticmethod
    def _sample(element: Value) -> Value:
        """One element of a host list of samples: a row, unless it says what it is (a
        loader batch, a piece of a split), or it is a list of unknown place."""
        if element.origin is not Origin.NONE:
            return element
        if element.kind is Kind.UNKNOWN:
            return Value(place=Place.CPU, origin=Origin.ROW)
        if element.kind is Kind.SEQUENCE and element.place is not Place.CPU:
            return element  # a tuple of fields, not a row of numbers
        return element.with_(origin=Origin.ROW)

    # arithmetic
    def _binary(self, node: cst.BinaryOperation) -> Value:
        left, right = self.value(node.left), self.value(node.right)
        if type(node.operator) is cst.MatrixMultiply:
            return self._matmul([left, right], node)
        return self._arith(left, right, node.operator, node)

    def _arith(self, left: Value, right: Value, operator, node) -> Value:
        tensors = [v for v in (left, right) if v.kind is Kind.TENSOR]
        if tensors:
            places = {t.place for t in tensors}
            others = [v for v in (left, right) if v.kind is not Kind.TENSOR]
            if any(o.kind not in (Kind.NUMBER, Kind.BOOL, Kind.TENSOR) for o in others):
                return UNKNOWN if any(o.kind is Kind.UNKNOWN for o in others) and not (
                    places == {Place.DEVICE}) else tensor(Place.DEVICE if Place.DEVICE in places else Place.UNKNOWN, node=node)
            place = Place.DEVICE if Place.DEVICE in places else (places.pop() if len(places) == 1 else Place.UNKNOWN)
            ranks = [t.rank for t in tensors]
            shape = None
            if all(r is not None for r in ranks):
                widest = max(tensors, key=lambda t: t.rank)
                shape = tuple(None for _ in widest.shape) if len(tensors) > 1 else widest.shape
            # Elementwise results follow their input's stride order (TensorIterator).
            return tensor(place, shape, shapes.elementwise_layout(tensors), node=node)
        if left.kind is Kind.ARRAY or right.kind is Kind.ARRAY:
            return Value(Kind.ARRAY, Place.CPU)
        if left.kind in (Kind.NUMBER, Kind.BOOL) and right.kind in (Kind.NUMBER, Kind.BOOL):
            if isinstance(left.literal, int) and isinstance(right.literal, int) and not isinstance(left.literal, bool):
                if isinstance(operator, cst.Multiply):
                    return NUMBER.with_(literal=left.literal * right.literal)
                if isinstance(operator, cst.Add):
                    return NUMBER.with_(literal=left.literal + right.literal)
            return NUMBER
        if left.kind is Kind.STRING and isinstance(operator, (cst.Add, cst.Modulo)):
            return STRING
        if left.kind is Kind.SEQUENCE and right.kind is Kind.SEQUENCE and isinstance(operator, cst.Add):
            return join(left.with_(items=None), right.with_(items=None))
        if type(operator) is cst.Multiply and {left.kind, right.kind} == {Kind.SEQUENCE, Kind.NUMBER}:
            # `[0.0] * n`: the list repeated.
            return (left if left.kind is Kind.SEQUENCE else right).with_(items=None, node=node)
        return UNKNOWN

    def _matmul(self, operands: list[Value], node) -> Value:
        if not any(v.kind is Kind.TENSOR for v in operands):
            if any(v.kind is Kind.ARRAY for v in operands):
                return Value(Kind.ARRAY, Place.CPU)
            return UNKNOWN
        places = {v.place for v in operands if v.kind is Kind.TENSOR}
        place = Place.DEVICE if Place.DEVICE in places else (places.pop() if len(places) == 1 else Place.UNKNOWN)
        ranks = [v.rank for v in operands]
        shape = None
        if len(operands) == 2 and all(r is not None for r in ranks):
            a, b = operands
            if a.rank >= 2 and b.rank >= 2:
                shape = (None,) * max(a.rank, b.rank)
            elif a.rank == 1 and b.rank == 1:
                shape = ()
            else:
                shape = (None,) * (max(a.rank, b.rank) - 1)
        return tensor(place, shape, CONTIGUOUS, node=node)

    # calls
    def _call_value(self, node: cst.Call) -> Value:
        func = node.func
        qual = self.qualname(func)
        if qual is not None:
            if qual in self.api.converting_functions:
                return NUMBER  # `math.log10(t)`: a Python number, read from the tensor
            found = self._qualified_call(node, qual)
            if found is not None:
                return found
        if type(func) is cst.Attribute:
            receiver = self.value(func.value)
            found = self._method_call(receiver, node)
            if found is not None:
                return found
        if type(func) is cst.Name:
            found = self._builtin_call(func.value, node)
            if found is not None:
                return found
        callee = self.value(func)
        if callee.kind is Kind.MODULE:
            return self.module_output(callee, node)
        if self.moved_callable(callee):
            return self.module_output(callee.with_(kind=Kind.MODULE, cls=None), node)
        if callee.kind is Kind.MODULE_CLASS:
            return Value(Kind.MODULE, self.built_place(node), cls=callee.cls, node=node)
        if callee.kind is Kind.CALLABLE and type(callee.node) is cst.FunctionDef:
            return self.returned_value(callee.node)
        if callee.kind is Kind.CALLABLE and type(callee.node) is cst.ClassDef \
                and self.dataset_classes().get(callee.node.name.value) is callee.node:
            return Value(Kind.DATASET, Place.CPU, cls=callee.node.name.value, node=node)
        foreign = self._project_loader(node)
        if foreign is not None:
            return foreign
        foreign = self._project_returned(node)
        if foreign is not None:
            return foreign
        function = self.resolve_function(func)
        if function is not None:
            return self.returned_value(function)
        if type(func) is cst.Name and func.value in self.module_classes():
            return Value(Kind.MODULE, self.built_place(node), cls=func.value, node=node)
        return UNKNOWN

    def _module_called(self, call: cst.Call) -> bool:
        """`call` runs a module (`vgg(x)`, `model.forward(x)`), not a move or a method."""
        callee = self.value(call.func)
        return callee.kind is Kind.MODULE or self.moved_callable(callee)

    @staticmethod
    def moved_callable(callee: Value) -> bool:
        """Something moved to the device and then called is a module (`net = Net();
        net = net.to(device)` with `Net` from a star import; tensors are not callable)."""
        return callee.kind in (Kind.UNKNOWN, Kind.TENSOR) and callee.place is Place.DEVICE \
            and not callee.hint

    def module_output(self, module: Value, call: cst.Call) -> Value:
        """What calling a module returns: a tensor on the module's device, or on its inputs'
        device when the module holds no state (activations, unweighted losses)."""
        inputs = [self.value(a.value) for a in call.args if not a.star]
        input_place = Place.UNKNOWN
        for v in inputs:
            if v.kind is Kind.TENSOR and v.place is not Place.UNKNOWN:
                input_place = v.place
                break
        # A module that holds no tensor (an activation, `nn.CrossEntropyLoss()` without a class
        # weight on the CPU) computes where its inputs are: devicelint.semantic.modules says which.
        stateless = holds_state(self, module) is False
        place = input_place if stateless or module.place is Place.UNKNOWN else module.place
        shape = None
        layout = CONTIGUOUS  # a module's output is a fresh tensor
        if module.cls in self.api.shape_preserving_modules and inputs and inputs[0].kind is Kind.TENSOR:
            shape, layout = inputs[0].shape, inputs[0].layout
        return tensor(place, shape, layout, node=call)

    def returned_value(self, function: cst.FunctionDef) -> Value:
        key = ("returns", id(function))  # memoised as values are (param_value)
        found = self._known(key)
        if found is not None:
            return found
        return self._memoised(key, self._returned_value, function)

    def _returned_value(self, function: cst.FunctionDef) -> Value:
        flow = self.flow(function)
        if flow.yields:
            result = UNKNOWN
        else:
            # What it returns where a GPU is there: `if torch.cuda.is_available(): return
            # torch.device("cuda")` then `return torch.device("cpu")` gives the GPU.
            returns = [r for r in flow.returns if self.on_gpu_path(r)] or flow.returns
            # Lazily: join_all stops at the first "unknown", and the later returns' values
            # are not computed for nothing.
            result = join_all(self.value(r.value) if r.value is not None else NONE
                              for r in returns) if returns else NONE
        return result

    def summary(self, function: cst.FunctionDef):
        """What calling `function` does: devicelint.semantic.summaries.Summary (returns,
        moves, host_reads, device_reads)."""
        found = self._summaries.get(id(function))
        if found is None:
            from devicelint.semantic.summaries import summarise

            found = self._summaries[id(function)] = summarise(self, function)
        return found

    def device_place(self, node: Optional[cst.BaseExpression]) -> tuple[Optional[Place], bool]:
        """Where a `.to(...)`/`device=` argument sends data: (place, hint); place None for a
        dtype-only or unknown target."""
        if node is None:
            return None, False
        text = string_value(node)
        if text is not None:
            return device_string_place(text), False
        if type(node) is cst.FormattedString:
            head = "".join(p.value for p in node.parts if type(p) is cst.FormattedStringText)
            return (device_string_place(head) if head else None), False
        if type(node) is cst.Integer:
            return Place.DEVICE, False  # a CUDA device index
        value = self.value(node)
        if value.kind is Kind.DEVICE:
            return (value.place if value.place is not Place.UNKNOWN else Place.DEVICE), value.hint
        if value.kind is Kind.STRING and isinstance(value.literal, str):
            return device_string_place(value.literal), False
        if value.kind is Kind.TENSOR:
            return (value.place if value.place is not Place.UNKNOWN else None), value.hint
        if value.kind is Kind.DTYPE:
            return None, False
        if value.kind is Kind.NUMBER and not isinstance(value.literal, float):
            return Place.DEVICE, False  # `.to(rank)`, `.cuda(index)`: a CUDA device index
        if type(node) is cst.Name and value.kind in (Kind.STRING, Kind.DEVICE, Kind.UNKNOWN) \
                and id(node) not in self._placing:
            # `device = "cuda"` on one path, `device = f"cuda:{rank}"` on another: each binding
            # names the same place although their join has no literal.
            self._placing.add(id(node))
            try:
                found = self._bindings_place(node)
            finally:
                self._placing.discard(id(node))
            if found is not None:
                return found
        if value.kind is Kind.UNKNOWN:
            name = dotted_name(node)
            if name is not None and _DEVICE_NAME.search(name.rsplit(".", 1)[-1]):
                return Place.DEVICE, True
        return None, False

    def _bindings_place(self, node: cst.Name) -> Optional[tuple[Place, bool]]:
        if len(self._placing) > 8:
            return None
        places = set()
        for d in self.defs(node):
            if d.kind == "for" and not d.path and type(d.value) in (cst.List, cst.Tuple):
                places.add(self._device_pass(d.value))
                continue
            if d.kind not in ("assign", "annassign") or d.value is None or d.path \
                    or self._within(node, d.value):
                return None
            places.add(self.device_place(d.value))
        if len(places) == 1:
            found = places.pop()
            if found is not None and found[0] is not None:
                return found
        return None

    def _device_pass(self, devices: cst.BaseExpression) -> Optional[tuple[Place, bool]]:
        """`for device in ["cpu", "cuda"]:` runs a pass on each device the literal names; with
        one of them the GPU, the GPU pass is the one that can go wrong there (as a branch
        taken with a GPU): (DEVICE, False); all of them the host: (CPU, False). None unless
        every element names a device."""
        places = [self.device_place(e.value)[0] if not isinstance(e, cst.StarredElement) else None
                  for e in devices.elements]  # type: ignore[attr-defined]
        if not places or any(p is None for p in places):
            return None
        return (Place.DEVICE if Place.DEVICE in places else places[0]), False

    def default_place(self, node: cst.CSTNode) -> Place:
        """Where a tensor or module made at `node` without `device=` lives: the CPU, unless
        a `with torch.device(...):` around it says otherwise or the file changes the
        default device (`torch.set_default_device`, `set_default_tensor_type`): unknown."""
        if self._changes_default_device():
            return Place.UNKNOWN
        current = self.parent(node)
        while current is not None:
            if type(current) is cst.With:
                for item in current.items:
                    value = self.value(item.item)
                    if value.kind is Kind.DEVICE:
                        return value.place
            current = self.parent(current)
        return Place.CPU

    def built_place(self, call: cst.Call) -> Place:
        """Where a module constructor or builder puts the module: `device=`, unknown with
        `device_map=` or `**kwargs` (they may say where), else `default_place`."""
        device = keyword_arg(call, "device")
        if device is not None:
            return self.device_place(device)[0] or Place.UNKNOWN
        if keyword_arg(call, "device_map") is not None or any(a.star == "**" for a in call.args):
            return Place.UNKNOWN
        return self.default_place(call)

    def _changes_default_device(self) -> bool:
        found = getattr(self, "_default_device_changed", None)
        if found is None:
            found = False
            if "set_default" in self.ctx.source:
                for name in ("set_default_device", "set_default_tensor_type"):
                    for call in self.calls_by_name().get(name, ()):
                        if (self.ctx.qualname(call.func) or "").startswith("torch."):
                            found = True
            self._default_device_changed = found
        return found

    def tensor_type_place(self, node: Optional[cst.BaseExpression]) -> tuple[Optional[Place], bool]:
        """Where `.type(node)` puts data when `node` is a legacy tensor type
        (`torch.cuda.FloatTensor`, `"torch.cuda.FloatTensor"`, a name bound to one, on the
        path taken with a GPU): (place, hint); place None otherwise (a dtype, unknown)."""
        if node is None:
            return None, False
        text = string_value(node)
        if text is not None:
            return (Place.DEVICE if text.startswith("torch.cuda.") else Place.CPU) \
                if _TENSOR_TYPE.match(text) else None, False
        value = self.value(node)
        if value.kind is Kind.TENSOR_TYPE and value.place is not Place.UNKNOWN:
            return value.place, value.hint
        return None, False

    def is_dtype(self, node: cst.BaseExpression) -> bool:
        return self.value(node).kind is Kind.DTYPE

    def _qualified_call(self, node: cst.Call, qual: str) -> Optional[Value]:
        api = self.api
        if qual == "torch.device":
            first = call_arg(node, 0, "type")
            place, _ = self.device_place(first) if first is not None else (None, False)
            if place is None and first is not None:
                v = self.value(first)
                if v.kind is Kind.STRING and v.literal is None:
                    place = Place.DEVICE
            return Value(Kind.DEVICE, place or Place.DEVICE, node=node)
        if qual == "torch.accelerator.current_accelerator":
            return Value(Kind.DEVICE, Place.DEVICE, node=node)
        if qual in ("torch.cuda.current_device",):
            # An int, but it denotes the current CUDA device wherever PyTorch takes a device.
            return Value(Kind.DEVICE, Place.DEVICE, node=node)
        if qual in ("torch.cuda.is_available", "torch.backends.mps.is_available", "torch.accelerator.is_available"):
            return BOOL
        if api.is_loader(qual):
            pin = call_arg(node, 7, "pin_memory")
            pinned: Optional[bool] = False
            if pin is None and any(a.star for a in node.args):
                # `**params` with params a dict display says what it passes (dataflow).
                from devicelint.semantic.dataflow import unpacked_keyword
                for arg in node.args:
                    known, value = unpacked_keyword(self, arg.value, "pin_memory") \
                        if arg.star == "**" else (False, None)
                    if arg.star and not known:
                        pinned = None
                    pin = pin or value
            if pin is not None:
                v = self.value(pin)
                pinned = v.literal if isinstance(v.literal, bool) else None
            return Value(Kind.LOADER, Place.CPU, pinned=pinned, node=node,
                         element=Value(place=Place.CPU, origin=Origin.BATCH, pinned=pinned,
                                       element=tensor(Place.CPU, origin=Origin.BATCH, pinned=pinned,
                                                      collated=True)))
        if api.is_module_class(qual):
            if qual in ("torch.nn.DataParallel", "torch.nn.parallel.DistributedDataParallel",
                        "torch.nn.parallel.DataParallel"):
                inner = call_arg(node, 0, "module")
                inner_value = self.value(inner) if inner is not None else UNKNOWN
                return Value(Kind.MODULE, inner_value.place, cls=qual, node=node)
            return Value(Kind.MODULE, self.built_place(node), cls=qual, node=node)
        if qual.startswith(api.module_factory_prefixes) and qual.rsplit(".", 1)[-1][:1].islower() \
                or qual.startswith("torchvision.models.") and qual.rsplit(".", 1)[-1][:1].isupper():
            return Value(Kind.MODULE, self.built_place(node), cls=qual, node=node)
        identity = api.function(qual)
        if identity is not None and identity.result == "same":
            inner = call_arg(node, 0, "data")  # a legacy wrapper (`Variable(x)`): the tensor itself
            return self.value(inner) if inner is not None else UNKNOWN
        if qual in ("torch.compile", "torch.jit.script", "torch.jit.trace"):
            inner = call_arg(node, 0, "model")
            return self.value(inner) if inner is not None else UNKNOWN
        if api.is_dataset_class(qual):
            return Value(Kind.DATASET, Place.CPU, node=node)
        if api.is_scheduler_class(qual):
            return Value(Kind.SCHEDULER, node=node)
        if api.is_optimizer_class(qual):
            return Value(Kind.OPTIMIZER, node=node)
        if qual in api.scalers:
            return Value(Kind.SCALER, node=node)
        if qual in api.events:
            return Value(Kind.EVENT, node=node)
        if qual in api.attribute_mappings:
            return self._attribute_mapping(node, qual)
        if qual in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
            inner = call_arg(node, 0, "data")
            return self.value(inner) if inner is not None else tensor(Place.CPU)
        spec = api.function(qual)
        if spec is not None:
            return self._apply(spec, None, node, qual)
        if qual == "numpy.squeeze" and node.args:
            # NumPy hands a non-array to its own `.squeeze()`: a tensor stays a tensor, where
            # it was (`np.squeeze(pred.eq(y)).cpu()`); what the code does not show, unknown.
            inner = self.value(node.args[0].value)
            if inner.kind is Kind.TENSOR:
                return tensor(inner.place, node=node)
            if inner.kind is Kind.UNKNOWN:
                return UNKNOWN
        if qual in ("random.sample", "random.choices") and node.args:
            # A new list of elements of the population (`random.sample(list(test_data), k=9)`:
            # dataset samples), as `list(population)` is.
            population = self.value(node.args[0].value)
            if population.kind is Kind.SEQUENCE:
                return Value(Kind.SEQUENCE, place=population.place, element=population.element, node=node)
            return Value(Kind.SEQUENCE, place=Place.CPU if self._host_rows(population) else Place.UNKNOWN,
                         element=self.iteration_element(node.args[0].value), node=node)
        if qual.startswith("numpy."):
            return Value(Kind.ARRAY, Place.CPU, node=node)
        if qual.startswith("time.") or qual.startswith("math."):
            return NUMBER
        return None

    def _builtin_call(self, name: str, node: cst.Call) -> Optional[Value]:
        if self.defs(node.func):  # a local function shadows the builtin
            return None
        args = positional_args(node)
        if name in ("len", "int", "float", "round", "abs", "sum", "min", "max", "ord", "hash"):
            if name in ("sum", "min", "max", "abs") and args:
                inner = self.value(args[0])
                if inner.kind is Kind.TENSOR:
                    return tensor(inner.place, node=node)
                if name == "sum" and inner.kind is Kind.SEQUENCE and inner.element is not None \
                        and inner.element.kind is Kind.TENSOR:
                    return inner.element.with_(origin=Origin.NONE)
            return NUMBER
        if name in ("str", "repr", "format", "chr", "hex", "oct", "bin"):
            return STRING
        if name in ("bool", "isinstance", "callable", "hasattr"):
            return BOOL
        if name in ("list", "tuple", "sorted", "reversed", "set") and args:
            inner = self.value(args[0])
            if inner.kind is Kind.SEQUENCE:
                return inner
            element = self.iteration_element(args[0])
            host = self._host_rows(inner)
            return Value(Kind.SEQUENCE, place=Place.CPU if host else Place.UNKNOWN,
                         element=element, node=node)
        if name in ("list", "tuple", "dict", "set") and not args:
            return Value(Kind.MAPPING if name == "dict" else Kind.SEQUENCE, node=node)
        if name in ("iter",) and args:
            return self.value(args[0])
        if name == "next" and args:
            made = self._instance_method_returns(args[0], "__next__")
            return made if made is not None else self.element(self.value(args[0]))
        if name == "range":
            return Value(Kind.SEQUENCE, element=NUMBER)
        if name in ("enumerate", "zip"):
            return Value(Kind.SEQUENCE, element=self.iteration_element(node))
        if name == "print":
            return NONE
        return None

    def _attribute_mapping(self, node: cst.Call, qual: str) -> Value:
        """`Munch(d)`, `EasyDict(a=x)`, `SimpleNamespace(**d)`: an object whose attributes read
        the items of the mapping (or the keywords) it is built from. Known (a mapping of
        `qual`) only when it holds tensors alone; an object of settings or callables
        (`SimpleNamespace(reset=..., step=...)`) stays what the file does not show."""
        given = positional_args(node)
        element = None
        if len(node.args) == 1 and (node.args[0].star == "**" or (
                not node.args[0].star and node.args[0].keyword is None)):
            inner = self.value(node.args[0].value)   # `Munch(d)`, `SimpleNamespace(**d)`
            if inner.kind is Kind.MAPPING:
                element = inner.element
        elif not given and node.args and not any(a.star for a in node.args):
            element = join_all(self.value(a.value) for a in node.args)
        if element is None or element.kind is not Kind.TENSOR:
            return UNKNOWN
        return Value(Kind.MAPPING, element=element, cls=qual, node=node)

    def _instance_method_returns(self, node: cst.BaseExpression, method_name: str) -> Optional[Value]:
        """What `obj.<method_name>()` returns (`next(fetcher)` runs `fetcher.__next__()`), for
        `obj` a name every binding of which makes an instance of a class of this file or of
        another local module that defines that method (`syncs._instances`); None otherwise."""
        if type(node) is not cst.Name:
            return None
        made = self.syncs._instances(node, 0)
        if not made:
            return None
        values = []
        for call in made:
            found = self.syncs._class_method(call.func, method_name)
            if found is None:
                return None
            other, method = found
            if not other.syncs._is_method(method):
                return None
            value = other.returned_value(method)
            values.append(value if other is self else _foreign(value))
        return join_all(values)

    def _method_call(self, receiver: Value, node: cst.Call) -> Optional[Value]:
        method = node.func.attr.value  # type: ignore[union-attr]
        if receiver.kind is Kind.MODULE:
            return self._module_method(receiver, node)
        if receiver.kind is Kind.MODULE_CLASS:
            return None
        if method in ("to", "cuda", "cpu") and receiver.kind in (Kind.TENSOR, Kind.UNKNOWN, Kind.ARRAY):
            return self._moved(receiver, node)
        if method == "type" and receiver.kind in (Kind.TENSOR, Kind.UNKNOWN):
            place, hint = self.tensor_type_place(call_arg(node, 0, "dtype"))
            if place is not None:
                return self._to_place(receiver, place, node, hint)
        if receiver.kind is Kind.UNKNOWN and receiver.origin is Origin.NONE \
                and method in self.api.tensor_only_methods:
            # Nothing upstream shows a permute: tensors are contiguous unless made otherwise
            # (the same assumption `view` users make).
            receiver = tensor(Place.UNKNOWN, layout=CONTIGUOUS)
        if receiver.kind is Kind.TENSOR and method == "size" and not node.args:
            return self._size_of(receiver)  # `x.size()` is `x.shape`; `x.size(0)` a number
        if receiver.kind is Kind.TENSOR:
            spec = self.api.method(method)
            if spec is not None:
                return self._apply(spec, receiver, node, method)
            if method == "values" and not node.args:
                # A module's dict output (`sum(loss_dict.values())`; see iteration_element).
                return Value(Kind.SEQUENCE, element=tensor(receiver.place, hint=receiver.hint), node=node)
            return None
        if receiver.kind is Kind.ARRAY:
            if method in ("tolist", "item"):
                return NUMBER if method == "item" else Value(Kind.SEQUENCE, Place.CPU, element=NUMBER)
            if method in ("astype", "copy", "reshape", "transpose", "squeeze", "flatten", "mean", "sum"):
                return Value(Kind.ARRAY, Place.CPU, node=node)
            return None
        if receiver.kind is Kind.OPTIMIZER or receiver.kind is Kind.SCALER:
            if method == "scale" and receiver.kind is Kind.SCALER:
                args = positional_args(node)
                return self.value(args[0]) if args else UNKNOWN
            return NONE if method in ("step", "zero_grad", "update") else None
        if receiver.kind is Kind.STRING:
            return STRING if method not in ("split",) else Value(Kind.SEQUENCE, element=STRING)
        if receiver.kind is Kind.SEQUENCE and method in ("pop",):
            return receiver.element or UNKNOWN
        if receiver.kind is Kind.MAPPING and method in ("get", "pop"):
            return receiver.element or UNKNOWN
        if receiver.kind is Kind.MAPPING and method == "values" and not node.args:
            return Value(Kind.SEQUENCE, element=receiver.element or UNKNOWN, node=node)
        if receiver.kind is Kind.EVENT and method == "elapsed_time":
            return NUMBER
        if receiver.origin in (Origin.BATCH, Origin.ROW) and receiver.kind is Kind.UNKNOWN:
            if method in ("float", "long", "int", "half", "double", "bool", "squeeze", "unsqueeze",
                          "view", "reshape", "permute", "transpose", "clone", "detach", "contiguous"):
                return tensor(receiver.place, origin=receiver.origin, node=node)
        return None

    def _module_methods(self, module: Value, node: cst.Call) -> Value:
        """A chain of module methods applied in turn (`model.to(device).half()`)."""
        inner = node.func.value  # type: ignore[union-attr]
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute):
            module = self._module_methods(module, inner)
            if module.kind is not Kind.MODULE:
                return module
        return self._module_method(module, node)

    def _module_method(self, module: Value, node: cst.Call) -> Value:
        method = node.func.attr.value  # type: ignore[union-attr]
        if method in ("to", "cuda", "cpu"):
            moved = self._moved(tensor(module.place), node)
            return module.with_(place=moved.place, node=node)
        if method == "type" and node.args:
            # `net.type(torch.cuda.FloatTensor)`: nn.Module.type casts every parameter and
            # buffer to that legacy type, which moves them where the type lives.
            place, hint = self.tensor_type_place(call_arg(node, 0, "dst_type"))
            if place is not None:
                return module.with_(place=place, node=node, hint=module.hint or hint)
        if method in self.api.self_returning_module_methods:
            return module
        if method in ("parameters", "buffers"):
            return Value(Kind.SEQUENCE, element=tensor(module.place))
        if method in ("state_dict",):
            return Value(Kind.MAPPING, element=tensor(module.place))
        if method == "forward":
            return self.module_output(module, node)
        submodule = self.value(node.func)
        if submodule.kind is Kind.MODULE:
            return self.module_output(submodule, node)  # `model.decoder(x)`
        return UNKNOWN

    def _moved(self, receiver: Value, node: cst.Call) -> Value:
        method = node.func.attr.value  # type: ignore[union-attr]
        if method == "cuda":
            return self._to_place(receiver, Place.DEVICE, node, False)
        if method == "cpu":
            return self._to_place(receiver, Place.CPU, node, False)
        target = keyword_arg(node, "device")
        if target is None:
            target = call_arg(node, 0, "\0")
        if target is None:
            # `.to(memory_format=...)` / `.to(dtype)`: Module.to takes them too and returns the
            # module, so an unknown receiver stays unknown (not a tensor).
            return receiver.with_(node=node)
        place, hint = self.device_place(target)
        if place is None:
            if self.value(target).kind is Kind.DTYPE:
                base = receiver if receiver.kind is not Kind.UNKNOWN else tensor(receiver.place)
                return base.with_(node=node)
            if receiver.kind is Kind.MODULE:
                return receiver.with_(place=Place.UNKNOWN)  # `model.to(x)`: x may be a device
            return tensor(Place.UNKNOWN, node=node)
        return self._to_place(receiver, place, node, hint)

    @staticmethod
    def _to_place(receiver: Value, place: Place, node, hint: bool) -> Value:
        kind = Kind.TENSOR if receiver.kind in (Kind.UNKNOWN, Kind.ARRAY) else receiver.kind
        return receiver.with_(kind=kind, place=place, node=node, hint=receiver.hint or hint,
                              origin=Origin.NONE, pinned=None)

    def _tensor_inputs(self, node: cst.Call, receiver: Optional[Value]) -> list[Value]:
        values = [receiver] if receiver is not None else []
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value not in ("input", "other", "tensors", "outputs", "inputs"):
                continue
            v = self.value(arg.value)
            if v.kind is Kind.SEQUENCE and v.element is not None:
                values.append(v.element)
            else:
                values.append(v)
        return values

    def _apply(self, spec: OpSpec, receiver: Optional[Value], node: cst.Call, name: str) -> Value:
        """The result of a PyTorch op, from its row in torch_api.toml."""
        from devicelint.semantic import shapes

        if spec.result in ("number",):
            return NUMBER.with_(node=node)
        if spec.result == "bool":
            return BOOL.with_(node=node)
        if spec.result == "host-list":
            return Value(Kind.SEQUENCE, Place.CPU, element=NUMBER, node=node)
        if spec.result == "array":
            shape = receiver.shape if receiver is not None else shapes.apply_rank(spec, None, node, self)
            return Value(Kind.ARRAY, Place.CPU, shape=shape, node=node)
        if spec.result == "none":
            return NONE
        inputs = self._tensor_inputs(node, receiver)
        first = next((v for v in inputs if v.kind is Kind.TENSOR), None)
        if first is None and inputs and inputs[0].kind is Kind.ARRAY:
            first = Value(Kind.TENSOR, Place.CPU, shape=inputs[0].shape)
        if spec.place == "cpu":
            place = Place.CPU
        elif spec.place == "device":
            place = Place.DEVICE
        elif spec.place == "factory":
            place = self.default_place(node)
            device = keyword_arg(node, "device")
            if device is not None:
                place = self.device_place(device)[0] or Place.UNKNOWN
            elif name in ("torch.as_tensor",) and first is not None:
                place = first.place
            elif name in ("torch.tensor", "torch.as_tensor", "torch.from_numpy"):
                data = call_arg(node, 0, "data")
                dv = self.value(data) if data is not None else UNKNOWN
                if dv.kind is Kind.TENSOR and dv.place is Place.DEVICE:
                    place = Place.DEVICE
        else:  # input
            device = keyword_arg(node, "device")
            if device is not None:
                place = self.device_place(device)[0] or Place.UNKNOWN
            else:
                tensor_places = {v.place for v in inputs if v.kind is Kind.TENSOR}
                if Place.DEVICE in tensor_places:
                    place = Place.DEVICE
                elif tensor_places == {Place.CPU} or (not tensor_places and any(v.kind is Kind.ARRAY for v in inputs)):
                    place = Place.CPU
                else:
                    place = Place.UNKNOWN
        if spec.result == "packed":
            # A PackedSequence: its data stays where the input is, its batch sizes on the CPU.
            return Value(Kind.SEQUENCE, place, node=node, items=(
                tensor(place, node=node), tensor(Place.CPU, node=node), UNKNOWN, UNKNOWN))
        if spec.result == "tensors":
            part = shapes.apply_rank(spec, first, node, self) if first is not None else None
            pieces = spec.layout == "narrow" and name.rsplit(".", 1)[-1] != "unbind"
            layout = Layout(LAYOUT_NARROWED, label=f".{name}", source=node) if pieces else UNKNOWN_LAYOUT
            if pieces and first is not None and first.layout.contiguous and self._splits_rows(node, name, first):
                layout = CONTIGUOUS  # pieces along dim 0 of a contiguous tensor are runs of whole rows
            element = tensor(place, part, layout, node=node,
                             origin=Origin.CHUNK if pieces else Origin.NONE)
            return Value(Kind.SEQUENCE, place, element=element, node=node,
                         origin=first.origin if first is not None else Origin.NONE)
        shape = shapes.apply_rank(spec, first, node, self)
        layout, shape = shapes.apply_layout(spec, first, node, self, name, shape, inputs)
        origin = first.origin if first is not None and spec.rank in ("same", "view-args", "unsqueeze",
                                                                     "squeeze", "flatten") else Origin.NONE
        pinned = True if name == "pin_memory" else None
        return tensor(place, shape, layout, origin=origin, node=node, pinned=pinned,
                      hint=bool(first and first.hint))

    @staticmethod
    def _splits_rows(node: cst.Call, name: str, first: Value) -> bool:
        """split/chunk/tensor_split cut along dim 0: no dim given (the default), dim=0, or
        the last dim of a 1-D tensor."""
        dim = call_arg(node, 1 if not name.startswith("torch.") else 2, "dim")
        if dim is None:
            return True
        at = int_value(dim)
        return at == 0 or (at == -1 and first.rank == 1)

    def _transposed(self, base: Value, node, label: str) -> Value:
        from devicelint.semantic import shapes

        return shapes.transposed(base, node, label)

    # -- guards ------------------------------------------------------------------------
    def gpu_truth(self, node: cst.BaseExpression) -> Optional[bool]:
        """The value of a condition when the program runs with a GPU: True/False, or None
        when the code does not say (`torch.cuda.is_available()`, `not use_cuda`,
        `device.type == "cpu"`, a name bound to one of those).

        Remembered per node of the file as values are (`_memoised`): not when a value it
        rests on was cut short at `_MAX_DEPTH`, reached a cycle through a value still being
        computed outside this question, or was asked with bindings' places being read
        (`_placing`, bounded in depth): such an answer is computed again when asked again.
        Rules ask this of every test on the way up from each binding (`gpu_path_defs`), so
        the same tests are asked again and again."""
        key = id(node)
        truths = self._gpu_truths
        if key in truths:
            return truths[key]
        if self._placing or key not in self.ctx._info:
            return self._gpu_truth(node, 0)
        cuts = self._cuts
        outer_low, self._low = self._low, _NO_CYCLE
        try:
            truth = self._gpu_truth(node, 0)
        finally:
            low = self._low
            self._low = outer_low if outer_low < low else low
        if low >= self._depth and self._cuts == cuts and not self._placing:
            truths[key] = truth
        return truth

    def _gpu_truth(self, node: cst.BaseExpression, depth: int) -> Optional[bool]:
        if depth > 6:
            return None
        if type(node) is cst.UnaryOperation and type(node.operator) is cst.Not:
            inner = self._gpu_truth(node.expression, depth + 1)
            return None if inner is None else not inner
        if type(node) is cst.Call:
            qual = self.qualname(node.func)
            if qual in ("torch.cuda.is_available", "torch.accelerator.is_available"):
                return True
            return None
        if type(node) is cst.Attribute and node.attr.value == "is_cuda":
            # `model.fc.weight.is_cuda` of a model moved to the GPU (a tensor the model
            # places on the CPU may still be wrong about a default device: no answer then)
            receiver = self.value(node.value)
            return True if receiver.kind is Kind.TENSOR and receiver.place is Place.DEVICE else None
        if type(node) is cst.IfExp:
            # `use_cuda = True if torch.cuda.is_available() else False` (a literal flag alone,
            # `profile = False`, says nothing about the GPU)
            truth = self._gpu_truth(node.test, depth + 1)
            if truth is None:
                return None
            arm = node.body if truth else node.orelse
            if type(arm) is cst.Name and arm.value in ("True", "False"):
                return arm.value == "True"
            return self._gpu_truth(arm, depth + 1)
        if type(node) is cst.BooleanOperation:
            left = self._gpu_truth(node.left, depth + 1)
            right = self._gpu_truth(node.right, depth + 1)
            if type(node.operator) is cst.And:
                if left is False or right is False:
                    return False
                return True if left is True and right is True else None
            if left is True or right is True:
                return True
            return False if left is False and right is False else None
        if type(node) is cst.Comparison and len(node.comparisons) == 1:
            comparison = node.comparisons[0]
            sides = (node.left, comparison.comparator)
            text = next((string_value(s) for s in sides if string_value(s) is not None), None)
            other = next((s for s in sides if string_value(s) is None), None)
            if text is not None and other is not None:
                place = self._denoted_place(other)
                if place is not None and device_string_place(text) is not None:
                    same = place is device_string_place(text)
                    if type(comparison.operator) is cst.Equal:
                        return same
                    if type(comparison.operator) is cst.NotEqual:
                        return not same
            return None
        if type(node) is cst.Name:
            flag = flag_truth(self, node)
            if flag is not None:
                return flag  # `USE_CUDA = True` with `if USE_CUDA: model.cuda()` (False: `= False`)
            defs = self.defs(node)
            if defs:
                truths = set()
                for d in defs:
                    if d.kind in ("assign", "annassign") and d.value is not None and not d.path:
                        truths.add(self._gpu_truth(d.value, depth + 1))
                    elif d.kind == "param" and type(d.node) is cst.Param:
                        truths.add(self._param_gpu_truth(d.node, depth + 1))
                    else:
                        truths.add(None)
                return truths.pop() if len(truths) == 1 else None
        if type(node) is cst.Attribute:
            flag = flag_truth(self, node)
            if flag is not None:
                return flag  # `args.cuda = not args.no_cuda and ...` with `if args.cuda: model.cuda()`
            stored = passed_attribute_value(self, node)   # `params.cuda` of a `params` passed in
            if stored is None:
                # `params.cuda = torch.cuda.is_available()` read at the module's level.
                stored = module_attribute_value(self, node)
                return self._gpu_truth(stored, depth + 1) if stored is not None else None
            truth = self._gpu_truth(stored, depth + 1)
            if truth is None:
                # `args.cuda = not args.no_cuda and ...` in `main()`, guarding a move (False:
                # `args.cuda = False`)
                truth = passed_switch_truth(self, node)
            return truth
        return None

    def _param_gpu_truth(self, param: cst.Param, depth: int) -> Optional[bool]:
        """A parameter's truth with a GPU: the one every call of its function in this file
        passes (`test(loader, net, use_cuda)` with `use_cuda = torch.cuda.is_available()`);
        None with no call site, or when one passes something else."""
        passed = self._passed_arguments(self._function_of_param(param), param)
        if passed is None:
            return None
        args, spawns, _index = passed
        if not args or spawns:
            return None
        truths = {self._gpu_truth(arg, depth + 1) if arg is not None else None for arg in args}
        return truths.pop() if len(truths) == 1 else None

    def _denoted_place(self, node: cst.BaseExpression) -> Optional[Place]:
        """For `device.type` / `str(device)` / `device`: the place the device denotes when a
        GPU is present."""
        if isinstance(node, cst.Attribute) and node.attr.value == "type":
            node = node.value
        elif isinstance(node, cst.Call) and dotted_name(node.func) == "str" and node.args:
            node = node.args[0].value
        value = self.value(node)
        if value.kind is Kind.DEVICE or (value.kind is Kind.STRING and value.literal is None):
            # `torch.device("cuda" if torch.cuda.is_available() else "cpu")`: cuda with a GPU.
            return self._device_with_gpu(node)
        return None

    def _device_with_gpu(self, node: cst.BaseExpression) -> Optional[Place]:
        if isinstance(node, cst.Name):
            places = set()
            for d in self.defs(node):
                if d.kind in ("assign", "annassign") and d.value is not None and not d.path:
                    places.add(self._device_with_gpu(d.value))
                else:
                    places.add(None)
            return places.pop() if len(places) == 1 else None
        if isinstance(node, cst.Call) and self.qualname(node.func) == "torch.device":
            first = call_arg(node, 0, "type")
            return self._device_with_gpu(first) if first is not None else None
        if isinstance(node, cst.IfExp):
            truth = self.gpu_truth(node.test)
            if truth is True:
                return self._device_with_gpu(node.body)
            if truth is False:
                return self._device_with_gpu(node.orelse)
            return None
        text = string_value(node)
        if text is not None:
            return device_string_place(text)
        return None

    def branch_possible(self, owner: cst.CSTNode, branch: cst.CSTNode) -> bool:
        """False for an arm of an if/else or conditional expression that runs only without
        a GPU; True otherwise (the code does not say)."""
        if type(owner) is cst.IfExp:
            truth = self.gpu_truth(owner.test)
            if truth is None:
                return True
            return truth if branch is owner.body else not truth
        if type(owner) is cst.If:
            truth = self.gpu_truth(owner.test)
            if truth is None:
                return True
            return truth if branch is owner.body else not truth
        return True

    def on_gpu_path(self, node: cst.CSTNode) -> bool:
        """False when `node` sits in a branch that runs only without a GPU."""
        child = node
        parent = self.parent(node)
        while parent is not None:
            if type(parent) is cst.IfExp and child in (parent.body, parent.orelse):
                if not self.branch_possible(parent, child):
                    return False
            elif type(parent) is cst.If and child is parent.body:
                if not self.branch_possible(parent, child):
                    return False
            elif type(parent) is cst.Else:
                owner = self.parent(parent)
                if type(owner) is cst.If and owner.orelse is parent and not self.branch_possible(owner, parent):
                    return False
            elif type(parent) is cst.If and child is parent.orelse and type(child) is cst.If:
                if self.gpu_truth(parent.test) is True:
                    return False
            elif type(parent) is cst.IndentedBlock and self._after_gpu_exit(parent, child):
                return False
            child = parent
            parent = self.parent(parent)
        return True

    def _after_gpu_exit(self, block: cst.IndentedBlock, statement: cst.CSTNode) -> bool:
        """`statement` follows, in `block`, an `if torch.cuda.is_available(): return ...`
        (a body that always leaves, no else): it runs only without a GPU."""
        exits = self._gpu_exits.get(id(block))
        if exits is None:
            exits = -1
            for index, current in enumerate(block.body):
                if type(current) is cst.If and current.orelse is None \
                        and _always_leaves(current.body) and self.gpu_truth(current.test) is True:
                    exits = index
                    break
            self._gpu_exits[id(block)] = exits
        if exits < 0:
            return False
        for index, current in enumerate(block.body):
            if current is statement:
                return index > exits
        return False

    # -- loops -------------------------------------------------------------------------
    @property
    def loops(self):
        if self._loops is None:
            from devicelint.semantic.loops import LoopModel

            self._loops = LoopModel(self)
        return self._loops

    @property
    def syncs(self):
        """Host reads and function summaries (devicelint.semantic.syncs)."""
        if self._syncs is None:
            from devicelint.semantic.syncs import SyncModel

            self._syncs = SyncModel(self)
        return self._syncs

    @property
    def batches(self):
        """Which loaders' batches which copies move to the device (devicelint.semantic.batches)."""
        if self._batches is None:
            from devicelint.semantic.batches import BatchFlow

            self._batches = BatchFlow(self)
        return self._batches


def _always_leaves(body: cst.BaseSuite) -> bool:
    """The block ends with `return` or `raise` at its own level."""
    statements = body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else []
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, (cst.Return, cst.Raise)) for s in last.body)
    return isinstance(last, (cst.Return, cst.Raise))
