from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from devicelint.rule import Rule
from devicelint.semantic import Kind, Place, modules
from devicelint.semantic.model import keyword_arg, string_value

# Methods that move a module's tensors: a class defining one moves its own attributes.
_MOVERS = ("to", "cuda", "_apply")
# Tensor methods whose result is not a tensor, or a host copy: the read ends there.
_HOST_ENDS = ("tolist", "item", "numpy", "cpu", "size", "dim", "numel", "nelement",
              "element_size", "data_ptr", "is_contiguous", "stride", "storage_offset")
# Attributes through which a read stays the same tensor (or a view of it).
_SAME_TENSOR = ("data", "T", "mT", "H", "mH")
_REGISTER = ("register_buffer", "register_parameter")
_PARAMETER_CLASSES = ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer",
                      "torch.nn.parameter.Buffer", "torch.nn.UninitializedParameter",
                      "torch.nn.UninitializedBuffer")


@dataclass(frozen=True)
class Use:
    """Where a method uses the attribute with data that follows the model's device."""
    node: cst.CSTNode
    method: str
    moved_by_hand: bool


class UnregisteredTensorAttribute(Rule):
    """## What it does
    Flags a tensor created on the CPU and stored on an `nn.Module` in `__init__` as a plain
    attribute (`self.scale = torch.ones(4)`), neither a Parameter nor a buffer, that a
    method of the module then uses with data that follows the model's device: combined
    with the method's inputs or the outputs of its submodules (`x * self.scale`,
    `torch.matmul(x, self.w)`, `self.embed(self.codes)`), or copied to their device by hand
    on each call (`self.P.to(x.device)`, `self.prior = self.prior.cuda(dev)`), also through
    local names (`dist = self.dist`, `words = torch.multinomial(dist, k)`, `words.to(dev)`).
    Stores of a method that runs only while the module is built count as `__init__`'s: one
    `__init__` calls (`self._build_codes(n)`), or an override of a method that a base class
    of the file calls from its own `__init__` (ControlNet's `LatentDiffusion.make_cond_schedule`,
    run by its `register_schedule`, which `DDPM.__init__` calls), for a name `__init__`
    does not store itself (no fix offered there).
    The tensor may come in through a constructor argument (`self.dist = dist`) when every
    call of the class in the file passes a CPU tensor (`Model(..., dist=torch.from_numpy(p))`).

    It decides from what the code does: the class derives from `nn.Module` (directly or
    through classes of the file), the value is a tensor the model places on the CPU (a
    factory without `device=`, `torch.tensor(...)`, not moved in `__init__`), the class
    neither registers the name (`register_buffer`, `register_parameter`, `nn.Parameter`,
    `nn.Buffer`) nor defines `to`/`cuda`/`_apply` itself, and no other method re-creates
    the attribute (a cache reset in `forward`). Silent on tensors created with `device=`
    or moved in `__init__`, on registered ones, on attributes read only on the host
    (`.tolist()`, `.shape`, combined only with other CPU tensors or numbers), on
    attributes only `__init__` uses, on 0-dim tensors (`torch.tensor(0.5)`,
    `torch.tensor(np.log(alpha))`) used only in arithmetic and comparisons (PyTorch combines
    a 0-dim CPU tensor with CUDA tensors as it would a number), and on classes that are not
    modules.

    ## Why is this bad?
    `model.to(device)` / `model.cuda()` moves parameters and buffers only. A plain tensor
    attribute stays on the CPU, so the first forward on the GPU fails with "Expected all
    tensors to be on the same device", or the code copies it by hand on every call (a
    host→device copy per call until it is stored back, and a copy per replica and call
    under `nn.DataParallel`, whose replicas are rebuilt each forward). It is also missing
    from `model.half()`/`model.double()` and from what `model.buffers()` lists. The cost of
    the hand-made copies was not measured on a GPU for this rule: run
    `devicelint confirm` on a GPU machine to see the mismatch or the copies in your code.

    ## Example
    ```python
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.ones(4)          # stays on the CPU under model.cuda()

        def forward(self, x):
            return x * self.scale
    ```

    ## Use instead
    ```python
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", torch.ones(4), persistent=False)

        def forward(self, x):
            return x * self.scale
    ```
    Use `nn.Parameter(...)` when the tensor is trained (`requires_grad=True`).

    ## Fix safety
    The fix replaces `self.name = <tensor>` with
    `self.register_buffer("name", <tensor>, persistent=False)`. It is safe for what is
    saved: a plain attribute is not in the `state_dict`, and a non-persistent buffer is not
    either, so checkpoints load as before. It is offered only when the assignment is a
    statement of `__init__` after the `super().__init__()` call (a buffer cannot be
    registered before), is the only assignment of the name in `__init__` (not in a loop),
    every other assignment of the name in the class stores a tensor (assigning anything
    else to a buffer raises), no class body in the file defines the name, every base is an
    `nn` class or a module class of the file, and the tensor does not require gradients
    (those want `nn.Parameter`: no fix). What changes, on purpose: the tensor now follows
    `model.to(device)`, and `model.half()`/`.to(dtype)` convert it when it is a floating
    point tensor; it appears in `model.buffers()` (so `DistributedDataParallel` with
    `broadcast_buffers=True` broadcasts it from rank 0). Needs PyTorch 1.6 or later
    (`persistent=`).
    """

    code = "DL017"
    name = "unregistered-tensor-attribute"
    summary = "A plain CPU tensor stored on an nn.Module: `model.to(device)` does not move it"
    message = "`self.{attr}` is a plain tensor attribute: `model.to(device)` leaves it on the CPU"
    hint = "register it with `self.register_buffer(...)` (an `nn.Parameter` if it needs gradients)"
    moved_message = (
        "`self.{attr}` is a plain tensor attribute that `{method}` copies to the device "
        "({line})"
    )
    buffer_remedy = "register it with `self.register_buffer(\"{attr}\", ..., persistent=False)`"
    parameter_remedy = "it requires gradients: make it an `nn.Parameter`"
    tokens = ("__init__",)  # a class with an __init__ that stores attributes

    @staticmethod
    def gate(facts) -> bool:
        """Reported at a `self.x = ...` of a construction method (`__init__`, a method it
        or a base's `__init__` calls) of an nn.Module class defining no `to`/`cuda`/`_apply`,
        read by another method (`_first_use`), whose value the semantic model finds a plain
        tensor on the host (`_cpu_tensor`): something in the file makes one (`cpu_source`),
        and the stored value may be one as the model follows it (devicelint/gate.py
        `_HostTensors`: a name through its bindings, a parameter through what the file's
        calls pass unless its annotation is of another kind, `self.y` through the class's
        stores, a call through its callee: a module class, the file's function or method
        and its returns, an import the API table does not know give none)."""
        return facts.cpu_source() and facts.module_class_with(stores=True)
    fixable = True

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        sem = self.ctx.semantic
        if sem.module_classes().get(node.name.value) is not node:
            return
        methods = _methods(node)
        if any(name in methods for name in _MOVERS):
            return
        init = methods.get("__init__")
        if init is None:
            return
        init_self = _self_name(init)
        if init_self is None:
            return
        registered = None  # walks every method: only once some store is a CPU tensor
        building = {"__init__"}
        stores = {attr: (init, init_self, assigns)
                  for attr, assigns in _attribute_stores(self.ctx, init, init_self).items()}
        if len(methods) > 1:
            # Stores of a method that runs only while the instance is built (called from
            # `__init__`, or an override the base's `__init__` calls), of a name `__init__`
            # does not store itself.
            building = modules.construction_methods(self.ctx.semantic, node) & methods.keys() | building
            # In source order: the order of the class body's statements (not their lines:
            # a position would make the whole class's positioned code, for every class).
            order = {id(statement): index for index, statement in enumerate(node.body.body)}
            for name in sorted(building - {"__init__"}, key=lambda n: order[id(methods[n])]):
                me = _self_name(methods[name])
                for attr, assigns in _attribute_stores(self.ctx, methods[name], me).items():
                    if attr not in stores:
                        stores[attr] = (methods[name], me, assigns)
        for attr, (where, me, assigns) in stores.items():
            assign = assigns[-1]  # the value the construction leaves
            if not self._cpu_tensor(assign.value):
                continue
            if registered is None:
                registered = self._registered_names(node, methods)
            if attr in registered or self._moved_in_init(where, me, attr, assign):
                continue
            if self._recreated_elsewhere(methods, attr, building):
                continue
            # A 0-dim CPU tensor combines with CUDA tensors in arithmetic and comparisons
            # without error (PyTorch treats it as a scalar): only other uses count.
            scalar = self.ctx.semantic.value(assign.value).shape == ()
            use = self._first_use(methods, attr, scalar, building)
            if use is None:
                continue
            self._report(node, init if where is init else None, assigns, attr, use, methods)

    # -- facts ---------------------------------------------------------------------------
    def _cpu_tensor(self, value: Optional[cst.BaseExpression]) -> bool:
        if value is None or self.ctx.semantic.never_tensor(value):
            return False  # `self.eps = 1e-6`, `self.flags = [...]`: no tensor (SemanticModel.never_tensor)
        if not _plain_value(self, value):
            return False  # a Parameter (or nn.Buffer) registers itself on assignment
        found = self.ctx.semantic.value(value)
        return found.kind is Kind.TENSOR and found.place is Place.CPU and not found.hint

    def _registered_names(self, owner: cst.ClassDef, methods: dict) -> set[str]:
        """Names the class registers with `register_buffer`/`register_parameter` or
        assigns a Parameter to, in any method."""
        names = set()
        for method in methods.values():
            me = _self_name(method)
            for call in _nodes(self.ctx, method, cst.Call):
                func = call.func
                if (isinstance(func, cst.Attribute) and func.attr.value in _REGISTER
                        and _is_name(func.value, me) and call.args):
                    name = string_value(call.args[0].value)
                    if name is not None:
                        names.add(name)
            for attr, assigns in _attribute_stores(self.ctx, method, me).items():
                if any(not _plain_value(self, a.value) for a in assigns):
                    names.add(attr)
        return names

    def _moved_in_init(self, init: cst.FunctionDef, me: str, attr: str, assign) -> bool:
        """`self.x.to(device)` results kept (`self.x = self.x.cuda()`) or `self.x.data = ...`
        in `__init__` after the assignment: handled there."""
        for call in _nodes(self.ctx, init, cst.Call):
            func = call.func
            if (isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda")
                    and _is_self_attr(func.value, me, attr) and self._line(call) > self._line(assign)):
                return True
        return False

    def _recreated_elsewhere(self, methods: dict, attr: str, building=frozenset({"__init__"})) -> bool:
        """Another method stores a new tensor under the name (a state reset per call):
        only storing back a moved copy of the attribute itself is not a re-creation. The
        methods that build the instance (`building`) are not other methods."""
        for name, method in methods.items():
            if name in building:
                continue
            me = _self_name(method)
            for assign in _attribute_stores(self.ctx, method, me).get(attr, []):
                if not _reads_self_attr(self.ctx, assign.value, me, attr):
                    return True
        return False

    def _first_use(self, methods: dict, attr: str, scalar: bool = False,
                   building=frozenset({"__init__"})) -> Optional[Use]:
        for name, method in methods.items():
            if name in building:
                continue
            me = _self_name(method)
            if me is None:
                continue
            for read in _nodes(self.ctx, method, cst.Attribute):
                if _is_self_attr(read, me, attr):
                    use = self._use(read, name)
                    if use is not None and not (scalar and not use.moved_by_hand and isinstance(
                            use.node, (cst.BinaryOperation, cst.Comparison))):
                        return use
        return None

    def _use(self, read: cst.BaseExpression, method: str, hops: int = 2) -> Optional[Use]:
        """How the expression around `read` uses the tensor: with data that follows the
        model's device, or copied to a device by hand; None when only on the host. A local
        name bound to it (`dist = self.dist`, `words = torch.multinomial(self.dist, k)`) is
        followed to its reads (`hops` names at most)."""
        sem = self.ctx.semantic
        node: cst.CSTNode = read
        for _ in range(12):
            parent = sem.parent(node)
            if isinstance(parent, cst.Subscript) and parent.value is node:
                node = parent
            elif isinstance(parent, cst.Assign) and parent.value is node:
                return self._use_through(parent, method, hops)
            elif isinstance(parent, cst.Attribute) and parent.value is node:
                call = sem.parent(parent)
                if isinstance(call, cst.Call) and call.func is parent:
                    verb = parent.attr.value
                    if verb in ("to", "cuda"):
                        return Use(call, method, True) if self._moves_off_host(call) else None
                    if verb in _HOST_ENDS:
                        return None
                    if any(self._follows_model(a.value) for a in call.args):
                        return Use(call, method, False)
                    node = call  # .view(...), .float(), .expand(...): still a CPU tensor
                elif parent.attr.value in _SAME_TENSOR:
                    node = parent
                else:
                    return None
            elif isinstance(parent, cst.BinaryOperation):
                other = parent.right if parent.left is node else parent.left
                if self._follows_model(other):
                    return Use(parent, method, False)
                node = parent
            elif isinstance(parent, cst.ComparisonTarget) and parent.comparator is node:
                comparison = sem.parent(parent)
                if isinstance(comparison, cst.Comparison) and self._follows_model(comparison.left):
                    return Use(comparison, method, False)
                node = comparison
            elif isinstance(parent, cst.Comparison) and parent.left is node:
                if any(self._follows_model(t.comparator) for t in parent.comparisons):
                    return Use(parent, method, False)
                node = parent
            elif isinstance(parent, cst.Arg) and parent.value is node:
                call = sem.parent(parent)
                if not isinstance(call, cst.Call):
                    return None
                callee = sem.value(call.func)
                others = [a.value for a in call.args if a is not parent]
                if callee.kind is Kind.MODULE and callee.place is not Place.CPU:
                    return Use(call, method, False)  # a submodule: its weights move with the model
                if any(self._follows_model(o) for o in others) and (
                        (sem.qualname(call.func) or "").startswith("torch.")
                        or sem.resolve_function(call.func) is not None):
                    return Use(call, method, False)
                if (isinstance(call.func, cst.Attribute) and sem.qualname(call.func) is None
                        and self._follows_model(call.func.value)):
                    return Use(call, method, False)  # a method of a tensor on the device
                if (sem.qualname(call.func) or "").startswith("torch."):
                    node = call
                else:
                    return None
            else:
                return None
        return None

    def _use_through(self, assign: cst.Assign, method: str, hops: int) -> Optional[Use]:
        """The first use, by `_use`, among the reads of the one local name `assign` binds."""
        if hops <= 0 or len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            return None
        target = assign.targets[0].target
        function = self.ctx.semantic.function_of(assign)
        if function is None:
            return None
        for name in _nodes(self.ctx, function, cst.Name):
            if name.value == target.value and name is not target \
                    and any(d.node is assign for d in self.ctx.semantic.defs(name)):
                use = self._use(name, method, hops - 1)
                if use is not None:
                    return use
        return None

    def _moves_off_host(self, call: cst.Call) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
            return True
        sem = self.ctx.semantic
        target = call.args[0].value if call.args and call.args[0].keyword is None else keyword_arg(call, "device")
        if target is None or sem.is_dtype(target):
            return False
        place, _hint = sem.device_place(target)
        return place is not Place.CPU

    def _follows_model(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """A value that is on the model's device when the model is: a tensor the model does
        not place on the CPU, or a value of unknown kind (the method's inputs), but not
        another attribute of the module (hyper-parameters) nor a literal."""
        sem = self.ctx.semantic
        method = sem.function_of(expr)
        if isinstance(expr, cst.Attribute) and method is not None and _is_name(expr.value, _self_name(method)):
            found = sem.value(expr)
            return found.kind is Kind.TENSOR and found.place is Place.DEVICE
        found = sem.value(expr)
        if found.kind is Kind.TENSOR and found.place is Place.CPU and depth < 4:
            # The model places `torch.matmul(x, self.w)` on the CPU from its known operand;
            # an operand of unknown place in it may still be the method's device input.
            if isinstance(expr, cst.BinaryOperation):
                return any(self._follows_model(side, depth + 1) for side in (expr.left, expr.right))
            if isinstance(expr, cst.Call) and (sem.qualname(expr.func) or "").startswith("torch."):
                return any(self._follows_model(a.value, depth + 1) for a in expr.args)
            return False
        if found.kind is Kind.TENSOR:
            return found.place is not Place.CPU
        return found.kind is Kind.UNKNOWN and not found.hint

    # -- report and fix ------------------------------------------------------------------
    def _report(self, owner, init, assigns, attr: str, use: Use, methods: dict) -> None:
        assign = assigns[0] if len(assigns) == 1 else assigns[-1]
        template = self.moved_message if use.moved_by_hand else self.message
        grad = _requires_grad(assign.value)
        remedy = self.parameter_remedy if grad else self.buffer_remedy.format(attr=attr)
        text = template.format(attr=attr, method=use.method, line=self.ctx.line_ref(use.node), remedy=remedy)
        replacement = None
        if init is not None and not grad and len(assigns) == 1 \
                and self._fixable(owner, init, assign, attr, methods):
            replacement = _register_buffer(_self_name(init), attr, assign.value)
        if replacement is None:
            self.report(assign, text)
        else:
            self.report(assign, text, replacement=replacement,
                        fix_description=f"Register `{attr}` as a non-persistent buffer")

    def _fixable(self, owner, init, assign, attr: str, methods: dict) -> bool:
        sem = self.ctx.semantic
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            return False
        if self.ctx.loops(assign) or _class_level_names(self.ctx) & {attr}:
            return False
        if not all((sem.qualname(b.value) or "").startswith("torch.nn.")
                   or (isinstance(b.value, cst.Name) and b.value.value in sem.module_classes())
                   for b in owner.bases):
            return False
        super_line = _super_init_line(self, init)
        if super_line is None or super_line >= self._line(assign):
            return False
        for name, method in methods.items():
            for other in _attribute_stores(self.ctx, method, _self_name(method)).get(attr, []):
                if other is not assign and (other.value is None or sem.value(other.value).kind is not Kind.TENSOR):
                    return False
        return True

    def _line(self, node: cst.CSTNode) -> int:
        return self.ctx.position(node)[0]


# -- small helpers on the tree ---------------------------------------------------------------
def _methods(owner: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    found = {}
    if isinstance(owner.body, cst.IndentedBlock):
        for statement in owner.body.body:
            if isinstance(statement, cst.FunctionDef):
                found[statement.name.value] = statement
    return found


def _self_name(method: cst.FunctionDef) -> Optional[str]:
    """The instance parameter's name (`self` by convention, any name in fact)."""
    for decorator in method.decorators:
        if isinstance(decorator.decorator, cst.Name) and decorator.decorator.value in ("staticmethod", "classmethod"):
            return None
    params = method.params.params or method.params.posonly_params
    return params[0].name.value if params else None


def _nodes(ctx, root: cst.CSTNode, kind) -> list:
    """Nodes of `kind` (a concrete libcst class or a tuple of them) under `root` in source
    order, not entering nested functions or classes: slices of the file's index, so the
    several looks at a class's methods walk nothing."""
    return ctx.descendants(root, kind, _NESTED)


_NESTED = (cst.FunctionDef, cst.ClassDef)


def _is_name(node: cst.CSTNode, name: Optional[str]) -> bool:
    return name is not None and isinstance(node, cst.Name) and node.value == name


def _is_self_attr(node: cst.CSTNode, me: Optional[str], attr: str) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == attr and _is_name(node.value, me)


def _reads_self_attr(ctx, node: Optional[cst.CSTNode], me: Optional[str], attr: str) -> bool:
    if node is None:
        return False
    if _is_self_attr(node, me, attr):
        return True
    return any(_is_self_attr(read, me, attr) for read in ctx.descendants(node, cst.Attribute))


def _attribute_stores(ctx, method: cst.FunctionDef, me: Optional[str]) -> dict[str, list]:
    """`self.x = value` statements of the method, by attribute name, in source order
    (the Assign / AnnAssign nodes; a store inside a tuple target counts with value None)."""
    found: dict[str, list] = {}
    if me is None:
        return found
    for node in _nodes(ctx, method, (cst.Assign, cst.AnnAssign)):
        targets = [t.target for t in node.targets] if type(node) is cst.Assign else [node.target]
        for target in targets:
            if type(target) is cst.Attribute and _is_name(target.value, me):
                found.setdefault(target.attr.value, []).append(node)
            elif type(target) in (cst.Tuple, cst.List):
                for element in target.elements:
                    inner = element.value
                    if type(inner) is cst.Attribute and _is_name(inner.value, me):
                        found.setdefault(inner.attr.value, []).append(_Unpacked(node))
    return found


class _Unpacked:
    """A store through tuple unpacking: its value is not a single expression."""

    def __init__(self, node: cst.CSTNode) -> None:
        self.node = node
        self.value = None


def _plain_value(rule: UnregisteredTensorAttribute, value) -> bool:
    """False for a value that registers itself on assignment (a Parameter, an nn.Buffer),
    also as one arm of `a if c else b` or an operand of `a or b`."""
    if type(value) is cst.Call:
        return (rule.ctx.semantic.qualname(value.func) or "") not in _PARAMETER_CLASSES
    if type(value) is cst.IfExp:
        return _plain_value(rule, value.body) and _plain_value(rule, value.orelse)
    if type(value) is cst.BooleanOperation:
        return _plain_value(rule, value.left) and _plain_value(rule, value.right)
    return True


def _requires_grad(value: Optional[cst.BaseExpression]) -> bool:
    if isinstance(value, cst.Call):
        flag = keyword_arg(value, "requires_grad")
        if isinstance(flag, cst.Name) and flag.value == "True":
            return True
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_":
            return True
        if isinstance(func, cst.Attribute):
            return _requires_grad(func.value)
    return False


def _class_level_names(ctx) -> set[str]:
    names = set()
    for owner in ctx.class_defs:
        if isinstance(owner.body, cst.IndentedBlock):
            for statement in owner.body.body:
                if isinstance(statement, cst.SimpleStatementLine):
                    for small in statement.body:
                        if isinstance(small, (cst.Assign, cst.AnnAssign)):
                            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                            names.update(t.value for t in targets if isinstance(t, cst.Name))
                elif isinstance(statement, cst.FunctionDef):
                    if any(isinstance(d.decorator, cst.Name) and d.decorator.value == "property"
                           for d in statement.decorators):
                        names.add(statement.name.value)
    return names


def _super_init_line(rule: UnregisteredTensorAttribute, init: cst.FunctionDef) -> Optional[int]:
    """The line of `super().__init__(...)` (or `Base.__init__(self, ...)`) at the top level
    of `__init__`'s body."""
    if not isinstance(init.body, cst.IndentedBlock):
        return None
    for statement in init.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                    and isinstance(small.value.func, cst.Attribute)
                    and small.value.func.attr.value == "__init__"):
                return rule._line(small)
    return None


def _register_buffer(me: Optional[str], attr: str, value: cst.BaseExpression) -> cst.Expr:
    call = cst.Call(
        func=cst.Attribute(value=cst.Name(me or "self"), attr=cst.Name("register_buffer")),
        args=[
            cst.Arg(cst.SimpleString(f'"{attr}"')),
            cst.Arg(value),
            cst.Arg(cst.Name("False"), keyword=cst.Name("persistent"),
                    equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))),
        ],
    )
    return cst.Expr(call)
