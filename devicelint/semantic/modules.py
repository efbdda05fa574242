"""Modules: whether one holds tensors that a device move must carry, and whether code the
model does not follow may move it.

    holds_state(sem, value)          # True: parameters or buffers; False: none; None: unknown
    handed_off(sem, value, at)       # a .to()/.cuda() of it, or a hand-off to unknown code,
                                     # that may run before `at` and that the flow cannot see

Both decide from what the code does: the module's class (PyTorch's, from torch_api.toml, or
the file's own `nn.Module` subclass and what its body creates), and where the very object
built at `value.node` is used (its value, not the variable's name).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.names import dotted_name
from devicelint.semantic.values import Kind, Place, Value, join_all

# Module methods that move it to a device (in place) when their target is a device.
MOVES = frozenset({"to", "cuda", "to_empty", "xpu", "mps", "ipu"})
# Module methods that neither move it nor hand it to code that could.
_KEEPS = frozenset({
    "eval", "train", "float", "double", "half", "bfloat16", "requires_grad_", "cpu", "zero_grad",
    "share_memory", "parameters", "named_parameters", "state_dict", "load_state_dict", "modules",
    "named_modules", "children", "named_children", "buffers", "named_buffers", "forward",
    "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
    "generate", "extra_repr", "get_submodule", "get_parameter", "num_parameters", "__call__",
})
# Builtins that only read their arguments.
_READING_BUILTINS = frozenset({"print", "isinstance", "len", "type", "id", "repr", "str",
                               "hasattr", "callable", "format", "sum", "getattr", "vars"})
_CONTAINERS = ("torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict")
WRAPPERS = ("torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
             "torch.nn.parallel.DistributedDataParallel")
_MAX_DEPTH = 6


def _memo(sem, name: str) -> dict:
    return sem.__dict__.setdefault(name, {})


def holds_state(sem, module: Value, depth: int = 0) -> Optional[bool]:
    """Whether a module value holds parameters or buffers (tensors that must be on the
    inputs' device): activations, pooling, dropout and unweighted losses hold none."""
    cls = module.cls
    if cls is None or depth > _MAX_DEPTH:
        return None
    api = sem.api
    if cls in api.stateless_modules:
        return False
    made = module.node if isinstance(module.node, cst.Call) else None
    if made is not None and sem.qualname(made.func) != cls:
        made = None  # made by another call (`.cpu()`): its arguments are not the class's
    if cls.startswith("torch.nn.") and cls.rsplit(".", 1)[-1].endswith("Loss"):
        if made is None:
            return None
        weights = [a.value for a in made.args if a.keyword is not None
                   and a.keyword.value in ("weight", "pos_weight")]
        if cls in api.weighted_losses and made.args and made.args[0].keyword is None:
            weights.append(made.args[0].value)
        # A class weight is a buffer; `self.weight` registered on an owner moves with it.
        return any(sem.value(w).kind is Kind.TENSOR and sem.value(w).place is Place.CPU
                   for w in weights)
    if cls in _CONTAINERS or cls in WRAPPERS:
        if made is None:
            return None
        parts = _module_parts(sem, made)
        if any(holds_state(sem, p, depth + 1) and p.place is Place.CPU for p in parts):
            return True
        return None
    if api.is_module_class(cls) or cls.startswith(api.module_factory_prefixes) \
            or cls.startswith("torchvision.models."):
        return True
    owner = sem.module_classes().get(cls)
    if owner is not None:
        return class_holds_state(sem, owner, depth + 1)
    return None


def _module_parts(sem, call: cst.Call) -> list[Value]:
    """The module values a container or wrapper is built from."""
    parts: list[Value] = []
    stack = [a.value for a in call.args if not a.star]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.List, cst.Tuple)):
            stack.extend(e.value for e in node.elements)
        elif isinstance(node, cst.Dict):
            stack.extend(e.value for e in node.elements if isinstance(e, cst.DictElement))
        elif isinstance(node, (cst.ListComp, cst.GeneratorExp)):
            stack.append(node.elt)
        else:
            value = sem.value(node)
            if value.kind is Kind.MODULE:
                parts.append(value)
    return parts


def class_holds_state(sem, owner: cst.ClassDef, depth: int = 0) -> Optional[bool]:
    """A class of the file holds state when its body creates a parameter or buffer
    (`nn.Parameter`, `register_buffer`, `add_module`) or a module that holds state, or a
    base class does; None when a base the file does not show might."""
    memo = _memo(sem, "_dl_class_state")
    key = id(owner)
    if key in memo:
        return memo[key]
    memo[key] = None  # a cycle through the file's own bases says nothing
    found: Optional[bool] = False
    if _body_makes_state(sem, owner, depth):
        found = True
    else:
        for base in owner.bases:
            qual = sem.ctx.qualname(base.value) or ""
            local = sem.module_classes().get(dotted_name(base.value) or "")
            if local is not None and local is not owner:
                inherited = class_holds_state(sem, local, depth + 1)
            elif qual in ("torch.nn.Module", "torch.nn.modules.module.Module"):
                continue
            elif sem.api.is_module_class(qual) and qual.rsplit(".", 1)[-1].endswith("Loss"):
                inherited = None  # a loss holds a class weight only if its caller passes one
            elif sem.api.is_module_class(qual):
                inherited = qual not in sem.api.stateless_modules  # `class Head(nn.Linear)`
            else:
                inherited = None  # a base from elsewhere (a mixin, another file's class)
            if inherited is True:
                found = True
                break
            if inherited is None:
                found = None
    memo[key] = found
    return found


def registered_state(sem, owner: cst.ClassDef) -> frozenset:
    """The attribute names a class of the file registers as buffers or parameters
    (`self.register_buffer("queue_ptr", ...)`, `self.register_parameter("w", ...)`,
    `self.w = nn.Parameter(...)`): tensors that move with the module."""
    memo = _memo(sem, "_dl_registered_state")
    found = memo.get(id(owner))
    if found is None:
        names = set()
        for node in sem.ctx.descendants(owner.body, cst.Call, (cst.ClassDef,)):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("register_buffer", "register_parameter") \
                    and node.args and isinstance(node.args[0].value, cst.SimpleString):
                names.add(node.args[0].value.evaluated_value)
        for attr, entries in attribute_assignments(sem, owner).items():
            if any(isinstance(d.value, cst.Call) and sem.qualname(d.value.func) in (
                    "torch.nn.Parameter", "torch.nn.parameter.Parameter") for _t, d in entries):
                names.add(attr)
        found = memo[id(owner)] = frozenset(names)
    return found


def _body_makes_state(sem, owner: cst.ClassDef, depth: int) -> bool:
    # The calls of the class body outside nested classes (slices of the file's index), in
    # the order the first walk met them (last child first): holds_state is memoised with
    # cycle guards, so the order it is asked in is kept.
    for node in sem.ctx.descendants(owner.body, cst.Call, (cst.ClassDef,), last_first=True):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in (
                "register_buffer", "register_parameter", "add_module", "register_module"):
            return True
        if sem.qualname(func) in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
            return True
        value = sem.value(node)
        if value.kind is Kind.MODULE and value.node is node \
                and holds_state(sem, value, depth + 1):
            return True
    return False


# -- who else may move a module ------------------------------------------------------------
def handed_off(sem, module: Value, at: cst.CSTNode) -> bool:
    """Whether the module object made at `module.node` may be moved, before `at` runs, by code
    whose effect the value flow does not carry: `.to(device)`/`.cuda()` of it (or of a
    submodule) in another function (a setup helper, another method, a function called in
    between), earlier in `at`'s own function or anywhere in a loop around `at`; or the object
    handed to a call that may move it (a function the file does not define, a method
    of an object of unknown kind, a function of the file that moves or hands off that
    parameter). True also when the object cannot be identified (silence over guessing)."""
    made = module.node
    if made is None:
        return True
    for kind, receiver, site in _sites(sem):
        value = sem.value(receiver)
        if value.node is not made or value.kind is not Kind.MODULE:
            continue
        if kind == "move" and not _to_device(sem, site):
            continue
        if kind == "method" and not _method_may_move(sem, site, 0):
            continue
        if kind == "arg" and not _may_move_argument(sem, site, receiver, 0):
            continue
        if _may_run_before(sem, site, at):
            return True
    return False


def _sites(sem) -> list[tuple[str, cst.BaseExpression, cst.Call]]:
    """Every place a module could be moved or handed off, found once per file:
    ("move", receiver, call) for `x.to(...)`/`x.cuda()`, ("method", receiver, call) for a
    method that is neither a known read nor a move, ("arg", argument, call) for arguments."""
    memo = _memo(sem, "_dl_module_sites")
    if "sites" in memo:
        return memo["sites"]
    sites: list[tuple[str, cst.BaseExpression, cst.Call]] = []
    for call in sem.ctx.iter_nodes(cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and not isinstance(func.value, (cst.SimpleString, cst.Integer)):
            method = func.attr.value
            if method in MOVES:
                sites.append(("move", func.value, call))
            elif method not in _KEEPS:
                sites.append(("method", func.value, call))
        for arg in call.args:
            if isinstance(arg.value, (cst.Name, cst.Attribute, cst.Call)):
                sites.append(("arg", arg.value, call))
    memo["sites"] = sites
    return sites


def _to_device(sem, call: cst.Call) -> bool:
    """`.to(device)`/`.cuda()`, not `.to(torch.float16)` nor `.to("cpu")`."""
    if call.func.attr.value != "to":  # type: ignore[union-attr]
        return True
    target = next((a.value for a in call.args if a.keyword is None or a.keyword.value == "device"), None)
    if target is None:
        return False
    place, _hint = sem.device_place(target)
    if place is None:
        return sem.value(target).kind is not Kind.DTYPE  # an unknown target may be a device
    return place is Place.DEVICE


def _method_may_move(sem, call: cst.Call, depth: int) -> bool:
    """A method call on a module: a submodule's call or a method of the file's class that
    neither moves nor hands off `self` does not move it; a method the file does not show may."""
    if sem.value(call.func).kind is Kind.MODULE:
        return False  # `model.encoder(x)`: calls a submodule
    found = sem.syncs.callee(call)
    if found is None:
        return True
    function = found[0]
    params = [*function.params.posonly_params, *function.params.params]
    if not params:
        return True
    return _function_moves_param(sem, function, params[0].name.value, depth + 1)


def _may_move_argument(sem, call: cst.Call, argument: cst.BaseExpression, depth: int) -> bool:
    """Whether passing a module to `call` may move it."""
    func = call.func
    if isinstance(func, cst.Name) and func.value in _READING_BUILTINS and not sem.defs(func):
        return False
    qual = sem.qualname(func)
    if qual is not None and qual.startswith("torch."):
        return False  # PyTorch never moves a module it is handed (torch.save, compile, DDP)
    callee = sem.value(func)
    if callee.kind is Kind.MODULE:
        return False
    if depth >= _MAX_DEPTH:
        return True
    found = sem.syncs.callee(call)
    if found is None:
        return True  # code the file does not show
    function, bound = found
    names = [name for name, args in bound.items() if any(a is argument for a in args)]
    if not names:
        return True
    return any(_function_moves_param(sem, function, name, depth + 1) for name in names)


def _function_moves_param(sem, function: cst.FunctionDef, name: str, depth: int) -> bool:
    """Whether a function of the file moves or hands off its parameter `name`."""
    for kind, receiver, site in _sites(sem):
        if kind != "move" and not isinstance(receiver, cst.Name):
            continue  # `self.cache.append(x)` hands off the cache, not `self`
        if not _reads_param(sem, receiver, function, name):
            continue
        if kind == "move" and _to_device(sem, site):
            return True
        if kind == "method" and depth < _MAX_DEPTH and _method_may_move(sem, site, depth + 1):
            return True
        if kind == "arg" and _may_move_argument(sem, site, receiver, depth):
            return True
    return False


def _reads_param(sem, node: cst.BaseExpression, function: cst.FunctionDef, name: str) -> bool:
    while isinstance(node, cst.Attribute):
        node = node.value  # `model.fc.to(device)` moves part of `model`
    if not isinstance(node, cst.Name) or node.value != name:
        return False
    return any(d.kind == "param" and sem.function_of(d.node) is function for d in sem.defs(node))


def _may_run_before(sem, site: cst.CSTNode, at: cst.CSTNode) -> bool:
    scope = sem.scope_of(site)
    if scope is not sem.scope_of(at):
        return True  # another function: it may run before `at`
    order = sem.ctx.order
    if order(site) < order(at):
        return True
    current = sem.parent(at)
    while current is not None and current is not scope:
        if isinstance(current, (cst.For, cst.While)) and _within(sem, site, current):
            return True  # later in a loop around `at`: it runs before the next iteration
        current = sem.parent(current)
    return False


def _within(sem, node: cst.CSTNode, container: cst.CSTNode) -> bool:
    return sem.ctx.contains(container, node)  # an integer comparison in the index


# -- attributes of the file's classes ------------------------------------------------------
def attribute_assignments(sem, owner: cst.ClassDef) -> dict[str, list]:
    """`self.x = ...` bindings the methods of a class make: {attribute: [(target, Def)]}."""
    sem._ensure_class_flows(owner)
    return {attr: entries for (key, attr), entries in sem.attribute_defs.items() if key == id(owner)}


def self_class(sem, node: cst.CSTNode) -> Optional[cst.ClassDef]:
    """The class whose instance `node` is when it is a method's first parameter (`self`)."""
    return sem._self_class(node, sem._function_scope(sem.scope_of(node)))


def attribute_moves(sem, entries: list, values: list[Value], moves: list, at: Optional[cst.CSTNode]) -> list[Value]:
    """The values `self.x` may hold where `at` reads it, given the class's statements
    `self.x.to(device)` / `self.x.cuda()` (`moves`): `to` moves a module in place and returns
    it, so such a statement changes what `self.x` holds for every later read. A binding
    (`entries`, with their `values`) that a move in the same method always follows (the
    move's block, or a block around it taken with a GPU, holds the binding) holds the moved
    module for reads in the other methods and after the move; a move that follows no binding
    (another method's) may or may not have run: the moved module joins the others. A tensor
    does not move in place (`t.to(device)` alone does nothing): its value stays."""
    superseding = _superseding_moves(sem, entries, moves)
    result = []
    for (_target, d), value in zip(entries, values):
        call = superseding.get(id(d))
        if call is not None and not _read_before(sem, at, call):
            value = sem.in_place_effect(value, call)
        result.append(value)
    following = {id(call) for call in superseding.values()}
    prior = join_all(values)
    for _target, call in moves:
        if id(call) not in following:
            result.append(sem.in_place_effect(prior, call))
    return result


def _superseding_moves(sem, entries: list, moves: list) -> dict[int, cst.Call]:
    """{id(binding): the move that always follows it in its method}."""
    found: dict[int, cst.Call] = {}
    order = sem.ctx.order
    for _target, call in moves:
        scope = sem.scope_of(call)
        block = _move_block(sem, call)
        if block is None:
            continue
        for _t, d in entries:
            if d.scope is scope and order(d.node) < order(call) and sem.ctx.contains(block, d.node):
                found[id(d)] = call
    return found


def _move_block(sem, call: cst.Call) -> Optional[cst.CSTNode]:
    """The block whose every run runs the statement `call` (through an `if` taken with a GPU:
    `if torch.cuda.is_available(): self.net.cuda()`)."""
    statement = sem.parent(sem.parent(call))  # Expr, then its statement line
    if isinstance(statement, cst.SimpleStatementSuite):
        block = statement  # `if use_cuda: self.net.cuda()` on one line
    elif isinstance(statement, cst.SimpleStatementLine):
        block = sem.parent(statement)
    else:
        return None
    while True:
        owner = sem.parent(block)
        if isinstance(owner, cst.If) and owner.body is block and sem.gpu_truth(owner.test) is True:
            block = sem.parent(owner)
            continue
        return block


def _read_before(sem, at: Optional[cst.CSTNode], call: cst.Call) -> bool:
    """`at` reads `self.x` in the move's own method before the move runs."""
    if at is None:
        return False
    scope = sem._function_scope(sem.scope_of(at))
    return scope is sem.scope_of(call) and sem.ctx.order(at) < sem.ctx.order(call)


def construction_methods(sem, owner: cst.ClassDef) -> set[str]:
    """The methods of a class that run only while an instance is built: `__init__`, and a
    method whose every use in the class is a call from such a method (`self.backbone =
    self._get_basemodel(name)` in `__init__`). A method used any other way (passed as a
    hook, called from `forward`, or never used in the class) may run later, unless it
    overrides a method that a base class of the file calls on `self` only from its own
    construction methods (`DDPM.__init__` calling `self.register_schedule(...)`, which
    `LatentDiffusion` overrides: it runs while a `LatentDiffusion` is built)."""
    def memo():
        methods = {m.name.value: m for m in owner.body.body if isinstance(m, cst.FunctionDef)}
        uses = _self_method_uses(sem, owner, methods)
        for name in _base_construction_calls(sem, owner):
            if name in uses:
                uses[name].append("__init__")  # the base's construction runs it
        # (`__init__` stands for the construction when the class has none of its own: the
        # base's runs)
        found = {"__init__"}
        grew = True
        while grew:
            grew = False
            for name, callers in uses.items():
                if name not in found and callers and all(c in found for c in callers):
                    found.add(name)
                    grew = True
        return found
    cache = _memo(sem, "construction_methods")
    if id(owner) not in cache:
        cache[id(owner)] = set()  # a class that is its own base (invalid code): no more
        cache[id(owner)] = memo()
    return cache[id(owner)]


def _self_method_uses(sem, owner: cst.ClassDef, methods: dict) -> dict[str, list[Optional[str]]]:
    """{method name: the method each `self.name` access of the class is in when it is a
    call, None when it is another use}, for the class's own methods' names."""
    uses: dict[str, list[Optional[str]]] = {name: [] for name in methods}
    for caller, method in methods.items():
        for node in sem.ctx.descendants(method, cst.Attribute):
            name = node.attr.value
            if name in uses and self_class(sem, node.value) is owner:
                parent = sem.ctx.parent(node)
                called = isinstance(parent, cst.Call) and parent.func is node
                uses[name].append(caller if called else None)
    return uses


def _base_construction_calls(sem, owner: cst.ClassDef) -> set[str]:
    """Names of methods that a base class of the file (directly) calls on `self` only from
    its construction methods, and uses no other way: an override of one in `owner` runs
    while an instance is built."""
    found: set[str] = set()
    classes = sem.module_classes()
    for base in owner.bases:
        cls = classes.get(base.value.value) if isinstance(base.value, cst.Name) else None
        if cls is None or cls is owner:
            continue
        building = construction_methods(sem, cls)
        methods = {m.name.value: m for m in cls.body.body if isinstance(m, cst.FunctionDef)}
        calls: dict[str, list[Optional[str]]] = {}
        for caller, method in methods.items():
            for node in sem.ctx.descendants(method, cst.Attribute):
                if self_class(sem, node.value) is cls:
                    parent = sem.ctx.parent(node)
                    called = isinstance(parent, cst.Call) and parent.func is node
                    calls.setdefault(node.attr.value, []).append(caller if called else None)
        found |= {name for name, callers in calls.items() if all(c in building for c in callers)}
    return found


def read_after_construction(sem, owner: cst.ClassDef, attr: str) -> bool:
    """Whether code that may run after construction reads `.attr`: any access of that
    attribute in the file outside the class's construction methods (see
    `construction_methods`), on whatever object. A container read only while the instance
    is built (a dict of candidate backbones, one of which `__init__` keeps in a registered
    attribute) is not what `forward` uses."""
    building = [m for m in owner.body.body
                if isinstance(m, cst.FunctionDef) and m.name.value in construction_methods(sem, owner)]
    for node in sem.ctx.iter_nodes(cst.Attribute):
        if node.attr.value == attr and not any(sem.ctx.contains(m, node) for m in building):
            return True
    return False
